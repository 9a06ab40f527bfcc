"""Getting the tool into an LMS and keeping it healthy: dynamic registration, the CLI, keys, headers."""

from __future__ import annotations

from pathlib import Path

import requests

from lti_dev_platform.client import launch, register
from lti_dev_platform.serving import start_platform
from tests.lti_service.tool import ToolProcess, browser_session, free_port


def test_dynamic_registration_then_a_launch_works(tmp_path, built_assignment):
    port = free_port()
    platform = start_platform(f"http://127.0.0.1:{port}", preregistered=False, test_hooks=True)
    tool = ToolProcess(tmp_path / "tool", port=port)
    try:
        tool.start()
        page = register(platform.url, browser_session())
        assert page.status_code == 200 and "Registration complete" in page.text, page.text[:1000]
        registered = requests.get(f"{platform.url}/_test/state", timeout=10).json()["tool"]
        listed = tool.cli("platform", "list")
        assert registered["dynamic"] and platform.url in listed and registered["client_id"] in listed
        assert f"deployments={registered['deployment_id']}" in listed
        response = launch(platform.url, browser_session(), user="student-ada")
        assert response.status_code == 200 and "Download the notebook" in response.text
    finally:
        tool.stop()
        platform.stop()


def test_registration_url_without_a_platform_explains_itself(lms):
    response = requests.get(f"{lms.tool.url}/lti/register", timeout=10)
    assert response.status_code == 400 and "openid_configuration" in response.text


def test_platform_cli_adds_lists_and_removes(tmp_path):
    tool = ToolProcess(tmp_path)
    args = ["--client-id", "c1", "--auth-url", "https://lms.example/auth", "--token-url", "https://lms.example/token"]
    args += ["--jwks-url", "https://lms.example/jwks", "--issuer", "https://lms.example"]
    tool.cli("platform", "add", *args, "--deployment-id", "d1")
    tool.cli("platform", "add", *args, "--deployment-id", "d2")
    (line,) = tool.cli("platform", "list").splitlines()
    assert "https://lms.example" in line and "deployments=d1,d2" in line
    tool.cli("platform", "remove", line.split()[0])
    assert tool.cli("platform", "list") == ""


def test_key_rotation_keeps_the_previous_key_published(lms):
    before = requests.get(f"{lms.tool.url}/lti/jwks.json", timeout=10).json()["keys"]
    new_kid = lms.tool.cli("keys", "rotate").split()[-1]
    after = requests.get(f"{lms.tool.url}/lti/jwks.json", timeout=10).json()["keys"]
    assert [k["kid"] for k in after] == [k["kid"] for k in before] + [new_kid]
    assert all(k["kty"] == "RSA" and "d" not in k for k in after)
    key_files = list((Path(lms.tool.env["DATA_DIR"]) / "keys").glob("*.pem"))
    assert len(key_files) == 2 and all(p.stat().st_mode & 0o777 == 0o600 for p in key_files)
    lms.tool.cli("keys", "remove", before[0]["kid"])
    assert [k["kid"] for k in requests.get(f"{lms.tool.url}/lti/jwks.json", timeout=10).json()["keys"]][-1] == new_kid


def test_headers_allow_framing_only_by_registered_platforms(lms):
    response = requests.get(f"{lms.tool.url}/lti/jwks.json", timeout=10)
    policy = response.headers["Content-Security-Policy"]
    assert f"frame-ancestors 'self' {lms.platform.url}" in policy and "script-src 'self'" in policy
    assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_state_cookie_is_samesite_none_and_secure_behind_a_tls_proxy(tmp_path, lms):
    tool = ToolProcess(tmp_path / "proxied", TRUST_PROXY="1")
    tool.register_platform(lms.platform.url, lms.platform.settings.client_id, lms.platform.settings.deployment_id)
    try:
        tool.start("--no-worker")
        params = {"iss": lms.platform.url, "login_hint": "ada", "target_link_uri": "https://tool.example/lti/launch"}
        headers = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "tool.example", "X-Forwarded-For": "10.0.0.1"}
        response = requests.get(f"{tool.url}/lti/login", params=params, headers=headers, allow_redirects=False)
        assert response.status_code == 302
        assert "redirect_uri=https%3A%2F%2Ftool.example%2Flti%2Flaunch" in response.headers["Location"]
        cookie = response.headers["Set-Cookie"]
        assert "SameSite=None" in cookie and "Secure" in cookie and "HttpOnly" in cookie
    finally:
        tool.stop()
