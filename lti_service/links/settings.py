"""Course staff's settings for one resource link, and the rules they impose on submissions."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import func, select

from ..db import Attempt, LinkSettings, utcnow
from ..services import Services

LTI = "https://purl.imsglobal.org/spec/lti/claim/"


def link_key(launch) -> dict:
    return dict(platform_id=launch.platform_id, context_id=launch.context_id, resource_link_id=launch.resource_link_id)


def load(services: Services, key: dict) -> LinkSettings:
    """The saved settings, or the defaults (score policy from SCORE_POLICY) when staff saved none."""
    with services.db.session() as session:
        saved = session.scalars(select(LinkSettings).filter_by(**key)).first()
    if saved is not None:
        return saved
    return LinkSettings(
        **key, score_policy=services.config.score_policy, attempt_limit=None, late_policy="accept",
        late_penalty=0.0, show_hidden_after_due=False,
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
    due: dt.datetime | None
    attempts_used: int

    @property
    def past_due(self) -> bool:
        return self.due is not None and utcnow() > self.due

    @property
    def refusal(self) -> str | None:
        """Why a new upload is refused, or None when it is accepted."""
        limit = self.settings.attempt_limit
        if limit is not None and self.attempts_used >= limit:
            return f"You have used all {limit} attempts for this assignment."
        if self.past_due and self.settings.late_policy == "refuse":
            return "The due date has passed and this assignment does not accept late work."
        return None

    @property
    def late_penalty(self) -> float:
        """Percent a submission made now loses."""
        return self.settings.late_penalty if self.past_due and self.settings.late_policy == "penalty" else 0.0

    @property
    def hidden_results_visible(self) -> bool:
        return self.past_due and self.settings.show_hidden_after_due


def rules_for(services: Services, launch) -> SubmissionRules:
    key = link_key(launch)
    with services.db.session() as session:
        used = session.scalar(select(func.count(Attempt.id)).filter_by(**key, user_id=launch.user_id))
    return SubmissionRules(load(services, key), due_at(launch), used or 0)
