"""The hidden tests tell right from wrong: every correct way scores full marks, every real mistake loses."""

import re

import pytest

from tests.submissions import QUESTIONS, corpus, env_for, score_env

# A wrong answer here also changes what these questions compute, through the reference solution that
# calls it (tokens_per_second = 1 / decode_step_seconds, as the lesson defines it).
DEPENDS_ON = {
    "decode_step_seconds": {"tokens_per_second", "decode_time"},
    "generate": {"call_order_is_sequential"},
}
WRONG, CORRECT = corpus("wrong"), corpus("correct")
# Final answers that a hidden test's message must not give away.
ANSWER_PATTERNS = [r"\b71\.4\d*", r"\b0\.014\b", r"\b14(\.0)? ?(GB|ms)\b", r"['\"]A['\"]"]


def test_corpus_is_big_enough_and_well_formed():
    assert len(WRONG) >= 15 and len(CORRECT) >= 8
    assert all(entry.question in QUESTIONS for entry in WRONG), [e.name for e in WRONG if e.question not in QUESTIONS]
    assert all(entry.question is None and entry.description for entry in CORRECT)
    assert {entry.question for entry in WRONG} == set(QUESTIONS), "every question needs at least one wrong entry"


def test_reference_solution_gets_full_marks(test_sources):
    scores = score_env(env_for(None), test_sources)
    assert set(scores) == set(QUESTIONS)
    assert {q: s.score for q, s in scores.items()} == {q: s.possible for q, s in scores.items()}
    assert sum(s.possible for s in scores.values()) == 16


@pytest.mark.parametrize("entry", CORRECT, ids=lambda e: e.name)
def test_correct_implementation_gets_full_marks(entry, test_sources):
    scores = score_env(env_for(entry), test_sources)
    lost = {q: s.failures for q, s in scores.items() if s.score != s.possible}
    assert lost == {}


@pytest.mark.parametrize("entry", WRONG, ids=lambda e: e.name)
def test_wrong_implementation_loses_points_on_its_question(entry, test_sources):
    scores = score_env(env_for(entry), test_sources)
    assert scores[entry.question].score < scores[entry.question].possible
    spared = set(QUESTIONS) - {entry.question} - DEPENDS_ON.get(entry.question, set())
    assert {q for q in spared if scores[q].score != scores[q].possible} == set()


@pytest.mark.parametrize("entry", WRONG, ids=lambda e: e.name)
def test_failures_explain_the_mistake_without_the_answer(entry, test_sources):
    """Each failure is one of our assertions (not a crash) with a message that names the mistake."""
    for message in score_env(env_for(entry), test_sources)[entry.question].failures:
        explanation = message.rsplit("AssertionError: ", 1)
        assert len(explanation) == 2 and len(explanation[1].split()) >= 5, message
        for pattern in ANSWER_PATTERNS:
            assert not re.search(pattern, explanation[1]), (pattern, message)
