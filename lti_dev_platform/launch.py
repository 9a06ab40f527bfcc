"""Launch initiation (course page with the tool in an iframe) and the OIDC authorization endpoint."""

from __future__ import annotations

import secrets
import typing as t
from datetime import UTC, datetime
from urllib.parse import urlencode, urlsplit

from flask import Blueprint, Response, redirect, render_template, request, url_for
from lti1p3platform.ags import LtiAgs
from lti1p3platform.nrps import LtiNrps

from lti_dev_platform.platform import Platform, platform
from lti_dev_platform.store import DEFAULT_RESOURCE_LINK, LaunchHint, ResourceLink, Tool

bp = Blueprint("launch", __name__)

LTI = "https://purl.imsglobal.org/spec/lti/claim"
SCOPE_LINEITEM_READONLY = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"
DUE_DATE_VARIABLES = {"$Canvas.assignment.dueAt.iso8601", "$ResourceLink.submission.endDateTime"}


def error_page(message: str, status: int) -> tuple[str, int]:
    return render_template("error.html", heading="Error", message=message), status


def add_query(url: str, params: dict[str, t.Any]) -> str:
    return url + ("&" if "?" in url else "?") + urlencode(params)


@bp.get("/course/<context_id>/launch/<user>")
def course_launch(context_id: str, user: str) -> t.Any:
    """What an LMS does when someone opens an activity: frame the tool's OIDC login initiation."""
    p = platform()
    kind = request.args.get("kind", "resource")
    window = request.args.get("window") == "1"
    if user not in p.state.users:
        return error_page(f"Unknown user {user!r}; known: {', '.join(p.state.users)}.", 404)
    if kind not in ("resource", "deeplink"):
        return error_page("kind must be 'resource' or 'deeplink'.", 400)
    the_user = p.state.users[user]
    with p.state.lock:
        tool = p.state.tool
        if tool is None:
            return error_page("No tool is registered yet; start dynamic registration from the start page.", 409)
        course = p.state.course(context_id)
        if kind == "deeplink":
            if the_user.role != "Instructor":
                return error_page("Only instructors can add activities (deep linking).", 403)
            link_id, target, title = None, tool.deep_link_url, "Add an activity"
        else:
            link = p.state.resource_link(context_id, request.args.get("resource_link", DEFAULT_RESOURCE_LINK))
            link_id, target, title = link.id, link.url or tool.launch_url, link.title or link.id
        hint_token = secrets.token_urlsafe(16)
        storage_target = None if window else p.settings.storage_target  # the storage lives in the course page
        p.state.hints[hint_token] = LaunchHint(
            user=user,
            kind=kind,
            context_id=context_id,
            resource_link_id=link_id,
            target_link_uri=target,
            document_target="window" if window else "iframe",
            storage_target=storage_target,
        )
    login_params = {
        "iss": p.issuer,
        "login_hint": user,
        "target_link_uri": target,
        "lti_message_hint": hint_token,
        "client_id": tool.client_id,
        "lti_deployment_id": tool.deployment_id,
    }
    login_url = add_query(tool.login_url, {**login_params, **storage_param(storage_target)})
    if window:
        return redirect(login_url)
    window_url = url_for("launch.course_launch", context_id=context_id, user=user, **{**request.args, "window": "1"})
    return render_template(
        "course.html",
        heading=title,
        course=course,
        user=the_user,
        login_url=login_url,
        window_url=window_url,
        frame_title=f"{title} (tool)",
        storage_target=storage_target,
        tool_origin=origin(tool.login_url),
    )


def storage_param(storage_target: str | None) -> dict[str, str]:
    """Canvas sends lti_storage_target with both the login initiation and the launch when it offers storage."""
    return {"lti_storage_target": storage_target} if storage_target else {}


def origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


@bp.get("/platform-storage")
def platform_storage_frame() -> str:
    """The frame that answers the tool's platform storage messages (Canvas's post_message_forwarding)."""
    p = platform()
    tool = p.state.tool
    return render_template("platform_storage.html", tool_origin=origin(tool.login_url) if tool else "")


def _check_auth_request(params: t.Mapping[str, str], tool: Tool, hints: dict[str, LaunchHint]) -> str | LaunchHint:
    """An error message, or the launch the request is for (the checks Moodle's auth.php makes)."""
    if "openid" not in params.get("scope", "").split():
        return "scope must include openid"
    if params.get("response_type") != "id_token":
        return "response_type must be id_token"
    if params.get("response_mode") != "form_post":
        return "response_mode must be form_post"
    if params.get("prompt", "none") != "none":
        return "prompt must be none"
    if params.get("client_id") != tool.client_id:
        return f"unknown client_id {params.get('client_id')!r}"
    if params.get("redirect_uri") not in tool.redirect_uris:
        return f"redirect_uri {params.get('redirect_uri')!r} is not one of the registered {tool.redirect_uris}"
    if not params.get("nonce"):
        return "nonce is required"
    hint = hints.get(params.get("lti_message_hint", ""))
    if hint is None:
        return "lti_message_hint is missing or unknown"
    if params.get("login_hint") != hint.user:
        return "login_hint does not match the launch"
    return hint


