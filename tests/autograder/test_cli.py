"""The command line: one JSON line per submission, exit status 0/1/2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile

import pytest

from testbed.host import sandbox_processes
from testbed.submissions import AUTOGRADER_ZIP, SOLUTION_NOTEBOOK

CLI = [sys.executable, "-m", "autograder", "grade"]


def run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(CLI + args, capture_output=True, text=True, timeout=120, env=env)


def test_grades_several_submissions_one_line_each(toy, tmp_path):
    paths = [toy.notebook("cli-a"), toy.notebook("cli-b", {"q1": "square = None\n"})]
    out = tmp_path / "scores.csv"
    proc = run(["--autograder", str(toy.zip), *map(str, paths), "--jobs", "2", "--csv", str(out)])
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(r["submission"], r["score"], r["error"]) for r in lines] == [
        (str(paths[0]), 5.0, None),
        (str(paths[1]), 3.0, None),
    ]
    assert "2/2" in proc.stderr
    assert out.read_text().splitlines()[0] == "submission,score,max_score,q1,q2,error"


def test_student_view_flag_hides_hidden_tests(toy):
    proc = run(["--autograder", str(toy.zip), str(toy.notebook("cli-view")), "--student-view"])
    (line,) = proc.stdout.splitlines()
    assert "q1 - 2" not in line and json.loads(line)["questions"][0]["hidden_total"] == 1


def _notebook_for_other_assignment(toy) -> bytes:
    nb = json.loads(toy.notebook("other").read_text())
    nb["metadata"]["otter"]["assignment_name"] = "other"
    return json.dumps(nb).encode()


INVALID = {
    "not-json": (lambda toy: b"print('hello')\n", "not JSON"),
    "empty": (lambda toy: b"", "empty"),
    "not-a-notebook": (lambda toy: b'{"hello": [1, 2]}', "not a Jupyter notebook"),
    "nbformat-invalid": (
        lambda toy: json.dumps(
            {"cells": [{"cell_type": "code"}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        ).encode(),
        "not valid nbformat",
    ),
    "other-assignment": (_notebook_for_other_assignment, "assignment 'other'"),
    "too-big": (lambda toy: b" " * (5 * 1024 * 1024) + toy.notebook("big").read_bytes(), "size limit"),
}


@pytest.mark.parametrize("case", INVALID)
def test_unusable_input_exits_2_with_a_one_line_reason(toy, tmp_path, case):
    make, reason = INVALID[case]
    bad = tmp_path / f"{case}.ipynb"
    bad.write_bytes(make(toy))
    good = toy.notebook("cli-good")
    scores = tmp_path / "scores.csv"
    proc = run(["--autograder", str(toy.zip), str(bad), str(good), "--csv", str(scores)])
    assert proc.returncode == 2
    first, second = (json.loads(line) for line in proc.stdout.splitlines())
    assert first["score"] == 0 and reason in first["error"] and "\n" not in first["error"]
    assert second["score"] == 5.0 and second["error"] is None
    assert scores.read_text().splitlines()[0] == "submission,score,max_score,q1,q2,error"
    # Alone, it is found unusable after its sandbox was spawned (cli.py starts one early): that one goes too.
    alone = run(["--autograder", str(toy.zip), str(bad)])
    assert alone.returncode == 2 and reason in json.loads(alone.stdout)["error"]
    assert sandbox_processes() == []


def test_without_bwrap_on_path_the_cli_fails_closed(toy, tmp_path):
    env = {**os.environ, "PATH": str(tmp_path)}
    env.pop("GRADER_BWRAP", None)
    proc = run(["--autograder", str(toy.zip), str(toy.notebook("cli-nobwrap"))], env=env)
    assert proc.returncode == 1
    assert "apt-get install bubblewrap" in proc.stderr
    assert proc.stdout == ""


def test_a_notebook_full_of_magics_costs_only_itself(toy, tmp_path):
    # IPython gives up on a cell of 600 magics ("Input transformation still changing after 500 iterations"):
    # that is this cell's error, inside the sandbox, and every other notebook is graded as usual.
    magics = toy.notebook("magics", extra=[("q1", "%time x = 1\n" * 600)])
    good = toy.notebook("cli-after-magics")
    proc = run(["--autograder", str(toy.zip), str(magics), str(good)])
    assert proc.returncode == 0, proc.stderr
    first, second = (json.loads(line) for line in proc.stdout.splitlines())
    assert first["error"] is None and first["score"] == 5.0
    assert any("Input transformation" in error for error in first["cell_errors"])
    assert second["score"] == 5.0


UNUSABLE_ZIPS = {
    "test file without OK_FORMAT": ("tests/q1.py", b"name = 'q1'\n", "does not define the global variable 'OK_FORMAT'"),
    "R assignment": ("otter_config.json", b'{"lang": "r"}', "this grader grades Python notebooks"),
}


@pytest.mark.parametrize("case", UNUSABLE_ZIPS)
def test_an_unusable_zip_still_gives_every_notebook_a_line(toy, tmp_path, case):
    member, replacement, reason = UNUSABLE_ZIPS[case]
    broken = tmp_path / "broken-autograder.zip"
    with zipfile.ZipFile(toy.zip) as source, zipfile.ZipFile(broken, "w") as target:
        for item in source.infolist():
            target.writestr(item, replacement if item.filename == member else source.read(item))
    paths = [toy.notebook("zip-a"), toy.notebook("zip-b")]
    proc = run(["--autograder", str(broken), *map(str, paths)])
    assert proc.returncode == 1
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [line["submission"] for line in lines] == list(map(str, paths))
    assert all(reason in line["error"] for line in lines)


def test_grading_a_plain_assignment_loads_no_heavy_module(tmp_path):
    # The CLI's start is most of its time for one notebook: Otter's package (nbconvert, pandas), YAML
    # and packaging (an assignment's requirements), doctest (OK-format tests) load only when needed.
    script = (
        "import sys\nfrom autograder.cli import main\n"
        "main(['grade', '--autograder', sys.argv[1], sys.argv[2]])\n"
        "heavy = ('otter', 'nbformat', 'IPython', 'pandas', 'yaml', 'packaging', 'doctest', 'importlib.metadata')\n"
        "print(sorted(name for name in heavy if name in sys.modules), file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(AUTOGRADER_ZIP), str(SOLUTION_NOTEBOOK)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert json.loads(proc.stdout)["score"] == 16.0
    assert proc.stderr.strip().splitlines()[-1] == "[]"
