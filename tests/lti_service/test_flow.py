"""From a launch in the LMS to a score in its gradebook, over real HTTP on loopback."""

from __future__ import annotations

import json
import re

import pytest

from lti_dev_platform.client import BrowserError, deep_link
from testbed.host import sandbox_processes_under
from testbed.lms import choose, in_gradebook
from testbed.submissions import STUDENT_NOTEBOOK, notebook_bytes
from testbed.tool import browser_session, wait_for
from tests.student_view import FINER_THAN_MINUTES, timing_fields

TITLE = "Decode: one token at a time"


def test_deep_linking_creates_the_gradebook_column(lms):
    session = browser_session()
    with pytest.raises(BrowserError):  # the form as served chooses nothing: the page asks for a choice
        deep_link(lms.platform.url, session, user="instructor-turing", context_id="course-dl")
    result = deep_link(
        lms.platform.url, session, user="instructor-turing", context_id="course-dl", choose=choose(TITLE)
    )
    assert "Add an assignment" not in result.tool_response.text  # the choice was made and sent back
    assert result.platform_response.status_code == 200, result.platform_response.text[:1000]
    (item,) = [i for i in lms.state()["line_items"] if i["context_id"] == "course-dl"]
    assert (item["label"], item["score_maximum"], item["resource_id"]) == (TITLE, 18.0, "decode")  # 16 + 2 written


def test_student_uploads_and_the_score_reaches_the_gradebook(lms):
    page = lms.open("student-ada", "decode-1")
    assert TITLE in page.html and "18 points" in page.html and "2 of the 18 points are for written answers" in page.html
    assert '<input type="file" id="notebook" name="notebook"' in page.html
    download = page.session.get(f"{page.url}/notebook")
    assert download.content == STUDENT_NOTEBOOK.read_bytes()

    response = page.upload(notebook_bytes())
    assert response.status_code == 200 and "Attempt 1" in response.text
    (attempt,) = page.wait_graded(1)
    assert (attempt["status"], attempt["score"], attempt["max_score"]) == ("graded", 16.0, 16.0)
    assert {q["name"] for q in attempt["questions"]} >= {"generate", "understanding_answer"}
    assert all("hidden_total" in q and not any(t["hidden"] for t in q["tests"]) for q in attempt["questions"])

    (score,) = wait_for(lambda: lms.scores("student-ada"))
    # the autograded 16 of 18 points, scaled to the line item's 100, until staff grade the written answer
    assert (score["score_given"], score["score_maximum"]) == (round(100 * 16 / 18, 4), 100.0)
    assert (score["activity_progress"], score["grading_progress"]) == ("Submitted", "PendingManual")
    assert wait_for(lambda: page.attempts()[0]["gradebook"] == "sent to the gradebook")


def test_the_student_page_says_nothing_of_how_long_grading_took(lms):
    """The attempts, on the page and in its live data, show the submission time to the minute and no
    duration, CPU time or time of grading (hidden tests' inputs could be inferred from them)."""
    page = lms.open("student-ada", "decode-timing")
    page.upload(notebook_bytes())
    page.wait_graded(1)
    live = page.session.get(f"{page.url}/attempts.json", timeout=10).json()
    assert timing_fields(live) == set()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", live["attempts"][0]["submitted"])
    assert not FINER_THAN_MINUTES.search(page.session.get(page.url, timeout=10).text + json.dumps(live))


def test_the_worker_keeps_sandboxes_started_for_the_next_uploads(lms):
    """WARM_SANDBOXES (2 by default): once it has graded an assignment, the worker keeps two gradings of it
    started (each a grading process and its sandbox, for one grading only), so the next uploads do not wait.
    `serve` runs two worker processes and earlier tests may have had either grade: each that did keeps two
    pairs, the other none. Forked from zygotes, each pair is three processes as sandbox uids: the grading
    process, and the sandbox's init and runner."""
    page = lms.open("student-grace", "decode-warm")
    page.upload(notebook_bytes())
    page.wait_graded(1)

    def warm_per_worker() -> list[int]:
        return sorted(len(sandbox_processes_under(worker)) for worker in lms.tool.worker_pids())

    assert wait_for(lambda: warm_per_worker() in ([0, 6], [6, 6]))


