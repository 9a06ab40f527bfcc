"""The endpoints a platform calls: OIDC login, launch, JWKS, Canvas configuration, dynamic registration."""

from __future__ import annotations

import datetime as dt
import logging
import secrets
from urllib.parse import urlencode

from flask import Blueprint, redirect, render_template, request, url_for
from pylti1p3.contrib.flask import FlaskOIDCLogin, FlaskRequest
from pylti1p3.exception import LtiException, OIDCException

from ..db import Launch, utcnow
from ..lti import invites, login_limits
from ..lti.cookies import ToolCookieService
from ..lti.errors import LaunchError
from ..lti.launch import CookiesBlocked
from ..lti.registration import CANVAS_SERVICES, RegistrationError, ToolUrls, is_canvas, register
from ..platforms import PlatformConflict, insert_platform
from . import services

bp = Blueprint("lti", __name__, url_prefix="/lti")
log = logging.getLogger("lti_service.lti")
LTI = "https://purl.imsglobal.org/spec/lti/claim/"
LOGIN_PARAMS = ("iss", "login_hint", "target_link_uri", "lti_message_hint", "lti_deployment_id", "client_id")
LAUNCH_LIFETIME = dt.timedelta(hours=8)


def tool_urls() -> ToolUrls:
    return ToolUrls(
        login=url_for("lti.login", _external=True),
        launch=url_for("lti.launch", _external=True),
        jwks=url_for("lti.jwks", _external=True),
        title=services().config.assignment_title,
    )


@bp.route("/login", methods=["GET", "POST"])
def login():
    """OIDC third-party initiated login: remember the login parameters, redirect to the platform."""
    launch = services().launches
    params = login_limits.login_params(LOGIN_PARAMS)
    login_limits.admit(launch.storage, services().config.login_limit_per_client, services().config.login_limit_total)
    request_adapter = FlaskRequest()
    cookies = ToolCookieService(request_adapter)
    oidc = FlaskOIDCLogin(request_adapter, launch.tool_conf, cookie_service=cookies, launch_data_storage=launch.storage)
    try:
        return oidc.pass_params_to_launch(params).redirect(url_for("lti.launch", _external=True))
    except (LtiException, OIDCException) as error:
        raise LaunchError.from_pylti1p3(error) from None


@bp.post("/launch")
def launch():
    """Validate the id_token and start this user's session on the page for the launch."""
    try:
        claims = services().launches.validated_claims()
    except CookiesBlocked as blocked:
        new_window = url_for("lti.login", _external=True) + "?" + urlencode(blocked.login_params)
        return render_template("cookies_blocked.html", new_window_url=new_window)
    record = _store_launch(claims)
    log.info("launch", extra={"event": "launch", "launch": record.id[:8], "type": record.message_type})
    if record.message_type == "LtiDeepLinkingRequest":
        return redirect(url_for("pages.deep_link", launch_id=record.id), 303)
    return redirect(url_for("pages.assignment", launch_id=record.id), 303)


def _store_launch(claims: dict) -> Launch:
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
        )
        session.add(record)
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
        "title": urls.title,
        "description": "Notebook assignment on LLM decode, graded automatically in a sandbox.",
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


INVITE_REFUSED = {
    "missing": "This registration URL has no invite in it.",
    "unknown": "This registration URL is not valid.",
    "used": "This registration URL was used already (each one works once).",
    "expired": "This registration URL has expired.",
}


@bp.get("/register", defaults={"token": ""})
@bp.get("/register/<token>")
def dynamic_registration(token: str):
    """LTI Dynamic Registration: the platform opens an invite URL (`platform invite`) in a window or
    iframe. Without a valid, unused, unexpired invite nothing is fetched and nothing is stored."""
    openid_configuration = request.args.get("openid_configuration")
    if not openid_configuration:
        return render_template(
            "registration.html", error="This URL is opened by the platform with an openid_configuration parameter."
        ), 400
    invite, refusal = invites.redeem(services().db, token)
    if invite is None:
        log.warning("registration refused", extra={"event": "registration_refused", "reason": refusal})
        message = INVITE_REFUSED[refusal] + " Ask the tool's administrator for a new registration URL."
        return render_template("registration.html", error=message, refused=True), 403
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
    note = CANVAS_SERVICES.format(id=platform.id) if is_canvas(registered.issuer, registered.product) else None
    return render_template("registration.html", platform=platform, note=note)


def _registration_failed(message: str, status: int):
    log.warning("registration failed", extra={"event": "registration_failed", "detail": message[:300]})
    return render_template("registration.html", error=message), status
