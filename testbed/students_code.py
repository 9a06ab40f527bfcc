"""Students' code for the insights (what the class got wrong, who wrote alike): a generated class writing
Decode's functions in genuinely different ways, some near-copies among them, results in the grader's shape; and
one hand-written pair of near-copies (renamed variables, reordered functions) in real notebooks."""

from __future__ import annotations

import random
import re

import nbformat

from testbed.submissions import ANSWER_TAG, QUESTIONS, corpus, submission_notebook

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


# --- a copied pair in Decode's notebooks -------------------------------------------------------------------

ENTRIES = {e.name: e for kind in ("correct", "wrong") for e in corpus(kind)}


COPIED = """
def decode_step_seconds(param_bytes, bandwidth):
    seconds_for_one_pass = param_bytes / bandwidth
    return seconds_for_one_pass


def tokens_per_second(param_bytes, bandwidth):
    one_pass = decode_step_seconds(param_bytes, bandwidth)
    return 1.0 / one_pass


def decode_time(n_tokens, param_bytes, bandwidth):
    elapsed_total = 0.0
    for _step_index in range(n_tokens):
        elapsed_total = elapsed_total + decode_step_seconds(param_bytes, bandwidth)
    return elapsed_total


def generate(next_token, prompt, n):
    running_sequence = [token for token in prompt]
    while len(running_sequence) < len(prompt) + n:
        running_sequence.append(next_token(list(running_sequence)))
    return running_sequence


def call_order_is_sequential(next_token, prompt, n):
    observed_lengths = []

    def spy(sequence_seen):
        observed_lengths.append(len(sequence_seen))
        return next_token(sequence_seen)

    generate(spy, prompt, n)
    return observed_lengths == list(range(len(prompt), len(prompt) + n))
"""


RENAMES = {"seconds_for_one_pass": "t", "one_pass": "step", "elapsed_total": "acc", "_step_index": "i",
           "running_sequence": "seq", "observed_lengths": "seen", "spy": "wrapper", "sequence_seen": "s"}  # fmt: skip


def renamed_and_reordered(code: str) -> str:
    for old, new in RENAMES.items():
        code = re.sub(rf"\b{old}\b", new, code)
    functions = [f"def {part}" for part in code.split("\ndef ")[1:]]
    return "\n\n".join(functions[2:] + functions[:2])  # generate first: a different order


def notebook(base: str | None, wrong: str | None = None, code: str | None = None) -> bytes:
    """A Decode submission: a correct variant of the corpus (or `code` of our own) with, optionally, one wrong
    function of the corpus in that function's own answer cell (so the rest stays that student's own)."""
    nb = submission_notebook(ENTRIES[base] if base else None)
    cells = [c for c in nb.cells if c.cell_type == "code" and ANSWER_TAG in c.metadata.get("tags", [])]
    if code is not None:
        cells[QUESTIONS.index("decode_step_seconds")].source = code
        for question in ("tokens_per_second", "decode_time", "generate", "call_order_is_sequential"):
            cells[QUESTIONS.index(question)].source = "# answered above"
    if wrong is not None:  # after what the cell holds (it may define more than that question)
        cell = cells[QUESTIONS.index(ENTRIES[wrong].question)]
        cell.source = f"{cell.source}\n\n{ENTRIES[wrong].source}"
    return nbformat.writes(nb).encode()
