"""What an assignment's tests are, and a grading's outcome checked against it, on the grader's side.

Test files are course code: only a grading process runs them (child.py). It reports the questions, their
test cases' names, visibility and points as its first message, before any student value exists in it;
its grading's outcome is then only which cases passed, with their messages. Scores are computed here from
the two, as Otter computes them (all_or_nothing included), so whatever a grading process says cannot give
a question it does not have, more points than it is worth, or a score that its cases do not add up to.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .results import GradeResult, QuestionResult, TestResult

MAX_QUESTIONS = 1000
MAX_CASES = 1000
MAX_NAME = 300
MAX_POINTS = 1e6
MAX_MESSAGE = 20_000
MAX_CELL_ERRORS = 1000


class ManifestError(ValueError):
    """What a grading process reported is not a valid manifest or outcome."""


@dataclass(frozen=True)
class Case:
    name: str
    hidden: bool
    points: float


@dataclass(frozen=True)
class Question:
    name: str
    cases: tuple[Case, ...]
    all_or_nothing: bool

    @property
    def points(self) -> float:
        return float(sum(case.points for case in self.cases))

    def score(self, passed: list[bool]) -> float:
        """Otter's TestFile.score for these results."""
        if self.all_or_nothing:
            return self.points if all(passed) else 0.0
        return float(sum(case.points for case, ok in zip(self.cases, passed, strict=True) if ok))


@dataclass(frozen=True)
class Manifest:
    questions: tuple[Question, ...]

    @property
    def points(self) -> float:
        return float(sum(q.points for q in self.questions))

    def by_name(self) -> dict[str, Question]:
        return {q.name: q for q in self.questions}

    @classmethod
    def from_data(cls, data: Any) -> Manifest:
        questions = tuple(_question(q) for q in _list(data, MAX_QUESTIONS))
        if len({q.name for q in questions}) != len(questions):
            raise ManifestError("two questions have the same name")
        return cls(questions)

    def result(self, label: str, data: Any, usage: dict[str, float]) -> GradeResult:
        """A grading's outcome ({"order", "passed", "messages", "cell_errors"}) as a GradeResult; every
        question of the manifest exactly once."""
        if not isinstance(data, dict):
            raise ManifestError("an outcome must be an object")
        order, passed, messages = data.get("order"), data.get("passed"), data.get("messages")
        questions = self.by_name()
        if not isinstance(order, list) or sorted(map(str, order)) != sorted(questions) or len(order) != len(questions):
            raise ManifestError("the outcome does not cover each question once")
        if not isinstance(passed, dict) or not isinstance(messages, dict):
            raise ManifestError("an outcome needs passed and messages")
        graded = [_graded(questions[name], passed.get(name), messages.get(name)) for name in order]
        errors = [_text(e, 1000) for e in _list(data.get("cell_errors", []), MAX_CELL_ERRORS)]
        return GradeResult(label, self.points, graded, cell_errors=errors, usage=usage)


def _graded(question: Question, passed: Any, messages: Any) -> QuestionResult:
    passed = _list(passed, MAX_CASES)
    messages = _list(messages, MAX_CASES)
    if len(passed) != len(question.cases) or len(messages) != len(question.cases):
        raise ManifestError(f"the outcome of {question.name} has the wrong number of cases")
    if not all(type(ok) is bool for ok in passed):
        raise ManifestError("a case's outcome must be true or false")
    tests = [
        TestResult(case.name, case.hidden, ok, case.points if ok else 0.0, case.points, _text(message, MAX_MESSAGE))
        for case, ok, message in zip(question.cases, passed, messages, strict=True)
    ]
    return QuestionResult(question.name, question.score(passed), question.points, tests)


def _question(data: Any) -> Question:
    if not isinstance(data, dict):
        raise ManifestError("a question must be an object")
    cases = tuple(_case(c) for c in _list(data.get("cases"), MAX_CASES))
    if type(data.get("all_or_nothing")) is not bool:
        raise ManifestError("all_or_nothing must be true or false")
    return Question(_name(data.get("name")), cases, data["all_or_nothing"])


def _case(data: Any) -> Case:
    if not isinstance(data, list) or len(data) != 3:
        raise ManifestError("a test case needs a name, whether it is hidden, and its points")
    name, hidden, points = data
    if type(hidden) is not bool or type(points) not in (int, float) or not math.isfinite(points):
        raise ManifestError("a test case needs a name, whether it is hidden, and its points")
    if abs(points) > MAX_POINTS:
        raise ManifestError(f"a test case is worth more than {MAX_POINTS:g} points")
    return Case(_name(name), hidden, float(points))


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_NAME:
        raise ManifestError(f"a name must be text of 1 to {MAX_NAME} characters")
    return value


def _list(value: Any, most: int) -> list:
    if not isinstance(value, list) or len(value) > most:
        raise ManifestError(f"expected a list of at most {most} items")
    return value


def _text(value: Any, cap: int) -> str:
    if not isinstance(value, str):
        raise ManifestError("expected text")
    return value[:cap]
