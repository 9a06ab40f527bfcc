"""Turning what course staff give into the files of an assignment version, checked before anything is stored.

Two ways in, both ending with an autograder zip, what students download and a summary:

- a master notebook (Otter Assign format) with the support files its ASSIGNMENT CONFIG lists: `otter assign`
  runs on it confined (confined.py); then the solution notebook it wrote is graded by this grader, in its
  sandbox, and must get full marks (what `otter assign` checks when it runs the tests itself);
- an existing autograder zip with its student notebook (or a zip of the student's folder: the notebook and
  the files it reads): the zip must be Otter's and the notebook must be for the same assignment.

The packages the zip needs are installed (autograder.environment) as part of the build, so an assignment is
stored only once it can be graded. Every failure is a BuildError whose message says what to do.
"""

from __future__ import annotations

import io
import json
import re
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from autograder import GradeOptions, InvalidSubmission, SandboxUnavailable, check_submission, grade_submission
from autograder.assignment import AssignmentError, check_directory, check_sizes
from autograder.environment import EnvironmentBuildError, lookup, prepare, requirements_of
from autograder.notebook import SHAPE
from autograder.paths import check_zip_members, safe_relative
from autograder.safe_yaml import load_yaml
from autograder.written import WrittenError, WrittenQuestion, from_handout, with_prompts
from autograder.written import from_master as written_in_master

from .confined import ConfinementError, run_confined
from .summary import Summary, summarize

Progress = Callable[[str], None]
MAX_NOTEBOOK_BYTES = 20 * 1024 * 1024
MAX_ZIP_MEMBERS = 1000
MAX_HANDOUT_BYTES = 100 * 1024 * 1024
"""a zip of the student's folder, unpacked (the notebook in the browser unpacks a handout up to as much)"""
MAX_NAME = 200  # characters of an assignment's name (assignments.name)
FIXED_TIME = (2020, 1, 1, 0, 0, 0)  # handout zips are reproducible
ASSIGN = ["-m", "otter", "assign", "--no-run-tests", "--no-pdfs"]


class BuildError(ValueError):
    """What was given cannot become an assignment version; str() says why and what to do. Nothing is stored."""


@dataclass(frozen=True)
class Built:
    autograder_zip: bytes
    handout: bytes
    """what students download: the student notebook, or a zip of it with the files it reads"""
    handout_name: str
    summary: Summary
    environment: str
    """what preparing its packages did"""
    title: str
    """the student notebook's first heading (or the assignment's name)"""
    written: tuple[WrittenQuestion, ...] = ()
    """the questions course staff grade by hand (Otter's `manual: true`), in the notebook's order"""


# --- master notebooks ---------------------------------------------------------------------------------


def master_config(master: bytes) -> dict:
    """The ASSIGNMENT CONFIG of a master notebook (its first cell), or BuildError."""
    if excess := SHAPE.excess(master):
        raise BuildError(f"this file has {excess}: it is not a notebook Jupyter wrote")
    try:
        notebook = json.loads(master)
        first = notebook["cells"][0]
        source = first["source"] if isinstance(first["source"], str) else "".join(first["source"])
    except (ValueError, KeyError, IndexError, TypeError, RecursionError):
        raise BuildError("this file is not a Jupyter notebook (.ipynb) with cells") from None
    header, _, body = source.partition("\n")
    if re.match(r"\s*```[^\n]*\n\s*BEGIN ASSIGNMENT", source):
        raise BuildError(
            "this master notebook is in Otter's older format (a `BEGIN ASSIGNMENT` block in a Markdown cell), which "
            "Otter 7 builds wrongly: its student notebook would hold the solutions and the hidden tests. Convert it "
            "to the current format (raw cells: `# ASSIGNMENT CONFIG`, `# BEGIN QUESTION`, ...; see Otter Assign's "
            "documentation), then upload it again"
        )
    if header.strip().upper() != "# ASSIGNMENT CONFIG":
        raise BuildError(
            "this notebook is not an Otter master notebook: its first cell must be a raw cell that starts with "
            "`# ASSIGNMENT CONFIG` (see Otter Assign's documentation)"
        )
    try:
        config = load_yaml(body) or {}
    except ValueError as error:
        raise BuildError(f"the ASSIGNMENT CONFIG cell {error}") from None
    if not isinstance(config, dict) or not isinstance(config.get("name"), str) or not config["name"].strip():
        raise BuildError(
            "the ASSIGNMENT CONFIG needs a `name:` (submitted notebooks carry it, so that a notebook for another "
            "assignment is refused)"
        )
    return config


def listed_files(config: dict) -> list[str]:
    """The support files a master notebook's configuration names, relative to the notebook: `files`,
    `autograder_files`, and a `requirements` or `environment` file."""
    listed = [*(config.get("files") or []), *(config.get("autograder_files") or [])]
    listed += [config[key] for key in ("requirements", "environment") if isinstance(config.get(key), str)]
    if not all(isinstance(name, str) for name in listed):
        raise BuildError("`files` and `autograder_files` in the ASSIGNMENT CONFIG must be lists of paths")
    paths = [name.removesuffix("/") for name in listed]  # a folder: everything in it
    with _unsafe_names("the ASSIGNMENT CONFIG lists a path that cannot be used:"):
        for path in paths:
            safe_relative(path)
    return list(dict.fromkeys(paths))


