"""Grading jobs. The attempts table owns their state, so running a job twice is harmless.

queued -> grading (leased by one worker, which renews the lease while it works) -> graded | failed.
A worker that dies stops renewing: once its lease runs out (GRADING_LEASE) another worker takes the
attempt over. Only the lease holder records the result, and the graded status and the grade's outbox
row are written in one transaction, so a crash leaves either both or neither. An attempt is graded
against the assignment version its link is pinned to at that moment. A link moving to another version
grades its attempts again as preview grades (moves.py), leased the same way (leases.py).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from sqlalchemy import ColumnElement, and_, func, or_, select, tuple_, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from autograder import GradeOptions, SandboxUnavailable, grade_submission
from autograder.assignment import AssignmentError

from ..assignments import catalog, versions
from ..db import Attempt, PreviewGrade, utcnow
from ..gradebook import passback
from ..gradebook.columns import link_lineitem
from ..insights import cache as insights
from ..leases import Leases
from ..rules.accommodations import SpendRaced, spend
from ..rules.settings import due_at, link_key, load, rules_in
from ..services import Services
from ..written.grades import digests
from ..written.questions import link_questions

UPLOAD_RACE_RETRIES = 20  # each round stores at least one of the racing uploads
MAX_CLAIMS = 3  # times workers take one attempt before it is set aside (its grading stops its worker)
POISONED = (
    "Grading this notebook stopped the grader {} times (it may use more memory than the grader has, or crash "
    "it), so it was set aside to keep other students' notebooks moving. Staff can regrade it from the "
    "dashboard; if it stops the grader again, look at what the notebook runs."
)
Job = type[Attempt] | type[PreviewGrade]  # rows graded under a lease
log = logging.getLogger("lti_service.grading")


class SubmissionRefused(Exception):
    """The course's settings refuse this upload (attempt limit, late work); str() says why."""


def create_attempt(services: Services, launch, filename: str, data: bytes) -> tuple[Attempt, bool]:
    """Store an upload durably; the same notebook sent twice (a double click, a retry) makes one attempt.

    Returns the attempt and whether it is new (only a new attempt needs a grading job). Raises
    SubmissionRefused when the link's settings refuse a new attempt now. The database decides races:
    each attempt takes the next number, unique per user and link, so of concurrent uploads only one gets
    a number; the others look again (and meet the attempt limit, or their duplicate, or the next number).
    Late days an upload spends are taken in the same transaction (rules/accommodations.py).
    """
    for _ in range(UPLOAD_RACE_RETRIES):
        try:
            return _store_attempt(services, launch, filename, data)
        except (IntegrityError, SpendRaced):  # another upload took the number, or changed the late days
            continue
    raise SubmissionRefused("Several uploads arrived at the same moment; send yours again.")


def _store_attempt(services: Services, launch, filename: str, data: bytes) -> tuple[Attempt, bool]:
    digest = hashlib.sha256(data).hexdigest()
    key = dict(link_key(launch), user_id=launch.user_id)
    settings = load(services, link_key(launch))
    lineitem_url = link_lineitem(services, launch)
    version = versions.pin(services, launch)
    with services.db.session() as session:
        existing = session.scalars(select(Attempt).filter_by(**key, sha256=digest)).first()
        if existing is not None:
            return existing, False
        number = (session.scalar(select(func.max(Attempt.number)).filter_by(**key)) or 0) + 1
        rules = rules_in(session, settings, launch, attempts_used=number - 1)
        if rules.refusal:
            raise SubmissionRefused(rules.refusal)
        _refuse_a_flood(services, session, launch)
        if rules.late_days_to_spend:
            spend(services, session, link_key(launch), launch.user_id, rules.late, rules.days_late)
        attempt = Attempt(**key, number=number, filename=filename[:300], notebook=data, sha256=digest)
        attempt.assignment_version_id = version.id
        attempt.user_name, attempt.lineitem_url = launch.user_name, lineitem_url
        attempt.late_penalty, attempt.lms_due_at = rules.late_penalty, due_at(launch)
        session.add(attempt)
    return attempt, True


