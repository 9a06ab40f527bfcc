"""The written questions of a link: its assignment version's, with the points staff set where the assignment
names none (an autograder zip does not carry them)."""

from __future__ import annotations

from dataclasses import dataclass

from autograder.written import RubricItem, WrittenQuestion

from ..db import AssignmentVersion, LinkSettings

DEFAULT_POINTS = 1.0
"""a written question's points until staff set them, where the assignment names none"""


@dataclass(frozen=True)
class Question:
    name: str
    points: float
    prompt: str
    rubric: tuple[RubricItem, ...]
    """the rubric the master notebook gives (a link's rubric starts as this)"""
    points_from_assignment: bool


def link_questions(version: AssignmentVersion, settings: LinkSettings) -> list[Question]:
    """The written questions graded on a link, in the notebook's order."""
    chosen = settings.written_points or {}
    questions = []
    for stored in version.written_questions or []:
        question = WrittenQuestion.from_dict(stored)
        points = chosen.get(question.name, question.points)
        questions.append(
            Question(
                question.name, DEFAULT_POINTS if points is None else float(points), question.prompt, question.rubric,
                question.points is not None,
            )
        )  # fmt: skip
    return questions


def find(questions: list[Question], name: str) -> Question | None:
    return next((q for q in questions if q.name == name), None)


def as_written(questions: list[Question]) -> list[WrittenQuestion]:
    """What autograder.written reads a submission's answers with."""
    return [WrittenQuestion(q.name, q.points, q.prompt, q.rubric) for q in questions]


def written_points(version: AssignmentVersion) -> float:
    """The points of a version's written questions, as the assignment gives them (DEFAULT_POINTS where not)."""
    written = version.written_questions or []
    return sum(DEFAULT_POINTS if q.get("points") is None else float(q["points"]) for q in written)


def total_points(version: AssignmentVersion) -> float:
    """What a version is out of: its autograded points and its written questions' (a gradebook column's maximum)."""
    return version.points + written_points(version)
