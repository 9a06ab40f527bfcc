"""Per-question scores equal those of stock `otter run` (slow: ~3 s per notebook, run in parallel)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import grade_submission

OTTER = str(Path(sys.executable).with_name("otter"))


@pytest.fixture(scope="module")
def notebooks(toy):
    return {
        "correct": toy.notebook("parity-correct"),
        "partial": toy.notebook(
            "parity-partial",
            {"q1": "def square(x):\n    return abs(x) * x\n", "q2": "total = 10\n"},
        ),
        "overwrite-after-check": toy.notebook("parity-overwrite", extra=[(None, "square = None\n")]),
    }


def test_scores_match_otter_run(toy, notebooks, tmp_path):
    procs = {}
    for name, path in notebooks.items():
        out = tmp_path / name
        out.mkdir()
        # otter.Notebook("toy.ipynb") only works (and grader.check counts) under the original name
        submission = out / "toy.ipynb"
        submission.write_bytes(path.read_bytes())
        cmd = [OTTER, "run", "-a", str(toy.zip), "-o", str(out), str(submission)]
        procs[name] = (subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT), out)
    expected = {}
    for name, (proc, out) in procs.items():
        proc.communicate(timeout=120)
        results = json.loads((out / "results.json").read_text())
        expected[name] = {t["name"]: t["score"] for t in results["tests"] if "score" in t}
    for name, path in notebooks.items():
        got = {q.name: q.score for q in grade_submission(toy.zip, path).questions}
        assert got == expected[name], name
    assert expected["partial"] != expected["correct"]
