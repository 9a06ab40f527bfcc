"""The grade outbox: one row per user and line item, sent through AGS, retried with backoff.

The score is read from the attempts when the row is sent, never copied when it is queued, so a stale
score is never posted and sending twice is harmless. Policy "best": a worse later attempt never lowers
the gradebook; "latest": the newest graded attempt counts.
"""

from __future__ import annotations

import datetime as dt
import logging

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from . import link_settings
from .ags import AgsError
from .db import Attempt, Passback, Platform, utcnow
from .services import Services

log = logging.getLogger("lti_service.passback")
LEASE = dt.timedelta(seconds=60)  # a worker sending a row holds it this long
MAX_BACKOFF = 3600.0


def record_grade(services: Services, attempt: Attempt) -> int:
    """Queue (or re-queue) the gradebook update for the attempt's user and line item; the row id."""
    key = dict(platform_id=attempt.platform_id, lineitem_url=attempt.lineitem_url, user_id=attempt.user_id)
    for _ in range(2):  # a concurrent insert of the same row wins once; then we update it
        try:
            with services.db.session() as session:
                row = session.scalars(select(Passback).filter_by(**key)).first()
                if row is None:
                    row = Passback(**key, context_id=attempt.context_id, resource_link_id=attempt.resource_link_id)
                    session.add(row)
                row.status, row.tries, row.next_try_at, row.last_error = "pending", 0, utcnow(), None
                session.flush()
                return row.id
        except IntegrityError:
            continue
    raise RuntimeError("could not record the grade for passback")


def counting_attempt(attempts: list[Attempt], policy: str) -> Attempt | None:
    """The graded attempt the gradebook shows: the newest (policy "latest") or the best after late
    penalties (the first of equals: a resubmission of the same score changes nothing)."""
    graded = [a for a in attempts if a.status == "graded" and a.max_score]
    if not graded:
        return None
    if policy == "latest":
        return max(graded, key=lambda a: a.id)
    return max(graded, key=lambda a: (a.final_score / a.max_score, -a.id))


def score_to_send(services: Services, row: Passback) -> Attempt | None:
    """The attempt whose score the gradebook should show under the link's score policy."""
    with services.db.session() as session:
        graded = session.scalars(
            select(Attempt).where(
                Attempt.platform_id == row.platform_id,
                Attempt.context_id == row.context_id,
                Attempt.resource_link_id == row.resource_link_id,
                Attempt.user_id == row.user_id,
                Attempt.status == "graded",
            )
        ).all()
    return counting_attempt(list(graded), link_settings.load(services, _link(row)).score_policy)


def _link(row: Passback) -> dict:
    return dict(platform_id=row.platform_id, context_id=row.context_id, resource_link_id=row.resource_link_id)


def lease(services: Services, passback_id: int) -> Passback | None:
    """Take a due pending row for sending (other workers skip it until the lease ends)."""
    now = utcnow()
    with services.db.session() as session:
        taken = session.execute(
            update(Passback)
            .where(Passback.id == passback_id, Passback.status == "pending", Passback.next_try_at <= now)
            .values(next_try_at=now + LEASE)
        )
        return session.get(Passback, passback_id) if taken.rowcount == 1 else None


def send(services: Services, passback_id: int) -> float | None:
    """Send one row if it is due. Returns the delay before a retry, or None when nothing remains to do."""
    row = lease(services, passback_id)
    if row is None:
        return None
    attempt = score_to_send(services, row)
    if attempt is None:
        return _settle(services, row.id, status="sent", last_error=None)
    with services.db.session() as session:
        platform = session.get(Platform, row.platform_id)
    timestamp = _next_timestamp(row.last_timestamp)
    try:
        maximum = services.ags.lineitem_maximum(platform, row.lineitem_url) or attempt.max_score
        services.ags.post_score(platform, row.lineitem_url, _score_body(services, row, attempt, maximum, timestamp))
    except AgsError as error:
        _log_failed_try(platform, row, error)
        return _failed_try(services, row, error, timestamp)
    return _settle(
        services, row.id, status="sent", sent_score=attempt.final_score, last_timestamp=timestamp, sent_at=utcnow(),
        last_error=None,
    )  # fmt: skip


def _score_body(services: Services, row: Passback, attempt: Attempt, maximum: float, timestamp: dt.datetime) -> dict:
    fraction = attempt.final_score / attempt.max_score if attempt.max_score else 0.0
    policy = link_settings.load(services, _link(row)).score_policy
    late = f", {attempt.late_penalty:g}% late penalty" if attempt.late_penalty else ""
    return {
        "userId": row.user_id,
        "scoreGiven": round(fraction * maximum, 4),
        "scoreMaximum": maximum,
        "activityProgress": "Submitted",
        "gradingProgress": "FullyGraded",
        "timestamp": timestamp.isoformat(timespec="milliseconds") + "Z",
        "comment": f"{attempt.final_score:g}/{attempt.max_score:g} points ({policy} attempt{late}, graded by the tool)",
    }


def _next_timestamp(last: dt.datetime | None) -> dt.datetime:
    """Now, or just after the last timestamp sent: platforms reject a score not newer than the stored one."""
    now = utcnow().replace(microsecond=utcnow().microsecond // 1000 * 1000)
    return max(now, last + dt.timedelta(milliseconds=1)) if last else now


def _log_failed_try(platform: Platform, row: Passback, error: AgsError) -> None:
    """One JSON line per failed try: which platform, what it answered, in short (never a response body)."""
    log.warning(
        "passback try failed",
        extra={
            "event": "passback_failed", "platform": platform.issuer, "client_id": platform.client_id,
            "passback": row.id, "try": row.tries + 1, "status": error.status, "reason": error.reason[:200],
            "retryable": error.retryable,
        },
    )  # fmt: skip


def _failed_try(services: Services, row: Passback, error: AgsError, timestamp: dt.datetime) -> float | None:
    tries = row.tries + 1
    if not error.retryable or tries >= services.config.passback_max_tries:
        return _settle(services, row.id, status="failed", tries=tries, last_error=str(error)[:1000])
    delay = min(MAX_BACKOFF, services.config.passback_backoff * 2 ** (tries - 1))
    _settle(
        services, row.id, status="pending", tries=tries, last_error=str(error)[:1000],
        next_try_at=utcnow() + dt.timedelta(seconds=delay),
        last_timestamp=timestamp if "HTTP 409" in str(error) else row.last_timestamp,
    )  # fmt: skip
    return delay


def _settle(services: Services, passback_id: int, **values) -> None:
    with services.db.session() as session:
        row = session.get(Passback, passback_id)
        for name, value in values.items():
            setattr(row, name, value)


def status_of(services: Services, passback_id: int) -> str | None:
    with services.db.session() as session:
        row = session.get(Passback, passback_id)
        return row.status if row else None


def due_passbacks(services: Services) -> list[int]:
    with services.db.session() as session:
        return list(
            session.scalars(select(Passback.id).where(Passback.status == "pending", Passback.next_try_at <= utcnow()))
        )
