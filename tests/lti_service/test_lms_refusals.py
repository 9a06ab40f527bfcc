"""Scores Canvas and Moodle refuse for a reason of the course's own (lti/quirks.py), reproduced by the dev
platform: an unpublished assignment holds scores until the teacher publishes it, a concluded student or a
deleted column stops them, a stale timestamp is retried; staff are told what happened and what to do, in
their words. And every score carries its attempt's submission time (Canvas's submitted_at)."""

from __future__ import annotations

import datetime as dt
import json
import re
import sqlite3
from pathlib import Path

import pytest

from lti_service.config import Config
from lti_service.db import Passback, utcnow
from lti_service.gradebook import passback
from lti_service.lti.quirks import BODY_READ, REASON, Refusal, recorded_refusal, score_refusal
from lti_service.platforms import add_platform
from lti_service.services import Services
from testbed.lms import Lms, StudentPage, in_gradebook, roster_rows, staff_post
from testbed.submissions import notebook_bytes
from testbed.tool import wait_for

TOOL_ENV = {"PASSBACK_BACKOFF": "0.05", "PASSBACK_MAX_BACKOFF": "0.2", "WORKER_POLL": "0.25"}
CANVAS_STALE = (
    "Provided timestamp of 2026-12-01T10:00:00.000Z before last updated timestamp of 2026-12-01T10:00:01.000Z"
)


def canvas(message: str, kind: str = "unprocessable_entity") -> bytes:
    """A refusal's body as Canvas renders it."""
    return json.dumps({"errors": {"type": kind, "message": message}}).encode()


@pytest.mark.parametrize(
    ("status", "body", "refusal"),
    [
        (422, canvas("This assignment is still unpublished"), Refusal.UNPUBLISHED),
        (422, canvas("User not found in course or is not a student"), Refusal.STUDENT_GONE),
        (400, b'{"status": 400, "reason": "Incorrect score received{\\"userId\\": \\"7\\"}"}', Refusal.NOT_GRADABLE),
        (409, b"Refusing score with an earlier timestamp for item 3 and user 7", Refusal.STALE_TIMESTAMP),
        (400, canvas(CANVAS_STALE, "bad_request"), Refusal.STALE_TIMESTAMP),
        (404, b"Not Found: Grade item 3 doesn't exist.", Refusal.COLUMN_DELETED),
        (422, canvas("ScoreMaximum not supplied when ScoreGiven present."), None),
        (400, canvas("This assignment is still unpublished"), None),  # the right words with another status
        (422, b" " * BODY_READ + canvas("This assignment is still unpublished"), None),  # past what is read
        (500, b"", None),
    ],
)
def test_each_known_refusal_is_told_by_its_status_and_wording(status, body, refusal):
    assert score_refusal(status, body) is refusal


def test_a_rows_recorded_reason_names_its_refusal_even_after_giving_up():
    assert recorded_refusal(None) is None and recorded_refusal("the platform answered HTTP 503") is None
    reason = "Canvas does not accept scores while the assignment is unpublished; gave up after 72 h"
    assert recorded_refusal(reason) is Refusal.UNPUBLISHED


def dashboard(staff: StudentPage) -> str:
    return staff.session.get(staff.url, timeout=10).text


def alert(html: str, refusal: str) -> str:
    """The dashboard's alert about one refusal ("" when there is none)."""
    found = re.search(rf'id="grades-refused-{refusal}"[^>]*>([^<]*)', html)
    return found.group(1) if found else ""


def created_at(lms: Lms, link: str, user: str) -> str:
    """The attempt's upload time as the tool sends it (ISO 8601 UTC, milliseconds)."""
    database = sqlite3.connect(Path(lms.tool.env["DATA_DIR"]) / "decode-grader.db", timeout=10)
    try:
        query = "SELECT created_at FROM attempts WHERE resource_link_id = ? AND user_id = ?"
        (value,) = database.execute(query, (link, user)).fetchone()
    finally:
        database.close()
    return dt.datetime.fromisoformat(value).isoformat(timespec="milliseconds") + "Z"


def submitted_at(post: dict) -> str | None:
    return (post.get("https://canvas.instructure.com/lti/submission") or {}).get("submitted_at")


def test_an_unpublished_assignment_holds_scores_until_the_teacher_publishes_it(lms):
    """Canvas's 422 for an unpublished assignment: no failure, no outage alert; staff are told to publish,
    the student is not blamed, the score is tried again by time, and lands once published, with no re-send,
    as submitted when the student uploaded it."""
    link = "unpublished"
    lms.hook("resource-link", resource_link_id=link, line_item=True)
    lms.hook("publish", resource_link_id=link, published=False)
    ada, staff = lms.open("student-ada", link), lms.open("instructor-turing", link)
    try:
        ada.upload(notebook_bytes())
        wait_for(lambda: len(lms.score_posts("student-ada", link)) >= 3)  # tried again, not given up
        (attempt,) = ada.attempts()
        assert attempt["gradebook_state"] == "held" and "sent once it does" in attempt["gradebook"]
        html = dashboard(staff)
        assert alert(html, "unpublished") == (
            "Canvas does not accept scores while this assignment is unpublished. Publish it in Canvas: the score "
            "waiting here is sent within a few minutes."
        )
        row = roster_rows(html)["student-ada"]
        assert "unpublished" in row and 'id="grades-waiting"' not in html
        assert "still unpublished" not in html and "HTTP" not in row  # neither the platform's words nor jargon
    finally:
        lms.hook("publish", resource_link_id=link, published=True)
    assert wait_for(lambda: lms.gradebook(link)) == {"student-ada": in_gradebook(16)}
    posts = lms.score_posts("student-ada", link)
    assert {p["status"] for p in posts[:-1]} == {422} and posts[-1]["status"] == 200
    assert {submitted_at(p) for p in posts} == {created_at(lms, link, "student-ada")}
    assert wait_for(lambda: ada.attempts()[0]["gradebook_state"] == "sent")
    assert not alert(dashboard(staff), "unpublished")


