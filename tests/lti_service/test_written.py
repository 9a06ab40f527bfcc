"""Written answers graded by course staff, over real HTTP: Decode's written question `two_rates` (2 points, a
rubric of four items from the master notebook) beside its 16 autograded points; the gradebook receives the
autograded part at once and the whole score once staff grade the answer."""

from __future__ import annotations

import csv
import io
import re
from html.parser import HTMLParser

import pytest

from testbed.lms import Lms, settings
from testbed.submissions import notebook_bytes
from testbed.tool import wait_for
from tests.lti_service.written_pages import QUESTION, answer_refs, form_value, grade, rubric_keys, staff_get

ADA_TEXT = "20 tokens/s is the steady decode rate; 12.5 tokens/s counts the wait for the first token too."
GRACE_TEXT = "Both are averages over different times. The user feels the slower one."
FULL = 100 * 16 / 18  # the autograded part of full marks, scaled to the line item's 100 points


@pytest.fixture
def product(lms: Lms):
    """The platform's product (what its launches name): its gradebook's rules follow it."""

    def use(name: str) -> None:
        lms.hook("config", product_family_code=name)

    yield use
    lms.hook("config", product_family_code="lti-dev-platform")


def posts(lms: Lms, user: str, link: str, count: int) -> list[dict]:
    """The first `count` score POSTs the platform accepted for the user on the link, once there are as many."""
    return wait_for(lambda: (found := [p for p in lms.score_posts(user, link) if p["status"] == 200])[count - 1 :]
                    and found[:count])  # fmt: skip


def test_canvas_gets_the_autograded_part_pending_manual_then_the_whole_score(lms, product):
    product("canvas")
    link = "written-canvas"
    ada, grace = lms.open("student-ada", link), lms.open("student-grace", link)
    ada.upload(notebook_bytes(written=ADA_TEXT))
    grace.upload(notebook_bytes("decode_time_one_step_short", written=GRACE_TEXT))
    ada.wait_graded(1), grace.wait_graded(1)
    (first,) = posts(lms, "student-ada", link, 1)
    assert (first["gradingProgress"], first["scoreGiven"], first["scoreMaximum"]) == (
        "PendingManual",
        round(FULL, 4),
        100,
    )
    assert "written answers still to be graded" in first["comment"]
    assert lms.gradebook(link)["student-ada"] == round(FULL, 4)  # Canvas keeps it ("needs grading")

    staff = lms.open("instructor-turing", link)
    refs = answer_refs(staff)
    assert set(refs) == {"Ada Lovelace", "Grace Hopper"}
    assert grade(staff, refs["Ada Lovelace"], ["1", "2"], comment="Clear.").status_code == 200
    assert grade(staff, refs["Grace Hopper"], ["1"]).status_code == 200

    assert posts(lms, "student-ada", link, 2)[1]["gradingProgress"] == "FullyGraded"
    assert wait_for(lambda: lms.gradebook(link) == {"student-ada": 100.0, "student-grace": round(100 * 15 / 18, 4)})
    (graced,) = [p for p in lms.score_posts("student-grace", link) if p["gradingProgress"] == "FullyGraded"]
    assert graced["comment"].startswith("15/18 points")


def test_moodle_shows_the_autograded_part_meanwhile_then_the_whole_score(lms, product):
    """Moodle empties a grade sent as PendingManual (scores.php keeps scoreGiven only when FullyGraded), so there
    the autograded part is sent FullyGraded, its comment saying the written answers are still to come."""
    product("moodle")
    link = "written-moodle"
    ada = lms.open("student-ada", link)
    ada.upload(notebook_bytes(written=ADA_TEXT))
    ada.wait_graded(1)
    (first,) = posts(lms, "student-ada", link, 1)
    assert (first["gradingProgress"], first["scoreGiven"]) == ("FullyGraded", round(FULL, 4))
    assert "written answers still to be graded by course staff" in first["comment"]
    assert lms.gradebook(link) == {"student-ada": round(FULL, 4)}

    staff = lms.open("instructor-turing", link)
    grade(staff, answer_refs(staff)["Ada Lovelace"], ["1", "2"])
    second = posts(lms, "student-ada", link, 2)[1]
    assert (second["gradingProgress"], second["scoreGiven"]) == ("FullyGraded", 100.0)
    assert "still to be graded" not in second["comment"]


