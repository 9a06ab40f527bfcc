"""Whole notebooks through stock `otter run`: what the fast corpus tests assume holds end to end."""

import pytest

from testbed.submissions import QUESTIONS, OtterRun, corpus, env_for, score_env, submission_notebook


@pytest.mark.parametrize(
    "answered, expected_total",
    [(True, 16), (False, 0)],
    ids=["reference solution", "unmodified student notebook"],
)
def test_otter_run_scores_whole_notebooks(answered, expected_total, built_assignment, tmp_path):
    scores = OtterRun(submission_notebook(answered=answered), tmp_path).scores()
    assert set(scores) == set(QUESTIONS)
    assert sum(scores.values()) == expected_total


def test_otter_run_agrees_with_the_fast_path_on_a_wrong_entry(built_assignment, test_sources, tmp_path):
    (entry,) = [e for e in corpus("wrong") if e.name == "generate_calls_on_prompt"]
    scores = OtterRun(submission_notebook(entry), tmp_path).scores()
    assert scores == {q: s.score for q, s in score_env(env_for(entry), test_sources).items()}
    assert scores["generate"] < 3
