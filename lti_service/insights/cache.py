"""What the class got wrong and who wrote alike, per link: computed by a worker after gradings settle, never
in a request, and kept in link_insights for the dashboard.

A finished grading marks its link's insights stale. A worker's database poll, when it has nothing else to do,
takes a stale link whose gradings have settled (none queued or being graded, and the last request SETTLE
old), under a lease, computes (mistakes.py, similarity.py) and stores the result, unless a grading made it
stale again meanwhile (then it is computed once more).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import time
import uuid

from sqlalchemy import exists, or_, select, update
from sqlalchemy.orm import Session, defer

from ..assignments.building import BuildError, notebook_in
from ..assignments.catalog import handout
from ..db import AssignmentLink, AssignmentVersion, Attempt, LinkInsights, utcnow
from ..links.settings import counting_attempt, load
from ..services import Services
from .mistakes import Graded, Student, answer_code, common_mistakes

SETTLE = dt.timedelta(seconds=3)
"""how long after the last grading a link waits, so a burst of uploads is analysed once"""
LEASE = dt.timedelta(minutes=10)
RETRY = dt.timedelta(minutes=1)  # after a computation failed
DAYS = 7  # the trend covers the last seven days
MAX_CODE = 20_000  # characters of one student's code kept for the side-by-side view
log = logging.getLogger("lti_service.insights")


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


def refresh_one(services: Services) -> bool:
    """Compute one link's insights that are due; True when there was one."""
    claimed = _claim(services)
    if claimed is None:
        return False
    row_id, lease_id, key = claimed
    started = time.monotonic()
    try:
        data = compute(services, key)
    except Exception:  # a defect must not hold the lease for LEASE, nor retry in a loop: again after RETRY
        log.exception("insights of link %s could not be computed", key["resource_link_id"][:40])
        with services.db.session() as session:
            session.execute(
                update(LinkInsights).where(LinkInsights.id == row_id, LinkInsights.lease_until == lease_id)
                .values(status="stale", requested_at=utcnow() + RETRY, lease_until=None)
            )  # fmt: skip
        return True
    with services.db.session() as session:
        session.execute(
            update(LinkInsights)
            .where(LinkInsights.id == row_id, LinkInsights.status == "computing", LinkInsights.lease_until == lease_id)
            .values(status="fresh", data=data, computed_at=utcnow(), seconds=time.monotonic() - started)
        )
    return True


def _claim(services: Services) -> tuple[int, dt.datetime, dict] | None:
    """A due link, leased to this worker: stale for SETTLE with no grading under way, or a computation whose
    worker died. The lease's end doubles as its id (microseconds and a random part)."""
    now = utcnow()
    busy = exists().where(
        Attempt.platform_id == LinkInsights.platform_id, Attempt.context_id == LinkInsights.context_id,
        Attempt.resource_link_id == LinkInsights.resource_link_id, Attempt.status.in_(("queued", "grading")),
    )  # fmt: skip
    due = or_(
        (LinkInsights.status == "stale") & (LinkInsights.requested_at < now - SETTLE) & ~busy,
        (LinkInsights.status == "computing") & (LinkInsights.lease_until < now),
    )
    with services.db.session() as session:
        row = session.scalars(select(LinkInsights).where(due).order_by(LinkInsights.requested_at).limit(1)).first()
        if row is None:
            return None
        lease = now + LEASE + dt.timedelta(microseconds=uuid.uuid4().int % 1_000_000)
        taken = session.execute(
            update(LinkInsights)
            .where(
                LinkInsights.id == row.id,
                LinkInsights.status == row.status,
                LinkInsights.requested_at == row.requested_at,
            )  # fmt: skip
            .values(status="computing", lease_until=lease)
        )
        key = dict(platform_id=row.platform_id, context_id=row.context_id, resource_link_id=row.resource_link_id)
    return (row.id, lease, key) if taken.rowcount == 1 else None


def compute(services: Services, key: dict) -> dict:
    """The link's insights as plain JSON values."""
    version = _version(services, key)
    questions = [q["name"] for q in version.questions]
    students = _students(services, key, load(services, key).score_policy, questions)
    today = utcnow().date()
    days = [today - dt.timedelta(days=n) for n in range(DAYS - 1, -1, -1)]
    handout_code = _handout_code(services, version, questions)
    code = {s.user_id: "\n\n".join(s.answers.get(q, "") for q in questions)[:MAX_CODE] for s in students}
    from .similarity import similar_pairs  # here, not at the top: copydetect loads matplotlib (0.4 s at every
    # start of every web, worker and command-line process, which mostly never compute insights)

    names = {s.user_id: s.name for s in students}
    return {
        "students": len(students),
        "days": [day.isoformat() for day in days],
        "mistakes": [dataclasses.asdict(m) for m in common_mistakes(students, days, anonymous=False)],
        "mistakes_anonymous": [dataclasses.asdict(m) for m in common_mistakes(students, days, anonymous=True)],
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


def _version(services: Services, key: dict) -> AssignmentVersion:
    with services.db.session() as session:
        return session.scalars(
            select(AssignmentVersion).join(AssignmentLink, AssignmentLink.version_id == AssignmentVersion.id)
            .filter(*(getattr(AssignmentLink, name) == value for name, value in key.items()))
        ).one()  # fmt: skip


def _students(services: Services, key: dict, policy: str, questions: list[str]) -> list[Student]:
    """Every student with a graded attempt: all of them (for the trend), and the counting one's answers."""
    with services.db.session() as session:
        graded = list(session.scalars(
            select(Attempt).options(defer(Attempt.notebook)).filter_by(**key, status="graded").order_by(Attempt.id)
        ))  # fmt: skip
    by_user: dict[str, list[Attempt]] = {}
    for attempt in graded:
        by_user.setdefault(attempt.user_id, []).append(attempt)
    students = []
    for user_id, attempts in by_user.items():
        counting = counting_attempt(attempts, policy)
        with services.db.session() as session:
            notebook = session.scalar(select(Attempt.notebook).filter_by(id=counting.id))
        answers = {q: answer_code(notebook, q) for q in questions}
        history = tuple(map(_graded, attempts))
        students.append(Student(user_id, counting.user_name or user_id, _graded(counting), history, answers))
    return students


def _graded(attempt: Attempt) -> Graded:
    return Graded(attempt.user_id, attempt.user_name or attempt.user_id, attempt.created_at, attempt.result or {})


def _handout_code(services: Services, version: AssignmentVersion, questions: list[str]) -> str:
    """The handout's own answer cells (the skeleton every student starts from: never a sign of copying)."""
    data = handout(services.db, version.id)
    try:
        notebook = notebook_in(data) if version.handout_name.endswith(".zip") else data
    except BuildError:
        return ""
    return "\n\n".join(answer_code(notebook, q) for q in questions)
