"""Every way a launch can be wrong, crafted by the test and refused with a clear 4xx page and a log line.

The test is its own platform here (a key, a JWKS served on 127.0.0.2), so it can sign exactly the bad
message each case needs; the dev platform covers the good paths.
"""

from __future__ import annotations

import datetime as dt
import re
import time
import uuid
from urllib.parse import parse_qs, urljoin, urlsplit

import pytest
import requests
from sqlalchemy import update

from lti_service.db import Launch
from testbed.tool import ToolProcess, browser_session
from tests.lti_service.signing_platform import (
    CLIENT_ID,
    LTI,
    SigningPlatform,
    login,
    login_params,
    post_launch,
    registered_tool,
    rsa_pem,
)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    platform = SigningPlatform()
    tool = registered_tool(platform, tmp_path_factory.mktemp("security-tool"))
    yield platform, tool
    tool.stop()
    platform.server.stop()


def test_a_valid_launch_opens_the_assignment(setup):
    platform, tool = setup
    session, state, nonce = login(tool, platform)
    response = post_launch(tool, session, state, platform.token(nonce, tool.url))
    assert response.status_code == 303 and "/a/" in response.headers["Location"]
    page = session.get(tool.url + response.headers["Location"])
    assert page.status_code == 200 and "Download the notebook" in page.text


def test_a_launch_is_bound_to_the_browser_that_launched_it(setup):
    """A launch's URLs are kept by the browser (history for a launch in a new window, the downloads list for the
    notebook): on a shared computer they must open nothing for the next person, nor in any other browser."""
    platform, tool = setup
    session, state, nonce = login(tool, platform)
    response = post_launch(tool, session, state, platform.token(nonce, tool.url))
    page_path = response.headers["Location"]
    (cookie,) = [c for c in response.raw.headers.getlist("Set-Cookie") if c.startswith("lti1p3-launch-")]
    for attribute in ("HttpOnly", "Secure", "SameSite=None", "Partitioned", f"Path={page_path}"):
        assert attribute in cookie, cookie
    assert "Max-Age" not in cookie and "Expires" not in cookie, "a session cookie: it goes with the browser"
    mine = session.get(tool.url + page_path)
    assert mine.status_code == 200 and "Download the notebook" in mine.text
    assert mine.headers["Cache-Control"] == "no-store", "nothing of the student's left in the browser's cache"

    next_person = requests.Session()  # the URLs from the history or the downloads list, without the cookie
    for path in ("", "/student", "/notebook", "/attempts.json"):
        assert next_person.get(f"{tool.url}{page_path}{path}").status_code == 404, path
    upload = {"notebook": ("decode.ipynb", b"{}", "application/x-ipynb+json")}
    assert next_person.post(f"{tool.url}{page_path}/upload", files=upload).status_code == 404
    forged = requests.Session()
    name = cookie.split("=", 1)[0]
    forged.cookies.set(name, "x" * 43, path=page_path)
    assert forged.get(f"{tool.url}{page_path}").status_code == 404


def test_login_by_post_works_too(setup):
    platform, tool = setup
    session = browser_session()
    response = session.post(f"{tool.url}/lti/login", data=login_params(tool, platform))
    assert response.status_code == 404 and response.url.startswith(f"{platform.issuer}/auth?")  # (no /auth here)


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


def test_a_login_with_an_unknown_or_used_state_is_refused(setup):
    platform, tool = setup
    assert_refused(tool, requests.get(f"{tool.url}/lti/login/continue", params={"state": "forged"}), "login_expired")
    session, state, nonce = login(tool, platform)
    assert_refused(tool, session.get(f"{tool.url}/lti/login/continue", params={"state": state}), "login_expired")
    assert_refused(tool, post_launch(tool, session, "forged", platform.token(nonce, tool.url)), "replayed_nonce")


def test_a_launch_must_carry_its_own_logins_nonce(setup):
    platform, tool = setup
    session, state, _ = login(tool, platform)
    _, _, other_nonce = login(tool, platform)
    assert_refused(tool, post_launch(tool, session, state, platform.token(other_nonce, tool.url)), "replayed_nonce")


