"""The grade outbox: one row per user and line item, sent through AGS right after grading, retried by time.

The score is read from the attempts when the row is sent, never copied when it is queued, so a stale
score is never posted and sending twice is harmless. Policy "best": a worse later attempt never lowers
the gradebook; "latest": the newest graded attempt counts.

While the platform fails (no answer, 5xx, 401/408/409/429) a row is tried again after waits that double
up to PASSBACK_MAX_BACKOFF (each cut by up to half at random), for PASSBACK_RETRY_FOR after its first
failure (72 h by default: an LMS's maintenance lasts hours or a weekend); the first success on a platform
makes its other waiting rows due at once. Only a 4xx saying that the request itself is wrong ends a row
as failed sooner.

Known refusals (lti/quirks.py) have their own policy: one the teacher fixes in the LMS (Canvas refuses
scores for an unpublished assignment) is tried again every PASSBACK_MAX_BACKOFF for the same window, and is
made due at once only by a success on its own column (not by every success on a platform a whole school
shares), so the score lands minutes after the fix; a student no longer in the course, or a deleted column,
ends the row as failed with its reason; a stale timestamp is retried with a later one.
"""

from __future__ import annotations

import datetime as dt
import logging
import random
from dataclasses import dataclass

from sqlalchemy import ColumnElement, func, or_, select, update
from sqlalchemy.orm import Session, defer

from ..db import Attempt, Passback, Platform, utcnow
from ..leases import Leases
from ..lti.ags import AgsError
from ..lti.quirks import (
    REASON,
    SUBMISSION_EXTENSION,
    TEACHER_FIXES,
    Refusal,
    provisional_progress,
    recorded_refusal,
    submission_time,
)
from ..rules import settings
from ..rules.accommodations import accommodation
from ..services import Services
from ..written.grades import Standing, standing

log = logging.getLogger("lti_service.passback")
SEND_CALLS = 3  # a send makes at most three calls (token, line item, score), each within HTTP_TIMEOUT
LEASES = Leases(Passback, "next_try_at")


def record_grade(services: Services, session: Session, attempt: Attempt) -> int:
    """Queue (or re-queue) the gradebook update for the attempt's user and line item, due now, in the
    caller's transaction (the one that marks the attempt graded); the row id. A worker still sending the
    row's previous grade loses its lease: its outcome is not recorded over this one."""
    pending = dict(status="pending", tries=0, next_try_at=utcnow(), lease_id=None, last_error=None, failing_since=None)
    row = dict(settings.link_key(attempt), lineitem_url=attempt.lineitem_url, user_id=attempt.user_id)
    statement = (
        services.db.insert(Passback)
        .values(**row, **pending)
        .on_conflict_do_update(index_elements=["platform_id", "lineitem_url", "user_id"], set_=pending)
        .returning(Passback.id)
    )
    return session.scalar(statement)


def requeue(services: Services, key: dict, user_ids: list[str]) -> list[int]:
    """Queue again the gradebook updates of these students on the link (their written answers' grades changed);
    the outbox rows to send."""
    rows = []
    with services.db.session() as session:
        for user_id in user_ids:
            attempt = session.scalars(
                select(Attempt).options(defer(Attempt.notebook)).filter_by(**key, user_id=user_id, status="graded")
                .where(Attempt.lineitem_url.is_not(None)).order_by(Attempt.id.desc()).limit(1)
            ).first()  # fmt: skip
            if attempt is not None:
                rows.append(record_grade(services, session, attempt))
    return rows


def score_to_send(services: Services, row: Passback) -> Attempt | None:
    """The attempt whose score the gradebook should show under the link's score policy."""
    with services.db.session() as session:
        graded = session.scalars(
            select(Attempt).filter_by(**settings.link_key(row), user_id=row.user_id, status="graded")
        ).all()
    return settings.counting_attempt(list(graded), settings.load(services, settings.link_key(row)).score_policy)


def lease(services: Services, passback_id: int) -> Passback | None:
    """Take a due pending row for sending; other workers skip it until it is settled or the lease ends. The
    lease's end is the row's next try: a sender that vanished leaves it due again then."""
    due = (Passback.status == "pending") & (Passback.next_try_at <= utcnow())
    seconds = SEND_CALLS * services.config.http_timeout + 5
    with services.db.session() as session:
        taken = LEASES.claim(session, passback_id, due, seconds)
        return session.get(Passback, passback_id) if taken is not None else None


