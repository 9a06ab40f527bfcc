"""What the first written-grading tests left open, through the real tool: a grade's point adjustment and its
clamp to [0, points] as the student and the gradebook see them, two graders re-grading an answer that already
has a grade, every refusal of a grade save, and the rubric's cap on items (one at a time and racing)."""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from autograder.written import MAX_POINTS, MAX_RUBRIC_ITEMS
from lti_service.written.grades import MAX_COMMENT
from testbed.lms import Lms, StudentPage, in_gradebook, settings
from testbed.submissions import notebook_bytes
from testbed.tool import browser_session, wait_for
from tests.lti_service.written_pages import QUESTION, answer_refs, form_value, grade, rubric_keys, staff_get

AUTOGRADED = 16.0  # Decode's points from its tests, all earned by the full-marks notebook
ADA_TEXT = "The steady rate leaves out the wait for the first token; the user waits for it too."
GRACE_TEXT = "Each averages over its own time span, and the user feels the slower one."
ROUNDS = 4  # races per run: with two reads, `rubric.add` passed the cap within 4 races in each of 4 runs
SEEDED = 4  # items of `two_rates`'s rubric from the master notebook: +1, +1, -0.5, 0


def graded_answer(lms: Lms, link: str, user: str = "student-grace", text: str = GRACE_TEXT) -> StudentPage:
    """A student's full-marks attempt on a fresh link, graded by the tool (its written answer not yet)."""
    student = lms.open(user, link)
    student.upload(notebook_bytes(written=text))
    student.wait_graded(1)
    return student


def add_item(staff: StudentPage, points: str, text: str, session: requests.Session | None = None):
    return (session or staff.session).post(
        f"{staff.url}/staff/written/{QUESTION}/rubric",
        data={"csrf_token": staff.csrf, "points": points, "text": text},
        allow_redirects=False,
        timeout=60,
    )


def live_items(staff: StudentPage) -> int:
    return len(re.findall(r'<tr id="item-\d+">', staff_get(staff, f"/{QUESTION}").text))


# --- the adjustment and the clamp ----------------------------------------------------------------------------


def test_the_adjustment_counts_and_the_score_stays_within_the_questions_points(lms):
    """Each grade below is saved over the previous one; the student (once released) and the gradebook get the
    rubric items' sum plus the adjustment, never below 0 nor above the question's 2 points."""
    link = "written-clamp"
    ada = graded_answer(lms, link, "student-ada", ADA_TEXT)
    staff = lms.open("instructor-turing", link)
    saved = staff.session.post(f"{staff.url}/staff/written/settings", data={"csrf_token": staff.csrf, "released": "on"})
    assert saved.status_code == 200
    assert add_item(staff, "1.5", "Names the time to first token").status_code == 303  # key 5: sums above 2
    ref = answer_refs(staff)["Ada Lovelace"]
    cases = (  # items (by key), adjustment, the question's points the student gets
        (["1"], "0.5", 1.5),  # a positive adjustment
        (["3"], "0", 0.0),  # items summing to -0.5: clamped to 0
        (["1", "2"], "-0.75", 1.25),  # a negative adjustment
        (["1", "2"], "1", 2.0),  # 3 points: clamped to the question's 2
        (["1"], "-1.5", 0.0),  # an adjustment taking the sum below 0
        (["1", "2", "5"], "0", 2.0),  # the items alone sum to 3.5
        (["1", "3"], "0.25", 0.75),
    )
    for keys, adjustment, points in cases:
        response = grade(staff, ref, keys, comment=f"adjusted by {adjustment}", adjustment=adjustment)
        assert response.status_code == 200, (keys, adjustment, response.text[-800:])
        assert f"graded {points:g} of 2" in staff_get(staff, f"/{QUESTION}/{ref}").text, (keys, adjustment)
        (written,) = ada.attempts()[0]["written"]
        assert (written["points"], written["comment"]) == (points, f"adjusted by {adjustment}"), (keys, adjustment)
        assert f"{points:g} / 2" in ada.session.get(ada.url, timeout=10).text, (keys, adjustment)
        sent = in_gradebook(AUTOGRADED + points)
        assert wait_for(lambda sent=sent: lms.gradebook(link).get("student-ada") == sent), (keys, adjustment)
    last = [p for p in lms.score_posts("student-ada", link) if p["status"] == 200][-1]
    assert last["comment"].startswith("16.75/18 points") and last["gradingProgress"] == "FullyGraded"


