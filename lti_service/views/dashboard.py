"""What course staff see for one resource link: the roster merged with attempts, charts data, CSV."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from sqlalchemy import select

from ..assignments import versions
from ..db import Attempt, Passback, utcnow
from ..gradebook.passback import Waiting, refusal, waiting
from ..lti.quirks import TEACHER_FIXES, Refusal
from ..rules import roster
from ..rules.settings import counting_attempt, link_key, load
from ..services import Services

SLOW_GRADING = dt.timedelta(minutes=3)  # a wait for a grade staff are told about
NAMED = 5  # students an alert names before it counts the others
# A student's grade the LMS refuses, in the roster: what happened, in a teacher's words.
REFUSED_ROW = {
    Refusal.UNPUBLISHED: "waiting: Canvas does not accept scores while this assignment is unpublished",
    Refusal.STUDENT_GONE: "not sent: Canvas no longer lists this student (enrolment concluded or inactive)",
    Refusal.NOT_GRADABLE: "not sent: Moodle does not grade this student here (not enrolled in a role that gets grades)",
    Refusal.COLUMN_DELETED: "not sent: the gradebook column of this assignment no longer exists",
}
GAVE_UP_UNPUBLISHED = (
    "not sent: Canvas did not accept scores while this assignment was unpublished; publish it, then re-send"
)


@dataclass
class StudentRow:
    user_id: str
    name: str
    attempts: int = 0
    best: float | None = None
    latest: float | None = None
    gradebook_score: float | None = None
    last_submitted: str = ""
    gradebook: str = ""
    grading: bool = False
    """a notebook of theirs is waiting to be graded or being graded (a regrade, a new upload)"""
    sending: bool = False
    """their score is on its way to the gradebook"""

    @property
    def submitted(self) -> bool:
        return self.attempts > 0


@dataclass(frozen=True)
class SlowGrading:
    count: int
    since: dt.datetime
    """when the oldest of them was uploaded"""


@dataclass(frozen=True)
class Refused:
    """The link's grades the LMS refuses for one reason the teacher can act on, or should know about."""

    refusal: Refusal
    students: list[str]
    """their names"""

    @property
    def text(self) -> str:
        """What happened and what to do, in a teacher's words."""
        count, names = len(self.students), _names(self.students)
        scores = "their score" if count == 1 else "their scores"
        if self.refusal is Refusal.UNPUBLISHED:
            waiting = "the score waiting here is" if count == 1 else f"the {count} scores waiting here are"
            return (
                "Canvas does not accept scores while this assignment is unpublished. "
                f"Publish it in Canvas: {waiting} sent within a few minutes."
            )
        if self.refusal is Refusal.STUDENT_GONE:
            return (
                f"Canvas no longer lists {names} in the course (their enrolment is concluded or inactive), so "
                f"{scores} cannot be sent. Their attempts stay here; if an enrolment is made active again, "
                "“Re-send pending and failed grades” sends the score."
            )
        if self.refusal is Refusal.NOT_GRADABLE:
            return (
                f"Moodle does not grade {names} in this course (they are not enrolled in a role that gets grades), "
                f"so {scores} cannot be sent. Their attempts stay here."
            )
        return (
            "The gradebook column of this assignment no longer exists in the course, so "
            f"{'1 score' if count == 1 else f'{count} scores'} cannot be sent to it. The attempts and scores "
            "stay here: “Download scores (CSV)” keeps a copy."
        )


@dataclass
class Dashboard:
    rows: list[StudentRow]
    roster: roster.Roster
    """the course's students as the platform last listed them (rules/roster.py), when, and why not newer"""
    max_score: float
    question_rates: dict[str, float]
    waiting: Waiting | None
    """grades the platform has not accepted yet and that the tool keeps retrying"""
    slow: SlowGrading | None = None
    """notebooks that have waited longer than SLOW_GRADING to be graded"""
    refused: list[Refused] = field(default_factory=list)
    """grades the LMS refuses for a reason of the course's own (not an outage)"""

    @property
    def settling(self) -> bool:
        """Gradings or grades on their way: a page showing this board keeps it up to date."""
        return any(r.grading or r.sending for r in self.rows)

    @property
    def gradebook_scores(self) -> list[float]:
        return [r.gradebook_score for r in self.rows if r.gradebook_score is not None]


def link_attempts(services: Services, launch) -> list[Attempt]:
    with services.db.session() as session:
        return list(session.scalars(select(Attempt).filter_by(**link_key(launch)).order_by(Attempt.id)))


