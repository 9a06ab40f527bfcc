"""The endpoints a platform calls: OIDC login, launch, JWKS, Canvas configuration, dynamic registration."""

from __future__ import annotations

import datetime as dt
import logging
import secrets

from flask import Blueprint, Response, abort, redirect, render_template, request, url_for
from sqlalchemy import update

from ..assignments.versions import pin
from ..db import Launch, Platform, token_digest, utcnow
from ..gradebook.columns import ensure_column
from ..lti import invites, login_limits
from ..lti.cookies import set_launch_cookie, set_state_cookie, state_cookie
from ..lti.errors import LaunchError
from ..lti.launch import CookiesBlocked, PlatformStorageCheck
from ..lti.login import LOGIN_LIFETIME, LOGIN_PARAMS, Login
from ..lti.registration import CANVAS_SERVICES_FOR_ADMIN, DESCRIPTION, RegistrationError, ToolUrls, is_canvas, register
from ..platforms import PlatformConflict, insert_platform
from . import queue, services

bp = Blueprint("lti", __name__, url_prefix="/lti")
log = logging.getLogger("lti_service.lti")
LTI = "https://purl.imsglobal.org/spec/lti/claim/"
LAUNCH_LIFETIME = dt.timedelta(hours=8)
STORAGE_CHECK_HEADER = "X-LTI-Storage-Check"  # sent by static/platform_storage.js
COOKIES_BLOCKED = (
    "Your browser blocks cookies from this site, so the assignment cannot open even in its own window. "
    "Allow cookies for this site in your browser's settings."
)
COOKIE_LOST = (
    "Your browser did not keep this tool's login cookie inside the course page. Your course administrator "
    "can make the tool open in a new window, where this does not happen."
)


def tool_urls() -> ToolUrls:
    return ToolUrls(
        login=url_for("lti.login", _external=True),
        launch=url_for("lti.launch", _external=True),
        jwks=url_for("lti.jwks", _external=True),
        name=services().config.tool_name,
    )


@bp.route("/login", methods=["GET", "POST"])
def login():
    """OIDC third-party initiated login: remember it, set the state cookie and check it came back (continue)."""
    launches, config = services().launches, services().config
    params = login_limits.login_params((*LOGIN_PARAMS, "lti_storage_target"))
    login_limits.admit(launches.storage, config.login_limit_per_client, config.login_limit_total)
    started = launches.logins.start(params)
    return _with_state_cookie(redirect(url_for("lti.login_continue", state=started.state)), started)


@bp.get("/login/continue")
def login_continue():
    """On to the platform if the state cookie came back; else platform storage, else a new window."""
    login = services().launches.logins.get(request.args.get("state"))
    if login is None:
        raise LaunchError("login_expired")
    stored = request.args.get("stored") == "1" and login.storage_target
    if stored or state_cookie(login.state) == login.state:
        return _to_platform(login)
    if login.new_window:
        return render_template("message.html", heading="Cookies are blocked", message=COOKIES_BLOCKED), 400
    window_url = url_for("lti.login_window", state=login.state)
    if login.storage_target:
        next_url = url_for("lti.login_continue", state=login.state, stored=1)
        return render_template("platform_storage.html", action="put", login=login, next_url=next_url,
                               window_url=window_url)  # fmt: skip
    return render_template("new_window.html", window_url=window_url)


@bp.get("/login/window")
def login_window():
    """The new window: a fresh login (its own state and cookie, first-party here) with the platform's hint,
    which the iframe never sent to the platform."""
    logins = services().launches.logins
    login = logins.get(request.args.get("state"))
    if login is None or not logins.take_ticket(login):
        raise LaunchError("login_expired")
    fresh = logins.start(login.params, new_window=True)
    return _with_state_cookie(redirect(url_for("lti.login_continue", state=fresh.state)), fresh)


