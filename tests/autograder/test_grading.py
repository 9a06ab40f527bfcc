"""Grading the toy assignment in the real sandbox: honest scores, whatever the notebook tries."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from autograder import GradeOptions, SandboxUnavailable, grade_submission
from testbed.host import sandbox_processes
from tests.student_view import FINER_THAN_MINUTES, timing_fields

# Where nothing should be cut off, room for a loaded machine: with one second a cell, two of four concurrent
# gradings of a correct notebook once scored 2/5 in CI (the 3 points that need the `import numpy` cell lost; four
# test processes shared the two cores).
ROOMY = GradeOptions(cell_timeout=30.0, test_timeout=30.0, grace=0.5)
# Where a cell or a test must be cut off: short, yet three times what an honest cell takes under that load.
SHORT = GradeOptions(cell_timeout=3.0, test_timeout=3.0, grace=0.5)


def scores(toy, name: str, answers=None, extra=()) -> dict[str, float]:
    result = grade_submission(toy.zip, toy.notebook(name, answers, extra), ROOMY)
    assert result.error is None
    return {q.name: q.score for q in result.questions}


def test_correct_notebook_gets_full_marks(toy):
    result = grade_submission(toy.zip, toy.notebook("correct"), ROOMY)
    assert (result.score, result.max_score) == (5.0, 5.0)
    assert all(t.passed for q in result.questions for t in q.tests)
    assert result.cell_errors == []


def test_wrong_answers_fail_exactly_their_tests(toy):
    answers = {"q1": "def square(x):\n    return x * 3 if x == 3 else x * x + 1\n"}
    result = grade_submission(toy.zip, toy.notebook("wrong", answers), ROOMY)
    q1 = result.questions[0]
    assert [t.passed for t in q1.tests] == [True, False]
    assert "AssertionError" in q1.tests[1].message
    assert result.score == 4.0


def test_notebook_bytes_and_path_grade_the_same(toy):
    path = toy.notebook("bytes")
    from_bytes = grade_submission(toy.zip, path.read_bytes(), ROOMY).to_dict()
    from_path = grade_submission(toy.zip, path, ROOMY).to_dict()
    assert from_bytes["score"] == from_path["score"] == 5.0
    assert from_bytes["submission"] == "<bytes>"


def test_student_view_shows_hidden_tests_only_as_counts(toy):
    answers = {"q1": "def square(x):\n    return 9 if x == 3 else 0\n"}
    result = grade_submission(toy.zip, toy.notebook("view", answers), ROOMY)
    staff, student = result.to_dict(), result.to_dict(student_view=True)
    assert "q1 - 2" in json.dumps(staff)
    assert "q1 - 2" not in json.dumps(student) and "square(-4)" not in json.dumps(student)
    q1 = student["questions"][0]
    assert (q1["hidden_passed"], q1["hidden_total"], q1["score"]) == (0, 1, 1.0)
    assert [t["name"] for t in q1["tests"]] == ["q1 - 1"]
    assert "cell_errors" not in student


def test_student_view_says_nothing_of_how_long_grading_took(toy):
    """No duration, CPU time or timestamp: the staff view keeps what the sandboxes used."""
    slow = [(None, "import time\ntime.sleep(0.2)\n")]
    result = grade_submission(toy.zip, toy.notebook("timing", extra=slow), ROOMY)
    assert {"usage", "cpu_seconds"} <= timing_fields(result.to_dict())
    student = result.to_dict(student_view=True)
    assert timing_fields(student) == set() and not FINER_THAN_MINUTES.search(json.dumps(student))


def test_env_swap_and_restore_detects_a_function_that_skips_the_helper(toy):
    answers = {
        "q2": SOLUTION_Q2_HEAD + "def double_all(xs):\n    return [x * 2 for x in xs]\n",
    }
    q = scores(toy, "noswap", answers)
    assert q == {"q1": 2.0, "q2": 2.0}


SOLUTION_Q2_HEAD = "total = np.arange(5).sum()\ndef apply_twice(f, x):\n    return f(f(x))\n"


def test_monkeypatching_otter_changes_nothing(toy):
    attack = (
        "import otter, sys\n"
        "otter.Notebook.check = lambda *a, **k: None\n"
        "grader.check = lambda *a, **k: None\n"
        "sys.modules['otter'] = None\n"
        "test_square = True\n"
    )
    q = scores(toy, "patch", {"q1": "square = None\n"}, extra=[("q1", attack), (None, attack)])
    assert q == {"q1": 0.0, "q2": 3.0}


def test_hidden_tests_and_zip_are_not_visible_in_the_sandbox(toy):
    search = (
        "import os\n"
        "found = []\n"
        "for d, dirs, files in os.walk('/'):\n"
        "    if d in ('/proc', '/sys', '/dev', '/usr') or 'site-packages' in d:\n"
        "        dirs[:] = []\n"
        "    found += [f for f in files if 'autograder' in f or f in ('q1.py', 'toy.ipynb')]\n"
        "def square(x):\n"
        "    return x * x if found else None\n"
    )
    result = grade_submission(toy.zip, toy.notebook("snoop", {"q1": search}), ROOMY)
    assert result.cell_errors == []
    assert {q.name: q.score for q in result.questions} == {"q1": 0.0, "q2": 3.0}


def test_objects_with_custom_eq_fail(toy):
    answers = {
        "q1": (
            "class Anything:\n    def __eq__(self, other):\n        return True\n"
            "    __hash__ = object.__hash__\n"
            "def square(x):\n    return Anything()\n"
        ),
        "q2": (
            "class Int(int):\n    def __eq__(self, other):\n        return True\n"
            "    __hash__ = int.__hash__\n"
            "total = Int(3)\n"
            + SOLUTION_Q2_HEAD.split("\n", 1)[1]
            + "def double_all(xs):\n    return [apply_twice(lambda v: v * 2, x) // 2 for x in xs]\n"
        ),
    }
    result = grade_submission(toy.zip, toy.notebook("eq", answers), ROOMY)
    assert {q.name: q.score for q in result.questions} == {"q1": 0.0, "q2": 2.0}
    assert "AssertionError" in result.questions[0].tests[0].message  # == with a student object is identity


@pytest.mark.parametrize(
    ("cell", "errors"),
    [
        ("while True:\n    pass\n", 1),
        ("import time\nwhile True:\n    try:\n        time.sleep(100)\n    except BaseException:\n        pass\n", 1),
        ("import os\nos._exit(3)\n", 1),
        ("raise SystemExit(1)\n", 1),
        ("for _ in range(10):\n    print('x' * 10**7)\nimport os\nos.write(1, b'y' * 10**7)\n", 0),
    ],
    ids=["busy-loop", "unkillable-sleep", "os-exit", "system-exit", "prints-a-lot"],
)
def test_hostile_cells_keep_the_honest_score(toy, cell, errors):
    result = grade_submission(toy.zip, toy.notebook("hostile", extra=[("q1", cell)]), SHORT)
    assert result.score == 5.0
    assert len(result.cell_errors) == errors
    assert sandbox_processes() == []


@pytest.mark.parametrize(
    "square",
    [
        "def square(x):\n    while x < 0:\n        pass\n    return x * x\n",
        "def square(x):\n    if x < 0:\n        import os\n        os._exit(1)\n    return x * x\n",
    ],
    ids=["hangs", "exits"],
)
def test_misbehaving_function_fails_only_its_test(toy, square):
    result = grade_submission(toy.zip, toy.notebook("fn", {"q1": square}), SHORT)
    q1 = result.questions[0]
    assert [t.passed for t in q1.tests] == [True, False]
    assert "student code" in q1.tests[1].message
    assert result.score == 4.0
    assert sandbox_processes() == []


@pytest.mark.parametrize(
    ("file_name", "expected"),
    [
        ("toy.ipynb", {"q1": 2.0, "q2": 3.0}),  # each question as at its check
        ("toy (1).ipynb", {"q1": 0.0, "q2": 2.0}),  # no check ran: the final state (as measured with otter run)
        (None, {"q1": 2.0, "q2": 3.0}),  # bytes without a name: the name the notebook expects
    ],
)
def test_checks_count_only_when_the_file_has_the_name_otter_run_needs(toy, file_name, expected):
    """otter run's `otter.Notebook("toy.ipynb")` reads that file: saved under another name, it fails, the
    notebook's `grader` is never made, and every question is graded on the state the notebook ends with."""
    later = [(None, "square = None\ntotal = 0\n")]
    path = toy.notebook("renamed", extra=later)
    result = grade_submission(toy.zip, path.read_bytes(), ROOMY, file_name=file_name)
    assert {q.name: q.score for q in result.questions} == expected
    assert any("No such file" in e for e in result.cell_errors) == (file_name == "toy (1).ipynb")
    notice = result.to_dict(student_view=True).get("notice", "")  # the student is told why, in words
    assert ("named “toy (1).ipynb”, but this notebook expects “toy.ipynb”" in notice) == (file_name == "toy (1).ipynb")
    renamed = path.with_name("toy-copy.ipynb")  # a path's own name counts, as for otter run's argument
    renamed.write_bytes(path.read_bytes())
    assert {q.name: q.score for q in grade_submission(toy.zip, renamed, ROOMY).questions} == {"q1": 0.0, "q2": 2.0}


