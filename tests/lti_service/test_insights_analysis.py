"""Insights over a generated class: the common mistakes (real grader results and hand-built ones in the same
shape) and the similar pairs (students writing Decode's functions in genuinely different ways, one copied pair).
"""

from __future__ import annotations

import json
import random
from datetime import UTC, date, datetime, timedelta

import nbformat
import pytest

from autograder import grade_submission
from lti_service.insights.mistakes import Graded, Student, answer_codes, common_mistakes, failures
from lti_service.insights.similarity import THRESHOLD, similar_pairs
from testbed.students_code import BODIES, HANDOUT, generated_class, near_copy, result, returned
from testbed.submissions import AUTOGRADER_ZIP, corpus, submission_notebook

DAY = date(2025, 3, 10)


# --- common mistakes ---------------------------------------------------------------------------------------


def student(n: int, res: dict, code: str = "", at: datetime | None = None, history: tuple = ()) -> Student:
    graded = Graded(f"user-{n}", f"Name{n} Surname", at or datetime(2025, 3, 12, 9, tzinfo=UTC), res)
    return Student(graded.user_id, graded.name, graded, history or (graded,), {"decode_time": code, "generate": ""})


def hand_built_class() -> list[Student]:
    """60 students: 30% one step extra, 10% one step short, 20% a generate that returns one token too many."""
    extra = result({"decode_time": [("decode_time - 1", returned(0.024))]})
    short = result({"decode_time": [("decode_time - 1", returned(0.016))]})
    long = result({"generate": [("generate - 2", "AssertionError: got [7, 7, 2, 3, 4], expected [7, 7, 2, 3]")]})
    students = [
        student(n, extra, f"def decode_time(n, p, b):\n    return (n + 1) * p / b  # {n % 4}") for n in range(18)
    ]
    students += [student(n, short, "def decode_time(n, p, b):\n    return (n - 1) * p / b") for n in range(18, 24)]
    students += [student(n, long) for n in range(24, 36)]
    return students + [student(n, result({})) for n in range(36, 60)]


def test_groups_by_wrong_value_with_counts_and_shares():
    mistakes = common_mistakes(hand_built_class(), [DAY])
    found = [(m.question, m.test, m.value, m.students, m.share) for m in mistakes]
    assert found == [
        ("decode_time", "decode_time - 1", "0.024", 18, 0.3),
        ("generate", "generate - 2", "[7, 7, 2, 3, 4]", 12, 0.2),
        ("decode_time", "decode_time - 1", "0.016", 6, 0.1),
    ]
    assert mistakes[0].message == "AssertionError: decode_time(<n>, <n>, <n>) returned <n> instead of <n>"
    assert [len(m.examples) for m in mistakes] == [3, 0, 1]  # three different codes of four; empty code is no example


def test_equal_counts_keep_question_order_and_numbers_do_not_split():
    early = result({"ms_per_token": [("ms_per_token - 2", "AssertionError: ms_per_token is 4000.0: use milliseconds")]})
    late = result({"decode_time": [("decode_time - 2", "AssertionError: decode_time(7, 1.5e9, 3e12) is wrong")]})
    later = result({"decode_time": [("decode_time - 2", "AssertionError: decode_time(201, 2.25e9, 1e12) is wrong")]})
    students = [student(n, late if n % 2 else later) for n in range(4)] + [student(n, early) for n in range(4, 8)]
    mistakes = common_mistakes(students, [DAY])
    assert [(m.question, m.students, m.value) for m in mistakes] == [
        ("ms_per_token", 4, None),
        ("decode_time", 4, None),
    ]


def test_examples_keep_who_wrote_them_apart_from_their_code():
    """The stored examples name their student by id and name, which only the page turns into a name or a
    reference (views/insights.py): the analysis itself has no notion of anonymity to get wrong."""
    mistakes = common_mistakes(hand_built_class(), [DAY])
    first = mistakes[0].examples[0]
    assert (first.user_id, first.name) == ("user-0", "Name0 Surname") and "decode_time" in first.code
    assert [e.user_id for m in mistakes for e in m.examples] == ["user-0", "user-1", "user-2", "user-18"]


def test_trend_shrinks_as_students_fix_the_mistake():
    extra = result({"decode_time": [("decode_time - 1", returned(0.024))]})
    days = [DAY + timedelta(days=n) for n in range(4)]
    at = [datetime(2025, 3, 10 + n, 23, 30) for n in range(4)]  # naive: UTC, the end of each day
    students = []
    for n in range(10):  # wrong on day 0; n < 6 fix it on day 1 + n % 3, the rest never do
        wrong = Graded(f"user-{n}", "x", at[0], extra)
        fixed = Graded(f"user-{n}", "x", at[1 + n % 3], result({}))
        history = (wrong, fixed) if n < 6 else (wrong,)
        students.append(Student(f"user-{n}", "x", history[-1], history, {}))
    students.append(student(10, extra, at=datetime(2025, 3, 12, 8, tzinfo=UTC)))  # a latecomer, wrong from day 2
    (mistake,) = common_mistakes(students, days)
    assert mistake.students == 5
    assert mistake.trend == (10, 8, 7, 5)


def test_last_line_and_values_from_long_tracebacks():
    message = (
        "Traceback (most recent call last):\n" + "  File 'x', line 1\n" * 2000 + "AssertionError: assert 71 == 71.4\n"
    )
    assert failures(result({"decode_time": [("decode_time - 2", message)]})) == {
        ("decode_time", "decode_time - 2", "AssertionError: assert <n> == <n>", "71")
    }