def test_a_rubric_change_rescores_everyone_who_got_the_item_and_resends(lms, product):
    product("canvas")
    link = "written-rubric"
    ada = lms.open("student-ada", link)
    ada.upload(notebook_bytes(written=ADA_TEXT))
    ada.wait_graded(1)
    staff = lms.open("instructor-turing", link)
    page = staff_get(staff, f"/{QUESTION}/{answer_refs(staff)['Ada Lovelace']}").text
    grade(staff, answer_refs(staff)["Ada Lovelace"], ["1", "2"], page=page)
    assert wait_for(lambda: lms.gradebook(link) == {"student-ada": 100.0})

    second_item = rubric_keys(page)["2"]
    text = re.search(rf'id="text-{second_item}" name="text" type="text" size="60" maxlength="2000" value="([^"]*)"',
                     staff_get(staff, f"/{QUESTION}").text).group(1)  # fmt: skip
    changed = staff.session.post(
        f"{staff.url}/staff/written/{QUESTION}/rubric/{second_item}",
        data={"csrf_token": staff.csrf, "points": "0.5", "text": text, "action": "change"},
    )
    assert changed.status_code == 200
    assert wait_for(lambda: lms.gradebook(link) == {"student-ada": round(100 * 17.5 / 18, 4)})

    removed = staff.session.post(
        f"{staff.url}/staff/written/{QUESTION}/rubric/{second_item}",
        data={"csrf_token": staff.csrf, "action": "remove"},
    )
    assert removed.status_code == 200 and f'id="item-{second_item}"' not in removed.text
    assert wait_for(lambda: lms.gradebook(link) == {"student-ada": round(100 * 17 / 18, 4)})


def test_two_graders_on_one_answer_never_overwrite_each_other(lms):
    link = "written-race"
    grace = lms.open("student-grace", link)
    grace.upload(notebook_bytes(written=GRACE_TEXT))
    grace.wait_graded(1)
    first, second = lms.open("instructor-turing", link), lms.open("instructor-turing", link)
    ref = answer_refs(first)["Grace Hopper"]
    first_page, second_page = (staff_get(s, f"/{QUESTION}/{ref}").text for s in (first, second))

    assert grade(first, ref, ["1", "2"], comment="First grader", page=first_page).status_code == 200
    told = grade(second, ref, ["1"], comment="Second grader", page=second_page)
    assert told.status_code == 409
    assert "while you were grading it" in told.text and "Yours was not saved" in told.text
    assert "Second grader" in told.text  # their own choices are kept in the form to apply again
    kept = staff_get(first, f"/{QUESTION}/{ref}").text
    assert "First grader" in kept and "graded 2 of 2" in kept

    again = grade(second, ref, ["1"], comment="Second grader, on purpose", page=told.text)  # now over revision 1
    assert again.status_code == 200
    assert "graded 1 of 2" in staff_get(first, f"/{QUESTION}/{ref}").text


def test_a_later_attempt_keeps_the_grade_of_an_unchanged_answer_and_says_so(lms, product):
    product("canvas")
    link = "written-resubmit"
    staff = lms.open("instructor-turing", link)
    settings(staff, score_policy="latest")  # every new attempt counts, so a changed answer is graded anew
    ada = lms.open("student-ada", link)
    ada.upload(notebook_bytes("decode_time_one_step_short", written=ADA_TEXT))
    ada.wait_graded(1)
    grade(staff, answer_refs(staff)["Ada Lovelace"], ["1", "2"])
    assert wait_for(lambda: lms.gradebook(link) == {"student-ada": round(100 * 16 / 18, 4)})

    ada.upload(notebook_bytes(written=ADA_TEXT))  # full marks now, the same written answer
    ada.wait_graded(2)
    assert wait_for(lambda: lms.gradebook(link) == {"student-ada": 100.0})
    assert (
        "the same answer as attempt 1: its grade is kept"
        in staff_get(staff, f"/{QUESTION}/{answer_refs(staff)['Ada Lovelace']}").text
    )
    assert "Same answer as in attempt 1: its grade is kept." in ada.session.get(ada.url, timeout=10).text

    ada.upload(notebook_bytes(written=ADA_TEXT + " Also, prefill is compute-bound."))  # changed: graded anew
    ada.wait_graded(3)
    assert wait_for(lambda: lms.gradebook(link) == {"student-ada": round(FULL, 4)})
    assert "not graded" in staff_get(staff, f"/{QUESTION}").text


