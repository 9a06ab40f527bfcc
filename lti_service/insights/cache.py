"""What the class got wrong and who wrote alike, per link: computed after gradings settle, never in a request
nor in a worker's own threads, and kept in link_insights for the dashboard.

A finished grading marks its link's insights stale. A worker's database poll, when it has nothing else to do,
claims a stale link whose gradings have settled (none queued or being graded, and the last request SETTLE
old) under a lease, and has a child process compute it (runner.py runs `compute`: mistakes.py and
similarity.py over the students' notebooks) within INSIGHTS_DEADLINE. The result comes back as JSON and is
stored if it has the SHAPE `compute` gives, unless a grading made the link stale again meanwhile (then it is
computed once more). A computation that does not finish is recorded with why, in staff's words, and tried
again after RETRY, twice as long after each further failure.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from dataclasses import dataclass
from typing import Any

from sqlalchemy import exists, or_, select
from sqlalchemy.orm import Session, defer

from ..assignments.building import BuildError, notebook_in
from ..assignments.catalog import handout
from ..db import AssignmentLink, AssignmentVersion, Attempt, Database, LinkInsights, utcnow
from ..leases import Leases
from ..rules.settings import counting_attempt, link_key
from ..services import Services
from .mistakes import Graded, Student, answer_codes, common_mistakes

SETTLE = dt.timedelta(seconds=3)
"""how long after the last grading a link waits, so a burst of uploads is analysed once"""
LEASE_MARGIN = dt.timedelta(minutes=1)  # a lease lasts the deadline and this: its child is stopped before it ends
RETRY = dt.timedelta(minutes=1)  # after a computation failed; doubled after each further one, up to MAX_RETRY
MAX_RETRY = dt.timedelta(hours=6)
DAYS = 7  # the trend covers the last seven days
MAX_CODE = 20_000  # characters of one student's code kept for the side-by-side view


def mark_stale(services: Services, session: Session, key: dict) -> None:
    """In the caller's transaction (a grading's): the link's insights need computing again."""
    values = dict(status="stale", requested_at=utcnow())
    statement = services.db.insert(LinkInsights).values(**key, **values)
    session.execute(statement.on_conflict_do_update(index_elements=list(key), set_=values))


def request(services: Services, key: dict) -> None:
    with services.db.session() as session:
        mark_stale(services, session, key)


def cached(services: Services, key: dict) -> LinkInsights | None:
    with services.db.session() as session:
        return session.scalars(select(LinkInsights).filter_by(**key)).first()


LEASES = Leases(LinkInsights, "lease_until")


@dataclass(frozen=True)
class Claim:
    """A link's insights leased to this worker (LEASES)."""

    row_id: int
    lease_id: str
    key: dict


def claim(services: Services) -> Claim | None:
    """A due link, leased to this worker for the deadline and LEASE_MARGIN: stale for SETTLE with no grading
    under way, or a computation whose worker died (its lease ended)."""
    now = utcnow()
    busy = exists().where(
        Attempt.platform_id == LinkInsights.platform_id, Attempt.context_id == LinkInsights.context_id,
        Attempt.resource_link_id == LinkInsights.resource_link_id, Attempt.status.in_(("queued", "grading")),
    )  # fmt: skip
    due = or_(
        (LinkInsights.status == "stale") & (LinkInsights.requested_at < now - SETTLE) & ~busy,
        (LinkInsights.status == "computing") & LEASES.ended(now),
    )
    seconds = services.config.insights_deadline + LEASE_MARGIN.total_seconds()
    with services.db.session() as session:
        row = session.scalars(select(LinkInsights).where(due).order_by(LinkInsights.requested_at).limit(1)).first()
        if row is None:
            return None
        lease_id = LEASES.claim(session, row.id, due, seconds, status="computing")  # still due: not claimed meanwhile
        key = link_key(row)
    return Claim(row.id, lease_id, key) if lease_id is not None else None


def store(services: Services, claim: Claim, data: dict, seconds: float) -> None:
    """The computed insights, unless a grading made them stale meanwhile or the lease was lost."""
    with services.db.session() as session:
        session.execute(
            _held(claim).where(LinkInsights.status == "computing")
            .values(status="fresh", data=data, computed_at=utcnow(), seconds=seconds, failure=None, failures=0,
                    lease_id=None, lease_until=None)
        )  # fmt: skip


def fail(services: Services, claim: Claim, failure: str) -> None:
    """A computation that did not finish: staff read `failure`; tried again after RETRY, doubled for each failure
    since the last success (a notebook that always makes it fail must not take a worker's time over and over)."""
    with services.db.session() as session:
        failures = session.scalar(select(LinkInsights.failures).where(LinkInsights.id == claim.row_id)) or 0
        wait = min(RETRY * 2 ** min(failures, 20), MAX_RETRY)
        session.execute(
            _held(claim).values(status="stale", requested_at=utcnow() + wait, lease_id=None, lease_until=None,
                                failure=failure[:500], failures=failures + 1)
        )  # fmt: skip


