"""The tool contacts only the platform's registered origins, whatever URLs a launch carries, and never
shows what a platform answered.

The dev platform sends launches whose line item and roster URLs point at a "school" host (127.0.0.3),
as Canvas's point at the school's domain rather than its issuer. Until the operator lists that host
(`platform update --service-origin`) the tool must not contact it; once listed, its error answers reach
nobody but as "HTTP 503", and its redirect to a third host (127.0.0.4) is not followed.
"""

from __future__ import annotations

import pytest
from flask import Flask, make_response, redirect, request

from lti_service.lti.outbound import fetch, origin
from testbed.lms import start_lms
from testbed.submissions import notebook_bytes
from testbed.tool import RecordingServer, wait_for

SECRET = "SECRET-BODY-4f1c"


class School(RecordingServer):
    """Answers 503 with a body that must never be shown; sends roster requests to `elsewhere`."""

    def __init__(self, host: str, elsewhere: str) -> None:
        self.elsewhere = elsewhere
        super().__init__(host)

    def routes(self, app: Flask) -> None:
        def answer(path: str):
            if path.startswith("nrps/"):
                return redirect(f"{self.elsewhere}/{path}", 302)
            return f"<h1>{SECRET}</h1>", 503

        app.add_url_rule("/<path:path>", "any", answer, methods=["GET", "POST"])


@pytest.fixture(scope="module")
def setup(tmp_path_factory, built_assignment):
    elsewhere = RecordingServer("127.0.0.4")
    school = School("127.0.0.3", elsewhere.url)
    lms = start_lms(tmp_path_factory.mktemp("outbound"))
    lms.hook("service-base", url=school.url)
    yield lms, school, elsewhere
    lms.tool.stop()
    lms.platform.stop()
    school.stop()
    elsewhere.stop()


def graded_and_passed_back(lms, user: str, link: str, state: str) -> None:
    student = lms.open(user, link)
    student.upload(notebook_bytes())
    student.wait_graded(1)
    wait_for(lambda: student.attempts()[0]["gradebook_state"] == state)
    assert SECRET not in student.session.get(student.url).text


def dashboard(lms, link: str) -> str:
    html = lms.open("instructor-turing", link).html
    assert SECRET not in html
    return html


def row(html: str, user: str) -> str:
    return html.split(f'data-user="{user}">', 1)[1].split("</tr>", 1)[0]


def test_service_urls_off_the_platforms_origins_are_never_contacted(setup):
    lms, school, elsewhere = setup
    graded_and_passed_back(lms, "student-ada", "elsewhere-1", "failed")
    html = dashboard(lms, "elsewhere-1")
    refusal = f"{school.url} is not one of the platform&#39;s registered origins"
    assert refusal in html.split('id="roster"', 1)[0]  # the roster was not read
    assert refusal in row(html, "student-ada")  # nor the score sent
    assert school.requests == [] and elsewhere.requests == []


def test_a_listed_service_origin_is_used_but_its_answers_stay_private(setup):
    lms, school, elsewhere = setup
    platform_id = lms.tool.cli("platform", "list").split()[0]
    lms.tool.cli("platform", "update", platform_id, "--service-origin", school.url)
    graded_and_passed_back(lms, "student-grace", "elsewhere-2", "retrying")
    html = dashboard(lms, "elsewhere-2")
    assert "the platform answered HTTP 503 (try" in row(html, "student-grace")
    assert f"{elsewhere.url} is not one of the platform&#39;s registered origins" in html  # the roster's redirect
    # The line item is read first; its 503 stops the send (a guessed maximum could post a wrong score).
    assert "GET /nrps/decode-101/memberships" in school.requests and "GET /ags/" in " ".join(school.requests)
    assert elsewhere.requests == []
    assert SECRET not in lms.tool.log.read_text()


class CookieJar(RecordingServer):
    """Sets a cookie on every answer and notes each request's client port and Cookie header."""

    def __init__(self, host: str) -> None:
        self.seen: list[tuple[str, str | None]] = []
        super().__init__(host)

    def routes(self, app: Flask) -> None:
        def answer(path: str):
            self.seen.append((request.environ["REMOTE_PORT"], request.headers.get("Cookie")))
            response = make_response("{}")
            response.set_cookie("tracker", path)
            return response

        app.add_url_rule("/<path:path>", "any", answer, methods=["GET", "POST"])


def test_requests_to_a_platform_share_one_connection_and_send_no_cookies():
    """A class's scores cost one TLS handshake with the platform, not one each; what one answer sets as a
    cookie is never sent back."""
    platform = CookieJar("127.0.0.5")
    try:
        for path in ("token", "scores", "scores"):
            assert fetch("post", f"{platform.url}/{path}", origins=[origin(platform.url)], timeout=5).status == 200
        assert len({port for port, _ in platform.seen}) == 1
        assert [cookie for _, cookie in platform.seen] == [None, None, None]
    finally:
        platform.stop()
