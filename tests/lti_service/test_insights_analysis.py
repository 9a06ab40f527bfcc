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
from tests.submissions import AUTOGRADER_ZIP, corpus, submission_notebook

DAY = date(2025, 3, 10)
NAMES = ["total", "acc", "seconds", "t", "result", "value", "out", "s", "elapsed", "answer"]
SEQ = ["sequence", "seq", "tokens", "out", "context", "history", "ids", "result"]

HANDOUT = """gb_read_per_step = ...

ms_per_token = ...

max_tokens_per_second = ...

def decode_step_seconds(param_bytes, bandwidth):
    \"\"\"Seconds to read every weight once at the given bandwidth.\"\"\"
    ...

def tokens_per_second(param_bytes, bandwidth):
    \"\"\"Best-case decode rate of one sequence: one token per weight read.\"\"\"
    ...

def decode_time(n_tokens, param_bytes, bandwidth):
    \"\"\"Seconds to decode n_tokens one after another: one full weight read per token.\"\"\"
    ...

def generate(next_token, prompt, n):
    \"\"\"Decode n tokens one at a time; each step sees every token before it.\"\"\"
    ...

def call_order_is_sequential(next_token, prompt, n):
    \"\"\"True when generate calls next_token on a sequence that grows by one token per call.\"\"\"
    ...
"""


# --- a class of independently written answers ------------------------------------------------------------


def _values(rng: random.Random) -> list[str]:
    return [
        rng.choice(["gb_read_per_step = 8e9 / 1e9", "gb_read_per_step = 8", "gb_read_per_step = 8.0",
                    "params = 4e9\nbytes_each = 2\ngb_read_per_step = params * bytes_each / 1e9"]),
        rng.choice(["ms_per_token = 8 / 2", "ms_per_token = 4", "ms_per_token = 8e9 / 2e12 * 1000",
                    "ms_per_token = gb_read_per_step / 2000 * 1000"]),
        rng.choice(["max_tokens_per_second = 1000 / ms_per_token", "max_tokens_per_second = 250",
                    "max_tokens_per_second = 2e12 / 8e9", "max_tokens_per_second = 1 / (ms_per_token / 1000)"]),
    ]  # fmt: skip


def _step(rng: random.Random, v: str) -> str:
    return rng.choice([
        "    return param_bytes / bandwidth",
        f"    {v} = param_bytes / bandwidth\n    return {v}",
        "    if bandwidth <= 0:\n        raise ValueError('bandwidth must be positive')\n"
        "    return param_bytes / bandwidth",
        "    return float(param_bytes) / float(bandwidth)",
        f"    per_byte = 1 / bandwidth\n    {v} = param_bytes * per_byte\n    return {v}",
    ])  # fmt: skip


def _rate(rng: random.Random, v: str) -> str:
    return rng.choice([
        "    return bandwidth / param_bytes",
        "    return 1 / decode_step_seconds(param_bytes, bandwidth)",
        f"    {v} = decode_step_seconds(param_bytes, bandwidth)\n    if {v} == 0:\n        return float('inf')\n"
        f"    return 1.0 / {v}",
        f"    seconds_per_token = param_bytes / bandwidth\n    {v} = 1 / seconds_per_token\n    return {v}",
    ])  # fmt: skip


def _time(rng: random.Random, v: str) -> str:
    return rng.choice([
        "    return n_tokens * param_bytes / bandwidth",
        "    return n_tokens * decode_step_seconds(param_bytes, bandwidth)",
        f"    {v} = 0.0\n    for _ in range(n_tokens):\n        {v} += decode_step_seconds(param_bytes, bandwidth)\n"
        f"    return {v}",
        "    return sum(decode_step_seconds(param_bytes, bandwidth) for _ in range(n_tokens))",
        f"    {v} = tokens_per_second(param_bytes, bandwidth)\n    return n_tokens / {v} if n_tokens else 0.0",
        f"    steps = [param_bytes / bandwidth] * n_tokens\n    {v} = 0\n    for s in steps:\n        {v} = {v} + s\n"
        f"    return {v}",
    ])  # fmt: skip


def _generate(rng: random.Random, s: str) -> str:
    copy = rng.choice(["list(prompt)", "prompt[:]", "[*prompt]", "[t for t in prompt]"])
    return rng.choice([
        f"    {s} = {copy}\n    for _ in range(n):\n        {s}.append(next_token({s}))\n    return {s}",
        f"    {s} = {copy}\n    target = len(prompt) + n\n    while len({s}) < target:\n"
        f"        token = next_token({s})\n        {s} = {s} + [token]\n    return {s}",
        f"    if n == 0:\n        return {copy}\n    {s} = generate(next_token, prompt, n - 1)\n"
        f"    return {s} + [next_token({s})]",
        f"    {s} = {copy}\n    [{s}.append(next_token({s})) for _ in range(n)]\n    return {s}",
        f"    def step({s}, _):\n        return {s} + [next_token({s})]\n\n"
        f"    from functools import reduce\n    return reduce(step, range(n), {copy})",
        f"    {s} = {copy}\n\n    def more():\n        for _ in range(n):\n            nxt = next_token({s})\n"
        f"            {s}.append(nxt)\n            yield nxt\n\n    for _ in more():\n        pass\n    return {s}",
    ])  # fmt: skip


