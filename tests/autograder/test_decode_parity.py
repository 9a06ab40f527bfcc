"""Our grader scores the Decode corpus exactly as Otter's own test runner and stock `otter run` do."""

from __future__ import annotations

import nbformat
import pytest

from autograder import grade_submission
from testbed.submissions import AUTOGRADER_ZIP, QUESTIONS, OtterRun, corpus, env_for, score_env, submission_notebook

ENTRIES = [None, *corpus("correct"), *corpus("wrong")]
# A few whole notebooks go through stock `otter run` too (3 s each); `make bench` runs all of them.
OTTER_RUN_SAMPLE = ["unanswered", "numpy_scalars", "call_order_always_true", "decode_step_seconds_in_ms"]


def grade(notebook: nbformat.NotebookNode) -> dict[str, float]:
    result = grade_submission(AUTOGRADER_ZIP, nbformat.writes(notebook).encode())
    assert result.error is None
    return {q.name: q.score for q in result.questions}


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name if e else "reference")
def test_same_scores_as_otters_test_runner(entry, test_sources):
    expected = {q: s.score for q, s in score_env(env_for(entry), test_sources).items()}
    assert grade(submission_notebook(entry)) == expected


def test_questions_are_reported_in_notebook_order():
    result = grade_submission(AUTOGRADER_ZIP, nbformat.writes(submission_notebook()).encode())
    assert tuple(q.name for q in result.questions) == QUESTIONS


def test_same_scores_as_stock_otter_run(built_assignment, tmp_path):
    by_name = {e.name: e for e in ENTRIES if e}
    notebooks = {
        name: submission_notebook(answered=False) if name == "unanswered" else submission_notebook(by_name[name])
        for name in OTTER_RUN_SAMPLE
    }
    runs = {name: OtterRun(notebook, tmp_path / name) for name, notebook in notebooks.items()}
    otter_scores = {name: run.scores() for name, run in runs.items()}
    assert {name: grade(notebook) for name, notebook in notebooks.items()} == otter_scores
    assert sum(otter_scores["unanswered"].values()) == 0