def _refuse_a_flood(services: Services, session, launch) -> None:
    """One student's notebooks waiting to be graded are capped (MAX_WAITING_UPLOADS), in all their courses
    on the platform: a student uploading again and again cannot fill the queue in front of others."""
    waiting = session.scalar(
        select(func.count())
        .select_from(Attempt)
        .filter_by(platform_id=launch.platform_id, user_id=launch.user_id)
        .where(Attempt.status.in_(("queued", "grading")))
    )
    if waiting >= services.config.max_waiting_uploads:
        raise SubmissionRefused(
            f"You have {waiting} notebooks waiting to be graded already. Wait until they are graded (this page "
            "shows their scores as soon as they are), then upload again."
        )


def turn_order(services: Services, count: int) -> list[int]:
    """The next `count` queued attempts in the order they are served: in rounds over students (every
    student's first waiting notebook before anyone's second), within a round the student served longest ago
    first, then the oldest upload. Fair in a deadline burst: a student's fifth upload never waits in front of
    another student's first."""
    student = (Attempt.platform_id, Attempt.user_id)
    position = func.row_number().over(partition_by=student, order_by=Attempt.id).label("position")
    queued = select(Attempt.id, *student, position).where(Attempt.status == "queued").subquery()
    waiting = select(queued.c.platform_id, queued.c.user_id)
    last_served = (
        select(*student, func.max(Attempt.graded_at).label("at"))
        .where(tuple_(*student).in_(waiting))
        .group_by(*student)
        .subquery()
    )
    same_student = and_(last_served.c.platform_id == queued.c.platform_id, last_served.c.user_id == queued.c.user_id)
    order = (queued.c.position, last_served.c.at.asc().nulls_first(), queued.c.id)
    with services.db.session() as session:
        return list(
            session.scalars(select(queued.c.id).outerjoin(last_served, same_student).order_by(*order).limit(count))
        )


def claim(services: Services, attempt_id: int, job: Job = Attempt) -> str | None:
    """Lease the attempt (or preview grade) for this worker unless another worker holds a live lease; the
    lease id. Not one that workers have taken MAX_CLAIMS times already (`set_aside`)."""
    free = (job.claims < MAX_CLAIMS) & _takeable(job, utcnow())
    with services.db.session() as session:
        return job_leases(job).claim(
            session, attempt_id, free, services.config.grading_lease, status="grading", claims=job.claims + 1
        )


def set_aside(services: Services, attempt_id: int, job: Job = Attempt) -> bool:
    """Fail an attempt (or preview grade) whose grading has stopped its worker MAX_CLAIMS times (each time
    its lease ran out with no outcome), so that it cannot take every worker in turn; True if it was."""
    with services.db.session() as session:
        failed = session.execute(
            update(job)
            .where(job.id == attempt_id, job.claims >= MAX_CLAIMS, _takeable(job, utcnow()))
            .values(status="failed", error=POISONED.format(MAX_CLAIMS), deadline=None, lease_id=None)
        )
    if failed.rowcount:
        log.warning("set aside attempt %s: its grading stopped its worker %s times", attempt_id, MAX_CLAIMS)
    return failed.rowcount == 1


def job_leases(job: Job) -> Leases:
    """A grading's lease ends at the row's deadline."""
    return Leases(job, "deadline")


def _takeable(job: Job, now: dt.datetime) -> ColumnElement[bool]:
    """Queued, or grading by a worker whose lease has run out (it died or froze)."""
    return or_(job.status == "queued", (job.status == "grading") & job_leases(job).ended(now))


@contextmanager
def lease_renewed(services: Services, attempt_id: int, lease_id: str, job: Job = Attempt) -> Iterator[None]:
    """Renew the lease several times per GRADING_LEASE while the block runs (a heartbeat)."""
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(services.config.grading_lease / 4):
            try:
                with services.db.session() as session:
                    job_leases(job).renew(session, attempt_id, lease_id, services.config.grading_lease)
            except SQLAlchemyError:  # the database is briefly away: the next beat tries again
                log.warning("could not renew the lease of attempt %s", attempt_id, exc_info=True)

    beat = threading.Thread(target=renew, name=f"lease-{attempt_id}", daemon=True)
    beat.start()
    try:
        yield
    finally:
        stop.set()
        beat.join()


