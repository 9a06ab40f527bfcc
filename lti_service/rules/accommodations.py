"""Accommodations for one student on one link (a due date of their own, extra attempts, excused) and a course's
late days.

Which due date counts for a student is one rule: an extension staff set here, over the due date the LMS sends
for that student (Canvas sends each student's own), over the link's own due date (set on the dashboard:
Moodle sends none).

Late days: every student of a course has the same budget of whole days (set by staff for the course). Work
late by part of a day needs a whole day. An upload spends days only when they cover all its lateness (else
the link's late policy applies and the days are kept), and a link spends at most the days its latest upload
needed: two uploads in one second spend one day. Days come back when an extension makes them unneeded, or
when staff give them back: the link then forgives that many days of lateness, no more (a later upload late
by more spends the difference, or meets the late policy). A higher budget covers the uploads penalised for
want of days (oldest first); a lower one takes back no day spent. Every change of the counts (an upload's
spend, a give-back, a second look after an extension or a new budget) is a compare-and-set in one
transaction, taken again when another change came first (staff's changes also lock the student's link
first), so no day is spent twice or given back twice, an account always holds what its links use, and no
spend goes over the budget.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, defer

from ..db import (
    Accommodation,
    AccommodationChange,
    Attempt,
    CourseSettings,
    LateDayAccount,
    LateDayUse,
    LinkSettings,
    utcnow,
)
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
    """days this link takes from the budget"""
    forgiven: int = 0
    """days of lateness staff forgave on this link (days they gave back): they cover that much, free"""

    @property
    def remaining(self) -> int:
        return max(self.budget - self.used, 0)

    def covers(self, needed: int) -> bool:
        return needed <= self.forgiven + self.on_link + self.remaining

    def link_days(self, needed: int) -> int:
        """The days this link takes once an upload `needed` days late is covered."""
        return max(needed - self.forgiven, self.on_link, 0)

    def to_spend(self, needed: int) -> int:
        """The days an upload `needed` days late spends now (0 when they would not cover it all)."""
        return self.link_days(needed) - self.on_link if self.covers(needed) else 0


def course_key(key: dict) -> dict:
    return dict(platform_id=key["platform_id"], context_id=key["context_id"])


def budget(session: Session, key: dict) -> int:
    found = session.scalars(select(CourseSettings.late_days).filter_by(**course_key(key))).first()
    return found or 0


def late_days(session: Session, key: dict, user_id: str) -> LateDays:
    account = session.scalars(select(LateDayAccount).filter_by(**course_key(key), user_id=user_id)).first()
    use = session.scalars(select(LateDayUse).filter_by(**key, user_id=user_id)).first()
    return LateDays(budget(session, key), account.used if account else 0, use.days if use else 0,
                    use.forgiven if use else 0)  # fmt: skip


def accommodation(session: Session, key: dict, user_id: str) -> Accommodation | None:
    return session.scalars(select(Accommodation).filter_by(**key, user_id=user_id)).first()


def spend(services: Services, session: Session, key: dict, user_id: str, seen: LateDays, needed: int) -> None:
    """Raise the link's use to what an upload `needed` days late takes and the student's account by the
    difference, in the caller's transaction; SpendRaced when another change came since `seen` was read."""
    days = seen.link_days(needed)
    if days > seen.on_link:
        _set_days(services, session, key, user_id, seen, days, seen.forgiven)


def _set_days(services: Services, session: Session, key: dict, user_id: str, seen: LateDays, days: int,
              forgiven: int) -> None:  # fmt: skip
    """The link's days and forgiven days, and the student's account by the change in days: each a compare-and-set
    against `seen` (SpendRaced when another change came first), never below 0 nor over the course's budget."""
    _ensure_rows(services, session, key, user_id)
    moved = session.execute(
        update(LateDayUse).filter_by(**key, user_id=user_id, days=seen.on_link, forgiven=seen.forgiven)
        .values(days=days, forgiven=forgiven)
    )  # fmt: skip
    delta = days - seen.on_link
    account = update(LateDayAccount).filter_by(**course_key(key), user_id=user_id)
    account = account.where(LateDayAccount.used + delta >= 0)
    if delta > 0:  # only a spend meets the budget: a budget lowered below what was spent keeps what was spent
        account = account.where(LateDayAccount.used + delta <= _budget_now(key))
    taken = session.execute(account.values(used=LateDayAccount.used + delta))
    if moved.rowcount != 1 or taken.rowcount != 1:
        raise SpendRaced()


def _budget_now(key: dict):
    """The course's budget as the statement runs (a budget lowered meanwhile holds), 0 when none was set."""
    found = select(CourseSettings.late_days).filter_by(**course_key(key)).scalar_subquery()
    return func.coalesce(found, 0)


def _lock(services: Services, session: Session, key: dict, user_id: str) -> LateDays:
    """The student's late days on the link, read under a lock held to the end of the transaction (SQLite: the
    write lock; PostgreSQL: the link's row), so a staff change is computed from counts nobody changes meanwhile."""
    _ensure_rows(services, session, key, user_id)
    session.execute(select(LateDayUse.id).filter_by(**key, user_id=user_id).with_for_update())
    return late_days(session, key, user_id)


