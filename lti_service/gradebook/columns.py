"""Where a link's scores go in the gradebook, including links added without deep linking.

A link added with deep linking (or with grading switched on in the LMS) names its line item in every launch
(the AGS claim's `lineitem`). A link added as a plain "External tool" activity names none; where the platform
lets the tool manage columns (the claim's `lineitems` URL and the lineitem scope), the tool finds the line
item of this resource link or creates one. The first launch claims the link in link_lineitems while it asks
the platform; a concurrent first launch sees the claim and leaves the work to it, so two students launching
at once make one column. Attempts made before the column existed get it (and their scores are sent) then.
"""

from __future__ import annotations

import datetime as dt
import logging

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from ..assignments.catalog import assignment_of
from ..assignments.versions import pin
from ..db import Attempt, Launch, LinkLineItem, Platform, utcnow
from ..lti.ags import AgsError
from ..lti.lineitems import PROBLEMS, RESOURCE_LINK_CLAIM, gradebook_access
from ..rules.settings import link_key
from ..services import Services
from ..written.questions import total_points
from .passback import record_grade

log = logging.getLogger("lti_service.lineitems")
TAG = "decode-grader"
CLAIM = dt.timedelta(seconds=60)  # a launch finding or creating the column holds the link this long;
# after a failure, launches wait as long before they ask the platform again


def link_lineitem(services: Services, launch: Launch) -> str | None:
    """The line item the launch's scores go to: the launch's own, or the one found or created for its link."""
    access = gradebook_access(launch.claims)
    if access.lineitem or not access.lineitems:
        return access.lineitem
    row = _row(services, link_key(launch))
    return row.lineitem_url if row else None


def gradebook_problem(services: Services, launch: Launch, for_staff: bool = False) -> str | None:
    """Why this link's scores do not reach the gradebook now, in a sentence (None when they do)."""
    access = gradebook_access(launch.claims)
    code = access.problem
    if code is None and not access.lineitem and link_lineitem(services, launch) is None:
        code = "column_pending"
    if code is None:
        return None
    what, what_to_do = PROBLEMS[code]
    if not for_staff:
        return what
    row = _row(services, link_key(launch)) if code == "column_pending" else None
    detail = f" (last try: {row.last_error})" if row is not None and row.last_error else ""
    return f"{what}{detail} {what_to_do}"


def ensure_column(services: Services, launch: Launch) -> list[int]:
    """For a link whose launches name no line item: find or create its column, unless another launch is
    doing so. Returns the passback rows of scores that were waiting for the column (to send now)."""
    access = gradebook_access(launch.claims)
    key = link_key(launch)
    if launch.message_type != "LtiResourceLinkRequest" or access.lineitem or not access.lineitems:
        return []
    if not _claim(services, key):
        return []
    with services.db.session() as session:
        platform = session.get(Platform, launch.platform_id)
    try:
        url = _find_or_create(services, platform, access.lineitems, launch)
    except AgsError as error:
        log.warning(
            "gradebook column not created",
            extra={"event": "lineitem_failed", "platform": platform.issuer, "status": error.status,
                   "reason": error.reason[:200]},
        )  # fmt: skip
        _settle(services, key, claimed_until=utcnow() + CLAIM, last_error=str(error)[:1000])  # retry later
        return []
    return _adopt(services, key, url)


def _row(services: Services, key: dict) -> LinkLineItem | None:
    with services.db.session() as session:
        return session.scalars(select(LinkLineItem).filter_by(**key)).first()


def _claim(services: Services, key: dict) -> bool:
    """Take the link for finding or creating its column: a new row, or one whose earlier claim ran out."""
    now = utcnow()
    try:
        with services.db.session() as session:
            taken = session.execute(
                update(LinkLineItem)
                .filter_by(**key)
                .where(LinkLineItem.lineitem_url.is_(None), LinkLineItem.claimed_until < now)
                .values(claimed_until=now + CLAIM)
            )
            if taken.rowcount == 1:
                return True
            if session.scalars(select(LinkLineItem.id).filter_by(**key)).first() is not None:
                return False  # done, or another launch is on it
            session.add(LinkLineItem(**key, claimed_until=now + CLAIM))
    except IntegrityError:  # another launch inserted the row first
        return False
    return True


def _find_or_create(services: Services, platform: Platform, lineitems_url: str, launch: Launch) -> str:
    """The URL of the line item for the resource link: one the platform has (ours first), or a new one for
    the assignment version the link is pinned to, labelled like the link."""
    resource_link_id = launch.resource_link_id
    found = [
        item
        for item in services.ags.link_lineitems(platform, lineitems_url, resource_link_id)
        if item.get("resourceLinkId") == resource_link_id and isinstance(item.get("id"), str)
    ]
    if found:
        return next((item for item in found if item.get("tag") == TAG), found[0])["id"]
    version = pin(services, launch)
    created = services.ags.create_lineitem(
        platform,
        lineitems_url,
        {"label": _column_label(launch, version.title), "scoreMaximum": total_points(version),
         "resourceLinkId": resource_link_id, "resourceId": assignment_of(services.db, version).name, "tag": TAG},
    )  # fmt: skip
    if not isinstance(created.get("id"), str):
        raise AgsError("the platform created a line item but did not say its URL (id)", retryable=True)
    return created["id"]


def _column_label(launch: Launch, assignment_title: str) -> str:
    """The link's own title (the activity's name in the LMS): two activities of one assignment get two columns
    a teacher can tell apart. The assignment's title when the platform sends none."""
    link = launch.claims.get(RESOURCE_LINK_CLAIM)
    title = link.get("title") if isinstance(link, dict) else None
    return title.strip() if isinstance(title, str) and title.strip() else assignment_title


def _settle(services: Services, key: dict, **values) -> None:
    with services.db.session() as session:
        session.execute(update(LinkLineItem).filter_by(**key).values(**values))


def _adopt(services: Services, key: dict, url: str) -> list[int]:
    """Record the column, give it to the link's attempts that had none, and queue their users' scores (one
    transaction: a crash leaves the attempts either with the column and their outbox rows or with neither)."""
    with services.db.session() as session:
        session.execute(update(LinkLineItem).filter_by(**key).values(lineitem_url=url, last_error=None))
        waiting = list(session.scalars(select(Attempt).filter_by(**key, lineitem_url=None)))
        for attempt in waiting:
            attempt.lineitem_url = url
        graded = {attempt.user_id: attempt for attempt in waiting if attempt.status == "graded"}
        return [record_grade(services, session, attempt) for attempt in graded.values()]