def id_token_claims(p: Platform, tool: Tool, hint: LaunchHint, nonce: str) -> dict[str, t.Any]:
    """The launch message, as Moodle/Canvas build it (service claims via lti1p3platform)."""
    user = p.state.users[hint.user]
    course = p.state.course(hint.context_id)
    claims: dict[str, t.Any] = {
        "iss": p.issuer,
        "aud": tool.client_id,
        "azp": tool.client_id,
        "sub": user.sub,
        "nonce": nonce,
        "name": user.name,
        "given_name": user.given_name,
        "family_name": user.family_name,
        "email": user.email,
        f"{LTI}/version": "1.3.0",
        f"{LTI}/deployment_id": tool.deployment_id,
        f"{LTI}/target_link_uri": hint.target_link_uri,
        f"{LTI}/roles": user.roles,
        f"{LTI}/context": {
            "id": course.id,
            "label": course.label,
            "title": course.title,
            "type": ["http://purl.imsglobal.org/vocab/lis/v2/course#CourseOffering"],
        },
        f"{LTI}/tool_platform": {
            "guid": p.issuer,
            "name": "LTI dev platform",
            "product_family_code": p.settings.product_family_code,
            "version": "0.1",
        },
        f"{LTI}/launch_presentation": {
            "document_target": hint.document_target,
            "return_url": p.settings.url(f"/course/{course.id}"),
            "locale": "en",
        },
    }
    line_item_url, ags_level = None, "full"
    if hint.kind == "deeplink":
        claims[f"{LTI}/message_type"] = "LtiDeepLinkingRequest"
        data = secrets.token_urlsafe(16)
        p.state.deep_link_data[data] = {"context_id": course.id, "user": user.sub}
        claims["https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"] = {
            "deep_link_return_url": p.settings.url("/deep-link-return"),
            "accept_types": ["ltiResourceLink"],
            "accept_presentation_document_targets": ["iframe", "window"],
            "accept_multiple": False,
            "auto_create": True,
            "title": "Add an activity",
            "data": data,
        }
    else:
        assert hint.resource_link_id is not None
        link = p.state.resource_link(course.id, hint.resource_link_id)
        claims[f"{LTI}/message_type"] = "LtiResourceLinkRequest"
        claims[f"{LTI}/resource_link"] = {"id": link.id, **({"title": link.title} if link.title else {})}
        custom = {name: substitute(value, link) for name, value in {**p.settings.tool_custom, **link.custom}.items()}
        if custom:
            claims[f"{LTI}/custom"] = custom
        if link.line_item_id:
            line_item_url = p.lineitem_url(course.id, link.line_item_id, tool)
        ags_level = link.ags
    if ags_level != "none":
        ags = LtiAgs(p.lineitems_url(course.id, tool), line_item_url, allow_creating_lineitems=ags_level == "full")
        ags_claim = ags.get_lti_ags_launch_claim()
        scopes = ags_claim["https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"]["scope"]
        if SCOPE_LINEITEM_READONLY not in scopes:
            scopes.insert(1, SCOPE_LINEITEM_READONLY)
        claims.update(ags_claim)
    claims.update(LtiNrps(p.memberships_url(course.id)).get_lti_nrps_launch_claim())
    return claims


def substitute(value: t.Any, link: ResourceLink) -> t.Any:
    """Canvas's variable substitution for the due date: the link's due date in UTC, or the variable itself
    (unexpanded, as Canvas sends it) when the link has none."""
    if value not in DUE_DATE_VARIABLES or not link.due_at:
        return value
    try:
        due = datetime.fromisoformat(link.due_at)
    except ValueError:
        return link.due_at
    return due.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if due.tzinfo else link.due_at


@bp.route("/auth", methods=["GET", "POST"])
def auth() -> t.Any:
    """OIDC authorization endpoint: answers an auto-submitting form that POSTs id_token and state to the tool."""
    p = platform()
    params = request.values
    with p.state.lock:
        tool = p.state.tool
        if tool is None:
            return error_page("No tool is registered.", 400)
        checked = _check_auth_request(params, tool, p.state.hints)
        if isinstance(checked, str):
            return error_page(f"Invalid authentication request: {checked}.", 400)
        del p.state.hints[params["lti_message_hint"]]  # single-use, as Moodle's: a replay is refused
        claims = id_token_claims(p, tool, checked, params["nonce"])
    fields = {"id_token": p.key.sign(claims, p.settings.id_token_lifetime), **storage_param(checked.storage_target)}
    if "state" in params:
        fields["state"] = params["state"]
    html = render_template(
        "autopost.html",
        heading="Launching the tool",
        message="Sending you to the tool…",
        action=params["redirect_uri"],
        fields=fields,
    )
    return Response(html, headers={"Cache-Control": "no-store"})
