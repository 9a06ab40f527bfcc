"""LTI Dynamic Registration (as Moodle 4.x and Canvas do it), which pylti1p3 does not implement.

The platform opens our registration URL (an invite, see invites.py) with `openid_configuration` and
`registration_token`; we read the platform's configuration, POST our registration to its registration
endpoint, and store the platform with the client id (and deployment id) it assigned.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from .ags import LINEITEM_READ_SCOPE, LINEITEM_SCOPE, NRPS_SCOPE, SCORE_SCOPE
from .canvas import HOSTED_CANVAS
from .outbound import OutboundError, fetch, origin

LTI_PLATFORM = "https://purl.imsglobal.org/spec/lti-platform-configuration"
LTI_TOOL = "https://purl.imsglobal.org/spec/lti-tool-configuration"
SCOPES = [
    LINEITEM_SCOPE,
    LINEITEM_READ_SCOPE,
    "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
    SCORE_SCOPE,
    NRPS_SCOPE,
]
DESCRIPTION = "Notebook assignments, graded automatically in a sandbox; scores go to the gradebook."


class RegistrationError(Exception):
    """Dynamic registration failed; the message says what to check."""


@dataclass(frozen=True)
class ToolUrls:
    login: str
    launch: str
    jwks: str
    name: str
    """the deployment's name (TOOL_NAME), not an assignment's: one deployment serves them all"""

    @property
    def domain(self) -> str:
        return urlsplit(self.launch).netloc


@dataclass(frozen=True)
class RegisteredPlatform:
    issuer: str
    client_id: str
    deployment_id: str | None
    auth_login_url: str
    auth_token_url: str
    key_set_url: str
    product: str
    """the platform's product_family_code ("moodle", "canvas", ...)"""


def tool_registration(urls: ToolUrls) -> dict:
    """The registration request body (OpenID Connect Dynamic Client Registration + LTI's extension)."""
    return {
        "application_type": "web",
        "response_types": ["id_token"],
        "grant_types": ["implicit", "client_credentials"],
        "initiate_login_uri": urls.login,
        "redirect_uris": [urls.launch],
        "client_name": urls.name,
        "jwks_uri": urls.jwks,
        "token_endpoint_auth_method": "private_key_jwt",
        "scope": " ".join(SCOPES),
        LTI_TOOL: {
            "domain": urls.domain,
            "description": DESCRIPTION,
            "target_link_uri": urls.launch,
            "claims": ["iss", "sub", "name", "email"],
            "messages": [
                {"type": "LtiResourceLinkRequest", "target_link_uri": urls.launch},
                {"type": "LtiDeepLinkingRequest", "target_link_uri": urls.launch, "label": urls.name},
            ],
        },
    }


def register(openid_configuration_url: str, registration_token: str | None, urls: ToolUrls, timeout: float):
    """Run the whole exchange with the platform; the platform to store (RegistrationError otherwise).

    The LTI Dynamic Registration spec's checks: the configuration's issuer must be on the origin (scheme,
    host, port) the configuration was fetched from, and so must the registration endpoint; no request
    leaves that origin, redirects included. Canvas: see CANVAS_ISSUERS.
    """
    home = origin(openid_configuration_url)
    if home is None:
        raise RegistrationError("the openid_configuration parameter is not an http(s) URL")
    headers = {"Authorization": f"Bearer {registration_token}"} if registration_token else {}
    config = _fetch_json("get", openid_configuration_url, home, timeout, headers=headers)
    issuer = config.get("issuer")
    if origin(issuer) != home:
        raise RegistrationError(_issuer_mismatch(issuer, home))
    needed = ("authorization_endpoint", "token_endpoint", "jwks_uri", "registration_endpoint")
    missing = [name for name in needed if origin(config.get(name)) is None]
    if missing:
        raise RegistrationError(f"the platform configuration lacks http(s) URLs for {', '.join(missing)}")
    if origin(config["registration_endpoint"]) != home:
        raise RegistrationError(
            f"the registration endpoint is on {origin(config['registration_endpoint'])}, not on {home} where the "
            "configuration came from"
        )
    answer = _fetch_json(
        "post", config["registration_endpoint"], home, timeout, json=tool_registration(urls), headers=headers
    )
    client_id = answer.get("client_id")
    if not isinstance(client_id, str) or not client_id:
        raise RegistrationError("the platform's registration answer has no client_id")
    tool_config = answer.get(LTI_TOOL)
    deployment_id = tool_config.get("deployment_id") if isinstance(tool_config, dict) else None
    platform_config = config.get(LTI_PLATFORM)
    product = platform_config.get("product_family_code", "") if isinstance(platform_config, dict) else ""
    return RegisteredPlatform(
        issuer=issuer,
        client_id=client_id[:400],
        deployment_id=str(deployment_id)[:400] if deployment_id else None,
        auth_login_url=config["authorization_endpoint"],
        auth_token_url=config["token_endpoint"],
        key_set_url=config["jwks_uri"],
        product=str(product)[:200],
    )