def release(services: Services, claim: Claim) -> None:
    """Give the link back unfinished (its worker stops): due again at once, for another worker."""
    with services.db.session() as session:
        session.execute(_held(claim).values(status="stale", lease_id=None, lease_until=None))


def _held(claim: Claim):
    """An UPDATE of the claimed row, which does nothing once this lease no longer holds it."""
    return LEASES.held(claim.row_id, claim.lease_id)


def compute(db: Database, key: dict, policy: str) -> dict:
    """The link's insights as plain JSON values (SHAPE), with the students' ids and names: the pages that hide
    names show references instead (rules/refs.py). Runs in the child process (runner.py), which only reads."""
    version = _version(db, key)
    questions = [q["name"] for q in version.questions]
    students = _students(db, key, policy, questions)
    today = utcnow().date()
    days = [today - dt.timedelta(days=n) for n in range(DAYS - 1, -1, -1)]
    handout_code = _handout_code(db, version, questions)
    code = {s.user_id: "\n\n".join(s.answers.get(q, "") for q in questions)[:MAX_CODE] for s in students}
    from .similarity import similar_pairs  # here, not at the top: copydetect loads matplotlib (0.4 s at every
    # start of every web, worker and command-line process, which mostly never compute insights)

    names = {s.user_id: s.name for s in students}
    return {
        "students": len(students),
        "days": [day.isoformat() for day in days],
        "mistakes": [dataclasses.asdict(m) for m in common_mistakes(students, days)],
        "pairs": [
            {
                **dataclasses.asdict(pair),
                "a_name": names[pair.a],
                "b_name": names[pair.b],
                "a_code": code[pair.a],
                "b_code": code[pair.b],
            }
            for pair in similar_pairs(code, handout_code)
        ],  # fmt: skip
    }


def _version(db: Database, key: dict) -> AssignmentVersion:
    with db.session() as session:
        return session.scalars(
            select(AssignmentVersion).join(AssignmentLink, AssignmentLink.version_id == AssignmentVersion.id)
            .filter(*(getattr(AssignmentLink, name) == value for name, value in key.items()))
        ).one()  # fmt: skip


def _students(db: Database, key: dict, policy: str, questions: list[str]) -> list[Student]:
    """Every student with a graded attempt: all of them (for the trend), and the counting one's answers."""
    with db.session() as session:
        graded = list(session.scalars(
            select(Attempt).options(defer(Attempt.notebook)).filter_by(**key, status="graded").order_by(Attempt.id)
        ))  # fmt: skip
    by_user: dict[str, list[Attempt]] = {}
    for attempt in graded:
        by_user.setdefault(attempt.user_id, []).append(attempt)
    students = []
    for user_id, attempts in by_user.items():
        counting = counting_attempt(attempts, policy)
        with db.session() as session:
            notebook = session.scalar(select(Attempt.notebook).filter_by(id=counting.id))
        answers = answer_codes(notebook, questions)
        history = tuple(map(_graded, attempts))
        students.append(Student(user_id, counting.user_name or user_id, _graded(counting), history, answers))
    return students


def _graded(attempt: Attempt) -> Graded:
    return Graded(attempt.user_id, attempt.user_name or attempt.user_id, attempt.created_at, attempt.result or {})


def _handout_code(db: Database, version: AssignmentVersion, questions: list[str]) -> str:
    """The handout's own answer cells (the skeleton every student starts from: never a sign of copying)."""
    data = handout(db, version.id)
    try:
        notebook = notebook_in(data) if version.handout_name.endswith(".zip") else data
    except BuildError:
        return ""
    codes = answer_codes(notebook, questions)
    return "\n\n".join(codes[q] for q in questions)


EXAMPLE = {"user_id": str, "name": str, "code": str}
MISTAKE = {"question": str, "test": str, "message": str, "value": (str, None), "students": int, "share": float,
           "examples": [EXAMPLE], "trend": [int]}  # fmt: skip
SPANS = [[int]]
PAIR = {"a": str, "b": str, "score": float, "a_spans": SPANS, "b_spans": SPANS, "a_name": str, "b_name": str,
        "a_code": str, "b_code": str}  # fmt: skip
SHAPE = {"students": int, "days": [str], "mistakes": [MISTAKE], "pairs": [PAIR]}
"""what `compute` gives, as JSON: a child process's result is stored only if it has exactly this shape"""


def fits(value: Any, shape: Any = SHAPE) -> bool:
    """Whether a JSON value has the shape: a dict of exactly these keys, a list of items of one shape, one of a
    tuple of shapes, None, or a type (float takes ints; numbers are finite; a bool is no number)."""
    if isinstance(shape, dict):
        same_keys = isinstance(value, dict) and value.keys() == shape.keys()
        return same_keys and all(fits(value[key], inner) for key, inner in shape.items())
    if isinstance(shape, list):
        return isinstance(value, list) and all(fits(item, shape[0]) for item in value)
    if isinstance(shape, tuple):
        return any(fits(value, s) for s in shape)
    if shape is None:
        return value is None
    if isinstance(value, bool):
        return False
    if shape is float:
        return isinstance(value, int | float) and math.isfinite(value)
    return isinstance(value, shape)