def test_a_notebook_that_names_no_file_has_its_checks_counted_under_any_name(toy):
    init = [(None, "import otter\ngrader = otter.Notebook()\ngrader.check('q1')\nsquare = None\n")]
    result = grade_submission(toy.zip, toy.notebook("unnamed", extra=init).read_bytes(), ROOMY, file_name="x.ipynb")
    assert {q.name: q.score for q in result.questions}["q1"] == 2.0


def test_checks_are_graded_when_the_notebook_calls_them(toy):
    # like `otter run`: grader.check("q1") records q1's result at that point; later cells
    # cannot change it
    q = scores(toy, "overwrite", extra=[(None, "square = None\n")])
    assert q == {"q1": 2.0, "q2": 3.0}


def test_missing_bwrap_fails_closed(toy, tmp_path):
    marker = tmp_path / "ran"
    path = toy.notebook("closed", extra=[(None, f"open({str(marker)!r}, 'w').write('x')\n")])
    options = GradeOptions(bwrap=str(tmp_path / "no-such-bwrap"))
    with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap"):
        grade_submission(toy.zip, path, options)
    assert not marker.exists()


def test_threads_grade_concurrently(toy):
    from concurrent.futures import ThreadPoolExecutor

    paths = [toy.notebook(f"par{i}") for i in range(4)]
    cwd = os.getcwd()
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda p: grade_submission(toy.zip, p, ROOMY), paths))
    assert [r.score for r in results] == [5.0] * 4
    assert os.getcwd() == cwd, "grading must not change the process-wide working directory"


