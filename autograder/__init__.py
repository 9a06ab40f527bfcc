"""Secure, fast grading of Otter-Grader 7 autograder zips (see README section in grading.py)."""

from .assignment import load_assignment
from .grading import check_submission, grade_submission
from .notebook import InvalidSubmission
from .options import GradeOptions
from .results import GradeResult
from .sandbox import SandboxUnavailable

__all__ = [
    "GradeOptions",
    "GradeResult",
    "InvalidSubmission",
    "SandboxUnavailable",
    "check_submission",
    "grade_submission",
    "load_assignment",
]
