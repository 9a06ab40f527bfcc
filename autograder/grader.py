"""Grading a submission, from the grader's side.

Three parties, three boxes. This process (for the LTI tool, a worker holding keys, the database and LMS
credentials) only orchestrates: it checks the notebook, starts a grading process (child.py: the
assignment's tests, course code, run there) and a student sandbox (the notebook's cells run there), hands
the sandbox's pipes to the grading process (box.py), and reads back an outcome that it checks against the
assignment's manifest (manifest.py). Both boxes are bubblewrap with a uid, a cgroup and a deadline of
their own; no test file runs and no student value is decoded here.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from typing import Any

from .assignment import Assignment, load_assignment
from .box import manifest_of, started_box
from .manifest import Manifest
from .notebook import MAX_FILE_NAME, Cell, InvalidSubmission, load_cells, read_notebook
from .options import GradeOptions
from .pool import warm_pool
from .results import GradeResult


def inspect_assignment(autograder: str | os.PathLike[str]) -> Manifest:
    """An autograder zip's questions, their test cases and points (AssignmentError if it is unusable)."""
    return manifest_of(load_assignment(autograder))


def grade_submission(
    autograder: str | os.PathLike[str],
    notebook: bytes | str | os.PathLike[str],
    options: GradeOptions | None = None,
    label: str | None = None,
    early: Any = None,
    file_name: str | None = None,
) -> GradeResult:
    """Grade one notebook (bytes or a path) against an autograder zip; thread-safe.

    Unusable input gives a result with `error` set and `invalid_input` True; a missing or broken
    sandbox raises SandboxUnavailable (student code never runs unsandboxed). `early`: a grading process
    spawned for this grading before the grader was imported (the command line's, pool.SpawnedEarly);
    closed if not used. `file_name`: the submission's file name as the student saved it (default: the path's;
    for bytes, the name the notebook expects). Under `otter run` a notebook's `grader.check` calls count
    only when it is saved under the name its `otter.Notebook("...")` line gives; graded here the same way.
    """
    options = options or GradeOptions()
    try:
        assignment = load_assignment(autograder)
        limits = options.limits(assignment.limits)
        label = label or ("<bytes>" if isinstance(notebook, bytes) else str(notebook))
        try:
            data = notebook if isinstance(notebook, bytes) else read_notebook(notebook, options.max_notebook_bytes)
            cells = load_cells(data, assignment.name, options.max_notebook_bytes)
        except InvalidSubmission as e:
            return GradeResult(label, manifest_of(assignment, limits).points, error=str(e), invalid_input=True)
        box = early.take() if early is not None else None
        if box is None and options.prestart:
            box = warm_pool(assignment, limits, options.prestart).take()
        box = box or started_box(assignment, limits, forked=options.prestart > 0)
        saved_as = submission_name(notebook, file_name)
        try:
            result = box.grade(cells, label, saved_as)
        finally:
            box.close()
        if options.prestart:
            warm_pool(assignment, limits, options.prestart).learn(box.modules)
        return replace(result, submission=label, packages=_packages(assignment), notice=_name_notice(cells, saved_as))
    finally:
        if early is not None:
            early.close()


def _packages(assignment: Assignment) -> dict[str, str]:
    if not assignment.requirements:
        return {}
    from .environment import versions_used  # only assignments with packages pay for it

    return versions_used(assignment.requirements)


NOTEBOOK_NAMED = re.compile(r"""otter\.Notebook\(\s*(?:nb_path\s*=\s*)?(["'])([^"'\n]{1,255})\1""")


def _name_notice(cells: list[Cell], saved_as: str | None) -> str:
    """Words for the student when the file's name is not the one its `otter.Notebook("...")` line reads (so
    that, as under otter run, none of its checks ran); '' otherwise. Read from the cells here, not from what
    the sandbox says."""
    expected = next((m.group(2) for cell in cells if (m := NOTEBOOK_NAMED.search(cell.source[:10_000]))), None)
    if saved_as is None or expected is None or os.path.normpath(expected) == saved_as:
        return ""
    return (
        f"Your file is named “{saved_as}”, but this notebook expects “{expected}”. As under Otter, its checks "
        "(grader.check) did not run, so every question was graded on the state your notebook ends with. To have "
        f"each question graded where you checked it, save the notebook as “{expected}” and submit it again."
    )


def submission_name(notebook: bytes | str | os.PathLike[str], file_name: str | None) -> str | None:
    """The file name `otter run` would see (bounded: it comes from a browser), or None when not known."""
    if file_name is None and not isinstance(notebook, bytes):
        file_name = os.path.basename(os.fspath(notebook))
    if file_name is None:
        return None
    return os.path.basename(file_name.replace("\\", "/"))[:MAX_FILE_NAME] or None


def check_submission(autograder: str | os.PathLike[str], data: bytes, max_bytes: int) -> None:
    """Raise InvalidSubmission unless `data` is a gradable notebook for this assignment (runs nothing)."""
    load_cells(data, load_assignment(autograder).name, max_bytes)
