"""Accommodations for one student on one link (a due date of their own, extra attempts, excused) and a course's
late days.

Which due date counts for a student is one rule: an extension staff set here, over the due date the LMS sends
for that student (Canvas sends each student's own), over the link's own due date (set on the dashboard:
Moodle sends none).

Late days: every student of a course has the same budget of whole days (set by staff for the course). Work
late by part of a day needs a whole day. An upload spends days only when they cover all its lateness (else
the link's late policy applies and the days are kept), and a link spends at most the days its latest upload
needed: two uploads in one second spend one day. Days come back when an extension makes them unneeded, or
when staff refund them (the lateness is then forgiven). Both counts are changed by compare-and-set updates in
the upload's own transaction, so racing uploads never spend a day twice or more days than the budget.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, defer

from ..db import Accommodation, AccommodationChange, Attempt, CourseSettings, LateDayAccount, LateDayUse, utcnow
from ..services import Services

DAY = dt.timedelta(days=1)
MAX_EXTRA_ATTEMPTS = 1000
MAX_LATE_DAYS = 365
MAX_HISTORY = 500  # changes the dashboard lists, newest first
MAX_PICKED = 2000  # students one change applies to
RACE_RETRIES = 5


class SpendRaced(Exception):
    """Another upload changed the student's late days meanwhile: the upload is taken again from the start."""


@dataclass(frozen=True)
class Deadline:
    due: dt.datetime | None
    source: str
    """"extension", "lms", "link", or "" (no due date)"""


def deadline(extension: dt.datetime | None, lms_due: dt.datetime | None, link_due: dt.datetime | None) -> Deadline:
    """The one rule: a staff extension over the LMS's date for the student over the link's date."""
    for due, source in ((extension, "extension"), (lms_due, "lms"), (link_due, "link")):
        if due is not None:
            return Deadline(due, source)
    return Deadline(None, "")


def days_late(submitted: dt.datetime, due: dt.datetime | None) -> int:
    """Whole days late (a minute late is one day), 0 when on time or without a due date."""
    if due is None or submitted <= due:
        return 0
    return math.ceil((submitted - due) / DAY)


@dataclass(frozen=True)
class LateDays:
    """A student's late days in a course, as one upload on one link sees them."""

    budget: int
    used: int
    """days spent in the whole course"""
    on_link: int
    """days this link already uses"""
    forgiven: bool = False
    """staff refunded this link's days: its lateness costs nothing"""

    @property
    def remaining(self) -> int:
        return max(self.budget - self.used, 0)

    def covers(self, needed: int) -> bool:
        return self.forgiven or needed <= self.on_link + self.remaining

    def to_spend(self, needed: int) -> int:
        """The days an upload `needed` days late spends now (0 when they would not cover it all)."""
        return max(needed - self.on_link, 0) if self.covers(needed) and not self.forgiven else 0


def course_key(key: dict) -> dict:
    return dict(platform_id=key["platform_id"], context_id=key["context_id"])


def budget(session: Session, key: dict) -> int:
    found = session.scalars(select(CourseSettings.late_days).filter_by(**course_key(key))).first()
    return found or 0


def late_days(session: Session, key: dict, user_id: str) -> LateDays:
    account = session.scalars(select(LateDayAccount).filter_by(**course_key(key), user_id=user_id)).first()
    use = session.scalars(select(LateDayUse).filter_by(**key, user_id=user_id)).first()
    return LateDays(budget(session, key), account.used if account else 0, use.days if use else 0,
                    bool(use and use.refunded))  # fmt: skip


def accommodation(session: Session, key: dict, user_id: str) -> Accommodation | None:
    return session.scalars(select(Accommodation).filter_by(**key, user_id=user_id)).first()


def spend(services: Services, session: Session, key: dict, user_id: str, seen: LateDays, needed: int) -> None:
    """Raise the link's use to `needed` days and take the difference from the budget, in the caller's
    transaction; SpendRaced when another upload changed either count since `seen` was read."""
    delta = needed - seen.on_link
    if delta <= 0:
        return
    _ensure_rows(services, session, key, user_id)
    raised = session.execute(
        update(LateDayUse).filter_by(**key, user_id=user_id, days=seen.on_link, refunded=False).values(days=needed)
    )
    taken = session.execute(
        update(LateDayAccount)
        .filter_by(**course_key(key), user_id=user_id)
        .where(LateDayAccount.used + delta <= seen.budget)
        .values(used=LateDayAccount.used + delta)
    )
    if raised.rowcount != 1 or taken.rowcount != 1:
        raise SpendRaced()