class Finished(NamedTuple):
    attempt: Attempt
    passback_id: int | None
    """the outbox row to send now, when the attempt was graded on a link with a gradebook column"""


def grade_attempt(services: Services, attempt_id: int) -> Finished | None:
    """Grade one attempt if it still needs grading (None when another worker has it or it is done), against
    the version its link is pinned to now."""
    lease_id = claim(services, attempt_id)
    if lease_id is None:
        if not set_aside(services, attempt_id):
            return None
        with services.db.session() as session:
            return Finished(session.get(Attempt, attempt_id), None)
    log.info("grading attempt %s", attempt_id, extra={"event": "grading", "attempt": attempt_id, "lease": lease_id})
    with services.db.session() as session:
        attempt = session.get(Attempt, attempt_id)
        data = attempt.notebook
    version = versions.pinned(services.db, link_key(attempt))
    zip_path = catalog.zip_path(services, version)
    with lease_renewed(services, attempt_id, lease_id):
        outcome = grade_notebook(services, zip_path, data, attempt.filename)
    answers = digests(data, link_questions(version, load(services, link_key(attempt))))
    values = {**outcome, "assignment_version_id": version.id, "answer_digests": answers}
    return _finish(services, attempt_id, lease_id, values)


def grade_notebook(services: Services, zip_path: Path, notebook: bytes, label: str) -> dict:
    """Grade a notebook against an autograder zip: the values a grading sets (status, score, max_score, the
    staff and student views, error). `label` is the file name the student gave it, which otter run's
    grading depends on. The worker keeps WARM_SANDBOXES sandboxes of the assignment started."""
    try:
        options = GradeOptions(prestart=services.config.warm_sandboxes)
        result = grade_submission(zip_path, notebook, options, label=label, file_name=label)
    except SandboxUnavailable as error:
        return dict(status="failed", error=f"the grader is not available: {error}")
    except AssignmentError as error:  # found by its grading process: tests that cannot load, or sent too much
        return dict(status="failed", error=f"the assignment cannot be graded: {error}")
    if result.error:
        return dict(status="failed", error=result.error)
    return dict(
        status="graded",
        score=result.score,
        max_score=result.max_score,
        result=result.to_dict(),
        feedback=result.to_dict(student_view=True),
        error=None,
    )


def _finish(services: Services, attempt_id: int, lease_id: str, values: dict) -> Finished | None:
    """Record the outcome and, for a grade, its outbox row, in one transaction; None when this worker
    lost its lease (another worker took the attempt over and records its own result)."""
    with services.db.session() as session:
        recorded = session.execute(
            job_leases(Attempt).held(attempt_id, lease_id)
            .where(Attempt.status == "grading")
            .values(**values, graded_at=utcnow(), deadline=None, lease_id=None)
        )  # fmt: skip
        if recorded.rowcount != 1:
            return None
        attempt = session.get(Attempt, attempt_id)
        insights.mark_stale(services, session, link_key(attempt))  # what the class got wrong, again once settled
        send = attempt.status == "graded" and attempt.lineitem_url
        return Finished(attempt, passback.record_grade(services, session, attempt) if send else None)


def unclaimed(services: Services, queued_for: dt.timedelta | None, job: Job = Attempt) -> int | None:
    """An attempt (or preview grade) no worker holds: grading past its lease (its worker died), or else the
    oldest queued one once it has waited `queued_for` (its task may be lost; None: only the former). Two
    index lookups, however long the queue."""
    now = utcnow()
    with services.db.session() as session:
        expired = session.scalars(
            select(job.id).where(job.status == "grading", job_leases(job).ended(now)).order_by(job.id).limit(1)
        ).first()
        if expired is not None or queued_for is None:
            return expired
        oldest = session.execute(
            select(job.id, job.created_at).where(job.status == "queued").order_by(job.id).limit(1)
        ).first()
    return oldest.id if oldest is not None and oldest.created_at < now - queued_for else None