# --- two graders re-grading a graded answer ------------------------------------------------------------------


def test_two_graders_regrading_a_graded_answer_one_after_the_other_never_overwrite(lms):
    link = "written-regrade"
    graded_answer(lms, link)
    first, second = lms.open("instructor-turing", link), lms.open("instructor-turing", link)
    ref = answer_refs(first)["Grace Hopper"]
    assert grade(first, ref, ["1"], comment="The first grade").status_code == 200
    first_page, second_page = (staff_get(s, f"/{QUESTION}/{ref}").text for s in (first, second))
    assert form_value(first_page, "revision") == form_value(second_page, "revision") == "1"

    assert grade(first, ref, ["1", "2"], comment="Regraded by the first", page=first_page).status_code == 200
    told = grade(second, ref, ["3"], comment="Regraded by the second", page=second_page)
    assert told.status_code == 409 and "while you were grading it" in told.text and "Yours was not saved" in told.text
    kept = staff_get(first, f"/{QUESTION}/{ref}").text
    assert "Regraded by the first" in kept and "graded 2 of 2" in kept and form_value(kept, "revision") == "2"


def test_two_graders_racing_on_a_graded_answer_one_wins_the_other_is_told(lms):
    """Both post at the same moment, each over the revision they opened: exactly one save is taken."""
    link = "written-regrade-race"
    graded_answer(lms, link)
    graders = [lms.open("instructor-turing", link) for _ in range(2)]
    ref = answer_refs(graders[0])["Grace Hopper"]
    assert grade(graders[0], ref, ["1"], comment="The first grade").status_code == 200
    chosen = (["1"], ["1", "2"])  # each grader's items: 1 point and 2
    for round_ in range(1, 4):
        pages = [staff_get(g, f"/{QUESTION}/{ref}").text for g in graders]
        assert {form_value(page, "revision") for page in pages} == {str(round_)}
        start = threading.Barrier(2, timeout=60)

        def save(n: int, pages=pages, round_=round_, start=start) -> requests.Response:
            grader, connection = graders[n], browser_session()  # a connection of its own, the same browser
            connection.cookies.update(grader.session.cookies)
            items = rubric_keys(pages[n])
            form = {"csrf_token": grader.csrf, "revision": str(round_), "digest": form_value(pages[n], "digest"),
                    "item": [items[key] for key in chosen[n]], "adjustment": "0",
                    "comment": f"grader {n}, round {round_}", "then": "stay"}  # fmt: skip
            start.wait()
            return connection.post(f"{grader.url}/staff/written/{QUESTION}/{ref}", data=form, allow_redirects=False,
                                   timeout=60)  # fmt: skip

        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(save, range(2)))
        assert sorted(r.status_code for r in answers) == [303, 409], [r.status_code for r in answers]
        winner = next(n for n, r in enumerate(answers) if r.status_code == 303)
        kept = staff_get(graders[0], f"/{QUESTION}/{ref}").text
        assert form_value(kept, "revision") == str(round_ + 1), "exactly one save over the revision both saw"
        assert f">grader {winner}, round {round_}</textarea>" in kept and f"grader {1 - winner}," not in kept
        assert f"graded {winner + 1} of 2" in kept
        told = answers[1 - winner].text  # the other is shown the winner's grade, their own choices kept
        assert f"graded {winner + 1} of 2" in told and f">grader {1 - winner}, round {round_}</textarea>" in told


