"""Human-facing pages (index, course, gradebook) and the platform's public keys."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, render_template

from lti_dev_platform.platform import platform
from lti_dev_platform.store import DEFAULT_CONTEXT, DEFAULT_RESOURCE_LINK

bp = Blueprint("pages", __name__)


def platform_values() -> list[tuple[str, str]]:
    """What a tool needs for manual registration (also printed by the CLI)."""
    s = platform().settings
    return [
        ("Issuer (platform ID)", s.issuer),
        ("Authorization (OIDC auth) URL", s.url("/auth")),
        ("Access token URL", s.url("/token")),
        ("Platform JWKS URL", s.url("/.well-known/jwks.json")),
        ("OpenID configuration", s.url("/.well-known/openid-configuration")),
    ]


@bp.get("/.well-known/jwks.json")
def jwks() -> Response:
    return jsonify(platform().key.jwks())


@bp.get("/")
def index() -> str:
    p = platform()
    with p.state.lock:
        return render_template(
            "index.html",
            heading="LTI dev platform",
            settings=p.settings,
            tool=p.state.tool,
            course=p.state.course(DEFAULT_CONTEXT),
            link_id=DEFAULT_RESOURCE_LINK,
            users=list(p.state.users.values()),
            instructor=p.state.users["instructor-turing"],
            platform_values=platform_values(),
        )


@bp.get("/course/<context_id>")
def course(context_id: str) -> str:
    p = platform()
    with p.state.lock:
        c = p.state.course(context_id)
        links = [link for (ctx, _), link in p.state.resource_links.items() if ctx == context_id]
        return render_template(
            "course_home.html",
            heading=c.title,
            course=c,
            links=links,
            line_items=p.state.line_items,
            users=list(p.state.users.values()),
            instructor=p.state.users["instructor-turing"],
        )


@bp.get("/gradebook")
def gradebook() -> str:
    p = platform()
    rows = []
    with p.state.lock:
        for score in p.state.scores.values():
            item = p.state.line_items.get(score.line_item_id)
            user = p.state.users.get(score.user_id)
            given = "" if score.score_given is None else f"{score.score_given:g}"
            maximum = "" if score.score_maximum is None else f"{score.score_maximum:g}"
            rows.append(
                {
                    "course": item.context_id if item else "",
                    "user": user.name if user else score.user_id,
                    "label": item.label if item else score.line_item_id,
                    "score": f"{given}/{maximum}" if given else "",
                    "progress": "needs grading" if score.grading_progress == "PendingManual" else "",
                    "comment": score.comment or "",
                    "timestamp": score.timestamp,
                }
            )
    return render_template("gradebook.html", heading="Gradebook", rows=rows)
