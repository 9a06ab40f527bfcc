"""Grading results and the two views of them (staff and student)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TestResult:
    name: str
    hidden: bool
    passed: bool
    score: float
    max_score: float
    message: str


@dataclass(frozen=True)
class QuestionResult:
    name: str
    score: float
    max_score: float
    tests: list[TestResult]
    """every test case, hidden ones included (the staff view); the public ones were run before any hidden
    test entered the sandbox, and are what the student sees"""

    def to_dict(self, student_view: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "score": self.score,
            "max_score": self.max_score,
            "tests": [vars(t).copy() for t in self.tests if not (student_view and t.hidden)],
        }
        if student_view:
            hidden = [t for t in self.tests if t.hidden]
            out["hidden_passed"] = sum(t.passed for t in hidden)
            out["hidden_total"] = len(hidden)
        return out


@dataclass(frozen=True)
class GradeResult:
    submission: str
    max_score: float
    questions: list[QuestionResult] = field(default_factory=list)
    error: str | None = None
    """one-line reason when the input could not be graded at all (score 0)"""
    cell_errors: list[str] = field(default_factory=list)
    """errors raised by notebook cells (staff view only)"""
    invalid_input: bool = False
    """True when `error` is about the submission itself (CLI exit status 2)"""
    usage: dict[str, float] = field(default_factory=dict)
    """what the sandboxes used: peak_memory_mb (the most at once), cpu_seconds, restarts (staff view only)"""
    packages: dict[str, str] = field(default_factory=dict)
    """the versions that ran of the packages the assignment asks for beyond the grader's (staff view only)"""
    notice: str = ""
    """what the student should know about how the notebook was graded (both views): a file saved under another
    name than the notebook expects, whose checks therefore did not run"""

    @property
    def score(self) -> float:
        return float(sum(q.score for q in self.questions))

    def to_dict(self, student_view: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "submission": self.submission,
            "score": self.score,
            "max_score": self.max_score,
            "questions": [q.to_dict(student_view) for q in self.questions],
            "error": self.error,
        }
        if self.notice:
            out["notice"] = self.notice
        if not student_view:
            out["cell_errors"] = list(self.cell_errors)
            out["usage"] = dict(self.usage)
            out["packages"] = dict(self.packages)
        return out
