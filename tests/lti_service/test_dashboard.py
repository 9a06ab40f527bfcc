"""The instructor dashboard: roster, charts, actions, settings (each seen on the student page), isolation."""

from __future__ import annotations

import csv
import io
import re

from testbed.lms import in_gradebook, race_uploads, settings, staff_post
from testbed.submissions import notebook_bytes
from testbed.tool import wait_for

PAST = "2020-01-01T00:00:00Z"


def test_dashboard_merges_the_roster_with_submissions(lms):
    ada = lms.open("student-ada", "dash-roster")
    ada.upload(notebook_bytes())
    ada.wait_graded(1)
    wait_for(lambda: ada.attempts()[0]["gradebook"] == "sent to the gradebook")
    page = lms.open("instructor-turing", "dash-roster")
    assert "Instructor dashboard" in page.html and page.html.count("<h1") == 1
    roster = page.html.split('id="roster"', 1)[1].split("</table>", 1)[0]
    ada_row = re.search(r'data-user="student-ada">(.*?)</tr>', roster, re.S).group(1)
    grace_row = re.search(r'data-user="student-grace">(.*?)</tr>', roster, re.S).group(1)
    assert "Ada Lovelace" in ada_row and "<td>16</td>" in ada_row and "sent 16 at " in ada_row
    assert "not submitted" in grace_row
    assert "instructor-turing" not in roster
    for chart in ("score-histogram", "pass-rates"):
        figure = page.html.split(f'<figure id="{chart}">', 1)[1].split("</figure>", 1)[0]
        assert '<svg role="img" aria-labelledby=' in figure and "<title" in figure and "<rect" in figure
    assert "1 scored 14–16" in page.html and "generate 100%" in page.html

    rows = list(csv.DictReader(io.StringIO(page.download("/staff/scores.csv").text)))
    assert {r["user_id"]: r["gradebook_score"] for r in rows} == {"student-ada": "16.0", "student-grace": ""}


def test_each_roster_link_leads_to_that_students_attempts(lms):
    """Students who have not submitted come first in the roster: the links still reach the right section."""
    grace = lms.open("student-grace", "dash-anchors")
    grace.upload(notebook_bytes())
    grace.wait_graded(1)
    page = lms.open("instructor-turing", "dash-anchors")
    roster = page.html.split('id="roster"', 1)[1].split("</table>", 1)[0]
    (anchor,) = re.findall(r'data-user="student-grace">.*?<a href="#([^"]+)"', roster, re.S)
    section = page.html.split(f'<section id="{anchor}">', 1)[1].split("</section>", 1)[0]
    assert "Grace Hopper" in section and "Attempt 1" in section


def test_staff_view_of_an_attempt_and_its_notebook(lms):
    data = notebook_bytes("generate_calls_on_prompt")
    ada = lms.open("student-ada", "dash-detail")
    ada.upload(data)
    (attempt,) = ada.wait_graded(1)
    assert "test_generate_each_call_sees_the_sequence_so_far" not in ada.html
    page = lms.open("instructor-turing", "dash-detail")
    detail = page.session.get(f"{page.url}/staff/attempts/{attempt['id']}")
    assert detail.status_code == 200 and "hidden" in detail.text and "each call to next_token" in detail.text
    assert "asks for no package beyond the grader's own" in detail.text.replace("&#39;", "'")  # which versions ran
    assert page.download(f"/staff/attempts/{attempt['id']}/notebook").content == data


def test_a_student_whose_file_has_another_name_is_told_how_it_was_graded(lms):
    """As under otter run, the checks of a notebook saved under another name do not run (every question is
    graded on the final state); the student reads why, and what to do, beside the scores."""
    ada = lms.open("student-ada", "dash-renamed")
    ada.upload(notebook_bytes(), filename="decode (1).ipynb")
    (attempt,) = ada.wait_graded(1)
    assert attempt["status"] == "graded"
    told = "Your file is named “decode (1).ipynb”, but this notebook expects “decode.ipynb”"
    assert told in lms.open("student-ada", "dash-renamed").html
    ada.upload(notebook_bytes("generate_calls_on_prompt"))  # saved as decode.ipynb: nothing to say
    ada.wait_graded(2)
    assert lms.open("student-ada", "dash-renamed").html.count(told) == 1


def test_students_cannot_reach_the_dashboard_or_its_actions(lms):
    page = lms.open("student-grace", "dash-private")
    assert "Instructor dashboard" not in page.html and "Download the notebook" in page.html
    for method, path in (("post", "scores.csv"), ("post", "regrade"), ("post", "resend"), ("post", "settings")):
        response = getattr(page.session, method)(f"{page.url}/staff/{path}", data={"csrf_token": page.csrf})
        assert response.status_code == 403, path
    assert page.session.get(f"{page.url}/staff/attempts/1").status_code == 403


def test_staff_of_another_course_see_nothing_of_this_one(lms):
    ada = lms.open("student-ada", "dash-course-a", context_id="course-a")
    ada.upload(notebook_bytes())
    (attempt,) = ada.wait_graded(1)
    other = lms.open("instructor-turing", "dash-course-a", context_id="course-b")
    assert (
        "student-ada" not in other.html.split('id="roster"', 1)[1].split("</table>", 1)[0]
        or "not submitted" in other.html
    )
    assert other.session.get(f"{other.url}/staff/attempts/{attempt['id']}").status_code == 404
    assert "16.0" not in other.download("/staff/scores.csv").text


