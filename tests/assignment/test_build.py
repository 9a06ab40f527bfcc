"""The build: stable outputs, settings from otter_config.json, nothing secret in the student notebook."""

import json
import re
import subprocess
import sys
import zipfile

import nbformat
from nbclient import NotebookClient
from otter.test_files import ExceptionTestFile

from testbed.submissions import QUESTIONS, ROOT, SOLUTION_TAG, submission_notebook, tagged_sources


def parsed_tests(test_sources):
    return {q: ExceptionTestFile.from_string(src, path=f"tests/{q}.py") for q, src in test_sources.items()}


def test_building_twice_gives_identical_zips(tmp_path):
    zips = []
    for run in ("first", "second"):
        subprocess.run(
            [sys.executable, str(ROOT / "assignment" / "build.py"), "--dist", str(tmp_path / run)],
            check=True,
            capture_output=True,
        )
        zips.append(tmp_path / run / "autograder" / "decode-autograder.zip")
    with zipfile.ZipFile(zips[0]) as first, zipfile.ZipFile(zips[1]) as second:
        names = [n for n in first.namelist() if n.startswith("tests/")]
        assert sorted(names) == sorted(f"tests/{q}.py" for q in QUESTIONS)
        assert all(first.read(n) == second.read(n) for n in names)
    assert zips[0].read_bytes() == zips[1].read_bytes()
    assert (tmp_path / "first" / "student" / "decode.ipynb").exists()


def test_zip_carries_the_top_level_grading_settings(built_assignment, test_sources):
    settings = json.loads((ROOT / "otter_config.json").read_text())
    with zipfile.ZipFile(built_assignment["zip"]) as archive:
        in_zip = json.loads(archive.read("otter_config.json"))
    assert {k: in_zip[k] for k in settings} == settings
    assert in_zip["assignment_name"] == "decode"
    total = sum(t.possible for t in parsed_tests(test_sources).values())
    assert settings["points_possible"] == total == 16


def test_every_question_has_public_and_hidden_tests(test_sources):
    for question, test_file in parsed_tests(test_sources).items():
        hidden = [tc.hidden for tc in test_file.test_cases]
        assert False in hidden and True in hidden, question


def test_points_table_in_the_notebook_matches_the_tests(built_assignment, test_sources):
    notebook = nbformat.read(built_assignment["student"], as_version=4)
    table = dict(re.findall(r"\| `(\w+)` \| (\d+) \|", notebook.cells[1].source))
    points = {q: t.possible for q, t in parsed_tests(test_sources).items()}
    assert {q: float(p) for q, p in table.items()} == points


def test_student_notebook_has_no_solutions_and_no_hidden_tests(built_assignment, test_sources):
    student_text = built_assignment["student"].read_text()
    solution = nbformat.read(built_assignment["solution"], as_version=4)
    solution_lines = {
        line.strip()
        for source in tagged_sources(solution, SOLUTION_TAG)
        for line in source.splitlines()
        if line.strip() and not line.lstrip().startswith(("def ", '"""'))
    }
    assert len(solution_lines) >= 9
    leaked = {line for line in solution_lines if json.dumps(line)[1:-1] in student_text}
    assert leaked == set()

    student = nbformat.read(built_assignment["student"], as_version=4)
    shipped = student.metadata["otter"]["tests"]
    assert set(shipped) == set(QUESTIONS)
    for question, test_file in parsed_tests(test_sources).items():
        public = ExceptionTestFile.from_string(shipped[question], path=question)
        assert [tc.hidden for tc in public.test_cases] == [False] * len(public.test_cases)
        for case in test_file.test_cases:
            name = case.body.test_func.__name__
            assert (name in student_text) is (not case.hidden), name


def test_answered_notebook_runs_top_to_bottom_without_a_front_end(built_assignment, tmp_path):
    """Every cell, the otter_ignore playground and the public checks included, runs headless and offline."""
    notebook = submission_notebook()
    ignored = [c for c in notebook.cells if "otter_ignore" in c.metadata.get("tags", [])]
    assert len(ignored) >= 3
    nbformat.write(notebook, tmp_path / "decode.ipynb")
    client = NotebookClient(
        notebook, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    outputs = "".join(o.get("text", "") for c in ignored for o in c.get("outputs", []))
    assert "step 5" in outputs and "Sequential calls? True" in outputs
    assert any("image/png" in o.get("data", {}) for c in ignored for o in c.get("outputs", []))
    check_outputs = [str(c.outputs) for c in notebook.cells if c.source.startswith("grader.check(")]
    assert len(check_outputs) == len(QUESTIONS) and all("passed!" in out for out in check_outputs)
