"""Course staff's settings for one resource link, and the rules they impose on submissions."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from sqlalchemy import func, select

from ..db import Accommodation, Attempt, LinkSettings, utcnow
from ..services import Services
from .accommodations import Deadline, LateDays, accommodation, days_late, deadline, late_days

LTI = "https://purl.imsglobal.org/spec/lti/claim/"


def link_key(row) -> dict:
    """The key of a resource link (the columns of db.LinkScoped) of a launch or of any row of one link: the one
    way the tool names a link, to filter a table by it or to store a row under it."""
    return dict(platform_id=row.platform_id, context_id=row.context_id, resource_link_id=row.resource_link_id)


def load(services: Services, key: dict) -> LinkSettings:
    """The saved settings, or the defaults (score policy from SCORE_POLICY) when staff saved none."""
    with services.db.session() as session:
        saved = session.scalars(select(LinkSettings).filter_by(**key)).first()
    if saved is not None:
        return saved
    return LinkSettings(
        **key, score_policy=services.config.score_policy, attempt_limit=None, late_policy="accept",
        late_penalty=0.0, show_hidden_after_due=False, due_at=None,
    )  # fmt: skip


def save(services: Services, key: dict, **values) -> LinkSettings:
    with services.db.session() as session:
        row = session.scalars(select(LinkSettings).filter_by(**key)).first()
        if row is None:
            row = LinkSettings(**key)
            session.add(row)
        for name, value in values.items():
            setattr(row, name, value)
    return row


def counting_attempt(attempts: list[Attempt], policy: str) -> Attempt | None:
    """The graded attempt the gradebook shows: the newest (policy "latest") or the best after late
    penalties (the first of equals: a resubmission of the same score changes nothing)."""
    graded = [a for a in attempts if a.status == "graded" and a.max_score]
    if not graded:
        return None
    if policy == "latest":
        return max(graded, key=lambda a: a.id)
    return max(graded, key=lambda a: (a.final_score / a.max_score, -a.id))


def due_at(launch) -> dt.datetime | None:
    """The due date the platform sent (custom due_at, ISO 8601), as naive UTC; None when absent or unreadable."""
    raw = launch.claims.get(LTI + "custom", {}).get("due_at")
    if not isinstance(raw, str) or not raw or raw.startswith("$"):
        return None
    try:
        parsed = dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed.astimezone(dt.UTC).replace(tzinfo=None) if parsed.tzinfo else parsed


@dataclass(frozen=True)
class SubmissionRules:
    """What the student page says and the upload enforces, for one student now."""

    settings: LinkSettings
    deadline: Deadline
    attempts_used: int
    accommodation: Accommodation | None = None
    late: LateDays = LateDays(0, 0, 0)
    now: dt.datetime = field(default_factory=utcnow)

    @property
    def due(self) -> dt.datetime | None:
        return self.deadline.due

    @property
    def attempt_limit(self) -> int | None:
        """The link's limit and the student's extra attempts."""
        limit = self.settings.attempt_limit
        return None if limit is None else limit + (self.accommodation.extra_attempts if self.accommodation else 0)

    @property
    def excused(self) -> bool:
        return bool(self.accommodation and self.accommodation.excused)

    @property
    def days_late(self) -> int:
        return days_late(self.now, self.due)

    @property
    def past_due(self) -> bool:
        return self.due is not None and self.now > self.due

    @property
    def late_days_cover(self) -> bool:
        """The student's late days (or lateness staff forgave) cover an upload now (without penalty, refused late
        work accepted)."""
        return self.past_due and self.late.covers(self.days_late)

    @property
    def late_days_to_spend(self) -> int:
        return self.late.to_spend(self.days_late) if self.late_days_cover else 0

    @property
    def refusal(self) -> str | None:
        """Why a new upload is refused, or None when it is accepted."""
        limit = self.attempt_limit
        if limit is not None and self.attempts_used >= limit:
            return f"You have used all {limit} attempts for this assignment."
        if self.past_due and self.settings.late_policy == "refuse" and not self.late_days_cover:
            return "The due date has passed and this assignment does not accept late work."
        return None

    @property
    def late_penalty(self) -> float:
        """Percent a submission made now loses."""
        late = self.past_due and self.settings.late_policy == "penalty" and not self.late_days_cover
        return self.settings.late_penalty if late else 0.0

    @property
    def hidden_results_visible(self) -> bool:
        return self.past_due and self.settings.show_hidden_after_due


def rules_in(session, settings: LinkSettings, launch, attempts_used: int) -> SubmissionRules:
    """The rules for a launch's student, read in the caller's transaction (an upload takes them in its own)."""
    key = link_key(launch)
    row = accommodation(session, key, launch.user_id)
    extension = row.due_at if row else None
    chosen = deadline(extension, due_at(launch), settings.due_at)
    return SubmissionRules(settings, chosen, attempts_used, row, late_days(session, key, launch.user_id))


def rules_for(services: Services, launch) -> SubmissionRules:
    key = link_key(launch)
    settings = load(services, key)
    with services.db.session() as session:
        used = session.scalar(select(func.count(Attempt.id)).filter_by(**key, user_id=launch.user_id))
        return rules_in(session, settings, launch, used or 0)
