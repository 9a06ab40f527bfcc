"""One student cannot stall grading for everyone (issue 41): the analyses of student text are linear, and the
insights run in a child process of the worker, stopped at a deadline, whose result is checked before it is
stored. Over real HTTP: a notebook with a line of a million characters of `grader.check('` never closed
(an hours-long regex search before) beside a classmate's grading on the same, only, worker."""

from __future__ import annotations

import json
import time

import nbformat
import pytest
from sqlalchemy import select

from autograder.written import WrittenQuestion, answers, from_handout
from lti_service.db import LinkInsights
from lti_service.insights import cache
from lti_service.insights.mistakes import answer_codes
from lti_service.insights.runner import TOO_LONG
from testbed.lms import start_lms
from testbed.submissions import notebook_bytes
from testbed.tool import wait_for

WORK_BOUND_S = 1.0  # linear work over 5 MB takes ~0.1 s here; the quadratic search took 31 s over 224 KB
LINK = "insights-hostile"
DEADLINE = 0.05  # seconds: below any analysis's start (its imports alone take ~1 s), so it always overruns
USUAL_GRADING_S = 20.0  # an honest grading takes 0.5-3.5 s; beside the quadratic search it took 51-88 s


def timed(run) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def code_notebook(source: str) -> bytes:
    return json.dumps({"cells": [{"cell_type": "code", "source": source, "metadata": {}}]}).encode()


@pytest.mark.parametrize(
    "source",
    [
        "grader.check('" * 360_000,  # 5 MB of checks never closed (the red team's notebook)
        'grader.check("' + "q" * 5_000_000,  # a name that never ends
        "grader.check(" + " " * 5_000_000,  # spaces that never end
        "# grader.check('" * 70_000,  # 1 MB, in a comment (Python runs it, the grader grades it)
    ],
    ids=["unclosed", "long-name", "long-space", "comment"],
)
def test_finding_the_answers_of_a_hostile_notebook_is_linear(source: str):
    notebook = code_notebook(source)
    assert timed(lambda: answer_codes(notebook, ["decode_time", "generate"])) < WORK_BOUND_S


def test_finding_written_answers_in_hostile_notebooks_is_bounded():
    """The extraction a grading does (written/grades.py `digests`) over markers and comments never closed,
    a thousand marker copies and long prompts: bounded windows and single passes (it held before; kept)."""
    begin = "<!-- BEGIN QUESTION -->"

    def markdown(text: str, **metadata) -> dict:
        return {"cell_type": "markdown", "source": text, "metadata": metadata}

    notebooks = [
        [markdown(begin + "<!--" * 250_000)],
        [markdown(begin + "<!--\nBEGIN QUESTION\n" * 50_000)],
        [markdown(begin + "**" + "*" * 1_000_000)],
        [markdown(begin + "# " + "question " * 110_000)],
        [markdown(begin + "( 1 " * 250_000)],
        [markdown(f"{begin} Explain") for _ in range(1000)],
        [markdown(f"{begin} Explain")] + [markdown("z" * 40_000, editable=False) for _ in range(25)],
    ]
    questions = [WrittenQuestion(f"q{n}", 1.0, "Explain" if n % 2 else f"Why {n}", ()) for n in range(100)]
    for cells in notebooks:
        data = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()
        assert timed(lambda data=data: answers(data, questions)) < WORK_BOUND_S
        assert timed(lambda data=data: _handout_questions(data)) < WORK_BOUND_S


def _handout_questions(data: bytes) -> None:
    try:
        from_handout(data)
    except ValueError:  # too many questions: refused, in bounded time too
        pass


def test_only_a_result_of_the_expected_shape_is_stored():
    example = {"user_id": "u1", "name": "Ada", "code": "x = 1"}
    mistake = {"question": "q", "test": "q - 1", "message": "m", "value": None, "students": 1, "share": 0.5,
               "examples": [example], "trend": [0, 1]}  # fmt: skip
    pair = {"a": "u1", "b": "u2", "score": 0.95, "a_spans": [[0, 3]], "b_spans": [[1, 4]], "a_name": "Ada",
            "b_name": "Grace", "a_code": "abc", "b_code": "xabc"}  # fmt: skip
    good = {"students": 2, "days": ["2025-03-10"], "mistakes": [mistake], "pairs": [pair]}
    assert cache.fits(good)
    assert not cache.fits({**good, "extra": 1})
    assert not cache.fits({**good, "students": True})
    assert not cache.fits({**good, "mistakes": [{**mistake, "share": float("nan")}]})
    assert not cache.fits({**good, "pairs": [{**pair, "a_spans": [["0", 3]]}]})
    assert not cache.fits({**good, "mistakes": [{**mistake, "examples": [{**example, "code": None}]}]})
    assert not cache.fits([good]) and not cache.fits(None)


def hostile_notebook() -> bytes:
    """Decode's full-marks notebook with one more code cell before its answers (where the search for each
    answer reads it): a comment of `grader.check('` never closed, as long as the tests' upload limit (1 MB)
    allows. Python runs it and the grader grades it as usual."""
    notebook = nbformat.reads(notebook_bytes().decode(), as_version=4)
    notebook.cells.insert(1, nbformat.v4.new_code_cell("# " + "grader.check('" * 65_000))
    return nbformat.writes(notebook).encode()


@pytest.fixture(scope="module")
def one_worker(tmp_path_factory, built_assignment):
    """The tool with one worker process, whose insights analyses have a deadline shorter than any can take."""
    lms = start_lms(tmp_path_factory.mktemp("lms"), "--workers", "1", WORKER_POLL="0.25",
                    INSIGHTS_DEADLINE=str(DEADLINE))  # fmt: skip
    yield lms
    lms.tool.stop()
    lms.platform.stop()


def insights_row(lms) -> LinkInsights | None:
    services = lms.tool.services()
    try:
        with services.db.session() as session:
            return session.scalars(select(LinkInsights).filter_by(resource_link_id=LINK)).first()
    finally:
        services.db.engine.dispose()


def test_a_classmate_is_graded_as_usual_while_a_hostile_notebook_is_analysed(one_worker):
    lms = one_worker
    lms.hook("enrol", users=["student-mallory", "student-ada"])
    mallory, ada = lms.open("student-mallory", LINK), lms.open("student-ada", LINK)
    assert mallory.upload(hostile_notebook()).status_code == 200
    assert mallory.wait_graded(1)[0]["status"] == "graded"
    # Its analysis starts once the grading settles: then it is under way (before: for hours, in the worker's
    # poll thread) or already stopped at its deadline.
    wait_for(lambda: (row := insights_row(lms)) and (row.status == "computing" or row.failure) and row)

    started = time.monotonic()
    assert ada.upload(notebook_bytes()).status_code == 200
    assert ada.wait_graded(1)[0]["status"] == "graded"
    assert time.monotonic() - started < USUAL_GRADING_S

    failed = wait_for(lambda: (row := insights_row(lms)) and row.failure and row, timeout=USUAL_GRADING_S)
    assert failed.failure == TOO_LONG.format(seconds=DEADLINE) and failed.failures >= 1
    assert failed.status == "stale" and failed.lease_until is None  # the child is gone, its lease given back
    staff = lms.open("instructor-turing", LINK)
    page = staff.session.get(f"{staff.url}/staff/insights", timeout=10).text
    assert "The analysis took too long" in page and "It is tried again after" in page
