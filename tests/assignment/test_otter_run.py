"""Whole notebooks through stock `otter run`: what the fast corpus tests assume holds end to end."""

import json
import subprocess
import sys

import nbformat
import pytest

from tests.submissions import QUESTIONS, corpus, env_for, score_env, submission_notebook


def otter_run(notebook, zip_path, tmp_path):
    """Per-question scores from `otter run` (the file must be named like the assignment's notebook)."""
    submission, out = tmp_path / "sub" / "decode.ipynb", tmp_path / "out"
    submission.parent.mkdir()
    out.mkdir()
    nbformat.write(notebook, submission)
    command = [sys.executable, "-m", "otter", "run", "-a", str(zip_path), "-o", str(out), str(submission)]
    subprocess.run(command, check=True, capture_output=True, timeout=120)
    results = json.loads((out / "results.json").read_text())
    return {t["name"]: t["score"] for t in results["tests"] if t["name"] in QUESTIONS}


@pytest.mark.parametrize(
    "answered, expected_total",
    [(True, 16), (False, 0)],
    ids=["reference solution", "unmodified student notebook"],
)
def test_otter_run_scores_whole_notebooks(answered, expected_total, built_assignment, tmp_path):
    scores = otter_run(submission_notebook(answered=answered), built_assignment["zip"], tmp_path)
    assert set(scores) == set(QUESTIONS)
    assert sum(scores.values()) == expected_total


def test_otter_run_agrees_with_the_fast_path_on_a_wrong_entry(built_assignment, test_sources, tmp_path):
    (entry,) = [e for e in corpus("wrong") if e.name == "generate_calls_on_prompt"]
    scores = otter_run(submission_notebook(entry), built_assignment["zip"], tmp_path)
    fast = {q: s.score for q, s in score_env(env_for(entry), test_sources).items()}
    assert scores == fast
    assert scores["generate"] < 3