def test_students_see_points_and_comments_only_once_staff_release_them(lms):
    link = "written-release"
    grace = lms.open("student-grace", link)
    grace.upload(notebook_bytes(written=GRACE_TEXT))
    grace.wait_graded(1)
    before = grace.session.get(grace.url, timeout=10).text
    assert "2 points: not released yet" in before
    ungraded_data = grace.attempts()[0]["written"]
    staff = lms.open("instructor-turing", link)
    grade(staff, answer_refs(staff)["Grace Hopper"], ["1"], comment="Say which one the user feels.")

    unreleased = grace.session.get(grace.url, timeout=10).text + str(grace.attempts())
    assert "2 points: not released yet" in unreleased
    assert "Say which one the user feels." not in unreleased and "Both numbers are right" not in unreleased
    assert grace.attempts()[0]["written"] == ungraded_data  # nothing says whether it was graded yet
    assert ungraded_data[0]["graded"] is False and ungraded_data[0]["points"] is None

    saved = staff.session.post(f"{staff.url}/staff/written/settings", data={"csrf_token": staff.csrf, "released": "on"})
    assert saved.status_code == 200 and 'id="released" name="released" type="checkbox" checked' in saved.text
    released = grace.session.get(grace.url, timeout=10).text
    assert "1 / 2" in released and "Say which one the user feels." in released
    assert "+1: Both numbers are right" in released
    (written,) = grace.attempts()[0]["written"]  # the page's live data says the same
    assert (written["points"], written["comment"]) == (1.0, "Say which one the user feels.")
    assert written["rubric"][0]["text"].startswith("Both numbers are right")


def test_anonymous_grading_shows_no_names(lms):
    link = "written-anonymous"
    for user in ("student-ada", "student-grace"):
        page = lms.open(user, link)
        page.upload(notebook_bytes(written=ADA_TEXT))
        page.wait_graded(1)
    staff = lms.open("instructor-turing", link)
    staff.session.post(f"{staff.url}/staff/written/settings", data={"csrf_token": staff.csrf, "anonymous": "on"})
    question = staff_get(staff, f"/{QUESTION}").text
    refs = re.findall(r'data-ref="([0-9a-f]+)"', question)
    pages = [question] + [staff_get(staff, f"/{QUESTION}/{ref}").text for ref in refs]
    assert len(refs) == 2 and "Answer 1" in question and "Answer 2" in question
    assert not any(name in page for page in pages for name in ("Ada", "Lovelace", "Grace", "Hopper", "student-"))


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, dict(attrs)))


def test_a_hostile_answer_shows_nothing_active_to_staff(lms):
    hostile = (
        "<script>document.title='owned'</script><img src=x onerror=alert(1)> <a href=\"javascript:alert(2)\">x</a>"
        '<iframe src="https://example.org"></iframe><svg onload=alert(3)><script>alert(4)</script></svg>'
        '<style>body{display:none}</style><form action="https://example.org"><input name=p></form> plain words'
    )
    link = "written-hostile"
    ada = lms.open("student-ada", link)
    ada.upload(notebook_bytes(written=hostile))
    ada.wait_graded(1)
    staff = lms.open("instructor-turing", link)
    response = staff_get(staff, f"/{QUESTION}/{answer_refs(staff)['Ada Lovelace']}")
    assert "script-src 'self'" in response.headers["Content-Security-Policy"]
    answer = response.text.split('id="answer">', 1)[1].split("</section>", 1)[0]
    assert "plain words" in answer
    parser = _Elements()
    parser.feed(answer)
    tags = {tag for tag, _ in parser.found}
    assert not tags & {"script", "iframe", "svg", "style", "form", "input", "object", "embed"}
    for _, attrs in parser.found:
        assert not any(name.startswith("on") for name in attrs)
        assert not any((value or "").strip().lower().startswith("javascript:") for value in attrs.values())


