"""A platform the test is itself (a key, a JWKS served on 127.0.0.2), so it can sign exactly the launch each case
needs, and the tool registered with it; the OIDC login and the launch POST as a browser sends them."""

from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlsplit

import jwt
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from flask import Flask
from jwcrypto.jwk import JWK

from lti_dev_platform.serving import ServerThread
from testbed.tool import ToolProcess, browser_session

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
CLIENT_ID, DEPLOYMENT = "security-test-client", "deployment-1"


def rsa_pem() -> bytes:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


class SigningPlatform:
    """Just enough platform: a signing key and its JWKS on 127.0.0.2."""

    def __init__(self) -> None:
        self.pem, self.kid = rsa_pem(), "platform-key-1"
        jwk = {**json.loads(JWK.from_pem(self.pem).export_public()), "kid": self.kid, "alg": "RS256", "use": "sig"}
        app = Flask("test-platform")
        app.get("/jwks")(lambda: {"keys": [jwk]})
        self.server = ServerThread(app, host="127.0.0.2").start()
        self.issuer = self.server.url

    def token(self, nonce: str, tool_url: str, pem: bytes | None = None, kid: str | None = None, **claims) -> str:
        now = int(time.time())
        body = {
            "iss": self.issuer,
            "aud": CLIENT_ID,
            "sub": "student-1",
            "iat": now,
            "exp": now + 300,
            "nonce": nonce,
            "name": "Test Student",
            LTI + "message_type": "LtiResourceLinkRequest",
            LTI + "version": "1.3.0",
            LTI + "deployment_id": DEPLOYMENT,
            LTI + "target_link_uri": f"{tool_url}/lti/launch",
            LTI + "resource_link": {"id": "link-1"},
            LTI + "context": {"id": "course-1"},
            LTI + "roles": ["http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"],
        }
        body.update(claims)
        return jwt.encode(body, pem or self.pem, algorithm="RS256", headers={"kid": kid or self.kid})


def registered_tool(platform: SigningPlatform, data_dir: Path, *serve_args: str) -> ToolProcess:
    """The tool with the signing platform registered, started (the caller stops it)."""
    tool = ToolProcess(data_dir)
    tool.cli(
        "platform", "add", "--issuer", platform.issuer, "--client-id", CLIENT_ID, "--deployment-id", DEPLOYMENT,
        "--auth-url", f"{platform.issuer}/auth", "--token-url", f"{platform.issuer}/token",
        "--jwks-url", f"{platform.issuer}/jwks",
    )  # fmt: skip
    return tool.start(*serve_args)


def login(
    tool: ToolProcess, platform: SigningPlatform, session: requests.Session | None = None, **extra: str
) -> tuple[requests.Session, str, str]:
    """The OIDC login as the platform starts it, up to the redirect to the platform; session, state, nonce."""
    session = session or browser_session()
    response = session.get(f"{tool.url}/lti/login", params=login_params(tool, platform, **extra), allow_redirects=False)
    assert response.status_code == 302, response.text
    cookie = response.headers["Set-Cookie"]  # kept in the LMS iframe: loopback counts as a secure context
    assert all(attribute in cookie for attribute in ("SameSite=None", "Secure", "HttpOnly", "Partitioned")), cookie
    response = session.get(urljoin(tool.url, response.headers["Location"]), allow_redirects=False)  # the cookie check
    assert response.status_code == 302, response.text
    query = parse_qs(urlsplit(response.headers["Location"]).query)
    assert response.headers["Location"].startswith(f"{platform.issuer}/auth?")
    assert query["redirect_uri"] == [f"{tool.url}/lti/launch"] and query["client_id"] == [CLIENT_ID]
    return session, query["state"][0], query["nonce"][0]


def login_params(tool: ToolProcess, platform: SigningPlatform, **extra: str) -> dict[str, str]:
    return {
        "iss": platform.issuer, "login_hint": "student-1", "target_link_uri": f"{tool.url}/lti/launch",
        "client_id": CLIENT_ID, "lti_message_hint": "hint-1", **extra,
    }  # fmt: skip


def post_launch(tool, session, state, token):
    return session.post(f"{tool.url}/lti/launch", data={"state": state, "id_token": token}, allow_redirects=False)
