"""The hidden tests tell right from wrong: every correct way scores full marks, every real mistake loses,
whatever inputs the hidden tests draw (they draw them afresh at every grading)."""

import inspect
import re

import pytest
from otter.test_files import ExceptionTestFile

from testbed.submissions import QUESTIONS, corpus, env_for, score_env

# A wrong answer here also changes what these questions compute, through the reference solution that
# calls it (tokens_per_second = 1 / decode_step_seconds, as the lesson defines it).
DEPENDS_ON = {
    "decode_step_seconds": {"tokens_per_second", "decode_time"},
    "generate": {"call_order_is_sequential"},
}
WRONG, CORRECT = corpus("wrong"), corpus("correct")
(MEMORISED,) = [entry for entry in corpus("attacks") if entry.name == "memorised_hidden_inputs"]
# Final answers that a hidden test's message must not give away.
ANSWER_PATTERNS = [r"\b71\.4\d*", r"\b0\.014\b", r"\b14(\.0)? ?(GB|ms)\b", r"['\"]A['\"]"]
# The questions whose hidden tests draw their inputs (Part 1's and the understanding question's are the
# lesson's own numbers), and how many gradings each verdict is checked over.
DRAWN = ("decode_step_seconds", "tokens_per_second", "decode_time", "generate", "call_order_is_sequential")
GRADINGS = 25


def gradings(entry, test_sources, times=GRADINGS):
    """The entry's scores in `times` gradings, each drawing its hidden inputs afresh."""
    return [score_env(env_for(entry), test_sources) for _ in range(times)]


def test_corpus_is_big_enough_and_well_formed():
    assert len(WRONG) >= 15 and len(CORRECT) >= 8
    assert all(entry.question in QUESTIONS for entry in WRONG), [e.name for e in WRONG if e.question not in QUESTIONS]
    assert all(entry.question is None and entry.description for entry in CORRECT)
    assert {entry.question for entry in WRONG} == set(QUESTIONS), "every question needs at least one wrong entry"


def test_reference_solution_gets_full_marks(test_sources):
    for scores in gradings(None, test_sources):
        assert set(scores) == set(QUESTIONS)
        assert {q: s.score for q, s in scores.items()} == {q: s.possible for q, s in scores.items()}
        assert sum(s.possible for s in scores.values()) == 16


@pytest.mark.parametrize("entry", CORRECT, ids=lambda e: e.name)
def test_correct_implementation_gets_full_marks(entry, test_sources):
    for scores in gradings(entry, test_sources):
        lost = {q: s.failures for q, s in scores.items() if s.score != s.possible}
        assert lost == {}


@pytest.mark.parametrize("entry", WRONG, ids=lambda e: e.name)
def test_wrong_implementation_loses_points_on_its_question(entry, test_sources):
    spared = set(QUESTIONS) - {entry.question} - DEPENDS_ON.get(entry.question, set())
    every_grading = gradings(entry, test_sources)
    for scores in every_grading:
        assert scores[entry.question].score < scores[entry.question].possible
        assert {q for q in spared if scores[q].score != scores[q].possible} == set()
    # Stock `otter run` and this grader each draw their own inputs: they agree only if no score depends on them.
    assert len({tuple((q, s.score) for q, s in sorted(scores.items())) for scores in every_grading}) == 1


@pytest.mark.parametrize("entry", WRONG, ids=lambda e: e.name)
def test_failures_explain_the_mistake_without_the_answer(entry, test_sources):
    """Each failure is one of our assertions (not a crash) with a message that names the mistake."""
    for scores in gradings(entry, test_sources, times=5):
        for message in scores[entry.question].failures:
            explanation = message.rsplit("AssertionError: ", 1)
            assert len(explanation) == 2 and len(explanation[1].split()) >= 5, message
            for pattern in ANSWER_PATTERNS:
                assert not re.search(pattern, explanation[1]), (pattern, message)


def test_answers_memorised_for_fixed_hidden_inputs_keep_only_the_public_points(test_sources):
    """Knowing the inputs of one grading's hidden tests (learnt by timing, say) is worth nothing: right
    answers for those inputs alone pass no hidden test of the next grading."""
    for scores in gradings(MEMORISED, test_sources):
        for question in DRAWN:
            assert len(scores[question].failures) == hidden_count(test_sources[question]), question
        assert sum(s.score for s in scores.values()) == 6.5


def test_hidden_tests_draw_other_inputs_at_every_grading(test_sources):
    """A spy in place of each Part 2 function records what every hidden test passes it: no hidden test
    passes the same inputs in every one of a few gradings (by chance, two gradings may agree on one)."""
    for question in DRAWN:
        seen = [hidden_inputs(question, test_sources[question]) for _ in range(4)]
        for case in seen[0]:
            assert len({repr(inputs[case]) for inputs in seen}) > 1, (question, case, seen[0][case])


def hidden_count(source: str) -> int:
    return sum(case.hidden for case in ExceptionTestFile.from_string(source, path="tests/q.py").test_cases)


def hidden_inputs(question: str, source: str) -> dict[str, list]:
    """What each hidden test of `question` passes the reference answer in one grading: its arguments, a
    function's by the values it closes over (the coefficients a test drew for its next_token)."""
    env, calls = env_for(None), []
    answer = env[question]

    def spy(*args):
        calls.append([inspect.getclosurevars(a).nonlocals if callable(a) else a for a in args])
        return answer(*args)

    env[question] = spy
    seen = {}
    for case in ExceptionTestFile.from_string(source, path=f"tests/{question}.py").test_cases:
        if case.hidden:
            calls.clear()
            case.body.call_func(env)
            seen[case.name] = list(calls)
    return seen