def test_regrade_and_resend_show_progress_until_done(lms):
    for user in ("student-ada", "student-grace"):
        student = lms.open(user, "dash-batch")
        student.upload(notebook_bytes())
        student.wait_graded(1)
    page = lms.open("instructor-turing", "dash-batch")
    response = staff_post(page, "regrade")
    job_id = re.search(r'id="job-(\d+)"', response.text).group(1)
    progress = wait_for(
        lambda: (p := page.session.get(f"{page.url}/staff/jobs/{job_id}.json").json())["finished"] and p
    )
    assert (progress["kind"], progress["total"], progress["done"], progress["failed"]) == ("regrade", 2, 2, 0)
    assert "2 of 2 done" in lms.open("instructor-turing", "dash-batch").html  # still there after a reload

    lms.hook("fail-scores", count=100, status=400)  # refused for good: no retry of its own races the re-send
    grace = lms.open("student-grace", "dash-resend")
    grace.upload(notebook_bytes())
    grace.wait_graded(1)
    wait_for(lambda: grace.attempts()[0]["gradebook_state"] == "failed")
    lms.hook("fail-scores", count=0)
    page = lms.open("instructor-turing", "dash-resend")
    response = staff_post(page, "resend")
    job_id = re.search(r'id="job-(\d+)"', response.text).group(1)
    progress = wait_for(
        lambda: (p := page.session.get(f"{page.url}/staff/jobs/{job_id}.json").json())["finished"] and p
    )
    assert (progress["done"], progress["failed"]) == (1, 0)
    assert wait_for(lambda: grace.attempts()[0]["gradebook"] == "sent to the gradebook")


def test_setting_the_latest_attempt_policy(lms):
    staff = lms.open("instructor-turing", "set-latest")
    settings(staff, score_policy="latest")
    ada = lms.open("student-ada", "set-latest")
    assert "The gradebook shows your latest attempt." in ada.html
    ada.upload(notebook_bytes())
    ada.wait_graded(1)
    ada.upload(notebook_bytes("understanding_answer_yes"))
    newest, first = ada.wait_graded(2)
    assert newest["counts"] and not first["counts"]
    assert wait_for(
        lambda: [p["scoreGiven"] for p in lms.score_posts("student-ada", "set-latest")][-1:] == [in_gradebook(15)]
    )


def test_setting_an_attempt_limit(lms):
    settings(lms.open("instructor-turing", "set-limit"), attempt_limit="1")
    grace = lms.open("student-grace", "set-limit")
    assert "Attempts: 0 of 1 used." in grace.html
    grace.upload(notebook_bytes())
    grace.wait_graded(1)
    again = lms.open("student-grace", "set-limit")
    assert "Attempts: 1 of 1 used." in again.html and 'id="upload-form"' not in again.html
    refused = grace.upload(notebook_bytes("recursion"))  # the form is gone; a crafted upload is refused too
    assert refused.status_code == 400 and "used all 1 attempts" in refused.text and len(again.attempts()) == 1


def test_an_attempt_limit_holds_when_uploads_race(lms):
    settings(lms.open("instructor-turing", "set-limit-race"), attempt_limit="1")
    ada = lms.open("student-ada", "set-limit-race")
    answers = race_uploads(ada, 12)
    assert sorted(r.status_code for r in answers) == [303] + [400] * 11
    assert all("used all 1 attempts" in r.text or "same moment" in r.text for r in answers if r.status_code == 400)
    assert len(ada.attempts()) == 1


def test_setting_late_work_refused_after_the_due_date(lms):
    lms.hook("due-date", resource_link_id="set-refuse", due_at=PAST)
    settings(lms.open("instructor-turing", "set-refuse"), late_policy="refuse")
    ada = lms.open("student-ada", "set-refuse")
    assert "Late work is not accepted." in ada.html and "The due date has passed." in ada.html
    refused = ada.upload(notebook_bytes())
    assert refused.status_code == 400 and "does not accept late work" in refused.text and ada.attempts() == []


def test_setting_a_late_penalty(lms):
    lms.hook("due-date", resource_link_id="set-penalty", due_at=PAST)
    settings(lms.open("instructor-turing", "set-penalty"), late_policy="penalty", late_penalty="25")
    ada = lms.open("student-ada", "set-penalty")
    assert "Late work loses 25% of its score." in ada.html
    ada.upload(notebook_bytes())
    (attempt,) = ada.wait_graded(1)
    assert (attempt["score"], attempt["raw_score"], attempt["late_penalty"]) == (12.0, 16.0, 25.0)
    assert "late: 25% off (16 before the penalty)" in ada.session.get(ada.url).text
    assert wait_for(
        lambda: [p["scoreGiven"] for p in lms.score_posts("student-ada", "set-penalty")] == [in_gradebook(12)]
    )


def test_setting_hidden_results_after_the_due_date(lms):
    wrong = notebook_bytes("generate_calls_on_prompt")
    lms.hook("due-date", resource_link_id="set-hidden", due_at="2099-01-01T00:00:00Z")
    settings(lms.open("instructor-turing", "set-hidden"), show_hidden_after_due="on")
    grace = lms.open("student-grace", "set-hidden")
    grace.upload(wrong)
    grace.wait_graded(1)
    assert "Hidden check generate" not in grace.session.get(grace.url).text  # not before the due date
    lms.hook("due-date", resource_link_id="set-hidden", due_at=PAST)
    after = lms.open("student-grace", "set-hidden")
    assert "the results of the hidden checks are shown" in after.html
    assert "Hidden check generate" in after.html and "each call to next_token" in after.html
