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
    assert claims[f"{LTI}/custom"] == {"due_at": "$Canvas.assignment.dueAt.iso8601"}  # unexpanded: no due date
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


def test_due_date_is_sent_by_canvas_variable_substitution(running: Running) -> None:
    """The tool's custom field due_at=$Canvas.assignment.dueAt.iso8601 becomes the link's due date in UTC."""
    set_due = running.hook("due-date", {"resource_link_id": "decode-1", "due_at": "2030-02-01T01:59:00+02:00"})
    assert set_due.status_code == 200

    client.launch(running.url, requests.Session(), user="student-grace")

    assert running.tool.launches[-1]["claims"][f"{LTI}/custom"] == {"due_at": "2030-01-31T23:59:00Z"}


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
    """What the fake tool would send to /auth, taken from a real login initiation (a fresh hint each time)."""
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
    assert requests.get(f"{running.url}/auth", params=_auth_params(running), timeout=10).status_code == 200
    bad_variants = {
        "redirect_uri": (f"{running.tool.url}/elsewhere", "is not one of the registered"),
        "login_hint": ("student-grace", "login_hint does not match"),
        "nonce": ("", "nonce is required"),
        "response_mode": ("query", "response_mode must be form_post"),
        "client_id": ("someone-else", "unknown client_id"),
        "lti_message_hint": ("forged", "lti_message_hint is missing or unknown"),
        "scope": ("profile", "scope must include openid"),
    }
    for key, (value, reason) in bad_variants.items():
        resp = requests.post(f"{running.url}/auth", data={**_auth_params(running), key: value}, timeout=10)
        assert resp.status_code == 400, key
        assert "Invalid authentication request" in resp.text and reason in resp.text, key


def test_message_hints_are_single_use_like_moodles(running: Running) -> None:
    params = _auth_params(running)
    assert requests.post(f"{running.url}/auth", data=params, timeout=10).status_code == 200
    replayed = requests.post(f"{running.url}/auth", data={**params, "state": "s2", "nonce": "n2"}, timeout=10)
    assert replayed.status_code == 400 and "lti_message_hint is missing or unknown" in replayed.text


def test_pages_have_one_heading_and_launch_links(running: Running) -> None:
    index = requests.get(running.url + "/", timeout=10).text
    assert index.count("<h1>") == 1
    for target in ("/launch/student-ada", "/launch/student-grace", "/launch/instructor-turing", "kind=deeplink"):
        assert target in index
    assert "/register/start" in index and "/gradebook" in index
    assert requests.get(running.url + "/gradebook", timeout=10).text.count("<h1>") == 1


def test_platform_storage_is_offered_to_framed_launches(running: Running) -> None:
    """As Canvas: lti_storage_target names a frame of the course page (the login and the launch carry it)."""
    page = requests.get(client.course_launch_url(running.url), timeout=10)
    login_url, storage_frame = client.parse_page(page).iframes
    assert parse_qs(urlsplit(login_url).query)["lti_storage_target"] == ["post_message_forwarding"]
    assert '<iframe name="post_message_forwarding"' in page.text
    frame = requests.get(storage_frame, timeout=10).text
    assert f'data-tool-origin="{running.tool.url}"' in frame and "platform_storage.js" in frame
    script = requests.get(f"{running.url}/static/platform_storage.js", timeout=10)
    assert script.status_code == 200 and "lti.get_data" in script.text

    client.open_tool(requests.Session(), login_url)
    assert running.tool.launches[-1]["form"]["lti_storage_target"] == "post_message_forwarding"

    whole_window = requests.get(client.course_launch_url(running.url) + "&window=1", allow_redirects=False)
    assert "lti_storage_target" not in whole_window.headers["Location"]  # no course page around it to ask


def test_platform_storage_can_be_off_or_the_course_page_itself(running: Running) -> None:
    assert running.hook("config", {"storage_target": None}).json()["storage_target"] is None
    page = requests.get(client.course_launch_url(running.url), timeout=10)
    assert len(client.parse_page(page).iframes) == 1 and "lti_storage_target" not in page.text
    running.hook("config", {"storage_target": "_parent"})
    page = requests.get(client.course_launch_url(running.url), timeout=10)
    assert "lti_storage_target=_parent" in page.text and "platform_storage.js" in page.text
    assert running.hook("config", {"storage_target": 3}).status_code == 400
    assert running.hook("config", {"no_such_setting": True}).status_code == 400
