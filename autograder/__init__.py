"""Secure, fast grading of Otter-Grader 7 autograder zips (see README section in grading.py)."""

from .grading import grade_submission
from .options import GradeOptions
from .results import GradeResult
from .sandbox import SandboxUnavailable

__all__ = ["GradeOptions", "GradeResult", "SandboxUnavailable", "grade_submission"]