def _retried(change, why: str):
    """`change()` in a transaction of its own, taken again when an upload's spend raced it."""
    for _ in range(RACE_RETRIES):
        try:
            return change()
        except SpendRaced:
            continue
    raise Refused(why)


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


def reassess(services: Services, key: dict, user_id: str) -> bool:
    """Late penalties and late days of a student's attempts on the link again, after their due date or their
    course's budget changed; whether any penalty changed (their score is then sent again). Refused when uploads
    raced it RACE_RETRIES times."""

    def change() -> bool:
        with services.db.session() as session:
            return _reassess(services, session, key, user_id)

    return _retried(change, "The student's uploads changed their late days at the same moment: save again.")


def _reassess(services: Services, session: Session, key: dict, user_id: str) -> bool:
    seen = _lock(services, session, key, user_id)
    link = session.scalars(select(LinkSettings).filter_by(**key)).first()
    policy, penalty = (link.late_policy, link.late_penalty) if link else ("accept", 0.0)
    attempts = list(session.scalars(
        select(Attempt).options(defer(Attempt.notebook)).filter_by(**key, user_id=user_id).order_by(Attempt.id)
    ))  # fmt: skip
    row = accommodation(session, key, user_id)
    lms_due = next((a.lms_due_at for a in reversed(attempts) if a.lms_due_at is not None), None)
    due = deadline(row.due_at if row else None, lms_due, link.due_at if link else None).due
    days, changed = 0, False
    for attempt in attempts:
        needed = days_late(attempt.created_at, due)
        covered = seen.covers(needed)
        if covered:
            days = max(days, needed - seen.forgiven)
        new = 0.0 if covered or policy != "penalty" else penalty
        changed |= new != attempt.late_penalty
        attempt.late_penalty = new
    if days != seen.on_link:
        _set_days(services, session, key, user_id, seen, days, seen.forgiven)
    return changed


def _ensure_rows(services: Services, session: Session, key: dict, user_id: str) -> None:
    """The student's use of the link and account in the course, at 0 where there were none (racing inserts
    both succeed: the second does nothing)."""
    for model, values in ((LateDayUse, dict(**key, days=0, forgiven=0)),
                          (LateDayAccount, dict(**course_key(key), used=0))):  # fmt: skip
        session.execute(services.db.insert(model).values(user_id=user_id, **values).on_conflict_do_nothing())


def _days(count: int) -> str:
    return f"{count} late day{'s' if count != 1 else ''}"


def refund(services: Services, key: dict, user_id: str, by: str) -> int:
    """Give back the days the link took from a student; the days given back (0 when it took none). They then
    forgive that much lateness on the link, no more: an upload later than that spends days again."""

    def change() -> int:
        with services.db.session() as session:
            if not late_days(session, key, user_id).on_link:
                return 0  # nothing written, not even for a student the link never saw
            seen = _lock(services, session, key, user_id)
            if not seen.on_link:
                return 0
            forgiven = seen.forgiven + seen.on_link
            _set_days(services, session, key, user_id, seen, 0, forgiven)
            what = f"{_days(seen.on_link)} given back: lateness of up to {_days(forgiven)} forgiven on this assignment"
            session.add(AccommodationChange(**key, user_id=user_id, change=what, set_by=by[:400], set_at=utcnow()))
            return seen.on_link

    return _retried(change, "The student's uploads changed their late days at the same moment: give back again.")


@dataclass
class StudentAccommodations:
    """What the dashboard shows of one student: their accommodation, late days on this link, the history."""

    accommodation: Accommodation | None = None
    late_days: int = 0
    forgiven: int = 0
    history: list[AccommodationChange] = field(default_factory=list)


def overview(services: Services, key: dict) -> tuple[int, dict[str, StudentAccommodations]]:
    """The course's late-day budget and, by student, what was set for them on this link."""
    found: dict[str, StudentAccommodations] = {}
    with services.db.session() as session:
        for row in session.scalars(select(Accommodation).filter_by(**key)):
            found.setdefault(row.user_id, StudentAccommodations()).accommodation = row
        for use in session.scalars(select(LateDayUse).filter_by(**key)):
            entry = found.setdefault(use.user_id, StudentAccommodations())
            entry.late_days, entry.forgiven = use.days, use.forgiven
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


def cover_penalised(services: Services, key: dict) -> list[tuple[dict, str]]:
    """After the course's budget changed: every late upload of the course penalised for want of days looked at
    again, the oldest first (their links compete for the days); the links and students whose penalty changed.
    Days are only ever spent here: a lower budget takes back no day already spent."""
    with services.db.session() as session:
        penalised = session.execute(
            select(Attempt.resource_link_id, Attempt.user_id).filter_by(**course_key(key))
            .where(Attempt.late_penalty > 0).group_by(Attempt.resource_link_id, Attempt.user_id)
            .order_by(func.min(Attempt.id))
        ).all()  # fmt: skip
    links = [(dict(**course_key(key), resource_link_id=link), user_id) for link, user_id in penalised]
    return [(link, user_id) for link, user_id in links if reassess(services, link, user_id)]
