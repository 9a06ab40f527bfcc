"""Grades of written answers, and the written part of a student's score.

A grade belongs to an answer's text (its digest), not to an attempt: every attempt of the student with the
same answer has it, so a resubmission that leaves a written answer unchanged keeps its grade. Staff grade
the answers of each student's counting attempt (best or latest, as the gradebook counts them); the written
part of that attempt joins its autograded part in the gradebook once every written question is graded.

Two graders on one answer: each save names the revision it replaces (0: none), and the database takes only
the save whose revision is still current; the other is told (Conflict) and nothing is overwritten.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import defer

from autograder.written import MAX_POINTS, WrittenError, answers

from ..db import AssignmentVersion, Attempt, RubricItem, WrittenGrade, utcnow
from ..rules.refs import student_ref
from ..rules.settings import counting_attempt, link_key, load
from ..services import Services
from .questions import Question, as_written, link_questions

MAX_COMMENT = 10_000
MAX_REVISION = 1_000_000_000
STALE_FORM = "This grading form does not match any saved grade of this answer: reload the answer and grade it again."


class GradeRefused(ValueError):
    """A grade that cannot be saved as sent; str() says why, in a grader's words."""


class Conflict(Exception):
    """Someone else saved a grade of this answer since the grader opened it: `current` is theirs."""

    def __init__(self, current: WrittenGrade) -> None:
        super().__init__("someone else saved a grade of this answer")
        self.current = current


@dataclass(frozen=True)
class WrittenPart:
    """The written questions' share of one attempt's score."""

    earned: float
    """points of the graded answers"""
    maximum: float
    """points of every written question"""
    ungraded: tuple[str, ...]
    """the questions whose answer (in this attempt) nobody has graded yet"""
    scores: dict[str, float | None] = field(default_factory=dict)
    """each question's points (None: not graded)"""

    @property
    def complete(self) -> bool:
        return not self.ungraded


NONE = WrittenPart(0.0, 0.0, ())


@dataclass(frozen=True)
class Standing:
    """What the gradebook gets for a student: the counting attempt's autograded part and the written part
    staff graded so far, after its late penalty; complete once every written answer is graded."""

    attempt: Attempt
    written: WrittenPart

    @property
    def maximum(self) -> float:
        return (self.attempt.max_score or 0.0) + self.written.maximum

    @property
    def final(self) -> float:
        return ((self.attempt.score or 0.0) + self.written.earned) * (1 - self.attempt.late_penalty / 100)


@dataclass
class Book:
    """A link's rubric items and grades, read once: what scores and pages are computed from."""

    questions: list[Question]
    items: dict[int, RubricItem]
    grades: dict[tuple[str, str, str], WrittenGrade]
    """by (user id, question, digest)"""

    def score(self, grade: WrittenGrade, question: Question) -> float:
        """Applied items (those still in the rubric) plus the adjustment, within 0 and the question's points."""
        total = sum(self.items[i].points for i in grade.items or [] if i in self.items and not self.items[i].removed)
        return min(max(total + grade.adjustment, 0.0), question.points)

    def grade(self, user_id: str, question: Question, digest: str) -> WrittenGrade | None:
        return self.grades.get((user_id, question.name, digest))

    def part(self, attempt: Attempt) -> WrittenPart:
        """The written part of a graded attempt's score."""
        if not self.questions:
            return NONE
        digests = attempt.answer_digests or {}
        scores: dict[str, float | None] = {}
        for question in self.questions:
            grade = self.grade(attempt.user_id, question, digests.get(question.name, ""))
            scores[question.name] = None if grade is None else self.score(grade, question)
        return WrittenPart(
            earned=sum(score for score in scores.values() if score is not None),
            maximum=sum(q.points for q in self.questions),
            ungraded=tuple(name for name, score in scores.items() if score is None),
            scores=scores,
        )


def book(services: Services, key: dict, questions: list[Question], user_id: str | None = None) -> Book:
    """The link's book (only one student's grades when `user_id` is given)."""
    if not questions:
        return Book([], {}, {})
    with services.db.session() as session:
        items = {item.id: item for item in session.scalars(select(RubricItem).filter_by(**key))}
        graded = select(WrittenGrade).filter_by(**key)
        if user_id is not None:
            graded = graded.filter_by(user_id=user_id)
        grades = {(g.user_id, g.question, g.digest): g for g in session.scalars(graded)}
    return Book(questions, items, grades)


def standing(services: Services, attempt: Attempt) -> Standing:
    """A graded attempt's score with its written part, from the questions of the version it was graded against."""
    with services.db.session() as session:
        version = session.get(AssignmentVersion, attempt.assignment_version_id)
    key = link_key(attempt)
    questions = link_questions(version, load(services, key))
    if not questions:
        return Standing(attempt, NONE)
    attempt = with_digests(services, attempt, questions)
    return Standing(attempt, book(services, key, questions, attempt.user_id).part(attempt))


# --- answers to grade -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """One student's answer to one written question: the one in their counting attempt."""

    ref: str
    """its id in URLs: stable, and says nothing of the student (anonymous grading)"""
    user_id: str
    user_name: str
    attempt: Attempt
    """the counting attempt (its notebook is not loaded)"""
    digest: str
    grade: WrittenGrade | None
    carried_from: int | None = None
    """the number of an earlier attempt this grade was given on (same text), if it was not given on this one"""


