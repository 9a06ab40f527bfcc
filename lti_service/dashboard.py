"""What course staff see for one resource link: the roster merged with attempts, charts data, CSV."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import select

from .assignments import links
from .db import Attempt, Passback, Platform, utcnow
from .link_settings import link_key, load
from .lti import nrps
from .lti.ags import AgsError
from .passback import Waiting, counting_attempt, waiting
from .services import Services

NRPS_CLAIM = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
SLOW_GRADING = dt.timedelta(minutes=3)  # a wait for a grade staff are told about


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

    @property
    def submitted(self) -> bool:
        return self.attempts > 0


@dataclass(frozen=True)
class SlowGrading:
    count: int
    since: dt.datetime
    """when the oldest of them was uploaded"""


@dataclass
class Dashboard:
    rows: list[StudentRow]
    roster_error: str | None
    max_score: float
    question_rates: dict[str, float]
    waiting: Waiting | None
    """grades the platform has not accepted yet and that the tool keeps retrying"""
    slow: SlowGrading | None = None
    """notebooks that have waited longer than SLOW_GRADING to be graded"""

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
        platform = session.get(Platform, launch.platform_id)
    roster, roster_error = _roster(services, platform, launch)
    by_user: dict[str, list[Attempt]] = {}
    for attempt in attempts:
        by_user.setdefault(attempt.user_id, []).append(attempt)
    names = {m["user_id"]: m.get("name") or m["user_id"] for m in roster if nrps.is_learner(m)}
    names |= {a.user_id: a.user_name or names.get(a.user_id) or a.user_id for a in attempts if a.user_id not in names}
    rows = [
        _row(user_id, name, by_user.get(user_id, []), policy, passbacks.get(user_id)) for user_id, name in names.items()
    ]
    rows.sort(key=lambda r: (r.submitted, r.name.lower()))
    counted = [counting_attempt(user_attempts, policy) for user_attempts in by_user.values()]
    counted = [a for a in counted if a is not None]
    max_score = next((a.max_score for a in counted), None) or links.version_for(services, launch).points
    board = Dashboard(rows, roster_error, max_score, _question_rates(counted), waiting(services, key))
    board.slow = slow_grading(attempts, utcnow())
    return board


def slow_grading(attempts: list[Attempt], now: dt.datetime) -> SlowGrading | None:
    """The link's notebooks still waiting for a grade after SLOW_GRADING (the grader is overloaded, or no
    worker is running): staff are told, in their words, before students ask them."""
    slow = [a.created_at for a in attempts if a.status in ("queued", "grading") and a.created_at < now - SLOW_GRADING]
    return SlowGrading(len(slow), min(slow)) if slow else None


def _roster(services: Services, platform: Platform, launch) -> tuple[list[dict], str | None]:
    url = launch.claims.get(NRPS_CLAIM, {}).get("context_memberships_url")
    if not url:
        return [], "The platform did not offer the course roster (Names and Role Provisioning Services)."
    try:
        return nrps.members(services.ags, platform, url), None
    except AgsError as error:
        return [], f"The course roster could not be read from the platform: {error}"


def _row(user_id: str, name: str, attempts: list[Attempt], policy: str, passback: Passback | None) -> StudentRow:
    row = StudentRow(user_id, name, attempts=len(attempts))
    graded = [a for a in attempts if a.status == "graded"]
    if graded:
        row.best = max(a.final_score for a in graded)
        row.latest = max(graded, key=lambda a: a.id).final_score
        row.gradebook_score = counting_attempt(graded, policy).final_score
    if attempts:
        row.last_submitted = max(a.created_at for a in attempts).strftime("%Y-%m-%d %H:%M UTC")
    if passback is not None:
        row.gradebook = _gradebook_text(passback)
    return row


def _gradebook_text(passback: Passback) -> str:
    """What the LMS holds: the score last sent and when, or why it is not there yet."""
    if passback.status == "failed":
        return f"failed ({passback.last_error})"
    if passback.status == "pending":
        return "pending" if passback.tries == 0 else f"pending, retry {passback.tries} ({passback.last_error})"
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