def test_checking_an_upload_does_no_work_per_cell(toy, tmp_path):
    # What a web request does with an upload is linear in its size: magics are compiled in the sandbox.
    # (IPython's transformer, which this check used to run, takes minutes on such a notebook.)
    notebook = toy.notebook("many-magics", extra=[(None, "%time x = 1\n" * 400)] * 40)
    script = (
        "import sys\nfrom autograder import check_submission\n"
        "check_submission(sys.argv[1], open(sys.argv[2], 'rb').read(), 5 * 1024 * 1024)\n"
    )
    subprocess.run([sys.executable, "-c", script, str(toy.zip), str(notebook)], check=True, timeout=30)


@pytest.fixture
def many_open_files():
    """More than 1024 descriptors open in the grading process, as in a busy web worker: the grader's
    pipes get numbers that select() cannot watch."""
    opened = []
    while not opened or opened[-1] < 1100:
        opened.append(os.open(os.devnull, os.O_RDONLY))
    yield opened[-1]
    for fd in opened:
        os.close(fd)


def test_grading_works_with_many_files_open(toy, pandas_assignment, many_open_files):
    assert grade_submission(toy.zip, toy.notebook("correct"), ROOMY).score == 5.0
    # An assignment with files runs in a grading process of its own: its pipe is numbered high too.
    result = grade_submission(pandas_assignment.zip, pandas_assignment.with_cell("pass"), ROOMY)
    assert result.score == pandas_assignment.full_marks
    assert sandbox_processes() == []
