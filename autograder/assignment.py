"""Reading an Otter autograder zip: its settings, test files and support files.

The zip is never extracted where the sandbox can see it, so hidden tests cannot end up there. Reading it runs
nothing: test files are course code, run only in a grading process (child.py). The grader (for the LTI tool,
a worker holding keys) reads only the zip's directory and its small otter_config.json, checked against
the bounds below before anything is unpacked; test files and support files are unpacked by the grading
process alone, support files streamed to its working directory.
"""

from __future__ import annotations

import functools
import json
import os
import zipfile
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO

from .inside.control import MB, Bounds
from .options import Limits
from .paths import check_zip_members, shown, write_under

if TYPE_CHECKING:
    from .environment import Requirements
from .testfiles import TestFile, TestFileError, TestSource

MAX_ZIP_MEMBERS = 10_000
MAX_DIRECTORY = 4 * MB
"""of a zip's directory of entries, which zipfile reads whole, at about 500 bytes of memory per entry however
small (8 MB of empty entries: 50 MB); 10,000 entries with names of 300 characters take 3.5 MB"""
MAX_UNPACKED = 512 * MB
"""all members together, unpacked"""
MAX_SUPPORT_FILE = 256 * MB
"""one member, unpacked: a support file is copied into a /tmp of this size in the grading process and in the
sandbox (Limits.tmp_mb's default), so a larger one could not be used anyway"""
MAX_RATIO = 200
"""unpacked size over packed size of a member larger than RATIO_FROM: data compresses 2 to 20 times (a CSV
about 5, a notebook about 4), a zip bomb thousands of times (a file of zeros deflates 1,000 times)"""
RATIO_FROM = 1 * MB
CONFIG = Bounds(256 * 1024, 10_000, 100_000)
"""otter_config.json, parsed by the grader: Otter writes a few hundred bytes"""


class AssignmentError(ValueError):
    """The autograder zip is unusable; str() says why."""


@dataclass(frozen=True)
class Assignment:
    name: str | None
    """assignment_name from otter_config.json; submissions must carry the same name"""
    tests: tuple[str, ...]
    """tests/*.py, sorted by path as `otter run` runs them"""
    files: tuple[tuple[str, int], ...]
    """support files (files/ in the zip) by path under files/, with their size: put in the grading process's
    working directory and copied into the sandbox's (only a grading process unpacks them)"""
    config: dict[str, Any] = field(default_factory=dict)
    """otter_config.json"""
    path: str = ""
    """where the zip is"""

    def load_tests(self, zip_file: BinaryIO) -> list[TestFile]:
        """Test-file objects for one grading (Otter stores results on them), from the open zip. Runs the test
        files: course code, so only a grading process calls it (child.py)."""
        with zipfile.ZipFile(zip_file) as zf:
            sources = [TestSource(name, _text(zf, name)) for name in self.tests]
        return [test.load() for test in sources]

    def put_files(self, zip_file: BinaryIO, folder: str) -> None:
        """The support files from the open zip into `folder`, streamed (their sizes were checked when the zip
        was read, and zipfile unpacks no more than a member's stated size; no link can lead a write
        elsewhere). Only a grading process calls it."""
        with zipfile.ZipFile(zip_file) as zf:
            for path, _ in self.files:
                with zf.open(f"files/{path}") as member:
                    write_under(folder, path, member)

    @property
    def seed(self) -> int | None:
        return self.config.get("seed")

    @property
    def seed_variable(self) -> str | None:
        return self.config.get("seed_variable")

    @functools.cached_property
    def requirements(self) -> Requirements:
        """The packages it needs beyond the grader's own (environment.py)."""
        from .environment import requirements_of  # only read when asked: it imports a YAML parser

        return requirements_of(self.path)

    @functools.cached_property
    def limits(self) -> dict[str, Any]:
        """The assignment's own grading limits ("grading_limits" in otter_config.json)."""
        return Limits.from_config(self.config.get("grading_limits"))