def send(services: Services, passback_id: int) -> str | None:
    """Send one row if it is due and free; its status afterwards (None when another worker has it or it
    is not due)."""
    row = lease(services, passback_id)
    if row is None:
        return None
    # The timestamp is taken before the score is read, so a fresher read always carries a later timestamp
    # and a platform keeps the newest score whatever order concurrent sends arrive in.
    timestamp = _next_timestamp(row.last_timestamp)
    attempt = score_to_send(services, row)
    if attempt is None:
        return _settle(services, row, status="sent", last_error=None, failing_since=None)
    with services.db.session() as session:
        platform = session.get(Platform, row.platform_id)
        excused = getattr(accommodation(session, settings.link_key(row), row.user_id), "excused", False)
    score = standing(services, attempt)
    try:
        maximum = services.ags.lineitem_maximum(platform, row.lineitem_url) or score.maximum
        body = _score_body(services, row, score, platform, maximum, timestamp)
        services.ags.post_score(platform, row.lineitem_url, _excused_body(body) if excused else body)
    except AgsError as error:
        _log_failed_try(platform, row, error)
        return _failed_try(services, row, error, timestamp)
    _retry_waiting_now(services, row.platform_id, row.lineitem_url)
    return _settle(
        services, row, status="sent", sent_score=None if excused else score.final, last_timestamp=timestamp,
        sent_at=utcnow(),
        last_error=None, failing_since=None,
    )  # fmt: skip


def _score_body(
    services: Services, row: Passback, score: Standing, platform: Platform, maximum: float, timestamp: dt.datetime
) -> dict:
    attempt, written = score.attempt, score.written
    policy = settings.load(services, settings.link_key(row)).score_policy
    late = f", {attempt.late_penalty:g}% late penalty" if attempt.late_penalty else ""
    comment = f"{score.final:g}/{score.maximum:g} points ({policy} attempt{late}, graded by the tool)"
    if not written.complete:
        comment += f"; written answers still to be graded by course staff ({written.maximum:g} points)"
    return {
        "userId": row.user_id,
        "scoreGiven": round(score.final / score.maximum * maximum, 4) if score.maximum else 0.0,
        "scoreMaximum": maximum,
        "activityProgress": "Submitted",
        "gradingProgress": "FullyGraded" if written.complete else provisional_progress(platform.product_family),
        "timestamp": timestamp.isoformat(timespec="milliseconds") + "Z",
        "comment": comment,
        **submission_time(attempt.created_at),
    }


def _excused_body(body: dict) -> dict:
    """A student staff excused: no score, and a progress that empties the grade (Canvas and Moodle keep a score
    only with FullyGraded or PendingManual), so an earlier one leaves the gradebook too."""
    kept = ("userId", "timestamp", SUBMISSION_EXTENSION)
    return {**{k: v for k, v in body.items() if k in kept}, "activityProgress": "Initialized",
            "gradingProgress": "NotReady", "comment": "excused by course staff: no score"}  # fmt: skip


