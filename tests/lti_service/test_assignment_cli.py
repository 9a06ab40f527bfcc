"""`python -m lti_service assignment add|list|show|update|remove` (its main(), with the operator's arguments and
settings, in the test's process: ToolProcess.cli), and bad input: each refused with a message that says why,
and nothing stored."""

from __future__ import annotations

import shutil

from testbed.submissions import AUTOGRADER_ZIP, STUDENT_NOTEBOOK
from testbed.tool import ToolProcess
from tests.lti_service import gradebook
from tests.lti_service.gradebook import NAME


def listed(tool: ToolProcess) -> list[list[str]]:
    return [line.split("\t") for line in tool.cli("assignment", "list").splitlines()]


def test_add_list_show_update_and_remove(tmp_path, versions):
    tool = ToolProcess(tmp_path / "tool")
    assert [row[:3] for row in listed(tool)] == [["1", "decode", "version 1"]]  # built in, on a fresh install

    added = tool.cli("assignment", "add", "--master", str(gradebook.MASTER))
    assert "added 'gradebook' (id 2) for every course, version 1" in added and gradebook.TITLE in added
    assert "students download gradebook.zip" in added
    rows = {line.split()[0]: line.split()[1:] for line in added.splitlines() if line.startswith("  ")}
    assert rows["section_means"] == ["2", "1", "1"] and rows["load"] == ["3", "2", "0"]  # points, public, hidden
    assert rows["total"] == ["11", "6", "4"]
    assert listed(tool)[1] == ["2", NAME, "version 1", "11 points", "5 questions", "every course", gradebook.TITLE]

    student = gradebook.student_folder(versions.v2, tmp_path / "student")
    updated = tool.cli("assignment", "update", "gradebook", "--zip", str(versions.v2.zip), "--student", str(student))
    assert "added version 2 of 'gradebook'" in updated
    changes = updated.split("changes from version 1:")[1]
    assert "section_means: points 2 → 4" in changes and "scores: hidden tests 1 → 2" in changes
    assert "total: 11 → 13 points" in changes and "links to it stay on their versions" in changes

    back = tool.cli("assignment", "update", "2", "--master", str(gradebook.MASTER), "--title", "Gradebook, again")
    assert "added version 3" in back and "total: 13 → 11 points" in back
    shown = tool.cli("assignment", "show", "gradebook")
    assert shown.count("from master notebook") == 2 and shown.count("from autograder zip") == 1
    assert "changes from version 2: scores: hidden tests 2 → 1" in shown and "'Gradebook, again'" in shown
    assert listed(tool)[1][2:4] == ["version 3", "11 points"]

    assert tool.cli("assignment", "remove", "gradebook").strip() == "assignment 'gradebook' removed"
    assert [row[1] for row in listed(tool)] == ["decode"]


def test_bad_input_is_refused_with_a_clear_error_and_nothing_is_stored(tmp_path, versions):
    tool = ToolProcess(tmp_path / "tool")
    before = listed(tool)
    slides = tmp_path / "slides.zip"
    slides.write_bytes(gradebook.not_otter_zip())
    text = tmp_path / "text.zip"
    text.write_text("not a zip at all")
    broken = tmp_path / "broken" / gradebook.MASTER.name
    shutil.copytree(gradebook.FOLDER, broken.parent)
    broken.write_text(gradebook.MASTER.read_text().replace("name: load\\n", "nome: load\\n"))
    wrong = tmp_path / "wrong" / gradebook.MASTER.name
    shutil.copytree(gradebook.FOLDER, wrong.parent)
    wrong.write_text(gradebook.MASTER.read_text().replace("n_missing == 2", "n_missing == 3"))
    alone = tmp_path / "alone" / gradebook.MASTER.name
    alone.parent.mkdir()
    shutil.copy(gradebook.MASTER, alone)
    zip_of = ["--zip", str(versions.v1.zip), "--student"]
    student = str(STUDENT_NOTEBOOK)
    cases = {
        ("add", "--zip", str(slides), "--student", student): "the zip has no tests/*.py files: is it an Otter "
        "autograder zip?",
        ("add", "--zip", str(text), "--student", student): "cannot read the zip",
        ("add", "--master", str(broken)): "otter assign failed on gradebook.ipynb: ValueError: Question name not "
        "specified",
        ("add", "--master", str(wrong)): "the solution does not pass its own tests: scores (1 of 2: AssertionError: "
        "two students have no score)",
        ("add", "--master", student): "not an Otter master notebook: its first cell must be a raw cell",
        ("add", "--master", str(alone)): "the ASSIGNMENT CONFIG lists data/gradebook.csv, which is not in",
        ("add", *zip_of, student): "the student notebook does not fit this autograder zip: the notebook is for "
        "assignment 'decode', not 'gradebook'",
        ("update", "decode", "--master", str(gradebook.MASTER)): "these files are for assignment 'gradebook', not "
        "'decode'",
        ("update", "lab-9", "--zip", str(AUTOGRADER_ZIP), "--student", student): "no assignment 'lab-9'",
        ("add", "--zip", str(AUTOGRADER_ZIP)): "--zip needs --student",
    }
    for args, message in cases.items():
        assert_refused(tool, args, message)
    assert listed(tool) == before and "version 2" not in tool.cli("assignment", "show", "decode")

    tool.cli("assignment", "add", "--master", str(gradebook.MASTER))
    assert_refused(tool, ("add", "--master", str(broken)), "an assignment named 'gradebook' is offered to every course "
                   "already (id 2): upload a new version of it (`assignment update gradebook`)")  # fmt: skip
    assert [row[1] for row in listed(tool)] == ["decode", "gradebook"]


def assert_refused(tool: ToolProcess, args: tuple[str, ...], message: str) -> None:
    error = tool.cli_fails("assignment", *args)
    assert "nothing was stored: " in error and message in error, (args, error[-1500:])