# --- staff's changes ----------------------------------------------------------------------------------------


class Refused(ValueError):
    """An accommodation that cannot be set as asked; str() says why, in a teacher's words. Nothing is changed."""


@dataclass(frozen=True)
class Change:
    """What staff set for the students they picked (None: leave as it is)."""

    due_at: dt.datetime | None = None
    clear_due: bool = False
    extra_attempts: int | None = None
    excused: bool | None = None

    def describe(self) -> str:
        parts = []
        if self.clear_due:
            parts.append("extension removed")
        elif self.due_at is not None:
            parts.append(f"due {self.due_at:%Y-%m-%d %H:%M} UTC")
        if self.extra_attempts is not None:
            parts.append(f"{self.extra_attempts} extra attempt{'s' if self.extra_attempts != 1 else ''}")
        if self.excused is not None:
            parts.append("excused" if self.excused else "no longer excused")
        return ", ".join(parts)


def check(change: Change, users: list[str], known: dict[str, str], used: dict[str, int], limit: int | None) -> None:
    """Refused unless the change can apply to every picked student: on the roster, a date ahead, enough attempts."""
    if not users:
        raise Refused("Pick at least one student.")
    if not change.describe():
        raise Refused("Choose what to change: a new due date, extra attempts, or excused.")
    if strangers := [u for u in users if u not in known]:
        raise Refused(
            f"{', '.join(strangers[:5])} {'is' if len(strangers) == 1 else 'are'} not a student of this course."
        )
    if change.due_at is not None and change.due_at <= utcnow():
        raise Refused("The new due date is in the past: choose a date and time ahead (times are UTC).")
    if change.extra_attempts is not None:
        if not 0 <= change.extra_attempts <= MAX_EXTRA_ATTEMPTS:
            raise Refused(f"Extra attempts must be between 0 and {MAX_EXTRA_ATTEMPTS}.")
        if limit is not None:
            short = [known[u] for u in users if used.get(u, 0) > limit + change.extra_attempts]
            if short:
                raise Refused(
                    f"{', '.join(short[:5])} used more than {limit} + {change.extra_attempts} attempts already: "
                    "give at least as many extra attempts as they used beyond the limit."
                )


def apply(services: Services, key: dict, users: list[str], change: Change, by: str) -> None:
    """Set the change for every picked student, with a line of history each, in one transaction (taken again
    when another grader created one of their rows at the same moment)."""
    for _ in range(RACE_RETRIES):
        try:
            return _apply(services, key, list(dict.fromkeys(users)), change, by)
        except IntegrityError:
            continue
    raise Refused("Others changed these students' accommodations at the same moment: save again.")


def _apply(services: Services, key: dict, users: list[str], change: Change, by: str) -> None:
    now = utcnow()
    with services.db.session() as session:
        for user_id in users:
            row = accommodation(session, key, user_id)
            if row is None:
                row = Accommodation(**key, user_id=user_id, extra_attempts=0, excused=False)
                session.add(row)
            if change.clear_due:
                row.due_at = None
            elif change.due_at is not None:
                row.due_at = change.due_at
            if change.extra_attempts is not None:
                row.extra_attempts = change.extra_attempts
            if change.excused is not None:
                row.excused = change.excused
            row.set_by, row.set_at = by[:400], now
            session.add(AccommodationChange(**key, user_id=user_id, change=change.describe(), set_by=by[:400],
                                            set_at=now))  # fmt: skip