def _next_timestamp(last: dt.datetime | None) -> dt.datetime:
    """Now, or just after the last timestamp sent: platforms reject a score not newer than the stored one."""
    now = utcnow()
    now = now.replace(microsecond=now.microsecond // 1000 * 1000)
    return max(now, last + dt.timedelta(milliseconds=1)) if last else now


def _log_failed_try(platform: Platform, row: Passback, error: AgsError) -> None:
    """One JSON line per failed try: which platform, what it answered, in short (never a response body)."""
    log.warning(
        "passback try failed",
        extra={
            "event": "passback_failed", "platform": platform.issuer, "client_id": platform.client_id,
            "passback": row.id, "try": row.tries + 1, "status": error.status, "reason": error.reason[:200],
            "retryable": error.retryable, "refusal": error.refusal,
        },
    )  # fmt: skip


def _failed_try(services: Services, row: Passback, error: AgsError, timestamp: dt.datetime) -> str | None:
    """Wait before the next try (doubling, capped), or give up: the platform refused the request itself,
    or it has failed for PASSBACK_RETRY_FOR."""
    config, now = services.config, utcnow()
    tries, retried_for = row.tries + 1, (now - (row.failing_since or now)).total_seconds()
    first_failure = func.coalesce(Passback.failing_since, now)  # kept once set: the run started then
    if not error.retryable or retried_for >= config.passback_retry_for:
        why = f"{error.reason}; gave up after {retried_for / 3600:.3g} h" if error.retryable else error.reason
        return _settle(services, row, status="failed", tries=tries, last_error=why, failing_since=first_failure)
    # Spread out at random, so that retries of grades that failed together do not stay in step: when the
    # platform is back, one of them soon finds out and the others follow at once (_retry_waiting_now).
    wait = config.passback_max_backoff
    if error.refusal not in TEACHER_FIXES:
        wait = min(wait, config.passback_backoff * 2 ** (tries - 1))
    return _settle(
        services, row, status="pending", tries=tries, last_error=error.reason, failing_since=first_failure,
        next_try_at=now + dt.timedelta(seconds=wait * random.uniform(0.5, 1)),
        last_timestamp=timestamp if error.refusal is Refusal.STALE_TIMESTAMP else row.last_timestamp,
    )  # fmt: skip


def refusal(row: Passback) -> Refusal | None:
    """The known refusal that holds the row back or stopped it (None once it is sent or due afresh)."""
    return recorded_refusal(row.last_error) if row.status != "sent" and row.tries else None


def _held_for_teacher() -> ColumnElement[bool]:
    """Rows whose last try met a refusal only the teacher can lift (e.g. an unpublished assignment)."""
    return or_(
        *(func.coalesce(Passback.last_error, "").startswith(REASON[kind], autoescape=True) for kind in TEACHER_FIXES)
    )


def _retry_waiting_now(services: Services, platform_id: int, lineitem_url: str) -> None:
    """The platform answers again: its rows waiting out a backoff need not wait any longer, nor its column's
    rows held back for the teacher (the column accepts scores now)."""
    with services.db.session() as session:
        session.execute(
            update(Passback)
            .where(
                Passback.platform_id == platform_id,
                Passback.status == "pending",
                Passback.failing_since.is_not(None),
                Passback.lease_id.is_(None),
                or_(~_held_for_teacher(), Passback.lineitem_url == lineitem_url),
            )
            .values(next_try_at=utcnow())
        )


def _settle(services: Services, row: Passback, status: str, **values) -> str | None:
    """Record the outcome of a send, unless this worker lost the lease (a newer grade re-queued the row);
    the row's status, or None when not recorded."""
    with services.db.session() as session:
        settled = session.execute(LEASES.held(row.id, row.lease_id).values(status=status, lease_id=None, **values))
    return status if settled.rowcount == 1 else None


def due(services: Services, limit: int) -> list[int]:
    """Rows to send now (first tries, retries whose wait is over, rows whose sender vanished), oldest first."""
    with services.db.session() as session:
        return list(
            session.scalars(
                select(Passback.id)
                .where(Passback.status == "pending", Passback.next_try_at <= utcnow())
                .order_by(Passback.next_try_at)
                .limit(limit)
            )
        )


@dataclass
class Waiting:
    """Grades the platform has not accepted yet and that are being retried: what the dashboard shows."""

    count: int
    since: dt.datetime
    reason: str


def waiting(services: Services, key: dict) -> Waiting | None:
    """The link's grades waiting for a retry: how many, since when, and the last reason (None if none). Those
    held back for the teacher are not among them: the dashboard tells what to do about those."""
    failing = (Passback.status == "pending") & Passback.failing_since.is_not(None) & ~_held_for_teacher()
    with services.db.session() as session:
        count, since = session.execute(
            select(func.count(), func.min(Passback.failing_since)).select_from(Passback).filter_by(**key).where(failing)
        ).one()
        if not count:
            return None
        reason = session.scalars(
            select(Passback.last_error).filter_by(**key).where(failing).order_by(Passback.next_try_at.desc()).limit(1)
        ).first()
    return Waiting(count, since, reason or "")