def test_a_success_elsewhere_does_not_hurry_scores_held_for_the_teacher(tmp_path):
    """A score accepted on a platform (a school's whole Canvas) makes its rows waiting out an outage due at
    once, and the rows held back by an unpublished assignment only when it was accepted on their column."""
    services = Services.from_config(Config(data_dir=tmp_path))
    platform = add_platform(services.db, "https://canvas.example", "c", ["1"], "https://canvas.example/auth",
                            "https://canvas.example/token", "https://canvas.example/jwks")  # fmt: skip
    later = utcnow() + dt.timedelta(hours=1)
    rows = {  # user -> (column, last reason)
        "held": ("column-a", REASON[Refusal.UNPUBLISHED]),
        "held-on-the-accepting-column": ("column-b", REASON[Refusal.UNPUBLISHED]),
        "outage": ("column-a", "the platform answered HTTP 503"),
    }
    with services.db.session() as session:
        for user, (column, reason) in rows.items():
            session.add(Passback(platform_id=platform.id, context_id="c", resource_link_id=column, user_id=user,
                                 lineitem_url=column, status="pending", tries=3, failing_since=utcnow(),
                                 next_try_at=later, last_error=reason))  # fmt: skip
    passback._retry_waiting_now(services, platform.id, "column-b")
    with services.db.session() as session:
        due = {row.user_id: row.next_try_at < later for row in session.query(Passback)}
    assert due == {"held": False, "held-on-the-accepting-column": True, "outage": True}


def test_a_concluded_student_is_not_retried_and_staff_read_why(lms):
    """Canvas's 422 for a concluded enrolment stops the row at once; the dashboard names the student and
    says their attempts stay; once the enrolment is active again, Re-send sends the score, dated as uploaded."""
    link = "concluded"
    lms.hook("resource-link", resource_link_id=link, line_item=True)
    grace, staff = lms.open("student-grace", link), lms.open("instructor-turing", link)
    lms.hook("enrolment", user="student-grace", status="concluded")
    try:
        grace.upload(notebook_bytes())
        assert wait_for(lambda: grace.attempts()[0]["gradebook_state"] == "failed")
        assert [p["status"] for p in lms.score_posts("student-grace", link)] == [422]
        html = dashboard(staff)
        assert alert(html, "student-gone").startswith(
            "Canvas no longer lists Grace Hopper in the course (their enrolment is concluded or inactive), so "
            "their score cannot be sent. Their attempts stay here;"
        )
        rows = roster_rows(html)
        assert "Canvas no longer lists this student" in rows["student-grace"]  # off the roster, not off the board
        assert "not submitted" in rows["student-ada"]
        assert "User not found" not in html and "HTTP" not in rows["student-grace"]
    finally:
        lms.hook("enrolment", user="student-grace", status="active")
    staff_post(staff, "resend")
    assert wait_for(lambda: lms.gradebook(link)) == {"student-grace": in_gradebook(16)}
    uploaded = created_at(lms, link, "student-grace")
    assert submitted_at(lms.score_posts("student-grace", link)[-1]) == uploaded
    state = lms.state()
    (column,) = [i["id"] for i in state["line_items"] if i["resource_link_id"] == link]
    assert [s["submitted_at"] for s in state["scores"] if s["line_item_id"] == column] == [uploaded]


def test_a_deleted_column_stops_the_scores_and_says_so(lms):
    link = "deleted-column"
    lms.hook("resource-link", resource_link_id=link, line_item=True)
    ada, staff = lms.open("student-ada", link), lms.open("instructor-turing", link)
    lms.hook("delete-line-item", resource_link_id=link)
    ada.upload(notebook_bytes())
    assert wait_for(lambda: ada.attempts()[0]["gradebook_state"] == "failed")
    html = dashboard(staff)
    assert alert(html, "column-deleted").startswith(
        "The gradebook column of this assignment no longer exists in the course, so 1 score cannot be sent to it."
    )
    assert "column of this assignment no longer exists" in roster_rows(html)["student-ada"]


@pytest.mark.parametrize(
    ("status", "message", "state", "statuses", "says"),
    [
        (400, "Incorrect score received", "failed", [400], "Moodle does not grade this student"),
        (400, CANVAS_STALE, "sent", [400, 200], "sent 16 at"),
    ],
    ids=["moodle-not-gradable", "canvas-stale-timestamp"],
)
def test_moodles_refusal_stops_and_a_stale_timestamp_is_retried(lms, status, message, state, statuses, says):
    link = f"refused-{state}"
    lms.hook("resource-link", resource_link_id=link, line_item=True)
    ada, staff = lms.open("student-ada", link), lms.open("instructor-turing", link)
    lms.hook("fail-scores", count=1, status=status, message=message)
    ada.upload(notebook_bytes())
    assert wait_for(lambda: ada.attempts()[0]["gradebook_state"] == state)
    posts = lms.score_posts("student-ada", link)
    assert [p["status"] for p in posts] == statuses
    if len(posts) == 2:
        assert posts[1]["timestamp"] > posts[0]["timestamp"]
    assert says in roster_rows(dashboard(staff))["student-ada"]
