"""Deep-linking round trip and LTI Dynamic Registration end to end."""

from __future__ import annotations

import requests

from lti_dev_platform import client
from tests.lti_dev_platform.conftest import Running
from tests.lti_dev_platform.fake_tool import ToolKey

LTI = "https://purl.imsglobal.org/spec/lti/claim"
DL = "https://purl.imsglobal.org/spec/lti-dl/claim"


def test_deep_link_adds_a_resource_link_with_line_item(running: Running) -> None:
    result = client.deep_link(running.url, requests.Session())

    assert result.platform_response.status_code == 200, result.platform_response.text
    assert "Decode, part 2" in result.platform_response.text
    settings = running.tool.launches[-1]["claims"][f"{DL}/deep_linking_settings"]
    assert settings["accept_types"] == ["ltiResourceLink"]
    assert settings["accept_multiple"] is False
    added = running.state()["deep_link_items"]
    assert len(added) == 1
    link_id = added[0]["resource_link_id"]
    line_items = {i["id"]: i for i in running.state()["line_items"]}
    assert line_items[added[0]["line_item_id"]]["score_maximum"] == 10
    assert line_items[added[0]["line_item_id"]]["resource_link_id"] == link_id

    client.launch(running.url, requests.Session(), user="student-ada", resource_link=link_id)
    claims = running.tool.launches[-1]["claims"]
    assert claims[f"{LTI}/resource_link"]["title"] == "Decode, part 2"
    assert claims[f"{LTI}/custom"] == {"part": "2", "due_at": "$Canvas.assignment.dueAt.iso8601"}


def test_deep_link_return_rejects_forged_and_replayed_responses(running: Running) -> None:
    session = requests.Session()
    page = client.launch(running.url, session, user="instructor-turing", kind="deeplink")
    claims = running.tool.launches[-1]["claims"]
    return_url = f"{running.url}/deep-link-return"
    forged = running.tool.deep_link_response(claims, key=ToolKey("tool-key-1"))

    assert session.post(return_url, data={"JWT": forged}, timeout=10).status_code == 400
    genuine = client.parse_page(page).forms[0]
    assert client.submit(session, genuine).status_code == 200
    assert client.submit(session, genuine).status_code == 400  # the request's data is answered once
    assert len(running.state()["deep_link_items"]) == 1


def test_dynamic_registration_end_to_end(unregistered: Running) -> None:
    session = requests.Session()
    assert session.get(client.course_launch_url(unregistered.url), timeout=10).status_code == 409
    config = session.get(f"{unregistered.url}/.well-known/openid-configuration", timeout=10).json()
    assert config["registration_endpoint"] == f"{unregistered.url}/register"
    platform_config = config["https://purl.imsglobal.org/spec/lti-platform-configuration"]
    assert {"type": "LtiDeepLinkingRequest"} in platform_config["messages_supported"]

    assert 'name="url"' in session.get(f"{unregistered.url}/register/start", timeout=10).text  # asks for the URL
    tool_page = client.register(unregistered.url, session, f"{unregistered.tool.url}/lti/register")

    assert tool_page.status_code == 200, tool_page.text
    state = unregistered.state()
    assert state["tool"]["client_id"] == unregistered.tool.client_id != "decode-grader-dev"
    assert state["tool"]["dynamic"] is True
    assert len(state["registrations"]) == 1
    resp = client.launch(unregistered.url, session, user="student-grace")
    assert resp.json()["launched"] == "student-grace"
    claims = unregistered.tool.launches[-1]["claims"]
    assert claims["aud"] == unregistered.tool.client_id
    assert claims[f"{LTI}/deployment_id"] == unregistered.tool.deployment_id


def test_registration_endpoint_checks_token_and_metadata(unregistered: Running) -> None:
    tool_url = f"{unregistered.tool.url}/lti/register"
    start = requests.get(f"{unregistered.url}/register/start", params={"url": tool_url}, timeout=10)
    token = client.parse_page(start).iframes[0].split("registration_token=")[1]
    url = f"{unregistered.url}/register"
    bad_body = {"application_type": "native"}

    no_token = requests.post(url, json=bad_body, timeout=10)
    assert no_token.status_code == 401
    bad = requests.post(url, json=bad_body, headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert bad.status_code == 400
    assert bad.json()["error"] == "invalid_client_metadata"
    reused = requests.post(url, json=bad_body, headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert reused.status_code == 401
    assert unregistered.state()["tool"] is None
