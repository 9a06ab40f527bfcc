"""LTI Dynamic Registration (as Moodle 4.x and Canvas do it), which pylti1p3 does not implement.

The platform opens our registration URL with `openid_configuration` and `registration_token`; we read
the platform's configuration, POST our registration to its registration endpoint, and store the
platform with the client id (and deployment id) it assigned.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

import requests

from ..ags import LINEITEM_READ_SCOPE, LINEITEM_SCOPE, NRPS_SCOPE, SCORE_SCOPE

LTI_PLATFORM = "https://purl.imsglobal.org/spec/lti-platform-configuration"
LTI_TOOL = "https://purl.imsglobal.org/spec/lti-tool-configuration"
SCOPES = [
    LINEITEM_SCOPE,
    LINEITEM_READ_SCOPE,
    "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
    SCORE_SCOPE,
    NRPS_SCOPE,
]


class RegistrationError(Exception):
    """Dynamic registration failed; the message says what to check."""


@dataclass(frozen=True)
class ToolUrls:
    login: str
    launch: str
    jwks: str
    title: str

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
    name: str


def tool_registration(urls: ToolUrls) -> dict:
    """The registration request body (OpenID Connect Dynamic Client Registration + LTI's extension)."""
    return {
        "application_type": "web",
        "response_types": ["id_token"],
        "grant_types": ["implicit", "client_credentials"],
        "initiate_login_uri": urls.login,
        "redirect_uris": [urls.launch],
        "client_name": urls.title,
        "jwks_uri": urls.jwks,
        "token_endpoint_auth_method": "private_key_jwt",
        "scope": " ".join(SCOPES),
        LTI_TOOL: {
            "domain": urls.domain,
            "description": "Notebook assignment on LLM decode, graded automatically in a sandbox.",
            "target_link_uri": urls.launch,
            "claims": ["iss", "sub", "name", "email"],
            "messages": [
                {"type": "LtiResourceLinkRequest", "target_link_uri": urls.launch},
                {"type": "LtiDeepLinkingRequest", "target_link_uri": urls.launch, "label": urls.title},
            ],
        },
    }


def register(openid_configuration_url: str, registration_token: str | None, urls: ToolUrls, timeout: float):
    """Run the whole exchange with the platform; the platform to store."""
    config = _fetch_json("get", openid_configuration_url, timeout)
    issuer = config.get("issuer")
    if not isinstance(issuer, str) or urlsplit(issuer).netloc != urlsplit(openid_configuration_url).netloc:
        raise RegistrationError("the platform configuration's issuer does not match the configuration URL's host")
    needed = ("authorization_endpoint", "token_endpoint", "jwks_uri", "registration_endpoint")
    missing = [name for name in needed if not isinstance(config.get(name), str)]
    if missing:
        raise RegistrationError(f"the platform configuration lacks {', '.join(missing)}")
    headers = {"Authorization": f"Bearer {registration_token}"} if registration_token else {}
    answer = _fetch_json(
        "post", config["registration_endpoint"], timeout, json=tool_registration(urls), headers=headers
    )
    client_id = answer.get("client_id")
    if not isinstance(client_id, str) or not client_id:
        raise RegistrationError("the platform's registration answer has no client_id")
    deployment_id = answer.get(LTI_TOOL, {}).get("deployment_id")
    product = config.get(LTI_PLATFORM, {}).get("product_family_code", "")
    return RegisteredPlatform(
        issuer=issuer,
        client_id=client_id,
        deployment_id=str(deployment_id) if deployment_id else None,
        auth_login_url=config["authorization_endpoint"],
        auth_token_url=config["token_endpoint"],
        key_set_url=config["jwks_uri"],
        name=str(product)[:200],
    )


def _fetch_json(method: str, url: str, timeout: float, **kwargs) -> dict:
    try:
        response = requests.request(method, url, timeout=timeout, **kwargs)
        response.raise_for_status()
        body = response.json()
    except requests.RequestException as error:
        raise RegistrationError(f"{url}: {error}") from None
    except ValueError:
        raise RegistrationError(f"{url} did not answer JSON") from None
    if not isinstance(body, dict):
        raise RegistrationError(f"{url} did not answer a JSON object")
    return body