def load_assignment(path: str | os.PathLike[str]) -> Assignment:
    """Load (and cache, keyed by path and modification time) an autograder zip."""
    try:
        stat = os.stat(path)
    except OSError as e:
        raise AssignmentError(f"cannot read autograder zip {path}: {e.strerror}") from None
    return _load(os.path.realpath(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=16)
def _load(path: str, mtime_ns: int, size: int) -> Assignment:
    return read_assignment(path, path)


def read_assignment(source: str | BinaryIO, path: str) -> Assignment:
    """An autograder zip from a path or an open file (`path` names it in messages); nothing is cached. Only
    the zip's directory and otter_config.json are read."""
    try:
        with open(source, "rb") if isinstance(source, str) else nullcontext(source) as file:
            check_directory(file)
            with zipfile.ZipFile(file) as zf:
                infos = zf.infolist()
                check_sizes(infos, MAX_SUPPORT_FILE, MAX_UNPACKED)
                check_zip_members(infos)  # ValueError for an unsafe entry, before any name is used
                config = _config(zf)
    except (OSError, zipfile.BadZipFile, ValueError, UnicodeDecodeError, RecursionError) as e:
        raise AssignmentError(f"cannot read autograder zip {path}: {e}") from None
    if not isinstance(config, dict):
        raise AssignmentError(f"autograder zip {path}: otter_config.json is not an object")
    if config.get("lang", "python") != "python":
        raise AssignmentError(f"autograder zip {path} is for {config['lang']!r}: this grader grades Python notebooks")
    infos.sort(key=lambda info: info.filename)
    tests = tuple(i.filename for i in infos if i.filename.startswith("tests/") and i.filename.endswith(".py")
                  and i.filename.count("/") == 1)  # fmt: skip
    if not tests:
        raise AssignmentError(f"autograder zip {path} has no tests/*.py files: is it an Otter autograder zip?")
    files = tuple((i.filename.removeprefix("files/"), i.file_size) for i in infos
                  if i.filename.startswith("files/") and not i.is_dir())  # fmt: skip
    assignment = Assignment(config.get("assignment_name"), tests, files, config, path)
    try:
        _ = assignment.limits
    except ValueError as e:
        raise AssignmentError(f"autograder zip {path}: {e}") from None
    return assignment


def check_directory(file: BinaryIO) -> None:
    """Refuse (ValueError) a zip whose directory is more than MAX_DIRECTORY bytes, by its end record, before
    zipfile reads all of it (whatever number of entries the end record states)."""
    end = zipfile._EndRecData(file)  # what zipfile itself reads first: where the directory is, and its size
    if end is not None and end[zipfile._ECD_SIZE] > MAX_DIRECTORY:
        raise ValueError(f"its directory of entries is more than {MAX_DIRECTORY / MB:g} MB")


def check_sizes(infos: list[zipfile.ZipInfo], max_file: int, max_total: int) -> None:
    """Refuse (ValueError naming the entry and the limit) a zip whose members, unpacked, would be more than
    MAX_ZIP_MEMBERS, `max_file` bytes for one, `max_total` together, or MAX_RATIO times their packed size
    (a zip bomb): checked on its directory, before anything is unpacked (zipfile then unpacks no more than
    a member's stated size)."""
    if len(infos) > MAX_ZIP_MEMBERS:
        raise ValueError(f"it has more than {MAX_ZIP_MEMBERS} entries")
    for info in infos:
        if info.file_size > max_file:
            raise ValueError(
                f"the entry {shown(info.filename)} is {info.file_size / MB:.0f} MB unpacked, more than the "
                f"{max_file / MB:g} MB one may be"
            )
        if info.file_size > RATIO_FROM and info.file_size > MAX_RATIO * info.compress_size:
            raise ValueError(
                f"the entry {shown(info.filename)} unpacks to more than {MAX_RATIO} times its packed size "
                f"({info.file_size / MB:.0f} MB from {info.compress_size / 1024:.0f} KB): is it a zip bomb?"
            )
    if sum(info.file_size for info in infos) > max_total:
        raise ValueError(f"its entries are more than {max_total / MB:g} MB together unpacked")


def _text(zf: zipfile.ZipFile, name: str) -> str:
    try:
        return zf.read(name).decode("utf-8")
    except UnicodeDecodeError:
        raise TestFileError(f"test file {name} is not UTF-8 text") from None


def _config(zf: zipfile.ZipFile) -> Any:
    """otter_config.json ({} if the zip has none), parsed only within CONFIG's bounds."""
    try:
        info = zf.getinfo("otter_config.json")
    except KeyError:
        return {}
    if oversize := CONFIG.oversize(info.file_size):
        raise ValueError(f"otter_config.json has {oversize}")
    data = zf.read(info)
    if excess := CONFIG.excess(data):
        raise ValueError(f"otter_config.json has {excess}")
    return json.loads(data)