def _with_state_cookie(response: Response, login: Login) -> Response:
    set_state_cookie(response, login.state, LOGIN_LIFETIME)
    response.headers["Cache-Control"] = "no-store"
    return response


def _to_platform(login: Login) -> Response:
    """The OIDC authentication request, once per login: the platform's hint may be single-use."""
    if not services().launches.logins.take_ticket(login):
        raise LaunchError("login_expired")
    return redirect(login.authorization_url(url_for("lti.launch", _external=True)))


@bp.post("/launch")
def launch():
    """Validate the id_token and start this user's session on the page for the launch."""
    try:
        claims = services().launches.validated_claims()
    except PlatformStorageCheck as check:
        next_url = url_for("lti.launch_verify")
        return render_template("platform_storage.html", action="check", login=check.login, next_url=next_url)
    except CookiesBlocked:
        return render_template("message.html", heading="The assignment cannot open here", message=COOKIE_LOST), 400
    token = secrets.token_urlsafe(32)  # the state cookie came back: this browser keeps the tool's cookies here
    record, url = _open(claims, token_digest(token))
    response = redirect(url, 303)
    set_launch_cookie(response, record.id, token, url_for("pages.assignment", launch_id=record.id))
    return response


@bp.post("/launch/verify")
def launch_verify():
    """The launch page read the state back from the platform's storage: open the launch.

    Only the tool's own script may ask (a custom header: a form on another site cannot send one), so a
    launch is never confirmed for a browser whose platform storage does not hold the login's state."""
    same_origin = request.headers.get("Sec-Fetch-Site", "same-origin") == "same-origin"
    if request.headers.get(STORAGE_CHECK_HEADER) != "1" or not same_origin:
        abort(403, "Only the launch page can confirm a launch.")
    claims = services().launches.confirmed_claims(request.form.get("state", ""))
    return {"url": _open(claims, None)[1]}


def _open(claims: dict, binding: str | None) -> tuple[Launch, str]:
    """Record the validated launch (bound to the browser by the hash of its cookie's token, where it keeps
    one); the launch and the URL of its first page."""
    record = _store_launch(claims, binding)
    log.info("launch", extra={"event": "launch", "launch": record.id[:8], "type": record.message_type})
    if record.message_type == "LtiDeepLinkingRequest":
        return record, url_for("pages.deep_link", launch_id=record.id)
    pin(services(), record)
    for passback_id in ensure_column(services(), record):
        queue().send_score(passback_id)
    return record, url_for("pages.assignment", launch_id=record.id)


def _store_launch(claims: dict, binding: str | None) -> Launch:
    platform = services().platforms.find(claims["iss"], _client_id(claims))
    with services().db.session() as session:
        record = Launch(
            id=secrets.token_urlsafe(32),
            platform_id=platform.id,
            deployment_id=claims[LTI + "deployment_id"],
            message_type=claims[LTI + "message_type"],
            context_id=claims.get(LTI + "context", {}).get("id", ""),
            resource_link_id=claims.get(LTI + "resource_link", {}).get("id", ""),
            user_id=claims["sub"],
            user_name=str(claims.get("name", ""))[:400],
            roles=claims.get(LTI + "roles", []),
            claims=claims,
            expires_at=utcnow() + LAUNCH_LIFETIME,
            binding_hash=binding,
        )
        session.add(record)
        product = claims.get(LTI + "tool_platform", {}).get("product_family_code", "")
        if isinstance(product, str):  # what its gradebook does with a score follows the product (lti/quirks.py)
            session.execute(
                update(Platform)
                .where(Platform.id == platform.id, Platform.product_family != product[:100])
                .values(product_family=product[:100])
            )
    return record


def _client_id(claims: dict) -> str:
    aud = claims["aud"]
    return claims.get("azp") or (aud[0] if isinstance(aud, list) else aud)


@bp.get("/jwks.json")
def jwks():
    return services().keys.jwks()