# --- refusals --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def refusals(lms) -> tuple[StudentPage, str]:
    """A graded answer with a grade (revision 1) on a link of its own: a staff page and the answer's ref."""
    link = "written-refusals"
    graded_answer(lms, link)
    staff = lms.open("instructor-turing", link)
    ref = answer_refs(staff)["Grace Hopper"]
    assert grade(staff, ref, ["1"], comment="The saved grade").status_code == 200
    return staff, ref


def saved_grade(staff: StudentPage, ref: str) -> tuple[str, str, str]:
    """The answer's saved grade as its page shows it: revision, score and comment."""
    page = staff_get(staff, f"/{QUESTION}/{ref}").text
    score = re.search(r'id="current-grade">graded ([^ ]+) of', page)
    comment = re.search(r'name="comment"[^>]*>([^<]*)</textarea>', page)
    return form_value(page, "revision"), score and score.group(1), comment.group(1)


@pytest.mark.parametrize(
    ("adjustment", "said"),
    [
        ("one", "The point adjustment must be a number, such as 0.5 or -1."),
        ("1,5", "The point adjustment must be a number, such as 0.5 or -1."),
        (f"{MAX_POINTS + 1:g}", f"The point adjustment must be between -{MAX_POINTS:g} and {MAX_POINTS:g}."),
        (f"-{MAX_POINTS + 0.5:g}", f"The point adjustment must be between -{MAX_POINTS:g} and {MAX_POINTS:g}."),
        ("nan", f"The point adjustment must be between -{MAX_POINTS:g} and {MAX_POINTS:g}."),
        ("inf", f"The point adjustment must be between -{MAX_POINTS:g} and {MAX_POINTS:g}."),
    ],
)
def test_an_adjustment_that_is_no_number_or_out_of_range_is_refused_and_saves_nothing(refusals, adjustment, said):
    staff, ref = refusals
    before = saved_grade(staff, ref)
    refused = grade(staff, ref, ["2"], comment="not saved", adjustment=adjustment)
    assert refused.status_code == 400 and said in refused.text, refused.text[-1500:]
    assert saved_grade(staff, ref) == before


def test_an_over_long_comment_is_refused_and_saves_nothing(refusals):
    staff, ref = refusals
    before = saved_grade(staff, ref)
    refused = grade(staff, ref, ["2"], comment="x" * (MAX_COMMENT + 1))
    said = f"A comment can be at most {MAX_COMMENT} characters (this one has {MAX_COMMENT + 1})."
    assert refused.status_code == 400 and said in refused.text
    assert saved_grade(staff, ref) == before
    assert grade(staff, ref, ["2"], comment="x" * MAX_COMMENT).status_code == 200, "at the bound: saved"
    assert saved_grade(staff, ref) == (str(int(before[0]) + 1), "1", "x" * MAX_COMMENT)


def test_an_item_removed_since_the_page_opened_is_refused_and_saves_nothing(lms):
    link = "written-removed-item"
    graded_answer(lms, link)
    staff = lms.open("instructor-turing", link)
    ref = answer_refs(staff)["Grace Hopper"]
    assert add_item(staff, "0.5", "Says which rate the user feels").status_code == 303
    page = staff_get(staff, f"/{QUESTION}/{ref}").text
    item = rubric_keys(page)["5"]
    removed = staff.session.post(f"{staff.url}/staff/written/{QUESTION}/rubric/{item}",
                                 data={"csrf_token": staff.csrf, "action": "remove"})  # fmt: skip
    assert removed.status_code == 200 and f'id="item-{item}"' not in removed.text
    refused = grade(staff, ref, ["1", "5"], comment="not saved", page=page)
    said = "An item you chose is no longer in the rubric (someone changed it); reload the answer."
    assert refused.status_code == 400 and said in refused.text
    assert "not graded yet" in staff_get(staff, f"/{QUESTION}/{ref}").text


