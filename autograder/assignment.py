"""Reading an Otter autograder zip: its settings, test files and support files.

The zip is read in memory and never extracted, so hidden tests cannot end up anywhere the sandbox can
see. Reading it runs nothing: test files are course code, run only in a grading process (child.py).
"""

from __future__ import annotations

import functools
import json
import os
import zipfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO

from .options import Limits
from .paths import check_zip_members

if TYPE_CHECKING:
    from .environment import Requirements
from .testfiles import TestFile, TestSource

MAX_ZIP_MEMBERS = 10_000
MAX_UNPACKED = 512 * 1024 * 1024


class AssignmentError(ValueError):
    """The autograder zip is unusable; str() says why."""


@dataclass(frozen=True)
class Assignment:
    name: str | None
    """assignment_name from otter_config.json; submissions must carry the same name"""
    tests: tuple[TestSource, ...]
    """tests/*.py, sorted by path as `otter run` runs them"""
    files: tuple[tuple[str, bytes], ...]
    """support files (files/ in the zip), copied into the sandbox's working directory"""
    config: dict[str, Any] = field(default_factory=dict)
    """otter_config.json"""
    path: str = ""
    """where the zip is"""

    def load_tests(self) -> list[TestFile]:
        """Fresh test-file objects for one grading (Otter stores results on them). Runs the test files:
        course code, so only a grading process calls it (child.py)."""
        return [test.load() for test in self.tests]

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
    """An autograder zip from a path or an open file (`path` names it in messages); nothing is cached."""
    try:
        with zipfile.ZipFile(source) as zf:
            infos = zf.infolist()
            if len(infos) > MAX_ZIP_MEMBERS or sum(i.file_size for i in infos) > MAX_UNPACKED:
                raise AssignmentError(f"autograder zip {path} is too large to be an Otter autograder zip")
            check_zip_members(infos)  # ValueError for an unsafe entry, before any name is used
            names = [i.filename for i in infos]
            config = json.loads(zf.read("otter_config.json")) if "otter_config.json" in names else {}
            tests = tuple(
                TestSource(name, zf.read(name).decode("utf-8"))
                for name in sorted(names)
                if name.startswith("tests/") and name.endswith(".py") and name.count("/") == 1
            )
            files = tuple(
                (name.removeprefix("files/"), zf.read(name))
                for name in sorted(names)
                if name.startswith("files/") and not name.endswith("/")
            )
    except AssignmentError:
        raise
    except (OSError, zipfile.BadZipFile, KeyError, ValueError, UnicodeDecodeError) as e:
        raise AssignmentError(f"cannot read autograder zip {path}: {e}") from None
    if not isinstance(config, dict):
        raise AssignmentError(f"autograder zip {path}: otter_config.json is not an object")
    if config.get("lang", "python") != "python":
        raise AssignmentError(f"autograder zip {path} is for {config['lang']!r}: this grader grades Python notebooks")
    if not tests:
        raise AssignmentError(f"autograder zip {path} has no tests/*.py files: is it an Otter autograder zip?")
    assignment = Assignment(config.get("assignment_name"), tests, files, config, path)
    try:
        _ = assignment.limits
    except ValueError as e:
        raise AssignmentError(f"autograder zip {path}: {e}") from None
    return assignment
