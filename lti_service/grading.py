"""Grading jobs. The attempts table owns their state, so running a job twice is harmless.

queued -> grading (claimed with a deadline) -> graded | failed. A job whose worker vanished (deadline
passed) is queued again by the sweep.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path

from sqlalchemy import func, or_, select, update
from sqlalchemy.exc import IntegrityError

from autograder import GradeOptions, SandboxUnavailable, grade_submission

from .assignments import catalog, links
from .db import Attempt, PreviewGrade, utcnow
from .link_settings import SubmissionRules, due_at, link_key, load
from .lti.lineitems import link_lineitem
from .services import Services

UPLOAD_RACE_RETRIES = 20  # each round stores at least one of the racing uploads


class SubmissionRefused(Exception):
    """The course's settings refuse this upload (attempt limit, late work); str() says why."""


def create_attempt(services: Services, launch, filename: str, data: bytes) -> tuple[Attempt, bool]:
    """Store an upload durably; the same notebook sent twice (a double click) makes one attempt.

    Returns the attempt and whether it is new (only a new attempt needs a grading job). Raises
    SubmissionRefused when the link's settings refuse a new attempt now. The database decides races:
    each attempt takes the next number, unique per user and link, so of concurrent uploads only one gets
    a number; the others look again (and meet the attempt limit, or their duplicate, or the next number).
    """
    for _ in range(UPLOAD_RACE_RETRIES):
        try:
            return _store_attempt(services, launch, filename, data)
        except IntegrityError:
            continue
    raise SubmissionRefused("Several uploads arrived at the same moment; send yours again.")


def _store_attempt(services: Services, launch, filename: str, data: bytes) -> tuple[Attempt, bool]:
    digest = hashlib.sha256(data).hexdigest()
    key = dict(link_key(launch), user_id=launch.user_id)
    settings = load(services, link_key(launch))
    lineitem_url = link_lineitem(services, launch)
    version = links.pin(services, launch)
    with services.db.session() as session:
        existing = session.scalars(select(Attempt).filter_by(**key, sha256=digest)).first()
        if existing is not None:
            return existing, False
        number = (session.scalar(select(func.max(Attempt.number)).filter_by(**key)) or 0) + 1
        rules = SubmissionRules(settings, due_at(launch), attempts_used=number - 1)
        if rules.refusal:
            raise SubmissionRefused(rules.refusal)
        attempt = Attempt(**key, number=number, filename=filename[:300], notebook=data, sha256=digest)
        attempt.assignment_version_id = version.id
        attempt.user_name, attempt.lineitem_url = launch.user_name, lineitem_url
        attempt.late_penalty = rules.late_penalty
        session.add(attempt)
    return attempt, True


def claim(services: Services, attempt_id: int, job: type[Attempt] | type[PreviewGrade] = Attempt) -> bool:
    """Mark the attempt (or a preview grade of it, assignments/moves.py) as being graded by this worker,
    unless another worker holds it."""
    now = utcnow()
    deadline = now + dt.timedelta(seconds=services.config.grading_deadline)
    with services.db.session() as session:
        claimed = session.execute(
            update(job)
            .where(job.id == attempt_id, or_(job.status == "queued", (job.status == "grading") & (job.deadline < now)))
            .values(status="grading", deadline=deadline)
        )
        return claimed.rowcount == 1


def grade_attempt(services: Services, attempt_id: int) -> Attempt | None:
    """Grade one attempt if it still needs grading (None when another worker has it or it is done), against
    the version its link is pinned to now."""
    if not claim(services, attempt_id):
        return None
    with services.db.session() as session:
        attempt = session.get(Attempt, attempt_id)
        data = attempt.notebook
    version = links.pinned(services.db, link_key(attempt))
    zip_path = catalog.zip_path(services.config.data_dir, services.db, version)
    return _finish(
        services, attempt_id, assignment_version_id=version.id, **grade_notebook(zip_path, data, attempt.filename)
    )


def grade_notebook(zip_path: Path, notebook: bytes, label: str) -> dict:
    """Grade a notebook against an autograder zip: the values a grading sets (status, score, max_score, the
    staff and student views, error)."""
    try:
        result = grade_submission(zip_path, notebook, GradeOptions(), label=label)
    except SandboxUnavailable as error:
        return dict(status="failed", error=f"the grader is not available: {error}")
    if result.error:
        return dict(status="failed", error=result.error)
    return dict(
        status="graded", score=result.score, max_score=result.max_score, result=result.to_dict(),
        feedback=result.to_dict(student_view=True), error=None,
    )  # fmt: skip


def _finish(services: Services, attempt_id: int, **values) -> Attempt:
    with services.db.session() as session:
        attempt = session.get(Attempt, attempt_id)
        for name, value in values.items():
            setattr(attempt, name, value)
        attempt.graded_at, attempt.deadline = utcnow(), None
    return attempt


def stale_attempts(
    services: Services, queued_for: dt.timedelta, job: type[Attempt] | type[PreviewGrade] = Attempt
) -> list[int]:
    """Attempts (or preview grades) whose job may be lost: queued for a while, or grading past their deadline."""
    now = utcnow()
    with services.db.session() as session:
        return list(
            session.scalars(
                select(job.id).where(
                    ((job.status == "queued") & (job.created_at < now - queued_for))
                    | ((job.status == "grading") & (job.deadline < now))
                )
            )
        )