def test_a_worse_later_attempt_does_not_lower_the_gradebook(lms):
    page = lms.open("student-grace", "decode-1")
    page.upload(notebook_bytes())
    page.wait_graded(1)
    page.upload(notebook_bytes("generate_calls_on_prompt"))
    newest, first = page.wait_graded(2)
    assert newest["score"] < first["score"] == 16.0
    posts = wait_for(
        lambda: lms.score_posts("student-grace", "decode-1")[1:] and lms.score_posts("student-grace", "decode-1")
    )
    assert [(p["scoreGiven"], p["status"]) for p in posts] == [(in_gradebook(16), 200), (in_gradebook(16), 200)]
    assert posts[0]["timestamp"] < posts[1]["timestamp"]
    assert lms.scores("student-grace")[0]["score_given"] == in_gradebook(16)


def test_passback_is_retried_after_the_platform_fails_and_each_failure_is_logged(lms):
    lms.hook("resource-link", resource_link_id="decode-retry", line_item=True)
    page = lms.open("student-ada", "decode-retry")
    lms.hook("fail-scores", count=2, status=500)
    page.upload(notebook_bytes())
    page.wait_graded(1)
    assert wait_for(lambda: page.attempts()[0]["gradebook"] == "sent to the gradebook", timeout=30)
    assert [p["status"] for p in lms.score_posts("student-ada", "decode-retry")] == [500, 500, 200]
    lines = [line for line in lms.tool.log.read_text().splitlines() if '"passback_failed"' in line]
    events = [json.loads(line) for line in lines]
    assert [(e["platform"], e["status"], e["reason"], e["try"]) for e in events] == [
        (lms.platform.url, 500, "the platform answered HTTP 500", 1),
        (lms.platform.url, 500, "the platform answered HTTP 500", 2),
    ]
    assert not [line for line in lines if "injected failure" in line]  # the platform's response body stays out


def test_the_same_notebook_twice_makes_one_attempt(lms):
    page = lms.open("student-ada", "decode-twice")
    data = notebook_bytes("recursion")
    page.upload(data)
    page.upload(data)
    assert len(page.wait_graded(1)) == 1


def test_students_see_only_their_own_attempts(lms):
    ada = lms.open("student-ada", "decode-private")
    ada.upload(notebook_bytes(), filename="ada-secret-name.ipynb")
    ada.wait_graded(1)
    grace = lms.open("student-grace", "decode-private")
    assert "ada-secret-name" not in grace.html and grace.attempts() == []


def test_bad_uploads_are_rejected_and_nothing_is_saved(lms):
    page = lms.open("student-grace", "decode-bad")
    cases = {
        b"this is not a notebook": "not JSON",
        b'{"cells": "no"}': "not a Jupyter notebook",
        notebook_bytes().replace(b'"assignment_name": "decode"', b'"assignment_name": "other"'): "for assignment",
    }
    for data, reason in cases.items():
        response = page.upload(data)
        assert response.status_code == 400 and reason in response.text and "Nothing was saved" in response.text
    too_big = page.upload(b" " * (2 * 1024 * 1024))
    assert too_big.status_code == 413 and "too large" in too_big.text
    assert page.upload(notebook_bytes(), csrf="forged").status_code == 400
    assert page.attempts() == []


def test_due_date_from_the_platform_is_shown(lms):
    lms.hook("due-date", resource_link_id="decode-due", due_at="2026-12-24T23:59:00Z")
    page = lms.open("student-ada", "decode-due")
    assert "due <time" in page.html and "2026-12-24T23:59:00Z" in page.html


def test_access_tokens_are_reused_until_they_expire(lms):
    """Each worker process caches its token: at most one request each, however many scores they sent."""
    state = lms.state()
    assert len(state["score_log"]) >= 3 and 1 <= state["token_requests"] <= len(lms.tool.worker_pids())
