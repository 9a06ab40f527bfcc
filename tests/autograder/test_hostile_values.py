"""The grader never does unbounded work on values a student chose (bounded decoding).

Unit tests on what the grader makes of a reference's claimed class, of a module's name and of the
student's numpy print options; then whole gradings where a notebook cell writes a crafted reply (as in
test_hostile_replies.py) or sets a hostile value: each finishes quickly with the honest score, and the
grader's memory stays flat. The decoder's own limits are tested in test_codec.py.
"""

from __future__ import annotations

import datetime
import json
import numbers
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from autograder.protocol import MAX_BLOBS, ProtocolError
from autograder.remote import StudentObject
from autograder.testfiles import printoptions
from autograder.values import Values
from tests.autograder.conftest import FIND_CHANNEL, OTTER, Toy


def decode(node: dict) -> object:
    return Values(SimpleNamespace(fail=lambda error: error, budget=MAX_BLOBS)).decode(node, memoryview(b""))


def reference(qualname: str, module: str, kind: str = "object") -> object:
    return decode({"$ref": 1, "type": qualname, "module": module, "kind": kind, "truth": True})


@pytest.mark.parametrize(
    ("qualname", "module", "cls"),
    [
        ("float", "builtins", float),
        ("float", "builtins", numbers.Real),
        ("int", "builtins", int),
        ("float64", "numpy", np.float64),
        ("float64", "numpy", numbers.Real),
        ("DataFrame", "pandas", pd.DataFrame),
        ("DataFrame", "pandas.core.frame", pd.DataFrame),
        ("Timestamp", "pandas", datetime.datetime),
        ("Real", "numbers", numbers.Real),
        ("type", "builtins", type),
    ],
)
def test_a_reference_cannot_claim_a_class_whose_values_travel_as_data(qualname, module, cls):
    """Such a claim is a lie (a float would have come as data), which isinstance would believe."""
    value = reference(qualname, module, kind="class" if cls is type else "object")
    assert isinstance(value, StudentObject)
    assert not isinstance(value, cls)


def test_a_reference_to_a_class_held_by_reference_keeps_it():
    assert isinstance(reference("timezone", "datetime"), datetime.timezone)
    assert isinstance(reference("Categorical", "pandas.core.arrays.categorical"), pd.Categorical)


def test_a_reference_handle_must_be_small():
    """Handles that are multiples of 2**61-1 would all collide in the table of proxies."""
    with pytest.raises(ProtocolError):
        decode({"$ref": 2**61 - 1, "type": "object", "module": "builtins", "kind": "object"})


def test_a_module_is_imported_here_only_by_a_public_name(monkeypatch):
    """Importing numpy.f2py.__main__ runs f2py on the grader's command line (and exits)."""
    monkeypatch.setattr(sys, "argv", ["grader"])
    module = decode({"$ref": 1, "type": "module", "kind": "module", "name": "numpy.f2py.__main__"})
    assert isinstance(module, StudentObject)
    assert "numpy.f2py.__main__" not in sys.modules
    assert decode({"$ref": 2, "kind": "module", "name": "numpy.linalg"}) is np.linalg


@pytest.mark.parametrize(
    ("option", "hostile", "bounded"),
    [
        ("threshold", sys.maxsize, 1000),
        ("edgeitems", 10**6, 3),
        ("precision", 10**6, 32),
        ("linewidth", 10**9, 100_000),
        ("nanstr", "n" * 10**6, "nan"),
    ],
    ids=["threshold", "edgeitems", "precision", "linewidth", "nanstr"],
)
def test_print_options_are_bounded(option, hostile, bounded):
    """threshold=sys.maxsize made the grader print a 150,000-float answer in full: 67 s."""
    with printoptions({option: hostile}):
        applied = np.get_printoptions()[option]
        printed = repr(np.arange(150_000.0))
    assert applied == bounded
    assert len(printed) < 1000


@pytest.mark.parametrize(
    "options",
    [
        {"legacy": "1.13"},  # what datascience sets
        {
            "precision": 4,
            "threshold": 50,
            "edgeitems": 2,
            "linewidth": 120,
            "suppress": True,
            "floatmode": "fixed",
            "sign": " ",
            "nanstr": "NaN",
            "infstr": "Inf",
            "legacy": False,
        },  # fmt: skip
    ],
)
def test_honest_print_options_still_apply(options):
    with printoptions(options):
        applied = np.get_printoptions()
    assert {k: applied[k] for k in options} == options


# -- whole gradings ---------------------------------------------------------------------------------

GRADE = """
import json, sys, time
from autograder import grade_submission
started = time.monotonic()
result = grade_submission(sys.argv[1], sys.argv[2])
peak = int(result.usage["tests_peak_memory_mb"] * 1024)  # the grading process, where values are decoded
print(json.dumps({"score": result.score, "peak_kb": peak, "cell_errors": result.cell_errors,
                  "seconds": time.monotonic() - started,
                  "longest_message": max(len(t.message) for q in result.questions for t in q.tests)}))
"""