def _order(rng: random.Random, s: str) -> str:
    return rng.choice([
        f"    lengths = []\n\n    def spy({s}):\n        lengths.append(len({s}))\n        return next_token({s})\n\n"
        f"    generate(spy, list(prompt), n)\n    return lengths == list(range(len(prompt), len(prompt) + n))",
        f"    class Recorder:\n        def __init__(self):\n            self.calls = []\n\n"
        f"        def __call__(self, {s}):\n            self.calls.append(list({s}))\n"
        f"            return next_token({s})\n\n    rec = Recorder()\n    generate(rec, list(prompt), n)\n"
        f"    if len(rec.calls) != n:\n        return False\n"
        f"    return all(len(c) == len(prompt) + i for i, c in enumerate(rec.calls))",
        f"    count = 0\n    ok = True\n\n    def check({s}):\n        nonlocal count, ok\n"
        f"        ok = ok and len({s}) == len(prompt) + count\n        count += 1\n        return next_token({s})\n\n"
        f"    generate(check, list(prompt), n)\n    return ok and count == n",
        f"    seen = []\n    generate(lambda {s}: seen.append(len({s})) or next_token({s}), list(prompt), n)\n"
        f"    expected = [len(prompt) + k for k in range(n)]\n    return seen == expected",
    ])  # fmt: skip


SIGNATURES = {
    "decode_step_seconds": ("(param_bytes, bandwidth)", "Seconds to read every weight once at the given bandwidth."),
    "tokens_per_second": ("(param_bytes, bandwidth)",
                          "Best-case decode rate of one sequence: one token per weight read."),
    "decode_time": ("(n_tokens, param_bytes, bandwidth)",
                    "Seconds to decode n_tokens one after another: one full weight read per token."),
    "generate": ("(next_token, prompt, n)", "Decode n tokens one at a time; each step sees every token before it."),
    "call_order_is_sequential": ("(next_token, prompt, n)",
                                 "True when generate calls next_token on a sequence that grows by one token per call."),
}  # fmt: skip
BODIES = {"decode_step_seconds": _step, "tokens_per_second": _rate, "decode_time": _time, "generate": _generate,
          "call_order_is_sequential": _order}  # fmt: skip


def _flourish(rng: random.Random, params: str) -> str:
    """What a student adds of their own: a check, a debug print, a note to self (comments vanish)."""
    first, second = params.strip("()").split(", ")[:2]
    return rng.choice([
        "", "", "", "    # the lesson's formula\n",
        f"    assert {first} is not None\n", f"    print('debug', {first}, {second})\n",
        f"    if {second} is None:\n        raise TypeError('{second} is required')\n",
        f"    {first}, {second} = {first}, {second}  # unpack\n",
        f"    assert isinstance({second}, (int, float)), type({second})\n",
    ])  # fmt: skip


def functions(rng: random.Random) -> dict[str, str]:
    """One student's five functions: a way of writing each, their own names, docstring kept or not."""
    found = {}
    for name, body in BODIES.items():
        params, doc = SIGNATURES[name]
        head = f"def {name}{params}:\n" + (f'    """{doc}"""\n' if rng.random() < 0.7 else "")
        pool = SEQ if name in ("generate", "call_order_is_sequential") else NAMES
        found[name] = head + _flourish(rng, params) + body(rng, rng.choice(pool)) + "\n"
    return found


def student_code(rng: random.Random) -> str:
    return "\n\n".join([*_values(rng), *functions(rng).values()])


def near_copy(code: str, rng: random.Random) -> str:
    """The same code with its variables renamed, a comment added and its functions in another order."""
    renamed = code
    for old, new in [("total", "the_sum"), ("acc", "running"), ("sequence", "toks"), ("lengths", "sizes"),
                     ("seen", "observed"), ("result", "res"), ("steps", "parts")]:  # fmt: skip
        renamed = renamed.replace(old, new)
    parts = renamed.split("\n\ndef ")
    head, defs = parts[0], ["def " + p for p in parts[1:]]
    rng.shuffle(defs)
    return "# my own work\n" + "\n\n".join([head, *defs])


def generated_class(size: int, copies: int, seed: int) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """`size` students' code, `copies` of them (the second of each pair) near-copies of another."""
    rng = random.Random(seed)
    code = {f"user-{n:04d}": student_code(rng) for n in range(size)}
    pairs = []
    for n in range(copies):
        original, copier = f"user-{2 * n:04d}", f"user-{2 * n + 1:04d}"
        code[copier] = near_copy(code[original], rng)
        pairs.append((original, copier))
    return code, pairs


# --- common mistakes ---------------------------------------------------------------------------------------


def result(failing: dict[str, list[tuple[str, str]]]) -> dict:
    """A staff result in the grader's shape: every question passes but the given (test, message) failures."""
    questions = []
    for question in ("ms_per_token", "decode_time", "generate"):
        tests = [{"name": f"{question} - {n}", "passed": True, "hidden": n > 1, "score": 0.0, "max_score": 0.0,
                  "message": "✅ Test case passed"} for n in (1, 2)]  # fmt: skip
        for name, message in failing.get(question, []):
            test = next(t for t in tests if t["name"] == name)
            test.update(passed=False, message=message)
        questions.append({"name": question, "score": 1.0, "max_score": 1.0, "tests": tests})
    return {"questions": questions}


def returned(got: float) -> str:
    return (f"❌ Test case failed\nError at line 12 in test decode_time:\n      assert math.isclose(got, 0.02)\n"
            f"AssertionError: decode_time(5, 8e9, 2e12) returned {got} instead of 0.02")  # fmt: skip


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
