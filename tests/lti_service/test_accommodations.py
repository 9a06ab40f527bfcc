"""Per-student accommodations and late days, over real HTTP: staff set them on the dashboard, students see
them on their page, and the gradebook receives the score they change."""

from __future__ import annotations

import datetime as dt
import json
import re
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from html import unescape

import pytest
import requests
from alembic import command
from alembic.script import ScriptDirectory

from lti_service.config import Config
from lti_service.db import AccommodationChange
from lti_service.migrate import alembic_config, upgrade
from lti_service.platforms import add_platform
from lti_service.rules import accommodations
from lti_service.services import Services
from testbed.lms import Lms, StudentPage, in_gradebook, race_uploads, settings
from testbed.submissions import notebook_bytes
from testbed.tool import browser_session, wait_for

PAST = "2020-01-01T00:00:00Z"


def ago(days: float) -> str:
    """A due date `days` ago, as the LMS sends it (ISO 8601, UTC)."""
    return (dt.datetime.now(dt.UTC) - dt.timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")


def ahead(days: float) -> str:
    """A date and time `days` ahead, as a datetime-local field sends it."""
    return (dt.datetime.now(dt.UTC) + dt.timedelta(days=days)).strftime("%Y-%m-%dT%H:%M")


def accommodate(staff: StudentPage, users: list[str], **form: str):
    data = {"csrf_token": staff.csrf, "user": users, **form}
    return staff.session.post(f"{staff.url}/staff/accommodations", data=data, timeout=30)


def page_text(page: StudentPage) -> str:
    return unescape(re.sub(r"\s+", " ", page.session.get(page.url, timeout=10).text))


def test_an_extension_for_two_students_moves_their_due_date_and_resends_the_corrected_score(lms: Lms):
    link = "acc-extension"
    lms.hook("due-date", resource_link_id=link, due_at=PAST)
    staff = lms.open("instructor-turing", link)
    settings(staff, late_policy="penalty", late_penalty="25")
    ada, grace = lms.open("student-ada", link), lms.open("student-grace", link)
    ada.upload(notebook_bytes())
    ada.wait_graded(1)
    assert wait_for(lambda: lms.gradebook(link) == {"student-ada": in_gradebook(12)})  # 25% off, late

    saved = accommodate(staff, ["student-ada", "student-grace"], due_at=ahead(7))
    assert saved.status_code == 200 and "Saved for 2 students" in saved.text
    assert wait_for(lambda: lms.gradebook(link) == {"student-ada": in_gradebook(16)})  # the penalty is gone
    assert ada.attempts()[0]["late_penalty"] == 0
    for student in (ada, grace):
        assert "an extension from your course staff" in page_text(student)
    history = saved.text.split('id="accommodation-list"', 1)[1].split("</table>", 1)[0]
    assert history.count("Alan Turing: due ") == 2  # who set it and when, for each student

    grace.upload(notebook_bytes("decode_time_one_step_short"))
    assert grace.wait_graded(1)[0]["late_penalty"] == 0  # the LMS's date has passed, hers has not


def test_extra_attempts_and_a_count_below_what_was_used(lms: Lms):
    link = "acc-attempts"
    staff = lms.open("instructor-turing", link)
    settings(staff, attempt_limit="1")
    grace = lms.open("student-grace", link)
    grace.upload(notebook_bytes())
    grace.wait_graded(1)
    assert accommodate(staff, ["student-grace"], extra_attempts="1").status_code == 200
    assert "Attempts: 1 of 2 used (1 extra from your course staff)." in page_text(grace)
    assert grace.upload(notebook_bytes("decode_time_one_step_short")).status_code == 200
    grace.wait_graded(2)
    refused = grace.upload(notebook_bytes("recursion"))
    assert refused.status_code == 400 and "used all 2 attempts" in refused.text

    taken_away = accommodate(staff, ["student-grace"], extra_attempts="0")
    assert taken_away.status_code == 400 and "Nothing was changed" in unescape(taken_away.text)
    assert "Grace Hopper used more than 1 + 0 attempts already" in unescape(taken_away.text)
    assert "Attempts: 2 of 2 used" in page_text(grace)  # still as before


def test_an_excused_student_has_no_score_in_the_gradebook_and_is_told(lms: Lms):
    link = "acc-excused"
    ada = lms.open("student-ada", link)
    ada.upload(notebook_bytes())
    ada.wait_graded(1)
    assert wait_for(lambda: lms.gradebook(link) == {"student-ada": in_gradebook(16)})
    staff = lms.open("instructor-turing", link)
    assert accommodate(staff, ["student-ada"], excused="yes").status_code == 200
    assert wait_for(lambda: lms.gradebook(link) == {"student-ada": None})  # the grade is emptied
    last = lms.score_posts("student-ada", link)[-1]
    assert "scoreGiven" not in last and last["comment"] == "excused by course staff: no score"
    assert "excused you from this assignment" in page_text(ada)

    accommodate(staff, ["student-ada"], excused="no")
    assert wait_for(lambda: lms.gradebook(link) == {"student-ada": in_gradebook(16)})


def test_refused_changes_say_why_and_change_nothing(lms: Lms):
    link = "acc-refused"
    lms.open("student-grace", link)
    staff = lms.open("instructor-turing", link)
    cases = {
        "in the past": (["student-grace"], {"due_at": "2020-01-01T10:00"}),
        "not a student of this course": (["student-grace", "student-nobody"], {"due_at": ahead(3)}),
        "Pick at least one student": ([], {"due_at": ahead(3)}),
        "Write the date and time": (["student-grace"], {"due_at": "next friday"}),
    }
    for why, (users, form) in cases.items():
        answer = accommodate(staff, users, **form)
        assert answer.status_code == 400 and why in unescape(answer.text), why
    assert 'id="accommodation-list"' not in page_text(staff)  # nothing was set for anyone


def test_late_days_cover_a_late_upload_say_so_before_and_can_be_given_back(lms: Lms):
    link = "acc-late-days"
    lms.hook("due-date", resource_link_id=link, due_at=ago(1.5))
    staff = lms.open("instructor-turing", link)
    settings(staff, late_policy="penalty", late_penalty="25")
    assert staff.session.post(f"{staff.url}/staff/late-days", data={"csrf_token": staff.csrf, "late_days": "3"}).ok
    ada = lms.open("student-ada", link)
    assert "Submitting now is 2 days late: it uses 2 of your 3 remaining late days, with no late penalty." in (
        page_text(ada)
    )
    ada.upload(notebook_bytes())
    assert ada.wait_graded(1)[0]["late_penalty"] == 0
    assert wait_for(lambda: lms.gradebook(link) == {"student-ada": in_gradebook(16)})
    assert "Late days: 1 of 3 left in this course (2 days used on this assignment)." in page_text(ada)

    lms.hook("due-date", resource_link_id="acc-late-days-2", due_at=ago(3.5))  # another assignment, 4 days late
    later = lms.open("student-ada", "acc-late-days-2")
    assert "more than your late days cover: the late rule below applies and your late days are kept" in (
        page_text(later)
    )

    given_back = give_back(staff, "student-ada")
    assert "Gave back 2 late days: lateness of up to that much is forgiven on this assignment" in given_back
    assert "Late days: 3 of 3 left in this course." in page_text(ada)
    assert "2 late days given back: lateness of up to 2 late days forgiven on this assignment" in given_back


def give_back(staff: StudentPage, user: str) -> str:
    """Give a student back their late days on the link from the dashboard; the page it leads to, as text."""
    answer = staff.session.post(f"{staff.url}/staff/late-days/refund", data={"csrf_token": staff.csrf, "user": user})
    assert answer.status_code == 200, answer.status_code
    return unescape(re.sub(r"\s+", " ", answer.text))


def late_upload(lms: Lms, user: str, link: str, days: float, variant: int) -> requests.Response:
    """The student opens the link (in a course of its own: late days are the course's) as the LMS sends it
    `days` after its due date, and uploads a notebook of their own (`variant`: one their earlier uploads are
    not); graded before this returns when accepted."""
    lms.hook("due-date", resource_link_id=link, context_id=link, due_at=ago(days))
    page = lms.open(user, link, context_id=link)
    answer = page.upload(json.dumps(json.loads(notebook_bytes()), indent=variant).encode())
    if answer.status_code == 200:
        page.wait_graded(len(page.attempts()))
    return answer


def test_giving_back_one_late_day_forgives_one_day_of_lateness_no_more(lms: Lms):
    """On a link that refuses late work, with a budget of 1: the day given back covers a later upload one day
    late for free; one 2 days late spends the day left; one 3 days late is refused."""
    link = "acc-give-back-one"
    staff = lms.open("instructor-turing", link, context_id=link)
    settings(staff, late_policy="refuse")
    assert staff.session.post(f"{staff.url}/staff/late-days", data={"csrf_token": staff.csrf, "late_days": "1"}).ok
    ada = lms.open("student-ada", link, context_id=link)
    assert late_upload(lms, "student-ada", link, 0.5, 1).status_code == 200
    assert "Late days: 0 of 1 left in this course (1 day used on this assignment)." in page_text(ada)
    assert "Gave back 1 late day" in give_back(staff, "student-ada")
    assert "Late days: 1 of 1 left in this course." in page_text(ada)

    assert late_upload(lms, "student-ada", link, 0.5, 2).status_code == 200  # the day forgiven covers it: nothing spent
    assert "Late days: 1 of 1 left in this course." in page_text(ada)
    lms.hook("due-date", resource_link_id=link, context_id=link, due_at=ago(1.5))
    assert "Submitting now is 2 days late: it uses 1 of your 1 remaining late days" in page_text(
        lms.open("student-ada", link, context_id=link)
    )
    assert late_upload(lms, "student-ada", link, 1.5, 3).status_code == 200  # a day beyond the one forgiven: spent
    assert "Late days: 0 of 1 left in this course (1 day used on this assignment)." in page_text(ada)
    refused = late_upload(lms, "student-ada", link, 2.5, 4)
    assert refused.status_code == 400 and "does not accept late work" in refused.text
    assert [a["late_penalty"] for a in ada.attempts()] == [0, 0, 0]


def test_a_higher_budget_covers_the_late_uploads_penalised_for_want_of_days(lms: Lms):
    """Raising the budget after the fact: an upload penalised because the student had no days left is covered
    (days spent, penalty gone, its score sent again once); one later than the new budget keeps its penalty; a
    lower budget takes back no day already spent."""
    link = "acc-budget-raised"
    staff = lms.open("instructor-turing", link, context_id=link)
    settings(staff, late_policy="penalty", late_penalty="25")
    assert late_upload(lms, "student-ada", link, 1.5, 1).status_code == 200  # 2 days late, no late days yet
    assert late_upload(lms, "student-grace", link, 4.5, 1).status_code == 200  # 5 days late
    assert wait_for(lambda: lms.gradebook(link) == {"student-ada": in_gradebook(12), "student-grace": in_gradebook(12)})

    saved = staff.session.post(f"{staff.url}/staff/late-days", data={"csrf_token": staff.csrf, "late_days": "3"})
    assert "Late days saved. They now cover earlier late uploads of 1 student in this course" in unescape(saved.text)
    assert wait_for(lambda: lms.gradebook(link) == {"student-ada": in_gradebook(16), "student-grace": in_gradebook(12)})
    ada = lms.open("student-ada", link, context_id=link)
    assert ada.attempts()[0]["late_penalty"] == 0
    assert "Late days: 1 of 3 left in this course (2 days used on this assignment)." in page_text(ada)
    assert "Late days: 3 of 3 left in this course." in page_text(lms.open("student-grace", link, context_id=link))
    assert len(lms.score_posts("student-ada", link)) == 2  # the penalised score, then the covered one

    lowered = staff.session.post(f"{staff.url}/staff/late-days", data={"csrf_token": staff.csrf, "late_days": "1"})
    assert "Late days saved." in lowered.text and "They now cover" not in lowered.text
    assert "Late days: 0 of 1 left in this course (2 days used on this assignment)." in page_text(ada)
    assert ada.attempts()[0]["late_penalty"] == 0


def test_ten_give_backs_at_once_from_the_dashboard_give_the_days_back_once(lms: Lms):
    link = "acc-give-back-race"
    staff = lms.open("instructor-turing", link, context_id=link)
    assert staff.session.post(f"{staff.url}/staff/late-days", data={"csrf_token": staff.csrf, "late_days": "3"}).ok
    assert late_upload(lms, "student-grace", link, 1.5, 1).status_code == 200
    start = threading.Barrier(10)

    def give_back_now() -> int:
        connection = browser_session()  # the same browser, a connection of its own
        connection.cookies.update(staff.session.cookies)
        start.wait()
        form = {"csrf_token": staff.csrf, "user": "student-grace"}
        return connection.post(f"{staff.url}/staff/late-days/refund", data=form, timeout=60).status_code

    with ThreadPoolExecutor(10) as pool:
        statuses = list(pool.map(lambda _: give_back_now(), range(10)))
    assert statuses == [200] * 10
    assert "Late days: 3 of 3 left in this course." in page_text(lms.open("student-grace", link, context_id=link))
    dashboard = page_text(staff)
    assert dashboard.count("given back: lateness of up to 2 late days forgiven") == 1
    assert "2 late days given back" in dashboard and "1 late day given back" not in dashboard


def test_two_late_uploads_at_the_same_moment_spend_one_late_day(lms: Lms):
    link = "acc-race"
    lms.hook("due-date", resource_link_id=link, due_at=ago(0.5))
    staff = lms.open("instructor-turing", link)
    staff.session.post(f"{staff.url}/staff/late-days", data={"csrf_token": staff.csrf, "late_days": "3"})
    grace = lms.open("student-grace", link)
    answers = race_uploads(grace, 3)  # as many as a student may have waiting to be graded
    assert all(answer.status_code == 303 for answer in answers), [a.status_code for a in answers]
    assert "Late days: 2 of 3 left in this course (1 day used on this assignment)." in page_text(grace)
    assert all(attempt["late_penalty"] == 0 for attempt in grace.attempts())


def test_a_spend_from_a_stale_read_is_taken_again_and_never_exceeds_the_budget(tmp_path):
    """The compare-and-set under the race above: a spend computed from counts another upload has changed since
    raises SpendRaced (the upload is taken again), and a budget is never overdrawn."""
    services = Services.from_config(Config(data_dir=tmp_path))
    platform = add_platform(services.db, "https://lms.example", "c1", ["d"], "a", "t", "j")
    key = dict(platform_id=platform.id, context_id="course", resource_link_id="link")
    accommodations.set_budget(services, key, 2)
    with services.db.session() as session:
        seen = accommodations.late_days(session, key, "ada")
        accommodations.spend(services, session, key, "ada", seen, 1)
    with pytest.raises(accommodations.SpendRaced), services.db.session() as session:
        accommodations.spend(services, session, key, "ada", seen, 1)  # the same stale read: on_link is 1 now
    other = dict(key, resource_link_id="other")
    with pytest.raises(accommodations.SpendRaced), services.db.session() as session:
        accommodations.spend(services, session, other, "ada", accommodations.late_days(session, other, "ada"), 2)
    with services.db.session() as session:
        assert accommodations.late_days(session, key, "ada") == accommodations.LateDays(2, 1, 1)
        assert accommodations.late_days(session, other, "ada") == accommodations.LateDays(2, 1, 0)  # rolled back


def test_which_due_date_counts_an_extension_over_the_lms_date_over_the_links_own(lms: Lms):
    link = "acc-which-date"
    staff = lms.open("instructor-turing", link)
    settings(staff, due_at="2020-01-01T10:00")  # the link's own date, for a platform that sends none
    assert "The due date has passed." in page_text(lms.open("student-ada", link))
    lms.hook("due-date", resource_link_id=link, due_at=(dt.datetime.now(dt.UTC) + dt.timedelta(days=2)).isoformat())
    assert "The due date has passed." not in page_text(lms.open("student-ada", link))  # the LMS's date for her
    lms.hook("due-date", resource_link_id=link, due_at=PAST)
    assert "The due date has passed." in page_text(lms.open("student-ada", link))
    accommodate(staff, ["student-ada"], due_at=ahead(3))
    text = page_text(lms.open("student-ada", link))
    assert "an extension from your course staff" in text and "The due date has passed." not in text
    assert "an extension set here, over the due date your course platform sends" in page_text(staff)


def test_two_graders_setting_a_students_first_accommodation_at_once_both_land(tmp_path, monkeypatch):
    """The second grader's save meets the row the first just created (a unique row per student and link): it
    is taken again over that row instead of failing."""
    services = Services.from_config(Config(data_dir=tmp_path))
    platform = add_platform(services.db, "https://lms.example", "c1", ["d"], "a", "t", "j")
    key = dict(platform_id=platform.id, context_id="course", resource_link_id="link")
    accommodations.apply(services, key, ["ada"], accommodations.Change(extra_attempts=1), "Grader one")
    real, missed = accommodations.accommodation, []

    def first_read_misses_it(session, key, user_id):  # as when the other grader's insert came just after
        if not missed:
            missed.append(user_id)
            return None
        return real(session, key, user_id)

    monkeypatch.setattr(accommodations, "accommodation", first_read_misses_it)
    accommodations.apply(services, key, ["ada"], accommodations.Change(excused=True), "Grader two")
    with services.db.session() as session:
        row = real(session, key, "ada")
        changes = session.query(AccommodationChange).filter_by(user_id="ada").count()
    assert missed == ["ada"] and (row.extra_attempts, row.excused, row.set_by) == (1, True, "Grader two")
    assert changes == 2


def test_days_given_back_before_the_upgrade_forgive_as_many_days_after_it(tmp_path):
    """A link given back under the old rule (all its lateness forgiven, its count set to 0) forgives the days
    its line of history says were given back; a link never given back forgives nothing."""
    url = f"sqlite:///{tmp_path / 'tool.db'}"
    config = alembic_config(url)
    command.upgrade(config, ScriptDirectory.from_config(config).get_revision("0015_late_day_forgiveness").down_revision)
    uses = {"given-back": (0, True), "spent": (1, False), "no-history": (0, True)}
    with sqlite3.connect(tmp_path / "tool.db") as database:
        for user, (days, refunded) in uses.items():
            database.execute(
                "INSERT INTO late_day_uses (platform_id, context_id, resource_link_id, user_id, days, refunded)"
                " VALUES (1, 'c', 'r', ?, ?, ?)",
                (user, days, refunded),
            )
        for user, change in (("given-back", "due 2026-01-01 10:00 UTC"), ("given-back", "2 late days given back, "
                             "lateness forgiven"), ("spent", "1 extra attempt")):  # fmt: skip
            database.execute(
                "INSERT INTO accommodation_changes (platform_id, context_id, resource_link_id, user_id, change,"
                " set_by, set_at) VALUES (1, 'c', 'r', ?, ?, 'Alan Turing', '2026-01-01 00:00:00')",
                (user, change),
            )
    upgrade(url)
    with sqlite3.connect(tmp_path / "tool.db") as database:
        found = {user: (days, forgiven) for user, days, forgiven in database.execute(
            "SELECT user_id, days, forgiven FROM late_day_uses")}  # fmt: skip
    assert found == {"given-back": (0, 2), "spent": (1, 0), "no-history": (0, 0)}
