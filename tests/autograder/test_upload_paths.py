"""Paths that come from uploads (autograder/paths.py): an autograder zip with a support file named to land
outside the grader's working directory is refused as a whole, with its entry named, before anything of it is
written anywhere, whichever way it is graded; and the checks and the writer themselves."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from autograder import grade_submission
from autograder.assignment import AssignmentError
from autograder.paths import check_zip_members, safe_relative, write_under
from tests.hostile_zips import HOSTILE, hostile_zip


@pytest.fixture(params=list(HOSTILE))
def hostile(request, built_assignment, tmp_path) -> tuple[Path, str]:
    """A hostile autograder zip (one per case of HOSTILE) and what its refusal must say."""
    return hostile_zip(built_assignment["zip"], tmp_path, request.param)


def test_grade_submission_refuses_a_hostile_zip_and_writes_nothing(hostile, built_assignment, tmp_path):
    zip_path, refusal = hostile
    with pytest.raises(AssignmentError, match="cannot read autograder zip") as raised:
        grade_submission(zip_path, built_assignment["solution"])
    assert refusal in str(raised.value)
    assert not (tmp_path / "canary").exists()


def test_the_command_line_refuses_a_hostile_zip_and_writes_nothing(hostile, built_assignment, tmp_path):
    zip_path, refusal = hostile
    solution = str(built_assignment["solution"])
    command = [sys.executable, "-m", "autograder", "grade", "--autograder", str(zip_path), solution]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    (line,) = proc.stdout.splitlines()
    error = json.loads(line)["error"]
    assert "the autograder zip cannot be used" in error and refusal in error
    assert not (tmp_path / "canary").exists()


@pytest.mark.parametrize(
    "name", ["data.csv", "data/grades 2024.csv", "a/b/.hidden", "..data/x..", "données/été.csv", "a" * 255]
)
def test_ordinary_paths_are_safe(name):
    assert str(safe_relative(name)) == name


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "is empty"),
        ("/etc/passwd", "is an absolute path"),
        ("..", "goes up out of its folder"),
        ("a/../../x", "goes up out of its folder"),
        ("a//b", "has an empty or '.' part"),
        ("./a", "has an empty or '.' part"),
        ("a/", "has an empty or '.' part"),
        ("a\\b", "has a backslash"),
        ("a\x00b", "has a control character"),
        ("a\nb", "has a control character"),
        ("a\udc80b", "has a control character"),  # bytes that were not UTF-8 (surrogateescape)
        ("a" * 1025, "is longer than 1024 characters"),
        ("/".join("a" * 33), "is more than 32 folders deep"),
        ("a/" + "é" * 128, "longer than 255 bytes"),
    ],
)
def test_unsafe_paths_are_refused_with_the_reason(name, reason):
    with pytest.raises(ValueError, match=reason):
        safe_relative(name)


def test_the_writer_makes_folders_and_sets_modes_whatever_the_umask(tmp_path):
    old = os.umask(0o077)
    try:
        write_under(tmp_path, "data/sub/grades.csv", b"1,2\n")
    finally:
        os.umask(old)
    assert (tmp_path / "data" / "sub" / "grades.csv").read_bytes() == b"1,2\n"
    assert stat.S_IMODE((tmp_path / "data" / "sub").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "data" / "sub" / "grades.csv").stat().st_mode) == 0o644


def test_the_writer_never_writes_through_a_link_or_over_a_file(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "data").symlink_to(outside)  # a folder that is a link
    (root / "notes.txt").symlink_to(outside / "notes.txt")  # a file that is a link
    (root / "plain").write_text("a file where a folder is wanted")
    for name in ("data/grades.csv", "notes.txt", "plain/x"):
        with pytest.raises(ValueError, match="a link, file or folder is in its way"):
            write_under(root, name, b"x")
    with pytest.raises(ValueError, match="goes up out of its folder"):
        write_under(root, "../outside/x", b"x")
    assert list(outside.iterdir()) == []


def zip_of(*entries: zipfile.ZipInfo) -> list[zipfile.ZipInfo]:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for info in entries:
            archive.writestr(info, b"")
    return zipfile.ZipFile(buffer).infolist()


def test_zip_entries_twice_or_both_file_and_folder_are_refused():
    check_zip_members(zip_of(zipfile.ZipInfo("files/"), zipfile.ZipInfo("files/data/"), zipfile.ZipInfo("files/a")))
    with pytest.warns(UserWarning, match="Duplicate name"), pytest.raises(ValueError, match="'files/a' appears twice"):
        check_zip_members(zip_of(zipfile.ZipInfo("files/a"), zipfile.ZipInfo("files/a")))
    with pytest.raises(ValueError, match="'files/a' is both a file and a folder"):
        check_zip_members(zip_of(zipfile.ZipInfo("files/a"), zipfile.ZipInfo("files/a/b")))
