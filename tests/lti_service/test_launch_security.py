"""Every way a launch can be wrong, crafted by the test and refused with a clear 4xx page and a log line.

The test is its own platform here (a key, a JWKS served on 127.0.0.2), so it can sign exactly the bad
message each case needs; the dev platform covers the good paths.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import jwt
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from flask import Flask
from jwcrypto.jwk import JWK

from lti_dev_platform.serving import ServerThread
from tests.lti_service.tool import ToolProcess, browser_session

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


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    platform = SigningPlatform()
    tool = registered_tool(platform, tmp_path_factory.mktemp("security-tool"))
    yield platform, tool
    tool.stop()
    platform.server.stop()


def login(tool: ToolProcess, platform: SigningPlatform) -> tuple[requests.Session, str, str]:
    """The OIDC login as the platform starts it; the browser session, state and nonce."""
    session = browser_session()
    params = {"iss": platform.issuer, "login_hint": "student-1", "target_link_uri": f"{tool.url}/lti/launch"}
    response = session.get(f"{tool.url}/lti/login", params={**params, "client_id": CLIENT_ID}, allow_redirects=False)
    assert response.status_code == 302, response.text
    query = parse_qs(urlsplit(response.headers["Location"]).query)
    assert query["redirect_uri"] == [f"{tool.url}/lti/launch"] and query["client_id"] == [CLIENT_ID]
    cookie = response.headers["Set-Cookie"]  # kept in the LMS iframe: loopback counts as a secure context
    assert "SameSite=None" in cookie and "Secure" in cookie and "HttpOnly" in cookie
    return session, query["state"][0], query["nonce"][0]


def post_launch(tool, session, state, token):
    return session.post(f"{tool.url}/lti/launch", data={"state": state, "id_token": token}, allow_redirects=False)


def test_a_valid_launch_opens_the_assignment(setup):
    platform, tool = setup
    session, state, nonce = login(tool, platform)
    response = post_launch(tool, session, state, platform.token(nonce, tool.url))
    assert response.status_code == 303 and "/a/" in response.headers["Location"]
    page = session.get(tool.url + response.headers["Location"])
    assert page.status_code == 200 and "Download the notebook" in page.text


def test_login_by_post_works_too(setup):
    platform, tool = setup
    data = {"iss": platform.issuer, "login_hint": "student-1", "target_link_uri": f"{tool.url}/lti/launch"}
    response = requests.post(f"{tool.url}/lti/login", data={**data, "client_id": CLIENT_ID}, allow_redirects=False)
    assert response.status_code == 302 and response.headers["Location"].startswith(f"{platform.issuer}/auth?")


def test_login_from_an_unknown_platform_is_refused(setup):
    platform, tool = setup
    params = {"iss": "https://unknown.example", "login_hint": "x", "target_link_uri": f"{tool.url}/lti/launch"}
    assert_refused(tool, requests.get(f"{tool.url}/lti/login", params=params, allow_redirects=False), "unknown_issuer")


def test_clock_skew_within_a_minute_is_tolerated(setup):
    platform, tool = setup
    session, state, nonce = login(tool, platform)
    token = platform.token(nonce, tool.url, iat=int(time.time()) + 30)
    assert post_launch(tool, session, state, token).status_code == 303


OTHER_KEY = rsa_pem()
BAD_TOKENS = {
    "bad_signature": lambda p, n, url: p.token(n, url, pem=OTHER_KEY),
    "wrong_audience": lambda p, n, url: p.token(n, url, aud=[CLIENT_ID, "another-tool"]),
    "expired": lambda p, n, url: p.token(n, url, iat=int(time.time()) - 900, exp=int(time.time()) - 600),
    "not_yet_valid": lambda p, n, url: p.token(n, url, iat=int(time.time()) + 600),
    "unknown_issuer": lambda p, n, url: p.token(n, url, iss="https://unknown.example"),
    "unknown_client": lambda p, n, url: p.token(n, url, aud="unregistered-client"),
    "unknown_deployment": lambda p, n, url: p.token(n, url, **{LTI + "deployment_id": "not-registered"}),
    "unknown_kid": lambda p, n, url: p.token(n, url, kid="no-such-key"),
    "unknown_nonce": lambda p, n, url: p.token(uuid.uuid4().hex, url),
}
EXPECTED_CODE = {"unknown_client": "unknown_issuer", "unknown_nonce": "replayed_nonce"}


@pytest.mark.parametrize("case", BAD_TOKENS)
def test_bad_launch_is_refused_with_an_explanation(setup, case):
    platform, tool = setup
    session, state, nonce = login(tool, platform)
    response = post_launch(tool, session, state, BAD_TOKENS[case](platform, nonce, tool.url))
    assert_refused(tool, response, EXPECTED_CODE.get(case, case))


def test_replayed_launch_is_refused(setup):
    platform, tool = setup
    session, state, nonce = login(tool, platform)
    token = platform.token(nonce, tool.url)
    assert post_launch(tool, session, state, token).status_code == 303
    assert_refused(tool, post_launch(tool, session, state, token), "replayed_nonce")


def test_missing_or_foreign_state_is_refused(setup):
    platform, tool = setup
    session, state, nonce = login(tool, platform)
    token = platform.token(nonce, tool.url)
    assert_refused(tool, session.post(f"{tool.url}/lti/launch", data={"id_token": token}), "missing_state")
    _, other_state, _ = login(tool, platform)
    assert_refused(tool, post_launch(tool, session, other_state, token), "state_mismatch")


def test_blocked_cookies_offer_a_new_window(setup):
    """No state cookie came back (third-party cookies blocked): a new-window login, not an error."""
    platform, tool = setup
    _, state, nonce = login(tool, platform)
    response = post_launch(tool, browser_session(), state, platform.token(nonce, tool.url))
    assert response.status_code == 200 and "Open the assignment in a new window" in response.text
    link = response.text.split('id="new-window" href="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    query = parse_qs(urlsplit(link).query)
    assert query["iss"] == [platform.issuer] and query["login_hint"] == ["student-1"]


def assert_refused(tool: ToolProcess, response: requests.Response, code: str) -> None:
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:500])
    assert "For the administrator" in response.text and f"<code>{code}</code>" in response.text
    assert "Traceback" not in response.text
    refusals = [e for e in tool.log_events() if e.get("event") == "launch_refused"]
    assert refusals and refusals[-1]["code"] == code
