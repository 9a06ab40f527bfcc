"""Reading an Otter autograder zip: assignment name, test files and support files.

The zip is read in memory and never extracted, so hidden tests cannot end up
anywhere the sandbox can see.  Test files are staff code and are parsed with
Otter's own ExceptionTestFile, so point resolution matches `otter run`.
"""

from __future__ import annotations

import functools
import json
import os
import zipfile
from dataclasses import dataclass

from otter.test_files import ExceptionTestFile


class AssignmentError(ValueError):
    """The autograder zip is unusable."""


@dataclass(frozen=True)
class Assignment:
    name: str | None
    """assignment_name from otter_config.json; submissions must carry the same name"""
    tests: tuple[tuple[str, str], ...]
    """(path in zip, source) of each tests/*.py file, sorted by path as `otter run` does"""
    files: tuple[tuple[str, bytes], ...]
    """support files (files/ in the zip), copied into the sandbox's working directory"""

    def parse_tests(self) -> list[ExceptionTestFile]:
        """Fresh test-file objects for one grading (Otter stores results on them)."""
        return [ExceptionTestFile.from_string(source, path=path) for path, source in self.tests]

    @functools.cached_property
    def points(self) -> float:
        """Total points of every question (parsing the tests once per loaded zip)."""
        return float(sum(tf.possible for tf in self.parse_tests()))


def load_assignment(path: str | os.PathLike[str]) -> Assignment:
    """Load (and cache, keyed by path and modification time) an autograder zip."""
    stat = os.stat(path)
    return _load(os.path.realpath(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _load(path: str, mtime_ns: int, size: int) -> Assignment:
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            config = json.loads(zf.read("otter_config.json")) if "otter_config.json" in names else {}
            tests = tuple(
                (name, zf.read(name).decode("utf-8"))
                for name in sorted(names)
                if name.startswith("tests/") and name.endswith(".py") and name.count("/") == 1
            )
            files = tuple(
                (name.removeprefix("files/"), zf.read(name))
                for name in sorted(names)
                if name.startswith("files/") and not name.endswith("/")
            )
    except (OSError, zipfile.BadZipFile, KeyError, ValueError) as e:
        raise AssignmentError(f"cannot read autograder zip {path}: {e}") from e
    if not tests:
        raise AssignmentError(f"autograder zip {path} has no tests/*.py files")
    assignment = Assignment(config.get("assignment_name"), tests, files)
    for parsed in assignment.parse_tests():  # fail early on OK-format or broken test files
        if not parsed.test_cases:
            raise AssignmentError(f"{parsed.path} has no exception-based test cases")
    return assignment
