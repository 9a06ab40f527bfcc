"""What the grader's side reads of an autograder zip course staff upload (autograder/assignment.py): its
directory and its small otter_config.json, each checked against bounds before anything is unpacked or
parsed; its test files and support files are unpacked by the grading process alone."""

from __future__ import annotations

import io
import json
import random
import zipfile
from pathlib import Path

import pytest

from autograder.assignment import (
    MAX_RATIO,
    MAX_SUPPORT_FILE,
    MAX_UNPACKED,
    MAX_ZIP_MEMBERS,
    AssignmentError,
    check_sizes,
    load_assignment,
    read_assignment,
)
from autograder.inside.control import MB
from lti_service.assignments.building import BuildError, from_zip
from testbed.host import worker_cost


def entry(name: str, size: int, packed: int | None = None) -> zipfile.ZipInfo:
    """A zip's directory entry as it states itself (nothing behind it)."""
    info = zipfile.ZipInfo(name)
    info.file_size, info.compress_size = size, size if packed is None else packed
    return info


@pytest.mark.parametrize(
    "infos, refusal",
    [
        ([entry("files/big.csv", MAX_SUPPORT_FILE + MB)], "'files/big.csv' is 257 MB unpacked, more than the 256 MB"),
        ([entry("files/zeros.npy", 250 * MB, MB)], "'files/zeros.npy' unpacks to more than 200 times its packed size"),
        ([entry(f"files/{i}.csv", 200 * MB) for i in range(3)], "more than 512 MB together unpacked"),
        ([entry(f"files/{i}", 0) for i in range(MAX_ZIP_MEMBERS + 1)], "more than 10000 entries"),
    ],
    ids=["one file", "zip bomb", "together", "entries"],
)
def test_a_zip_past_a_bound_is_refused_by_its_directory(infos, refusal):
    with pytest.raises(ValueError, match=refusal):
        check_sizes(infos, MAX_SUPPORT_FILE, MAX_UNPACKED)


def test_what_compresses_like_data_or_is_small_is_accepted():
    check_sizes(
        [entry("files/a.csv", 100 * MB, 10 * MB), entry("files/zeros.bin", MB, 1)], MAX_SUPPORT_FILE, MAX_UNPACKED
    )
    assert MAX_RATIO == 200


def toy_with(toy, **members: bytes) -> bytes:
    """The toy autograder zip with members added or replaced."""
    out = io.BytesIO()
    with zipfile.ZipFile(toy.zip) as original, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as copy:
        for info in original.infolist():
            if info.filename not in members:
                copy.writestr(info, original.read(info))
        for name, data in members.items():
            copy.writestr(name, data)
    return out.getvalue()


@pytest.mark.parametrize(
    "config, refusal",
    [
        (b'{"x":"' + b"a" * 300_000 + b'"}', "otter_config.json has more than 0.25 MB"),
        (b'{"x":[' + b"[]," * 20_000 + b"[]]}", "otter_config.json has more than 10000 lists and objects"),
        (b"[" * 5000 + b"]" * 5000, "maximum recursion depth exceeded"),
    ],
    ids=["bytes", "lists", "depth"],
)
def test_otter_config_is_parsed_only_within_bounds(toy, config, refusal):
    with pytest.raises(AssignmentError, match=refusal):
        read_assignment(io.BytesIO(toy_with(toy, **{"otter_config.json": config})), "the zip")


def test_the_grader_holds_support_files_by_name_and_size_only(toy):
    data = random.Random(0).randbytes(3 * MB)
    assignment = read_assignment(io.BytesIO(toy_with(toy, **{"files/data/a.csv": data})), "the zip")
    assert assignment.files == (("data/a.csv", len(data)),)
    assert all(isinstance(name, str) for name in assignment.tests)


def test_a_zip_bomb_in_the_students_folder_is_refused_when_it_is_added(toy, tmp_path: Path):
    """What students download (lti_service/browser/site.py unpacks it for the notebook in the browser)."""
    notebook = json.dumps(json.loads(toy.notebook("bounds").read_text())).encode()
    folder = io.BytesIO()
    with zipfile.ZipFile(folder, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("toy.ipynb", notebook)
        with archive.open("zeros.bin", "w", force_zip64=True) as member:
            for _ in range(20):
                member.write(bytes(MB))
    with pytest.raises(BuildError, match="'zeros.bin' unpacks to more than 200 times its packed size"):
        from_zip(toy.zip.read_bytes(), folder.getvalue(), "toy.zip", lambda step: None)


def test_a_zip_of_many_tiny_entries_is_refused_before_its_directory_is_read(tmp_path: Path):
    """zipfile reads a zip's whole directory at once, about 500 bytes of memory per entry: 100,000 empty
    entries (an 8 MB zip) took 50 MB of the grader's memory before their number was checked."""
    zip_path = tmp_path / "many-autograder.zip"
    with zipfile.ZipFile(zip_path, "w") as archive:
        for i in range(100_000):
            archive.writestr(f"files/{i:x}", b"")
    with worker_cost() as cost, pytest.raises(AssignmentError, match="its directory of entries is more than 4 MB"):
        load_assignment(zip_path)
    assert cost["memory_mb"] < 1, cost


def test_a_notebook_of_nested_lists_is_refused_before_it_is_parsed():
    """A 5 MB upload (or a 50 MB master notebook) of `[[],[],...]` would parse into 30 times its size in the
    web process and the worker; refused by its shape at C speed, while real notebooks pass."""
    from autograder.notebook import InvalidSubmission, load_cells
    from lti_service.assignments.building import BuildError, master_config
    from testbed.submissions import STUDENT_NOTEBOOK

    hostile = b'{"cells": [' + b"[]," * (5 * MB // 3 - 20) + b'[]], "nbformat": 4, "metadata": {}}'
    with worker_cost() as cost:
        with pytest.raises(InvalidSubmission, match="more than 100000 lists and objects"):
            load_cells(hostile, None, 5 * MB)
        with pytest.raises(BuildError, match="more than 100000 lists and objects"):
            master_config(hostile)
    assert cost["memory_mb"] < 16 and cost["cpu_seconds"] < 1, cost
    assert load_cells(STUDENT_NOTEBOOK.read_bytes(), None, 5 * MB), "a real notebook passes"
