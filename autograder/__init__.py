"""Secure, fast grading of Otter-Grader 7 autograder zips (see README section in grading.py).

The names below are imported when first used, so that `python -m autograder` can start a sandbox before
it imports the rest of the grader (cli.py): the sandbox's interpreter starts meanwhile."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .assignment import load_assignment as load_assignment
    from .errors import SandboxUnavailable as SandboxUnavailable
    from .grader import check_submission as check_submission
    from .grader import grade_submission as grade_submission
    from .grader import inspect_assignment as inspect_assignment
    from .notebook import InvalidSubmission as InvalidSubmission
    from .options import GradeOptions as GradeOptions
    from .results import GradeResult as GradeResult

_HOMES = {
    "GradeOptions": "options",
    "GradeResult": "results",
    "InvalidSubmission": "notebook",
    "SandboxUnavailable": "errors",
    "check_submission": "grader",
    "grade_submission": "grader",
    "inspect_assignment": "grader",
    "load_assignment": "assignment",
}
__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'autograder' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