def test_blocked_cookies_lead_to_a_new_window_before_the_hint_is_used(setup):
    """The cookie check happens before the platform sees the login: the iframe (a browser that keeps no
    cookie for the tool there) offers a new window, which sends the unused hint to the platform, once."""
    platform, tool = setup
    iframe = requests.Session()  # sends no Secure cookie over http: the cookie is lost, as in a blocking browser
    response = iframe.get(f"{tool.url}/lti/login", params=login_params(tool, platform))
    assert response.status_code == 200 and "Open the assignment in a new window" in response.text, response.text
    assert not [r for r in response.history if r.headers["Location"].startswith(platform.issuer)]
    window_url = urljoin(tool.url, page_link(response.text, "new-window"))

    new_window = browser_session()  # the tool is first-party there: its cookie is kept
    response = new_window.get(window_url, allow_redirects=False)
    assert response.status_code == 302 and "Partitioned" in response.headers["Set-Cookie"]
    response = new_window.get(urljoin(tool.url, response.headers["Location"]), allow_redirects=False)
    query = parse_qs(urlsplit(response.headers["Location"]).query)
    assert response.headers["Location"].startswith(f"{platform.issuer}/auth?") and query["lti_message_hint"] == [
        "hint-1"
    ]
    assert (
        post_launch(tool, new_window, query["state"][0], platform.token(query["nonce"][0], tool.url)).status_code == 303
    )

    again = new_window.get(window_url, allow_redirects=False)  # a second click must not replay the used hint
    assert_refused(tool, again, "login_expired")


def test_a_launch_that_lost_its_cookie_never_offers_to_replay_the_hint(setup):
    platform, tool = setup
    _, state, nonce = login(tool, platform)
    response = post_launch(tool, requests.Session(), state, platform.token(nonce, tool.url))
    assert response.status_code == 400 and "login cookie inside the course page" in response.text
    assert "hint-1" not in response.text and "/lti/login" not in response.text


def test_platform_storage_stands_in_for_the_cookie(setup):
    """No cookie, but the platform offers storage: the launch opens only once the page confirms the state."""
    platform, tool = setup
    iframe = requests.Session()
    response = iframe.get(f"{tool.url}/lti/login", params=login_params(tool, platform, lti_storage_target="_parent"))
    assert response.status_code == 200 and 'data-action="put"' in response.text, response.text
    fields = data_attributes(response.text)
    assert (fields["target"], fields["origin"]) == ("_parent", platform.issuer)
    assert fields["key"] == f"state-{fields['value']}"
    response = iframe.get(urljoin(tool.url, fields["next"]), allow_redirects=False)  # after lti.put_data
    query = parse_qs(urlsplit(response.headers["Location"]).query)
    state, nonce = query["state"][0], query["nonce"][0]
    assert state == fields["value"] and query["lti_message_hint"] == ["hint-1"]

    launch = post_launch(tool, iframe, state, platform.token(nonce, tool.url))
    assert launch.status_code == 200 and 'data-action="check"' in launch.text  # not opened yet
    check = data_attributes(launch.text)
    assert (check["key"], check["value"], check["origin"]) == (f"state-{state}", state, platform.issuer)
    verify = urljoin(tool.url, check["next"])
    assert iframe.post(verify, data={"state": state}).status_code == 403  # a form from anywhere: refused
    cross_site = {"X-LTI-Storage-Check": "1", "Sec-Fetch-Site": "cross-site"}
    assert iframe.post(verify, data={"state": state}, headers=cross_site).status_code == 403
    confirmed = iframe.post(verify, data={"state": state}, headers={"X-LTI-Storage-Check": "1"})
    assert confirmed.status_code == 200, confirmed.text
    page = iframe.get(urljoin(tool.url, confirmed.json()["url"]))
    assert page.status_code == 200 and "Download the notebook" in page.text
    again = iframe.post(verify, data={"state": state}, headers={"X-LTI-Storage-Check": "1"})
    assert_refused(tool, again, "login_expired")


def storage_launch(tool, platform, **claims) -> tuple[requests.Session, str]:
    """A launch confirmed through the platform's storage (a frame that keeps no cookie); its first page's URL."""
    frame = requests.Session()
    response = frame.get(f"{tool.url}/lti/login", params=login_params(tool, platform, lti_storage_target="_parent"))
    fields = data_attributes(response.text)
    query = parse_qs(
        urlsplit(frame.get(urljoin(tool.url, fields["next"]), allow_redirects=False).headers["Location"]).query
    )
    state, nonce = query["state"][0], query["nonce"][0]
    check = data_attributes(post_launch(tool, frame, state, platform.token(nonce, tool.url, **claims)).text)
    confirmed = frame.post(
        urljoin(tool.url, check["next"]), data={"state": state}, headers={"X-LTI-Storage-Check": "1"}
    )
    assert confirmed.status_code == 200, confirmed.text
    return frame, urljoin(tool.url, confirmed.json()["url"])


INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"