@contextmanager
def _unsafe_names(context: str) -> Iterator[None]:
    """An unsafe name (autograder.paths' ValueError) in the block becomes BuildError: `context`, then why."""
    try:
        yield
    except ValueError as error:
        raise BuildError(f"{context} {error}") from None


def match_uploads(listed: list[str], uploads: dict[str, bytes]) -> dict[str, bytes]:
    """Uploaded files (a browser sends names without folders) put at the paths the configuration lists."""
    by_name: dict[str, list[str]] = {}
    for path in listed:
        by_name.setdefault(PurePosixPath(path).name, []).append(path)
    if twice := [paths for paths in by_name.values() if len(paths) > 1]:
        raise BuildError(
            f"the ASSIGNMENT CONFIG lists files with the same name in different folders ({', '.join(twice[0])}): "
            "give them different names, or add the assignment with the command line"
        )
    if unlisted := sorted(set(uploads) - set(by_name)):
        raise BuildError(
            f"{', '.join(unlisted)} {'is' if len(unlisted) == 1 else 'are'} not listed in the notebook's ASSIGNMENT "
            "CONFIG (`files` or `autograder_files`): list what the notebook and its tests read, or leave it out"
        )
    if missing := [paths[0] for name, paths in by_name.items() if name not in uploads]:
        raise BuildError(
            f"the notebook's ASSIGNMENT CONFIG lists {', '.join(missing)}: add {'it' if len(missing) == 1 else 'them'} "
            "to the support files (a folder is listed? list its files one by one, or use the command line)"
        )
    return {by_name[name][0]: data for name, data in uploads.items()}


def from_master(filename: str, master: bytes, files: dict[str, bytes], progress: Progress) -> Built:
    """Run `otter assign` on a master notebook and its support files, then check its solution."""
    master_config(master)
    progress("running otter assign on the master notebook")
    try:
        with _unsafe_names("a support file cannot be used:"):
            run = run_confined([sys.executable, *ASSIGN, filename, "out"], {**files, filename: master})
    except ConfinementError as error:
        raise BuildError(f"otter assign could not run: {error}") from None
    if run.status != 0:
        raise BuildError(f"otter assign failed on {filename}: {_last_line(run.log)}")
    zips = [name for name in run.outputs if re.fullmatch(r"autograder/[^/]+-autograder_[^/]*\.zip", name)]
    student, solution = f"student/{filename}", f"autograder/{filename}"
    if len(zips) != 1 or student not in run.outputs or solution not in run.outputs:
        raise BuildError(f"otter assign did not write an autograder zip and notebooks: {_last_line(run.log)}")
    handout_files = {
        name.removeprefix("student/"): data for name, data in run.outputs.items() if name.startswith("student/")
    }
    handout, handout_name = pack_handout(filename, handout_files)
    built = _checked(run.outputs[zips[0]], handout, handout_name, run.outputs[student], run.outputs[solution], progress)
    return replace(built, written=written_questions(master, run.outputs[student]))


# --- autograder zips --------------------------------------------------------------------------------------


def from_zip(autograder_zip: bytes, student: bytes, student_name: str, progress: Progress) -> Built:
    """An existing autograder zip with its student notebook, or a zip of the student's folder."""
    progress("reading the autograder zip")
    notebook = notebook_in(student) if student_name.lower().endswith(".zip") else student
    built = _checked(autograder_zip, student, student_name, notebook, None, progress)
    return replace(built, written=written_questions(None, notebook))


def written_questions(master: bytes | None, student: bytes) -> tuple[WrittenQuestion, ...]:
    """The questions staff grade by hand: from the master notebook (names, points, rubric) where there is one,
    else from the student notebook's question markers alone (staff then set their points)."""
    try:
        handout = from_handout(student)
        return tuple(with_prompts(written_in_master(master), handout) if master is not None else handout)
    except WrittenError as error:
        raise BuildError(f"the written questions cannot be read: {error}") from None


def notebook_in(student_zip: bytes) -> bytes:
    """The one notebook of a zip of the student's folder (which students download: its entries must be safe to
    unpack)."""
    folder = io.BytesIO(student_zip)
    try:
        with _unsafe_names("the zip of the student's folder cannot be used:"):
            check_directory(folder)
        with zipfile.ZipFile(folder) as archive:
            infos = archive.infolist()
            with _unsafe_names("the zip of the student's folder cannot be used:"):
                check_zip_members(infos)
                check_sizes(infos, MAX_HANDOUT_BYTES, MAX_HANDOUT_BYTES)
            notebooks = [i for i in infos if i.filename.endswith(".ipynb") and "/." not in f"/{i.filename}"]
            if len(infos) > MAX_ZIP_MEMBERS or len(notebooks) != 1 or notebooks[0].file_size > MAX_NOTEBOOK_BYTES:
                raise BuildError("a zip of the student's folder must hold exactly one notebook (.ipynb) and its files")
            return archive.read(notebooks[0])
    except zipfile.BadZipFile:
        raise BuildError(
            "the student's files are not a zip (give the student notebook, or a zip of its folder)"
        ) from None


