"""The roster is read from the LMS at most once a minute per link, whoever asks (page views, live polls, CSV
downloads, accommodations, several web requests at once), on demand by staff within a limit, and bounded like
any outside input: a roster past the bounds is refused and the last good one stays in use, with when it was
read. The dev platform counts the roster requests it answers, per course."""

from __future__ import annotations

import datetime as dt
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from html import unescape

import pytest
from sqlalchemy import select, update

from lti_service.db import LinkRoster
from lti_service.lti.nrps import MAX_MEMBERS
from testbed.lms import TEST_ENV, Lms, StudentPage, roster_rows, staff_post
from testbed.tool import ToolProcess, browser_session

READ = "Roster read from your course at"
STUDENTS = {"student-ada", "student-grace"}


def requests_to_the_roster(lms: Lms, context: str) -> int:
    return lms.state()["nrps_requests"].get(context, 0)


def staff(lms: Lms, link: str) -> StudentPage:
    """Course staff's dashboard of `link`, in a course of its own (the platform counts per course)."""
    return lms.open("instructor-turing", link, context_id=link)


def dashboard(page: StudentPage) -> str:
    response = page.session.get(page.url, timeout=30)
    assert response.status_code == 200, response.text[:500]
    return unescape(response.text)


def roster_read_ago(lms: Lms, link: str, seconds: float) -> None:
    """Make the link's kept roster (and its last request) `seconds` older, as if that much time had passed."""
    services = lms.tool.services()
    try:
        with services.db.session() as session:
            row = session.scalars(select(LinkRoster).filter_by(resource_link_id=link)).one()
            ago = dt.timedelta(seconds=seconds)
            read_at = row.read_at - ago if row.read_at else None
            session.execute(
                update(LinkRoster).filter_by(id=row.id).values(tried_at=row.tried_at - ago, read_at=read_at)
            )
    finally:
        services.db.engine.dispose()


def problem(html: str) -> str:
    return html.split('id="roster-problem">', 1)[1].split("</p>", 1)[0] if 'id="roster-problem"' in html else ""


def test_a_dashboard_polled_for_ten_seconds_asks_the_lms_once(lms):
    """Page views and live polls every second for ten seconds, and a scores.csv download: one request; the
    next view a minute later asks again."""
    page = staff(lms, "roster-poll")
    for second in range(10):
        if second % 2:
            assert page.session.get(f"{page.url}/staff/live.json", timeout=30).json()["parts"]["roster-rows"]
        else:
            assert "Grace Hopper" in dashboard(page)
        time.sleep(1)  # pacing: a page polling every second, not a wait for anything
    assert "Grace Hopper" in page.download("/staff/scores.csv").text
    assert requests_to_the_roster(lms, "roster-poll") == 1
    roster_read_ago(lms, "roster-poll", 60)
    assert READ in dashboard(page)
    assert requests_to_the_roster(lms, "roster-poll") == 2


def test_two_web_processes_share_the_roster_and_ask_once_at_the_same_moment(lms):
    """A second web process of the same tool (what a larger deployment runs) uses the roster the first read; a
    minute later, a view on each at the same moment, while the platform answers slowly, asks the platform once,
    and both list the students."""
    page = staff(lms, "roster-twice")
    second = ToolProcess(lms.tool.data_dir, **TEST_ENV).start("--no-worker")
    try:
        elsewhere = page.url.replace(lms.tool.url, second.url)
        assert set(roster_rows(unescape(page.session.get(elsewhere, timeout=30).text))) == STUDENTS
        assert requests_to_the_roster(lms, "roster-twice") == 1
        roster_read_ago(lms, "roster-twice", 60)
        lms.hook("config", nrps_delay=1.0)  # the second view comes while the first is asking
        pages = at_once(page, [page.url, elsewhere])
    finally:
        lms.hook("config", nrps_delay=0)
        second.stop()
    assert requests_to_the_roster(lms, "roster-twice") == 2  # the launch's, and one of the two views'
    assert [set(roster_rows(html)) for html in pages] == [STUDENTS, STUDENTS]


def at_once(page: StudentPage, urls: list[str]) -> list[str]:
    """The pages at `urls`, asked for at the same moment by the page's browser, each on its own connection."""
    start = threading.Barrier(len(urls))

    def view(url: str) -> str:
        connection = browser_session()
        connection.cookies.update(page.session.cookies)  # the same browser: its launch cookie
        start.wait()
        return unescape(connection.get(url, timeout=30).text)

    with ThreadPoolExecutor(len(urls)) as pool:
        return list(pool.map(view, urls))


def test_staff_may_have_the_roster_read_again_but_not_over_and_over(lms):
    page = staff(lms, "roster-refresh")
    assert "student-late" not in roster_rows(page.html) and 'id="roster-refresh"' in page.html
    lms.hook("enrol", users=["student-late"])
    try:
        refused = staff_post(page, "roster/refresh")
        assert refused.status_code == 429 and "less than 10 seconds ago" in refused.text
        assert requests_to_the_roster(lms, "roster-refresh") == 1
        assert page.session.post(f"{page.url}/staff/roster/refresh", timeout=30).status_code == 400  # no CSRF token
        roster_read_ago(lms, "roster-refresh", 10)
        refreshed = staff_post(page, "roster/refresh")
    finally:
        lms.hook("enrolment", user="student-late", status="concluded")  # off every other test's roster
    assert refreshed.status_code == 200 and refreshed.url.endswith("#students")
    assert "student-late" in roster_rows(refreshed.text)
    assert requests_to_the_roster(lms, "roster-refresh") == 2
    assert staff_post(page, "roster/refresh").status_code == 429
    assert requests_to_the_roster(lms, "roster-refresh") == 2


@pytest.mark.parametrize(
    ("enrolled", "told"),
    [
        ([f"student-{n:05d}" for n in range(MAX_MEMBERS)], f"it has more than {MAX_MEMBERS:,} members"),
        (["x" * 256], "it has a user id longer than 255 characters"),
    ],
    ids=["many members", "a long user id"],
)
def test_a_roster_past_the_bounds_is_refused_and_the_last_one_kept(lms, enrolled, told):
    link = f"roster-big-{len(enrolled)}"
    page = staff(lms, link)
    assert set(roster_rows(page.html)) == STUDENTS
    lms.hook("enrol", users=enrolled)  # with Ada, Grace and Alan: past the bounds
    try:
        roster_read_ago(lms, link, 60)
        html = dashboard(page)
    finally:
        lms.hook("reset")  # the class of this test only
    assert told in problem(html) and "Tell the tool's administrator" in problem(html)
    assert "The students listed are those of the roster read at" in problem(html) and READ in html
    assert set(roster_rows(html)) == STUDENTS


def test_accommodations_pick_students_from_the_roster_while_the_lms_is_down(lms):
    """Grace has not submitted: only the roster knows her. The LMS is down past the minute: its last roster
    still counts, and says when it was read."""
    page = staff(lms, "roster-down")
    roster_read_ago(lms, "roster-down", 60)
    lms.hook("outage", status=503, endpoints=["memberships"])
    try:
        saved = staff_post(page, "accommodations", user="student-grace", extra_attempts="1")
        stranger = staff_post(page, "accommodations", user="student-nobody", extra_attempts="1")
    finally:
        lms.hook("outage", status=None)
    assert saved.status_code == 200 and 'id="accommodations-saved"' in saved.text
    html = unescape(saved.text)
    assert "could not be read from your course platform just now" in problem(html) and READ in html
    assert "student-grace" in roster_rows(html)
    assert stranger.status_code == 400 and "student-nobody is not a student of this course" in unescape(stranger.text)