def build(services: Services, launch) -> Dashboard:
    key = link_key(launch)
    attempts = link_attempts(services, launch)
    policy = load(services, key).score_policy
    with services.db.session() as session:
        passbacks = {p.user_id: p for p in session.scalars(select(Passback).filter_by(**key))}
    kept = roster.read(services, launch)
    by_user: dict[str, list[Attempt]] = {}
    for attempt in attempts:
        by_user.setdefault(attempt.user_id, []).append(attempt)
    names = dict(kept.students)
    names |= {a.user_id: a.user_name or names.get(a.user_id) or a.user_id for a in attempts if a.user_id not in names}
    rows = [
        _row(user_id, name, by_user.get(user_id, []), policy, passbacks.get(user_id)) for user_id, name in names.items()
    ]
    rows.sort(key=lambda r: (r.submitted, r.name.lower()))
    counted = [counting_attempt(user_attempts, policy) for user_attempts in by_user.values()]
    counted = [a for a in counted if a is not None]
    max_score = next((a.max_score for a in counted), None) or versions.version_for(services, launch).points
    board = Dashboard(rows, kept, max_score, _question_rates(counted), waiting(services, key))
    board.slow = slow_grading(attempts, utcnow())
    board.refused = refused_grades(passbacks, names)
    return board


def refused_grades(passbacks: dict[str, Passback], names: dict[str, str]) -> list[Refused]:
    """The link's grades the LMS refuses, by reason: those waiting for the teacher's fix in the LMS, and
    those it stopped for good (a student who left the course, a deleted column)."""
    by_refusal: dict[Refusal, list[str]] = {}
    for user_id, passback in passbacks.items():
        kind = refusal(passback)
        if kind in REFUSED_ROW and passback.status == ("pending" if kind in TEACHER_FIXES else "failed"):
            by_refusal.setdefault(kind, []).append(names.get(user_id, user_id))
    return [Refused(kind, sorted(students, key=str.lower)) for kind, students in by_refusal.items()]


def _names(students: list[str]) -> str:
    """The names for a sentence: Ada; Ada and Grace; Ada, Grace and Alan; Ada, Grace, … and 2 other students."""
    named = students[:NAMED] if len(students) <= NAMED else students[: NAMED - 1]
    rest = len(students) - len(named)
    if rest:
        return f"{', '.join(named)} and {rest} other students"  # never fewer than two
    return named[0] if len(named) == 1 else f"{', '.join(named[:-1])} and {named[-1]}"


def slow_grading(attempts: list[Attempt], now: dt.datetime) -> SlowGrading | None:
    """The link's notebooks still waiting for a grade after SLOW_GRADING (the grader is overloaded, or no
    worker is running): staff are told, in their words, before students ask them."""
    slow = [a.created_at for a in attempts if a.status in ("queued", "grading") and a.created_at < now - SLOW_GRADING]
    return SlowGrading(len(slow), min(slow)) if slow else None


def _row(user_id: str, name: str, attempts: list[Attempt], policy: str, passback: Passback | None) -> StudentRow:
    row = StudentRow(user_id, name, attempts=len(attempts))
    row.grading = any(a.status in ("queued", "grading") for a in attempts)
    graded = [a for a in attempts if a.status == "graded"]
    if graded:
        row.best = max(a.final_score for a in graded)
        row.latest = max(graded, key=lambda a: a.id).final_score
        row.gradebook_score = counting_attempt(graded, policy).final_score
    if attempts:
        row.last_submitted = max(a.created_at for a in attempts).strftime("%Y-%m-%d %H:%M UTC")
    if passback is not None:
        row.gradebook, row.sending = gradebook_text(passback), passback.status == "pending"
        row.sending &= refusal(passback) not in TEACHER_FIXES  # held until the teacher acts: not worth watching
    return row


def gradebook_text(passback: Passback) -> str:
    """What the LMS holds: the score last sent and when, or why it is not there yet."""
    kind = refusal(passback)
    if kind is Refusal.UNPUBLISHED and passback.status == "failed":
        return GAVE_UP_UNPUBLISHED
    if kind in REFUSED_ROW:
        return REFUSED_ROW[kind]
    if passback.status == "failed":
        return f"not sent: {passback.last_error}. “Re-send pending and failed grades” tries again"
    if passback.status == "pending":
        if passback.tries == 0:
            return "on its way"
        return f"waiting: {passback.last_error} (try {passback.tries}); the tool keeps trying on its own"
    if passback.sent_score is None:
        return "nothing graded to send"
    return f"sent {passback.sent_score:g} at {passback.sent_at:%Y-%m-%d %H:%M} UTC"


def _question_rates(counted: list[Attempt]) -> dict[str, float]:
    """Per question, the share of students whose counted attempt has full marks."""
    totals: dict[str, list[bool]] = {}
    for attempt in counted:
        for question in (attempt.result or {}).get("questions", []):
            totals.setdefault(question["name"], []).append(question["score"] >= question["max_score"])
    return {name: sum(full) / len(full) for name, full in totals.items()}


SCORE_COLUMNS = ("user_id", "name", "attempts", "best", "latest", "gradebook_score", "last_submitted", "gradebook")


def score_rows(dashboard: Dashboard) -> list[list]:
    """One row per student, in SCORE_COLUMNS order (the scores.csv download)."""
    return [
        [r.user_id, r.name, r.attempts, r.best, r.latest, r.gradebook_score, r.last_submitted, r.gradebook]
        for r in dashboard.rows
    ]