def test_the_csv_by_question_has_both_parts_and_the_scores_csv_keeps_its_columns(lms):
    link = "written-csv"
    ada = lms.open("student-ada", link)
    ada.upload(notebook_bytes("decode_time_one_step_short", written=ADA_TEXT))
    ada.wait_graded(1)
    staff = lms.open("instructor-turing", link)
    grade(staff, answer_refs(staff)["Ada Lovelace"], ["1"], comment="=cmd|' /C calc'!A0")
    rows = list(csv.DictReader(io.StringIO(staff.download("/staff/written/grades.csv").text)))
    written = [r for r in rows if r["kind"] == "written"]
    assert [(r["question"], r["points"], r["max_points"], r["comment"]) for r in written] == [
        (QUESTION, "1.0", "2.0", "'=cmd|' /C calc'!A0")
    ]  # a formula-looking comment stays text in a spreadsheet
    autograded = {r["question"]: r["points"] for r in rows if r["kind"] == "autograded"}
    assert autograded["decode_time"] == "0.0" and autograded["generate"] == "3.0"
    scores = staff.download("/staff/scores.csv").text.splitlines()[0]
    assert scores == "user_id,name,attempts,best,latest,gradebook_score,last_submitted,gradebook"


def test_students_cannot_open_the_grading_pages(lms):
    grace = lms.open("student-grace", "written-forbidden")
    for path in ("", f"/{QUESTION}"):
        assert grace.session.get(f"{grace.url}/staff/written{path}", timeout=10).status_code == 403
    assert (
        grace.session.post(f"{grace.url}/staff/written/grades.csv", data={"csrf_token": grace.csrf}).status_code == 403
    )
    posted = grace.session.post(
        f"{grace.url}/staff/written/settings", data={"csrf_token": grace.csrf, "released": "on"}
    )
    assert posted.status_code == 403


@pytest.mark.parametrize("revision", ["-1", "7", "abc", "99999999999999999999", "١"])
def test_a_forged_grade_form_is_refused_in_words_and_saves_nothing(lms, revision):
    """A revision no grade of the answer ever had (none saved yet, or a number out of any range) is refused
    on the answer's page, never a server error, and no grade is saved."""
    link = "written-forged"
    grace = lms.open("student-grace", link)
    if not grace.attempts():
        grace.upload(notebook_bytes(written=GRACE_TEXT))
        grace.wait_graded(1)
    staff = lms.open("instructor-turing", link)
    ref = answer_refs(staff)["Grace Hopper"]
    page = staff_get(staff, f"/{QUESTION}/{ref}").text
    form = {"csrf_token": staff.csrf, "revision": revision, "digest": form_value(page, "digest"),
            "item": list(rubric_keys(page).values())[:1], "comment": "forged", "then": "stay"}  # fmt: skip
    posted = staff.session.post(f"{staff.url}/staff/written/{QUESTION}/{ref}", data=form, timeout=30)
    assert posted.status_code == 400, posted.text[-1500:]  # the answer page, with the refusal
    assert "does not match any saved grade of this answer: reload the answer" in posted.text
    assert "not graded yet" in staff_get(staff, f"/{QUESTION}/{ref}").text


def test_an_answer_whose_marker_was_deleted_is_graded_anew_not_carried_over(lms):
    """Attempt 1 leaves the written answer blank and is graded 0; attempt 2 deletes the question's marker cell
    and answers below it: no grade is carried over to text no grader read, and the grader is led to it."""
    import nbformat

    link = "written-marker-deleted"
    staff = lms.open("instructor-turing", link)
    settings(staff, score_policy="latest")
    ada = lms.open("student-ada", link)
    ada.upload(notebook_bytes())  # the written answer as handed out
    ada.wait_graded(1)
    ref = answer_refs(staff)["Ada Lovelace"]
    assert grade(staff, ref, []).status_code in (200, 303)
    assert "graded 0 of 2" in staff_get(staff, f"/{QUESTION}/{ref}").text

    notebook = nbformat.reads(notebook_bytes(written=ADA_TEXT).decode(), as_version=4)
    (marker,) = [i for i, c in enumerate(notebook.cells) if "BEGIN QUESTION" in c.source and ADA_TEXT not in c.source]
    del notebook.cells[marker]
    ada.upload(nbformat.writes(notebook).encode())
    ada.wait_graded(2)
    page = staff_get(staff, f"/{QUESTION}/{ref}").text
    assert "not graded yet" in page and "kept" not in page
    assert ADA_TEXT in page  # the cells where the answer should be are shown to the grader
    listing = staff_get(staff, f"/{QUESTION}").text
    assert "not graded" in listing
