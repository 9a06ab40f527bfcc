"""OIDC login -> /auth -> id_token, as a browser drives it through the course page."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import requests

from lti_dev_platform import client
from tests.lti_dev_platform.conftest import Running

LTI = "https://purl.imsglobal.org/spec/lti/claim"
AGS = "https://purl.imsglobal.org/spec/lti-ags"


def test_student_launch_carries_the_lms_claims(running: Running) -> None:
    resp = client.launch(running.url, requests.Session(), user="student-ada")

    assert resp.status_code == 200
    assert resp.json() == {"launched": "student-ada", "message_type": "LtiResourceLinkRequest"}
    launch = running.tool.launches[-1]
    claims = launch["claims"]
    platform_kid = requests.get(f"{running.url}/.well-known/jwks.json", timeout=10).json()["keys"][0]["kid"]
    assert launch["header"]["kid"] == platform_kid
    assert claims["azp"] == "decode-grader-dev"
    assert claims["name"] == "Ada Lovelace"
    assert claims[f"{LTI}/version"] == "1.3.0"
    assert claims[f"{LTI}/deployment_id"] == "1"
    assert claims[f"{LTI}/target_link_uri"] == f"{running.tool.url}/lti/launch"
    assert "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner" in claims[f"{LTI}/roles"]
    assert claims[f"{LTI}/resource_link"] == {"id": "decode-1", "title": "Decode assignment"}
    assert claims[f"{LTI}/context"]["id"] == "decode-101"
    assert claims[f"{LTI}/launch_presentation"]["document_target"] == "iframe"
    assert f"{LTI}/custom" not in claims
    endpoint = claims[f"{AGS}/claim/endpoint"]
    assert sorted(s.rsplit("/", 1)[1] for s in endpoint["scope"]) == [
        "lineitem",
        "lineitem.readonly",
        "result.readonly",
        "score",
    ]
    assert endpoint["lineitem"] == f"{running.url}/ags/decode-101/lineitems/1/lineitem?type_id=1"
    nrps = claims["https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"]
    assert nrps == {
        "context_memberships_url": f"{running.url}/nrps/decode-101/memberships",
        "service_versions": ["2.0"],
    }


def test_due_date_is_sent_as_custom_claim(running: Running) -> None:
    set_due = running.hook("due-date", {"resource_link_id": "decode-1", "due_at": "2030-01-31T23:59:00+00:00"})
    assert set_due.status_code == 200

    client.launch(running.url, requests.Session(), user="student-grace")

    assert running.tool.launches[-1]["claims"][f"{LTI}/custom"] == {"due_at": "2030-01-31T23:59:00+00:00"}


def test_instructor_launch_and_window_variant(running: Running) -> None:
    session = requests.Session()
    first = session.get(
        f"{running.url}/course/decode-101/launch/instructor-turing?kind=resource&resource_link=decode-1&window=1",
        allow_redirects=False,
        timeout=10,
    )
    assert first.status_code == 302
    assert first.headers["Location"].startswith(f"{running.tool.url}/lti/login?")

    resp = client.open_tool(session, first.headers["Location"])

    assert resp.json()["launched"] == "instructor-turing"
    claims = running.tool.launches[-1]["claims"]
    assert claims[f"{LTI}/launch_presentation"]["document_target"] == "window"
    assert "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor" in claims[f"{LTI}/roles"]


def _auth_params(running: Running) -> dict[str, str]:
    """What the fake tool would send to /auth, taken from a real login initiation."""
    page = requests.get(client.course_launch_url(running.url), timeout=10)
    login_url = client.parse_page(page).iframes[0]
    login_params = {k: v[0] for k, v in parse_qs(urlsplit(login_url).query).items()}
    assert login_params["client_id"] == "decode-grader-dev"
    assert login_params["lti_deployment_id"] == "1"
    return {
        "scope": "openid",
        "response_type": "id_token",
        "response_mode": "form_post",
        "prompt": "none",
        "client_id": login_params["client_id"],
        "redirect_uri": f"{running.tool.url}/lti/launch",
        "login_hint": login_params["login_hint"],
        "lti_message_hint": login_params["lti_message_hint"],
        "state": "s1",
        "nonce": "n1",
    }


def test_auth_rejects_what_moodle_rejects(running: Running) -> None:
    good = _auth_params(running)
    assert requests.get(f"{running.url}/auth", params=good, timeout=10).status_code == 200
    bad_variants = {
        "redirect_uri": f"{running.tool.url}/elsewhere",
        "login_hint": "student-grace",
        "nonce": "",
        "response_mode": "query",
        "client_id": "someone-else",
        "lti_message_hint": "forged",
        "scope": "profile",
    }
    for key, value in bad_variants.items():
        resp = requests.post(f"{running.url}/auth", data={**good, key: value}, timeout=10)
        assert resp.status_code == 400, key
        assert "Invalid authentication request" in resp.text


def test_pages_have_one_heading_and_launch_links(running: Running) -> None:
    index = requests.get(running.url + "/", timeout=10).text
    assert index.count("<h1>") == 1
    for target in ("/launch/student-ada", "/launch/student-grace", "/launch/instructor-turing", "kind=deeplink"):
        assert target in index
    assert "/register/start" in index and "/gradebook" in index
    assert requests.get(running.url + "/gradebook", timeout=10).text.count("<h1>") == 1