# Canvas, read in canvas-lms (Lti::IMS::DynamicRegistrationController#oidc_configuration_url): hosted
# Canvas builds the openid_configuration URL it gives tools from its issuer's scheme, host and port
# (https://canvas.instructure.com/api/lti/security/openid-configuration), so the origin check above holds
# for it unchanged. Its OIDC, token and JWKS endpoints may be on another host (sso.canvaslms.com): they are
# the platform's own URLs and accepted. Two Canvas facts need the operator:
# - a Canvas that serves its configuration from another origin than its issuer (self-hosted Canvas that
#   kept the default lti_iss, Canvas in development mode) is refused with CANVAS_HINT;
# - Canvas serves line items and rosters from the school's Canvas domain, which its configuration does not
#   name: `platform update --service-origin` adds it (CANVAS_SERVICES, shown once registered).
CANVAS_ISSUERS = {hosted.issuer for hosted in HOSTED_CANVAS.values()}
CANVAS_HINT = (
    " Canvas keeps the issuer https://canvas.instructure.com unless its administrator sets lti_iss to the "
    "Canvas's own address; register such a Canvas by hand instead (README: Registering with an LMS)."
)
CANVAS_SERVICES = (
    "Canvas sends grades and rosters through your Canvas's own address: tell the tool with "
    "`python -m lti_service platform update {id} --service-origin https://<your canvas>`."
)
CANVAS_SERVICES_FOR_ADMIN = (
    "One more step: Canvas sends grades and class lists through your Canvas's own address (for example "
    "https://yourschool.instructure.com). Send that address to the tool's operator, who adds it to this "
    "registration (platform {id}); until then, scores stay in the tool."
)
"""the same step, for the Canvas administrator reading the registration page (CANVAS_SERVICES: the operator's)"""


def is_canvas(issuer: str, product: str) -> bool:
    return issuer in CANVAS_ISSUERS or product == "canvas"


def _issuer_mismatch(issuer: object, home: str) -> str:
    message = f"the platform configuration names the issuer {issuer!r} but was served from {home}; "
    message += "the LTI Dynamic Registration spec requires them to be on the same origin."
    return message + (CANVAS_HINT if issuer in CANVAS_ISSUERS else "")


def _fetch_json(method: str, url: str, home: str, timeout: float, **kwargs) -> dict:
    try:
        reply = fetch(method, url, origins={home}, timeout=timeout, **kwargs)
    except OutboundError as error:
        raise RegistrationError(f"{url}: {error.reason}") from None
    if reply.status >= 400:
        raise RegistrationError(f"{url} answered HTTP {reply.status}")
    body = reply.json()
    if not isinstance(body, dict):
        raise RegistrationError(f"{url} did not answer a JSON object")
    return body