def reassess(services: Services, key: dict, user_id: str, link_due: dt.datetime | None, policy: str,
             penalty: float) -> bool:  # fmt: skip
    """Late penalties and late days of a student's attempts on the link again, after their due date, their
    course's budget or a refund changed; whether any penalty changed (their score is then sent again)."""
    with services.db.session() as session:
        attempts = list(session.scalars(
            select(Attempt).options(defer(Attempt.notebook)).filter_by(**key, user_id=user_id).order_by(Attempt.id)
        ))  # fmt: skip
        row = accommodation(session, key, user_id)
        lms_due = next((a.lms_due_at for a in reversed(attempts) if a.lms_due_at is not None), None)
        due = deadline(row.due_at if row else None, lms_due, link_due).due
        seen = late_days(session, key, user_id)
        available = seen.on_link + seen.remaining
        needed_link, changed = 0, False
        for attempt in attempts:
            needed = days_late(attempt.created_at, due)
            covered = needed == 0 or seen.forgiven or needed <= available
            if needed and covered and not seen.forgiven:
                needed_link = max(needed_link, needed)
            new = 0.0 if covered or policy != "penalty" else penalty
            changed |= new != attempt.late_penalty
            attempt.late_penalty = new
        if not seen.forgiven and needed_link != seen.on_link:
            _move_days(services, session, key, user_id, seen.on_link, needed_link)
    return changed


def _ensure_rows(services: Services, session: Session, key: dict, user_id: str) -> None:
    """The student's use of the link and account in the course, at 0 where there were none (racing inserts
    both succeed: the second does nothing)."""
    for model, values in ((LateDayUse, dict(**key, days=0, refunded=False)),
                          (LateDayAccount, dict(**course_key(key), used=0))):  # fmt: skip
        session.execute(services.db.insert(model).values(user_id=user_id, **values).on_conflict_do_nothing())


def _move_days(services: Services, session: Session, key: dict, user_id: str, before: int, after: int) -> None:
    _ensure_rows(services, session, key, user_id)
    session.execute(update(LateDayUse).filter_by(**key, user_id=user_id).values(days=after))
    session.execute(
        update(LateDayAccount).filter_by(**course_key(key), user_id=user_id)
        .values(used=LateDayAccount.used + (after - before))
    )  # fmt: skip


def refund(services: Services, key: dict, user_id: str, by: str) -> int:
    """Give back the days a link took from a student and forgive its lateness; the days given back."""
    with services.db.session() as session:
        use = session.scalars(select(LateDayUse).filter_by(**key, user_id=user_id)).first()
        if use is None or use.refunded:
            return 0
        days, use.days, use.refunded = use.days, 0, True
        session.execute(
            update(LateDayAccount).filter_by(**course_key(key), user_id=user_id)
            .values(used=LateDayAccount.used - days)
        )  # fmt: skip
        what = f"{days} late day{'s' if days != 1 else ''} given back, lateness forgiven"
        session.add(AccommodationChange(**key, user_id=user_id, change=what, set_by=by[:400], set_at=utcnow()))
    return days


@dataclass
class StudentAccommodations:
    """What the dashboard shows of one student: their accommodation, late days on this link, the history."""

    accommodation: Accommodation | None = None
    late_days: int = 0
    refunded: bool = False
    history: list[AccommodationChange] = field(default_factory=list)


def overview(services: Services, key: dict) -> tuple[int, dict[str, StudentAccommodations]]:
    """The course's late-day budget and, by student, what was set for them on this link."""
    found: dict[str, StudentAccommodations] = {}
    with services.db.session() as session:
        for row in session.scalars(select(Accommodation).filter_by(**key)):
            found.setdefault(row.user_id, StudentAccommodations()).accommodation = row
        for use in session.scalars(select(LateDayUse).filter_by(**key)):
            entry = found.setdefault(use.user_id, StudentAccommodations())
            entry.late_days, entry.refunded = use.days, use.refunded
        changes = select(AccommodationChange).filter_by(**key).order_by(AccommodationChange.id.desc())
        for change in session.scalars(changes.limit(MAX_HISTORY)):
            found.setdefault(change.user_id, StudentAccommodations()).history.append(change)
        return budget(session, key), found


def set_budget(services: Services, key: dict, days: int) -> None:
    if not 0 <= days <= MAX_LATE_DAYS:
        raise Refused(f"Late days must be between 0 and {MAX_LATE_DAYS}.")
    statement = services.db.insert(CourseSettings).values(**course_key(key), late_days=days)
    with services.db.session() as session:
        session.execute(statement.on_conflict_do_update(index_elements=["platform_id", "context_id"],
                                                        set_={"late_days": days}))  # fmt: skip