def test_staff_pages_of_a_launch_without_a_cookie_open_only_in_a_window_of_their_own(setup):
    """Course staff launched through the platform's storage (Canvas in Safari): the frame shows no staff page,
    only the offer of a first-party window; that window is bound to its browser, once, and every URL of the
    launch (pages, downloads) opens nothing in any other browser, even with the page's form token."""
    platform, tool = setup
    frame, url = storage_launch(tool, platform, sub="teacher-storage", **{LTI + "roles": [INSTRUCTOR]})
    offer = frame.get(url)
    assert offer.status_code == 403 and 'id="staff-window"' in offer.text and "Gradebook" not in offer.text
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', offer.text).group(1)
    for path in ("", "/staff/written", "/staff/insights", "/student", "/attempts.json"):
        elsewhere = requests.get(url + path, timeout=10)
        assert elsewhere.status_code in (403, 404), path
        assert "teacher-storage" not in elsewhere.text and "Download scores" not in elsewhere.text

    assert requests.post(f"{url}/window", data={"csrf_token": "forged"}, timeout=10).status_code == 400
    window = browser_session()
    opened = window.post(f"{url}/window", data={"csrf_token": csrf}, allow_redirects=False)
    assert opened.status_code == 303 and "Partitioned" in opened.headers["Set-Cookie"]
    dashboard = window.get(urljoin(tool.url, opened.headers["Location"]))
    assert dashboard.status_code == 200 and "Download scores" in dashboard.text
    assert window.post(f"{url}/staff/scores.csv", data={"csrf_token": csrf}).status_code == 200

    thief = requests.Session()  # the same URLs and the form's token, in another browser: nothing
    assert thief.post(f"{url}/window", data={"csrf_token": csrf}, allow_redirects=False).status_code == 404
    for path in ("", "/staff/written"):
        assert thief.get(url + path, timeout=10).status_code == 404
    assert thief.post(f"{url}/staff/scores.csv", data={"csrf_token": csrf}).status_code == 404
    assert frame.get(url).status_code == 404  # the frame itself: the launch is the window's now


def test_a_late_window_for_staff_binds_nothing(setup):
    """The offer works only soon after the launch: a launch's URL found later in a history binds nothing."""
    platform, tool = setup
    frame, url = storage_launch(tool, platform, sub="teacher-late", **{LTI + "roles": [INSTRUCTOR]})
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', frame.get(url).text).group(1)
    launch_id = url.rstrip("/").rsplit("/", 1)[1]
    services = tool.services()
    try:
        with services.db.session() as session:
            session.execute(update(Launch).where(Launch.id == launch_id).values(created_at=dt.datetime(2000, 1, 1)))
    finally:
        services.db.engine.dispose()
    late = frame.get(url)
    assert late.status_code == 403 and 'id="staff-window"' not in late.text and "too long ago" in late.text
    assert browser_session().post(f"{url}/window", data={"csrf_token": csrf}).status_code == 404


def test_a_learner_with_the_learner_instructor_sub_role_gets_no_staff_page(setup):
    platform, tool = setup
    roles = [f"{LIS}membership#Learner", f"{LIS}membership/Learner#Instructor"]
    session, state, nonce = login(tool, platform)
    launch = post_launch(
        tool, session, state, platform.token(nonce, tool.url, sub="learner-ta", **{LTI + "roles": roles})
    )
    url = tool.url + launch.headers["Location"]
    page = session.get(url)
    assert page.status_code == 200 and "Download the notebook" in page.text and "Download scores" not in page.text
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
    for path in ("/staff/written", "/staff/insights", "/staff/attempts/1"):
        assert session.get(url + path).status_code == 403, path
    for path in ("/staff/scores.csv", "/staff/late-days", "/staff/settings"):  # with the page's own token
        assert session.post(url + path, data={"csrf_token": csrf, "late_days": "9"}).status_code == 403, path


LIS = "http://purl.imsglobal.org/vocab/lis/v2/"


def page_link(html: str, element_id: str) -> str:
    return html.split(f'id="{element_id}" href="', 1)[1].split('"', 1)[0].replace("&amp;", "&")


def data_attributes(html: str) -> dict[str, str]:
    """The data-* attributes of the platform storage element, unescaped."""
    element = html.split('id="platform-storage"', 1)[1].split(">", 1)[0]
    return {name: value.replace("&amp;", "&") for name, value in re.findall(r'data-([\w-]+)="([^"]*)"', element)}


def assert_refused(tool: ToolProcess, response: requests.Response, code: str) -> None:
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:500])
    assert "For your LMS administrator" in response.text and f"<code>{code}</code>" in response.text
    assert "Traceback" not in response.text
    refusals = [e for e in tool.log_events() if e.get("event") == "launch_refused"]
    assert refusals and refusals[-1]["code"] == code