@pytest.fixture(scope="module")
def real_results() -> dict[str, dict]:
    """Decode's real grader on a few notebooks (each graded once; one twice: its hidden tests draw new numbers)."""
    entries = {e.name: e for e in corpus("wrong")}
    runs = {"correct": None, "extra": "decode_time_one_step_extra", "extra_again": "decode_time_one_step_extra",
            "generate": "generate_extra_call"}  # fmt: skip
    found = {}
    for label, name in runs.items():
        notebook = nbformat.writes(submission_notebook(entries.get(name))).encode()
        found[label] = grade_submission(AUTOGRADER_ZIP, notebook).to_dict()
    return found


def test_real_results_group_every_failing_assertion(real_results):
    students = [student(n, real_results["extra" if n % 2 else "extra_again"]) for n in range(18)]
    students += [student(n, real_results["generate"]) for n in range(18, 30)]
    students += [student(n, real_results["correct"]) for n in range(30, 60)]
    mistakes = common_mistakes(students, [DAY])
    decode = [(m.test, m.students) for m in mistakes if m.question == "decode_time"]
    assert decode == [(f"decode_time - {n}", 18) for n in (1, 2, 3, 4)]  # random numbers do not split them
    generate = [(m.test, m.students) for m in mistakes if m.question == "generate"]
    assert generate == [("generate - 3", 12), ("generate - 4", 12), ("generate - 5", 12)]
    assert {m.question for m in mistakes} == {"decode_time", "generate", "call_order_is_sequential"}
    assert all(m.share == m.students / 60 and "❌" not in m.message for m in mistakes)
    json.dumps([m.trend for m in mistakes])


def test_answer_codes_read_the_cells_before_each_check():
    entry = next(e for e in corpus("wrong") if e.name == "decode_time_one_step_extra")
    notebook = nbformat.writes(submission_notebook(entry)).encode()
    found = answer_codes(notebook, ["decode_time", "generate"])
    assert found["decode_time"] == entry.source
    assert "for" in found["generate"] or "next_token" in found["generate"]
    handout = nbformat.writes(submission_notebook(answered=False)).encode()
    assert answer_codes(handout, ["gb_read_per_step", "no_such_question"]) == {
        "gb_read_per_step": "gb_read_per_step = ...",
        "no_such_question": "",
    }
    assert answer_codes(b"not json", ["decode_time"]) == answer_codes(b"[" * 600_000, ["decode_time"])
    assert answer_codes(b"[" * 600_000, ["decode_time"]) == {"decode_time": ""}
    huge = submission_notebook(entry)
    next(c for c in huge.cells if c.source == entry.source).source = "x = 1\n" * 10_000
    assert len(answer_codes(nbformat.writes(huge).encode(), ["decode_time"])["decode_time"]) == 20_000


# --- similar pairs -----------------------------------------------------------------------------------------


def copied_class() -> tuple[dict[str, str], str, str]:
    """40 independent students, a near-copy of one of them, and a student who handed in the handout."""
    code, _ = generated_class(40, 0, seed=3)
    rng = random.Random(99)
    original = code["user-0007"]
    code["user-0040"] = near_copy(original, rng)
    code["user-0041"] = HANDOUT
    code["user-0042"] = ""
    return code, "user-0007", "user-0040"


def test_similar_pairs_finds_only_the_near_copy():
    code, original, copier = copied_class()
    (pair,) = similar_pairs(code, HANDOUT)
    assert (pair.a, pair.b) == (original, copier) and THRESHOLD <= pair.score <= 1
    for name in BODIES:  # each copied function body is highlighted on both sides
        for user, spans in ((original, pair.a_spans), (copier, pair.b_spans)):
            start = code[user].index(f"def {name}")
            end = code[user].find("\n\ndef ", start) % (len(code[user]) + 1)
            body = code[user].index(":\n", start) + 2
            covered = sum(max(0, min(e, end) - max(s, body)) for s, e in spans)
            assert covered >= 0.9 * len(code[user][body:end].rstrip()), (name, user)


def test_independent_students_and_the_handout_never_pair():
    code, original, copier = copied_class()
    del code[copier]
    code["user-0043"] = HANDOUT.replace("...", "pass")  # the handout, barely touched
    assert similar_pairs(code, HANDOUT) == []
    assert similar_pairs({"a": HANDOUT, "b": HANDOUT, "c": ""}, HANDOUT) == []


def test_pairs_are_deterministic_and_limited():
    code, _ = generated_class(40, 4, seed=5)
    pairs = similar_pairs(code, HANDOUT)
    assert [(p.a, p.b) for p in pairs] == [(f"user-{2 * n:04d}", f"user-{2 * n + 1:04d}") for n in range(4)]
    assert pairs == similar_pairs(dict(reversed(code.items())), HANDOUT)
    assert [p.score for p in pairs] == sorted((p.score for p in pairs), reverse=True)
    assert similar_pairs(code, HANDOUT, limit=2) == pairs[:2]
    json.dumps([p.__dict__ for p in pairs])  # plain ints and floats, for the cache


def test_copies_stay_found_in_a_renamed_order():
    code, original, copier = copied_class()
    code = {replace_key: code[key] for key, replace_key in ((k, k.replace("user", "z")) for k in code)}
    assert [(p.a, p.b) for p in similar_pairs(code, HANDOUT)] == [("z-0007", "z-0040")]