def graded_attempts(services: Services, key: dict) -> dict[str, list[Attempt]]:
    """Each student's graded attempts on the link, oldest first (their notebooks not loaded)."""
    with services.db.session() as session:
        attempts = session.scalars(
            select(Attempt).options(defer(Attempt.notebook)).filter_by(**key, status="graded").order_by(Attempt.id)
        )
        by_user: dict[str, list[Attempt]] = {}
        for attempt in attempts:
            by_user.setdefault(attempt.user_id, []).append(attempt)
    return by_user


def answers_to_grade(services: Services, key: dict, policy: str, question: Question, link_book: Book) -> list[Answer]:
    """Every student's answer to the question, in the order graders go through them (stable, by `ref`)."""
    found = []
    for user_id, user_attempts in graded_attempts(services, key).items():
        counting = counting_attempt(user_attempts, policy)
        if counting is None:
            continue
        counting = with_digests(services, counting, link_book.questions)
        digest = (counting.answer_digests or {}).get(question.name, "")
        grade = link_book.grade(user_id, question, digest)
        found.append(
            Answer(
                student_ref(services, key, user_id),
                user_id,
                counting.user_name or user_id,
                counting,
                digest,
                grade,
                _carried_from(grade, counting, user_attempts, question),
            )  # fmt: skip
        )
    return sorted(found, key=lambda answer: answer.ref)


def _carried_from(grade: WrittenGrade | None, counting: Attempt, attempts: list[Attempt], question: Question):
    """The first attempt with this same answer, when it is older than the counting one and the grade dates
    from before the counting attempt was made (so the grade was given on that earlier attempt)."""
    if grade is None or grade.graded_at >= counting.created_at:
        return None
    digest = (counting.answer_digests or {}).get(question.name)
    first = next((a for a in attempts if (a.answer_digests or {}).get(question.name) == digest), None)
    return first.number if first is not None and first.id != counting.id else None


def with_digests(services: Services, attempt: Attempt, questions: list[Question]) -> Attempt:
    """The attempt with its answers' digests: read from its notebook (and kept) when it was graded before its
    assignment had these questions, or before the tool graded written answers."""
    wanted = {q.name for q in questions}
    if wanted <= set(attempt.answer_digests or {}):
        return attempt
    with services.db.session() as session:
        row = session.get(Attempt, attempt.id)
        row.answer_digests = {**(row.answer_digests or {}), **digests(row.notebook, questions)}
        return row


def digests(notebook: bytes, questions: list[Question]) -> dict[str, str]:
    """A notebook's answers to the written questions, as digests of their text ("" for no readable answer)."""
    if not questions:
        return {}
    try:
        found = answers(notebook, as_written(questions))
    except WrittenError:
        return {q.name: "" for q in questions}
    return {name: answer.digest for name, answer in found.items()}


# --- saving a grade ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Marks:
    """What a grader chose for one answer."""

    items: tuple[int, ...]
    adjustment: float
    comment: str


def checked_marks(link_book: Book, question: Question, items: list[str], adjustment: str, comment: str) -> Marks:
    """A grader's form as Marks, or GradeRefused."""
    offered = {i.id for i in link_book.items.values() if i.question == question.name and not i.removed}
    try:
        chosen = tuple(sorted({int(i) for i in items}))
        value = float(adjustment or 0)
    except ValueError:
        raise GradeRefused("The point adjustment must be a number, such as 0.5 or -1.") from None
    if not set(chosen) <= offered:
        raise GradeRefused("An item you chose is no longer in the rubric (someone changed it); reload the answer.")
    if not -MAX_POINTS <= value <= MAX_POINTS:
        raise GradeRefused(f"The point adjustment must be between -{MAX_POINTS:g} and {MAX_POINTS:g}.")
    if len(comment) > MAX_COMMENT:
        raise GradeRefused(f"A comment can be at most {MAX_COMMENT} characters (this one has {len(comment)}).")
    return Marks(chosen, value, comment.strip())


def save(
    services: Services, key: dict, answer: Answer, question: Question, marks: Marks, seen: int, grader: str
) -> WrittenGrade:
    """Save a grade of the answer over revision `seen` (0: there was none); Conflict when another save came
    first, GradeRefused when `seen` names no revision this answer ever had (a forged or garbled form)."""
    if not 0 <= seen <= MAX_REVISION:
        raise GradeRefused(STALE_FORM)
    values = dict(items=list(marks.items), adjustment=marks.adjustment, comment=marks.comment,
                  graded_by=grader[:400], graded_at=utcnow())  # fmt: skip
    where = dict(**key, user_id=answer.user_id, question=question.name, digest=answer.digest)
    if seen == 0:
        try:
            with services.db.session() as session:
                grade = WrittenGrade(**where, revision=1, **values)
                session.add(grade)
            return grade
        except IntegrityError:  # another grader saved the first grade at the same moment
            raise Conflict(_current(services, where)) from None
    with services.db.session() as session:
        saved = session.execute(
            update(WrittenGrade).filter_by(**where, revision=seen).values(revision=seen + 1, **values)
        )
    current = _current(services, where)
    if current is None or (saved.rowcount != 1 and current.revision <= seen):
        raise GradeRefused(STALE_FORM)
    if saved.rowcount != 1:
        raise Conflict(current)
    return current


def _current(services: Services, where: dict) -> WrittenGrade | None:
    with services.db.session() as session:
        return session.scalars(select(WrittenGrade).filter_by(**where)).first()
