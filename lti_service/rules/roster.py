"""A link's roster: the students its course platform lists (NRPS), asked for at most once per MAX_AGE per link
by every web process and worker together, and kept in link_rosters between reads.

A reader that finds the kept roster older than MAX_AGE claims the link's row (a compare-and-set on
`tried_at`: of two readers at once, one wins) and asks the platform; every other reader, in any process, uses
the kept roster meanwhile. Staff may have it read again at once (`refresh`), at most once per REFRESH_GAP. A
read that fails, or a roster past the bounds (lti/nrps.py, and PAGE here), leaves the last good roster in use:
staff read why, and when the roster they see was read. Here, not in lti/ (which speaks only LTI) nor in the
views: the rules of a link's students (accommodations.py) and anything above may use it.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field

from sqlalchemy import or_, select, update

from autograder.inside.control import Bounds

from ..db import Launch, LinkRoster, Platform, utcnow
from ..lti import nrps
from ..lti.ags import AgsError
from ..lti.outbound import MAX_BODY
from ..services import Services
from .settings import link_key

log = logging.getLogger("lti_service.roster")
NRPS_CLAIM = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
MAX_AGE = dt.timedelta(minutes=1)
"""how old a kept roster may be before the next reader asks the platform again"""
REFRESH_GAP = dt.timedelta(seconds=10)
"""how soon after the last request staff may have the roster read again"""
PAGE = Bounds(MAX_BODY, 40_000, 300_000)
"""What one roster page may hold before it is parsed. A member is 2 lists and objects and ~11 items (Canvas's
ten fields, a role or two): a page of nrps.MAX_MEMBERS members (Moodle sends all in one) is ~20,000 and
~120,000; at these bounds a page parses into at most ~22 MB."""
NO_SERVICE = (
    "Your course platform does not share its class list with the tool (an LMS administrator can allow it: "
    "the tool's names and roles service in Moodle, the roster scope of its developer key in Canvas)."
)
BEING_READ = "The class list is being read from your course platform: reload the page in a moment."


@dataclass(frozen=True)
class Roster:
    """What staff see of the roster: its students, when it was read, and why it is missing or older."""

    students: dict[str, str] = field(default_factory=dict)
    """user id -> name, of the students (learners) in the platform's order"""
    read_at: dt.datetime | None = None
    problem: str | None = None
    """why there is no roster or it is not the latest, in staff's words"""
    shared: bool = True
    """the platform grants the roster service to this link (staff may have it read again)"""

    @property
    def read_when(self) -> str:
        """When it was read, for a sentence: "14:02 UTC", with the date when not today."""
        if self.read_at is None:
            return ""
        today = self.read_at.date() == utcnow().date()
        return self.read_at.strftime("%H:%M UTC" if today else "%Y-%m-%d %H:%M UTC")


def read(services: Services, launch: Launch) -> Roster:
    """The link's roster: the kept one, asked for again when older than MAX_AGE (by this reader only if no
    other took the link first)."""
    return _read(services, launch, MAX_AGE)[0]


def refresh(services: Services, launch: Launch) -> bool:
    """Ask the platform now (a student just enrolled); False, sending nothing, when the link's roster was asked
    for less than REFRESH_GAP ago, so the button cannot be used to hammer the platform."""
    return _read(services, launch, REFRESH_GAP)[1]


def _read(services: Services, launch: Launch, gap: dt.timedelta) -> tuple[Roster, bool]:
    """The roster, and whether this reader asked the platform (its last request was `gap` ago or more)."""
    service = (launch.claims or {}).get(NRPS_CLAIM)
    url = service.get("context_memberships_url") if isinstance(service, dict) else None
    if not isinstance(url, str) or not url:
        return Roster(problem=NO_SERVICE, shared=False), True
    key = link_key(launch)
    claim = _claim(services, key, gap)
    if claim is not None:
        _fetch(services, launch, key, url, claim)
    with services.db.session() as session:
        row = session.scalars(select(LinkRoster).filter_by(**key)).one()
    problem = row.failure or (None if row.read_at else BEING_READ)
    return Roster(dict(row.students or []), row.read_at, problem), claim is not None


def _claim(services: Services, key: dict, gap: dt.timedelta) -> dt.datetime | None:
    """Take the link for one request to the platform, if none was made within `gap`: the time of the claim (its
    id), or None when another reader made or is making it."""
    now = utcnow()
    with services.db.session() as session:
        new = services.db.insert(LinkRoster).values(**key, tried_at=now)
        if session.execute(new.on_conflict_do_nothing(index_elements=list(key))).rowcount == 1:
            return now
        taken = session.execute(
            update(LinkRoster).filter_by(**key).where(LinkRoster.tried_at < now - gap).values(tried_at=now)
        )
    return now if taken.rowcount == 1 else None


def _fetch(services: Services, launch: Launch, key: dict, url: str, claim: dt.datetime) -> None:
    """Ask the platform and keep its roster (unless a later claim's is kept already), or why it gave none."""
    with services.db.session() as session:
        platform = session.get(Platform, launch.platform_id)
    try:
        members = nrps.members(services.ags, platform, url, PAGE)
    except AgsError as error:
        log.warning(
            "roster not read", extra={"event": "roster_failed", "status": error.status, "reason": error.reason[:200]}
        )
        with services.db.session() as session:
            latest = update(LinkRoster).filter_by(**key).where(LinkRoster.tried_at == claim)
            session.execute(latest.values(failure=_failure(error)[:500]))
        return
    students = list(dict((m.user_id, m.name) for m in members if m.learner).items())
    with services.db.session() as session:
        newer = update(LinkRoster).filter_by(**key).where(or_(LinkRoster.read_at.is_(None), LinkRoster.read_at < claim))
        session.execute(newer.values(students=students, read_at=claim, failure=None))


def _failure(error: AgsError) -> str:
    """Why the roster was not read, and who can help, in staff's words."""
    if isinstance(error, nrps.TooLarge):
        return (
            f"The class list your course platform sent was not used: it {error}, more than the tool reads. "
            "Tell the tool's administrator."
        )
    if error.retryable:  # no answer, or an answer to try again later
        return "The class list could not be read from your course platform just now; reload the page in a minute."
    return f"The class list could not be read from your course platform ({error}): tell your LMS administrator."
