"""Whatever the sandbox sends, the grader allocates no more than the (capped) message (issue 8).

Each case is a notebook cell that finds the runner's channel and writes a crafted reply itself: sizes,
counts, depths and itemsizes that would make a careless decoder allocate gigabytes. The grader must
refuse the message, restart the sandbox, grade the honest answers, and keep its own memory flat.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from autograder.protocol import MAX_ERROR_TYPES, student_exception
from tests.autograder.conftest import FIND_CHANNEL

PAYLOADS = {
    "huge itemsize and shape": 'reply({"$nd": {"dtype": "<U16384", "shape": [10**9], "data": {"$b": [0, 0]}}})',
    "huge object array": 'reply({"$nd": {"dtype": "|O", "shape": [10**6, 10**6], "items": []}})',
    "shape that overflows": 'reply({"$nd": {"dtype": "|b1", "shape": [2**62, 2**62], "data": {"$b": [0, 0]}}})',
    "deep nesting": 'os.write(channel.write_fd, struct.pack(">II", 200000, 0) + b"[" * 100000 + b"]" * 100000)',
    "millions of nodes": "reply([0] * 3_000_000)",
    "oversized frame": 'os.write(channel.write_fd, struct.pack(">II", 2**31, 2**31))',
    "printed output that is not text": 'reply(None, out={"$nd": {"dtype": "<U16384", "shape": [10**9]}})',
    "printed output beyond its cap": 'reply(None, out="x" * (64 * 1024 + 1))',
    "series longer than its data": (
        'reply({"$series": {"data": {"$nd": {"dtype": "<i8", "shape": [1], "data": {"$b": [0, 8]}}},'
        ' "index": {"$index": {"range": [0, 10**12, 1], "name": None}}, "name": None}}, b"\\0" * 8)'
    ),
}

GRADE = """
import json, sys
from autograder import grade_submission
result = grade_submission(sys.argv[1], sys.argv[2])
peak = int(result.usage["tests_peak_memory_mb"] * 1024)  # the grading process, where values are decoded
print(json.dumps({"score": result.score, "peak_kb": peak, "cell_errors": result.cell_errors}))
"""


def grade_in_new_process(toy, notebook) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", GRADE, str(toy.zip), str(notebook)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def honest_peak_kb(toy):
    return grade_in_new_process(toy, toy.notebook("honest-baseline"))["peak_kb"]


@pytest.mark.parametrize("payload", PAYLOADS, ids=str)
def test_a_hostile_reply_is_refused_without_allocating(toy, honest_peak_kb, payload):
    cell = FIND_CHANNEL + PAYLOADS[payload] + "\n"
    result = grade_in_new_process(toy, toy.notebook("hostile-reply", extra=[("q1", cell)]))
    assert result["score"] == 5.0  # the sandbox was restarted and the honest answers graded
    assert any("sandbox" in error for error in result["cell_errors"])
    assert result["peak_kb"] < honest_peak_kb + 150 * 1024, "the grading process's memory grew with the reply"


def test_exception_types_named_by_student_code_are_bounded():
    for i in range(10 * MAX_ERROR_TYPES):
        student_exception(f"StudentError{i}", "boom", 1.0)
    from autograder import protocol

    assert len(protocol._ERROR_TYPES) <= MAX_ERROR_TYPES
    assert type(student_exception("StudentError5", "boom", 1.0)).__name__ == "StudentError5"