# --- both ------------------------------------------------------------------------------------------------


def _checked(
    autograder_zip: bytes, handout: bytes, handout_name: str, student: bytes, solution: bytes | None, progress: Progress
) -> Built:
    """Read the zip, check the student notebook belongs to it, install its packages, grade the solution."""
    with tempfile.TemporaryDirectory(prefix="decode-grader-check-") as folder:
        zip_path = Path(folder) / "autograder.zip"
        zip_path.write_bytes(autograder_zip)
        summary = _summary(zip_path)
        try:
            check_submission(zip_path, student, MAX_NOTEBOOK_BYTES)
        except InvalidSubmission as error:
            raise BuildError(f"the student notebook does not fit this autograder zip: {error}") from None
        environment = _environment(zip_path, progress)
        if solution is not None:
            progress("grading the solution notebook: it must pass every test")
            _check_solution(zip_path, solution)
    return Built(autograder_zip, handout, handout_name, summary, environment, _title(student) or summary.name)


def _summary(zip_path: Path) -> Summary:
    try:
        summary = summarize(zip_path)
    except AssignmentError as error:
        raise BuildError(str(error).replace(f"autograder zip {zip_path}", "the zip")) from None
    except EnvironmentBuildError as error:
        raise BuildError(f"its packages cannot be installed: {error}") from None
    if summary.name and len(summary.name) > MAX_NAME:
        raise BuildError(f"the assignment's name is longer than {MAX_NAME} characters: give it a shorter `name:`")
    if not summary.name:
        raise BuildError(
            "the autograder zip names no assignment (otter_config.json has no assignment_name): build it with "
            "`otter assign` from a master notebook whose ASSIGNMENT CONFIG has a `name:`"
        )
    return summary


def _environment(zip_path: Path, progress: Progress) -> str:
    """Install the packages it needs (once per machine); what that did, in words."""
    try:
        requirements = requirements_of(zip_path)
        if not requirements:
            return "nothing to install: the grader's own packages are enough"
        if lookup(requirements) is not None:
            return f"ready (installed before): {requirements}"
        progress(f"installing its packages from PyPI: {requirements} (this can take minutes)")
        started = time.monotonic()
        prepare(requirements, progress=progress)  # what pip is doing and the disk taken, every few seconds
    except EnvironmentBuildError as error:
        raise BuildError(f"its packages cannot be installed: {error}") from None
    return f"installed in {time.monotonic() - started:.0f} s: {requirements}"


def _check_solution(zip_path: Path, solution: bytes) -> None:
    try:
        result = grade_submission(zip_path, solution, GradeOptions(), label="the solution")
    except (SandboxUnavailable, AssignmentError) as error:
        raise BuildError(f"the solution could not be graded: {error}") from None
    if result.error:
        raise BuildError(f"the solution notebook could not be graded: {result.error}")
    failing = [
        f"{q.name} ({q.score:g} of {q.max_score:g}: {_last_line(next(t.message for t in q.tests if not t.passed))})"
        for q in result.questions
        if q.score < q.max_score and any(not t.passed for t in q.tests)
    ]
    if failing:
        raise BuildError(
            f"the solution does not pass its own tests: {'; '.join(failing)}. Fix the solution or the tests and "
            "upload the master notebook again"
        )


def pack_handout(filename: str, files: dict[str, bytes]) -> tuple[bytes, str]:
    """What students download: the notebook `filename` alone, or a zip of it with the files it reads."""
    if list(files) == [filename]:
        return files[filename], filename
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(files):
            with _unsafe_names("a file of what students download cannot be used:"):
                safe_relative(name)
            archive.writestr(zipfile.ZipInfo(name, FIXED_TIME), files[name])
    return out.getvalue(), f"{PurePosixPath(filename).stem}.zip"


def _title(notebook: bytes) -> str | None:
    """The first Markdown heading of a notebook."""
    if SHAPE.excess(notebook):
        return None
    try:
        cells = json.loads(notebook)["cells"]
    except (ValueError, KeyError, TypeError, RecursionError):
        return None
    for cell in cells:
        source = cell.get("source", "") if isinstance(cell, dict) else ""
        source = source if isinstance(source, str) else "".join(map(str, source))
        if cell.get("cell_type") == "markdown" and (heading := re.match(r"\s*#+\s+(.+)", source)):
            return heading.group(1).strip()[:300]
    return None


def notebook_filename(name: str) -> str:
    """A safe file name for an uploaded notebook (its folder dropped)."""
    base = re.sub(r"[^A-Za-z0-9._-]", "_", PurePosixPath(name.replace("\\", "/")).name).lstrip(".")
    return base if base.endswith(".ipynb") and len(base) > len(".ipynb") else f"{base or 'master'}.ipynb"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:500] if lines else "no message"