def test_a_grade_of_an_answer_the_student_replaced_since_is_refused_and_saves_nothing(lms):
    """The grader opened attempt 1's answer; the student submitted a new one (which counts) before the save."""
    link = "written-replaced"
    staff = lms.open("instructor-turing", link)
    settings(staff, score_policy="latest")
    grace = graded_answer(lms, link)
    ref = answer_refs(staff)["Grace Hopper"]
    page = staff_get(staff, f"/{QUESTION}/{ref}").text
    newer = GRACE_TEXT + " The first token waits for the whole prompt."
    grace.upload(notebook_bytes(written=newer))
    grace.wait_graded(2)
    refused = grade(staff, ref, ["1", "2"], comment="graded unread", page=page)
    said = "The student submitted a new answer since you opened this one; it is shown now: grade it again."
    assert refused.status_code == 400 and said in refused.text and newer in refused.text
    now = staff_get(staff, f"/{QUESTION}/{ref}").text
    assert "not graded yet" in now and "graded unread" not in now
    assert form_value(now, "digest") != form_value(page, "digest")


# --- the rubric's cap ------------------------------------------------------------------------------------------


def test_the_rubric_refuses_its_51st_item_in_words(lms):
    link = "written-rubric-cap"
    staff = lms.open("instructor-turing", link)
    assert live_items(staff) == SEEDED
    for n in range(MAX_RUBRIC_ITEMS - SEEDED):
        assert add_item(staff, "0.25", f"Item {n}").status_code == 303
    refused = add_item(staff, "0.25", "One too many")
    said = f"A rubric can have at most {MAX_RUBRIC_ITEMS} items: change or remove one first."
    assert refused.status_code == 400 and said in refused.text
    assert live_items(staff) == MAX_RUBRIC_ITEMS and "One too many" not in staff_get(staff, f"/{QUESTION}").text


def test_racing_additions_never_take_the_rubric_past_its_cap(lms):
    """Rounds of additions at the same moment a few items below the cap (the raced ones removed after each):
    never more than 50 items, each addition either taken or refused in words."""
    link = "written-rubric-race"
    staff = lms.open("instructor-turing", link)
    start_at, racing = MAX_RUBRIC_ITEMS - 5, 16
    for n in range(start_at - SEEDED):
        assert add_item(staff, "0.25", f"Item {n}").status_code == 303
    for round_ in range(ROUNDS):
        answers = race_additions(staff, racing, f"Raced in round {round_}")
        added = [r for r in answers if r.status_code == 303]
        refused = [r for r in answers if r.status_code != 303]
        count = live_items(staff)
        assert count <= MAX_RUBRIC_ITEMS and len(added) == count - start_at, (round_, count)
        words = (f"A rubric can have at most {MAX_RUBRIC_ITEMS} items", "Others changed this rubric at the same moment")
        assert all(r.status_code == 400 and any(w in r.text for w in words) for r in refused)
        for item in re.findall(
            rf'id="text-(\d+)" [^>]* value="Raced in round {round_}"', staff_get(staff, f"/{QUESTION}").text
        ):
            removed = staff.session.post(f"{staff.url}/staff/written/{QUESTION}/rubric/{item}",
                                         data={"csrf_token": staff.csrf, "action": "remove"})  # fmt: skip
            assert removed.status_code == 200
        assert live_items(staff) == start_at
    while live_items(staff) < MAX_RUBRIC_ITEMS:  # up to the cap, and no further, one at a time
        assert add_item(staff, "0.25", "Added after").status_code == 303
    assert add_item(staff, "0.25", "One too many").status_code == 400


def race_additions(staff: StudentPage, count: int, text: str) -> list[requests.Response]:
    """`count` additions of an item sent at the same moment, each on a connection of its own."""
    start = threading.Barrier(count, timeout=60)

    def add(_) -> requests.Response:
        connection = browser_session()  # the same browser, a connection of its own
        connection.cookies.update(staff.session.cookies)
        start.wait()
        return add_item(staff, "0.5", text, session=connection)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(add, range(count)))
