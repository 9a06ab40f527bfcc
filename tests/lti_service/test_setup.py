"""Getting the tool into an LMS and keeping it healthy: dynamic registration, the CLI, keys, headers."""

from __future__ import annotations

from pathlib import Path

import requests

from lti_dev_platform.client import launch, register
from lti_dev_platform.serving import start_platform
from testbed.tool import ToolProcess, browser_session, free_port


def test_dynamic_registration_then_a_launch_works(tmp_path, built_assignment):
    port = free_port()
    platform = start_platform(f"http://127.0.0.1:{port}", preregistered=False, test_hooks=True)
    tool = ToolProcess(tmp_path / "tool", port=port)
    try:
        tool.start()
        invite = tool.cli("platform", "invite", "--url", tool.url, "--name", "Test LMS").splitlines()[0]
        page = register(platform.url, browser_session(), invite)
        assert page.status_code == 200 and "Registration complete" in page.text, page.text[:1000]
        registered = requests.get(f"{platform.url}/_test/state", timeout=10).json()["tool"]
        listed = tool.cli("platform", "list")
        assert registered["dynamic"] and platform.url in listed and registered["client_id"] in listed
        assert "Test LMS" in listed
        assert f"deployments={registered['deployment_id']}" in listed
        response = launch(platform.url, browser_session(), user="student-ada")
        assert response.status_code == 200 and "Download the notebook" in response.text
    finally:
        tool.stop()
        platform.stop()


def test_registration_url_without_a_platform_explains_itself(lms):
    invite = lms.tool.cli("platform", "invite", "--url", lms.tool.url).splitlines()[0]
    response = requests.get(invite, timeout=10)
    assert response.status_code == 400 and "openid_configuration" in response.text
    assert requests.get(invite, params={"openid_configuration": "ftp://x"}, timeout=10).status_code == 502  # unused


def test_platform_cli_adds_lists_updates_and_removes(tmp_path):
    tool = ToolProcess(tmp_path)
    args = ["--client-id", "c1", "--auth-url", "https://lms.example/auth", "--token-url", "https://lms.example/token"]
    args += ["--jwks-url", "https://lms.example/jwks", "--issuer", "https://lms.example"]
    tool.cli("platform", "add", *args, "--deployment-id", "d1")
    tool.cli("platform", "add", *args, "--deployment-id", "d2")
    (line,) = tool.cli("platform", "list").splitlines()
    assert "https://lms.example" in line and "deployments=d1,d2" in line
    platform_id = line.split()[0]

    moved = [a.replace("https://lms.example/jwks", "https://attacker.example/jwks") for a in args]
    refusal = tool.cli_fails("platform", "add", *moved, "--deployment-id", "d3")
    assert f"platform update {platform_id}" in refusal and "deployments=d1,d2\t" in tool.cli("platform", "list")
    origins = ["--service-origin", "https://school.lms.example/", "--service-origin", "https://files.lms.example:8443"]
    tool.cli("platform", "update", platform_id, "--jwks-url", "https://lms.example/keys", *origins)
    (line,) = tool.cli("platform", "list").splitlines()
    assert line.endswith("service_origins=https://files.lms.example:8443,https://school.lms.example")
    assert "not http(s) URLs: ftp://x" in tool.cli_fails(
        "platform", "update", platform_id, "--service-origin", "ftp://x"
    )
    assert "no platform with id 99" in tool.cli_fails("platform", "update", "99", "--name", "x")

    tool.cli("platform", "remove", platform_id)
    assert tool.cli("platform", "list") == ""


def test_platform_invite_prints_a_single_use_url(tmp_path):
    tool = ToolProcess(tmp_path)
    assert "--url" in tool.cli_fails("platform", "invite")
    url, note = tool.cli("platform", "invite", "--url", "https://t.example/", "--expires", "2d").splitlines()
    assert url.startswith("https://t.example/lti/register/") and len(url.rsplit("/", 1)[1]) >= 40
    assert "works once" in note


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
        cookie = response.headers["Set-Cookie"]
        assert all(attribute in cookie for attribute in ("SameSite=None", "Secure", "HttpOnly", "Partitioned"))
        name, value = cookie.split(";", 1)[0].split("=", 1)
        onward = requests.get(  # the cookie check, then on to the platform
            tool.url + response.headers["Location"], headers=headers, cookies={name: value}, allow_redirects=False
        )
        assert "redirect_uri=https%3A%2F%2Ftool.example%2Flti%2Flaunch" in onward.headers["Location"]
    finally:
        tool.stop()
