"""LTI Dynamic Registration, as Moodle 4.x and Canvas do it: the platform opens the tool's registration URL."""

from __future__ import annotations

import secrets
import typing as t
from urllib.parse import urlsplit

from flask import Blueprint, Response, jsonify, render_template, request

from lti_dev_platform.keys import ToolKeys
from lti_dev_platform.launch import add_query
from lti_dev_platform.platform import platform
from lti_dev_platform.services import SUPPORTED_SCOPES, json_error
from lti_dev_platform.store import Tool

bp = Blueprint("registration", __name__)

PLATFORM_CONFIG = "https://purl.imsglobal.org/spec/lti-platform-configuration"
TOOL_CONFIG = "https://purl.imsglobal.org/spec/lti-tool-configuration"
MESSAGES = ("LtiResourceLinkRequest", "LtiDeepLinkingRequest")
CLAIMS = ["iss", "sub", "aud", "name", "given_name", "family_name", "email", "nonce"]


@bp.get("/register/start")
def start() -> str:
    """Like Moodle's "Tool URL" field: the admin gives the tool's registration URL (`url`, or the one in
    the settings), and the platform opens it with its configuration URL and a one-time token."""
    p = platform()
    tool_url = request.args.get("url") or p.settings.tool_register_url
    if not tool_url:
        return render_template("register_start.html", heading="Register a tool", register_url=None)
    register_url = add_query(
        tool_url,
        {
            "openid_configuration": p.settings.url("/.well-known/openid-configuration"),
            "registration_token": p.state.new_registration_token(),
        },
    )
    return render_template("register_start.html", heading="Register the tool", register_url=register_url)


@bp.get("/.well-known/openid-configuration")
def openid_configuration() -> Response:
    s = platform().settings
    return jsonify(
        {
            "issuer": s.issuer,
            "authorization_endpoint": s.url("/auth"),
            "token_endpoint": s.url("/token"),
            "token_endpoint_auth_methods_supported": ["private_key_jwt"],
            "token_endpoint_auth_signing_alg_values_supported": ["RS256"],
            "jwks_uri": s.url("/.well-known/jwks.json"),
            "registration_endpoint": s.url("/register"),
            "scopes_supported": ["openid", *SUPPORTED_SCOPES],
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public", "pairwise"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "claims_supported": CLAIMS,
            PLATFORM_CONFIG: {
                "product_family_code": s.product_family_code,
                "version": "0.1",
                "messages_supported": [{"type": m} for m in MESSAGES],
                "variables": [],
            },
        }
    )


def _host_matches(url: str, domain: str) -> bool:
    parts = urlsplit(url)
    if ":" in domain:
        return parts.netloc == domain
    host = parts.hostname or ""
    return host == domain or host.endswith("." + domain)


def _registration_problem(body: t.Any) -> str | None:
    """RFC 7591 metadata plus the LTI tool configuration, checked the way strict platforms check them."""
    if not isinstance(body, dict):
        return "body must be a JSON object"
    expected = {"application_type": "web", "token_endpoint_auth_method": "private_key_jwt"}
    for key, value in expected.items():
        if body.get(key) != value:
            return f"{key} must be {value!r}"
    required = (("response_types", "id_token"), ("grant_types", "implicit"), ("grant_types", "client_credentials"))
    for key, needed in required:
        if not isinstance(body.get(key), list) or needed not in body[key]:
            return f"{key} must include {needed!r}"
    for key in ("initiate_login_uri", "client_name", "jwks_uri"):
        if not isinstance(body.get(key), str) or not body[key]:
            return f"{key} is required"
    uris = body.get("redirect_uris")
    if not isinstance(uris, list) or not uris or not all(isinstance(u, str) and u for u in uris):
        return "redirect_uris must be a non-empty list of URLs"
    if not isinstance(body.get("scope", ""), str):
        return "scope must be a space-separated string"
    config = body.get(TOOL_CONFIG)
    if not isinstance(config, dict):
        return f"{TOOL_CONFIG} is required"
    for key in ("domain", "target_link_uri"):
        if not isinstance(config.get(key), str) or not config[key]:
            return f"{TOOL_CONFIG}.{key} is required"
    if not isinstance(config.get("claims", []), list):
        return f"{TOOL_CONFIG}.claims must be a list"
    messages = config.get("messages", [])
    if not isinstance(messages, list) or not all(isinstance(m, dict) and m.get("type") in MESSAGES for m in messages):
        return f"{TOOL_CONFIG}.messages must be a list of messages of the types {list(MESSAGES)}"
    for url in [config["target_link_uri"], body["initiate_login_uri"], *uris]:
        if not _host_matches(url, config["domain"]):
            return f"{url} is not in the tool's domain {config['domain']!r}"
    return None


@bp.post("/register")
def register() -> Response:
    p = platform()
    header = request.headers.get("Authorization", "")
    if not header.lower().startswith("bearer ") or not p.state.take_registration_token(header[7:].strip()):
        return json_error(401, "a valid one-time registration token is required (Authorization: Bearer)")
    body = request.get_json(force=True, silent=True)
    problem = _registration_problem(body)
    if problem:
        return json_error(400, problem, error="invalid_client_metadata")
    config = body[TOOL_CONFIG]
    deep_link_target = next(
        (m.get("target_link_uri") for m in config.get("messages", []) if m["type"] == "LtiDeepLinkingRequest"),
        None,
    )
    with p.state.lock:
        type_id = p.state.next_type_id
        p.state.next_type_id += 1
        tool = Tool(
            type_id=type_id,
            client_id=f"dev-{type_id}-{secrets.token_hex(4)}",
            deployment_id=f"dep-{type_id}",
            name=body["client_name"],
            login_url=body["initiate_login_uri"],
            launch_url=config["target_link_uri"],
            deep_link_url=deep_link_target or config["target_link_uri"],
            redirect_uris=list(body["redirect_uris"]),
            jwks_url=body["jwks_uri"],
            keys=ToolKeys(body["jwks_uri"], p.settings.jwks_timeout),
            dynamic=True,
        )
        p.state.tool = tool
        granted = [s for s in str(body.get("scope", "")).split() if s in SUPPORTED_SCOPES]
        answer = {
            **body,
            "client_id": tool.client_id,
            "scope": " ".join(granted),
            TOOL_CONFIG: {**config, "deployment_id": tool.deployment_id},
        }
        p.state.registrations.append({"request": body, "response": answer})
    return jsonify(answer)