@bp.get("/canvas.json")
def canvas_json():
    """Canvas developer key configuration ("Enter URL"), with assignment selection by deep linking."""
    urls = tool_urls()
    return {
        "title": urls.name,
        "description": DESCRIPTION,
        "oidc_initiation_url": urls.login,
        "target_link_uri": urls.launch,
        "public_jwk_url": urls.jwks,
        "scopes": [
            "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
            "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly",
            "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
            "https://purl.imsglobal.org/spec/lti-ags/scope/score",
            "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly",
        ],
        "custom_fields": {"due_at": "$Canvas.assignment.dueAt.iso8601"},
        "extensions": [
            {
                "platform": "canvas.instructure.com",
                "domain": urls.domain,
                "privacy_level": "name_only",
                "settings": {
                    "placements": [
                        {
                            "placement": "assignment_selection",
                            "message_type": "LtiDeepLinkingRequest",
                            "target_link_uri": urls.launch,
                        },
                        {
                            "placement": "link_selection",
                            "message_type": "LtiDeepLinkingRequest",
                            "target_link_uri": urls.launch,
                        },
                    ]
                },
            }
        ],
    }


# The registration page is read by an LMS administrator in the LMS's dialog: what happened, what to do next.
# The operator's side (commands, error details) goes in one line of its own.
INVITE_REFUSED = {
    "missing": "This address is not a complete registration URL.",
    "unknown": "The tool does not know this registration URL.",
    "used": "This registration URL was used already: each one works only once.",
    "expired": "This registration URL has expired.",
}


@bp.get("/register", defaults={"token": ""})
@bp.get("/register/<token>")
def dynamic_registration(token: str):
    """LTI Dynamic Registration: the platform opens an invite URL (`platform invite`) in a window or
    iframe. Without a valid, unused, unexpired invite nothing is fetched and nothing is stored."""
    openid_configuration = request.args.get("openid_configuration")
    if not openid_configuration:
        what = "This registration URL is for your LMS: opened in a browser, it registers nothing."
        detail = "the URL was opened without the openid_configuration parameter that an LMS adds."
        return _registration_page(400, "Registration not started", what, detail, unused=True)
    invite, refusal = invites.redeem(services().db, token)
    if invite is None:
        log.warning("registration refused", extra={"event": "registration_refused", "reason": refusal})
        what = f"{INVITE_REFUSED[refusal]} Nothing was registered."
        return _registration_page(403, "Registration refused", what, f"invite refused ({refusal}).")
    try:
        registered = register(
            openid_configuration, request.args.get("registration_token"), tool_urls(), services().config.http_timeout
        )
    except RegistrationError as error:
        return _registration_failed(str(error), 502)
    try:
        platform = insert_platform(services().db, registered, name=invite.name or registered.product)
    except PlatformConflict as error:
        return _registration_failed(str(error), 409)
    services().platforms.invalidate()
    log.info("registered", extra={"event": "registered", "issuer": platform.issuer, "client_id": platform.client_id})
    note = (
        CANVAS_SERVICES_FOR_ADMIN.format(id=platform.id) if is_canvas(registered.issuer, registered.product) else None
    )
    return render_template(
        "registration.html", heading="Registration complete", platform=platform, note=note,
        tool_name=services().config.tool_name,
    )  # fmt: skip


def _registration_failed(message: str, status: int):
    log.warning("registration failed", extra={"event": "registration_failed", "detail": message[:300]})
    what = "The tool could not complete the registration with your LMS. Nothing was registered."
    return _registration_page(status, "Registration failed", what, f"{message.rstrip('.')}.")


def _registration_page(status: int, heading: str, what: str, detail: str, unused: bool = False):
    """A registration that did not happen: what happened and what next, for the LMS administrator (with a
    Close button for the LMS's dialog, which offers only Cancel), and the detail for the tool's operator.
    `unused`: the URL was not used up (opened by a browser, not an LMS)."""
    page = render_template("registration.html", heading=heading, what=what, detail=detail, unused=unused)
    return page, status