def grade_in_new_process(zip_path: Path, notebook: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", GRADE, str(zip_path), str(notebook)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def honest_peak_kb(toy):
    return grade_in_new_process(toy.zip, toy.notebook("honest-values-baseline"))["peak_kb"]


REPLIES = {
    "a blob referenced 1,200 times": 'reply([{"$bytes": {"$b": [0, 1 << 20]}}] * 1200, bytes(1 << 20))',
    "an array's blob referenced 1,200 times": (
        'reply([{"$nd": {"dtype": "|u1", "shape": [1 << 20], "data": {"$b": [0, 1 << 20]}}}] * 1200, bytes(1 << 20))'
    ),
    "a set of ints that all hash to 0": 'reply({"$set": [k * (2**61 - 1) for k in range(60_000)]})',
    "dict keys that all hash to 0": 'reply({"$dict": [[k * (2**61 - 1), 0] for k in range(60_000)]})',
    "range(25_000_000)": 'reply({"$range": [0, 25_000_000, 1]})',
    "Decimal('1e999999999')": 'reply({"$decimal": "1e999999999"})',
}


@pytest.mark.parametrize("payload", REPLIES, ids=str)
def test_a_hostile_value_is_refused_without_unbounded_work(toy, honest_peak_kb, payload):
    cell = FIND_CHANNEL + REPLIES[payload] + "\n"
    result = grade_in_new_process(toy.zip, toy.notebook("hostile-value", extra=[("q1", cell)]))
    assert result["score"] == 5.0  # the sandbox was restarted and the honest answers graded
    assert any("sandbox" in error for error in result["cell_errors"])
    assert result["seconds"] < 30
    assert result["peak_kb"] < honest_peak_kb + 150 * 1024, "the grading process's memory grew with the reply"


def test_a_module_named_by_student_code_runs_nothing_here(toy):
    """A module object named numpy.f2py.__main__ made the grader import it: f2py ran on the grader's
    command line and raised SystemExit."""
    answer = 'import types\nsquare = types.ModuleType("numpy.f2py.__main__")\n'
    result = grade_in_new_process(toy.zip, toy.notebook("module-name", answers={"q1": answer}))
    assert result["score"] == 3.0  # q1's square is not a function; q2 is graded


OK_MASTER = [
    ("raw", "# ASSIGNMENT CONFIG\nname: okvalues\nexport_cell: false\ninit_cell: true\ncheck_all_cell: false"),
    ("code", "import numpy as np"),
    ("raw", "# BEGIN QUESTION\nname: q1\npoints: 1"),
    ("markdown", "Set `ratio` to one half."),
    ("raw", "# BEGIN SOLUTION"),
    ("code", "ratio = 0.5  # SOLUTION"),
    ("raw", "# END SOLUTION"),
    ("raw", "# BEGIN TESTS"),
    ("code", "isinstance(ratio, float)", "True"),
    ("raw", "# END TESTS"),
    ("raw", "# END QUESTION"),
    ("raw", "# BEGIN QUESTION\nname: q2\npoints: 1"),
    ("markdown", "Set `values` to the floats 0, 1 and 2."),
    ("raw", "# BEGIN SOLUTION"),
    ("code", "values = np.arange(3.0)  # SOLUTION"),
    ("raw", "# END SOLUTION"),
    ("raw", "# BEGIN TESTS"),
    ("code", "values", "array([0., 1., 2.])"),
    ("raw", "# END TESTS"),
    ("raw", "# END QUESTION"),
]


def _cell(kind: str, source: str, output: str | None = None) -> dict:
    cell = {"cell_type": kind, "metadata": {}, "source": source}
    if kind == "code":
        result = {"output_type": "execute_result", "data": {"text/plain": output}, "metadata": {}, "execution_count": 1}
        cell.update(execution_count=1 if output else None, outputs=[result] if output else [])
    return cell


@pytest.fixture(scope="module")
def ok_toy(tmp_path_factory: pytest.TempPathFactory) -> Toy:
    """An OK-format (doctest) assignment: q1 checks isinstance(ratio, float), q2 prints `values`."""
    out = tmp_path_factory.mktemp("okvalues")
    master = {"cells": [_cell(*cell) for cell in OK_MASTER], "metadata": {"kernelspec": {"name": "python3",
              "display_name": "Python 3", "language": "python"}}, "nbformat": 4, "nbformat_minor": 5}  # fmt: skip
    (out / "okvalues.ipynb").write_text(json.dumps(master))
    subprocess.run([OTTER, "assign", "okvalues.ipynb", "dist"], cwd=out, check=True, capture_output=True)
    (zip_path,) = (out / "dist" / "autograder").glob("*.zip")
    template = json.loads((out / "dist" / "student" / "okvalues.ipynb").read_text())
    (out / "subs").mkdir()
    return Toy(zip_path, template, out / "subs")


OK_SOLUTION = {"q1": "ratio = 0.5\n", "q2": "values = np.arange(3.0)\n"}


def test_the_ok_format_assignment_grades_its_solution(ok_toy):
    assert grade_in_new_process(ok_toy.zip, ok_toy.notebook("solution", OK_SOLUTION))["score"] == 2.0


def test_an_object_cannot_pass_for_a_float(ok_toy):
    """An instance of a class that names itself builtins.float passed isinstance(ratio, float)."""
    answer = "class Fake:\n    pass\nFake.__qualname__, Fake.__module__ = 'float', 'builtins'\nratio = Fake()\n"
    result = grade_in_new_process(ok_toy.zip, ok_toy.notebook("fake-float", {**OK_SOLUTION, "q1": answer}))
    assert result["score"] == 1.0


def test_the_students_print_options_cannot_make_printing_unbounded(ok_toy):
    answer = (
        "import sys\nnp.set_printoptions(threshold=sys.maxsize)\nvalues = np.random.default_rng(0).random(150_000)\n"
    )
    result = grade_in_new_process(ok_toy.zip, ok_toy.notebook("threshold", {**OK_SOLUTION, "q2": answer}))
    assert result["score"] == 1.0
    assert result["seconds"] < 30
    assert result["longest_message"] < 5000  # the failing doctest showed a summary, not 100,000 floats
