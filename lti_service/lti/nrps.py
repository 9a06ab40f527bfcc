"""Names and Role Provisioning Services: the course roster, so staff see who has not submitted.

A roster is outside input like any other: at most MAX_PAGES pages, each checked against the caller's `shape`
before it is parsed (this package imports nothing of the grader, whose JSON bounds rules/roster.py passes), at
most MAX_MEMBERS members, each user id at most MAX_USER_ID characters; past any of them the roster is refused
(TooLarge), never kept in part."""

from __future__ import annotations

from typing import NamedTuple, Protocol

from ..db import Platform
from . import roles
from .ags import NRPS_SCOPE, AgsClient, AgsError
from .outbound import OutboundError, fetch, platform_origins

MEMBERSHIP = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
MAX_PAGES = 50
MAX_MEMBERS = 10_000
"""members of every role, over all pages: ten times a course of 1,000 (the dashboard lists every student)"""
MAX_USER_ID = 255
"""characters of a user id: LTI's limit on `sub` (ids are keys: a longer one cannot be cut, it refuses)"""
MAX_NAME = 400
"""characters of a name kept (a launch's name is cut the same: views/lti.py)"""


class Shape(Protocol):
    """What one page's JSON may hold before it is parsed (autograder.inside.control.Bounds is one)."""

    def excess(self, data: bytes) -> str | None: ...


class Member(NamedTuple):
    user_id: str
    name: str
    """the member's name, or their user id when the platform sends none"""
    learner: bool


class TooLarge(AgsError):
    """A roster past the bounds; str() says which, in words ("has more than 10,000 members")."""

    def __init__(self, what: str) -> None:
        super().__init__(what, retryable=False)


def members(ags: AgsClient, platform: Platform, url: str, shape: Shape) -> list[Member]:
    """Every member, following rel="next" links (kept as sent: pylti1p3 lower-cases them); AgsError on failure,
    TooLarge past the bounds. Every page, the first and the linked ones, must be on the platform's origins."""
    token = ags.access_token(platform, [NRPS_SCOPE])
    headers = {"Authorization": f"Bearer {token}", "Accept": MEMBERSHIP}
    found: list[Member] = []
    for _ in range(MAX_PAGES):
        try:
            reply = fetch("get", url, origins=platform_origins(platform), timeout=ags.timeout, headers=headers)
        except OutboundError as error:
            raise AgsError(f"{url}: {error.reason}", retryable=error.retryable) from None
        if reply.status != 200:
            raise AgsError(f"{url}: HTTP {reply.status}", retryable=reply.status >= 500)
        if excess := shape.excess(reply.body):
            raise TooLarge(f"has a page of {excess}")
        found += _page_members(reply.json())
        if len(found) > MAX_MEMBERS:
            raise TooLarge(f"has more than {MAX_MEMBERS:,} members")
        url = reply.links.get("next")
        if not url:
            return found
    raise TooLarge(f"has more than {MAX_PAGES} pages")


def _page_members(page: object) -> list[Member]:
    """The members of one page that have a user id (TooLarge when one is longer than MAX_USER_ID)."""
    listed = page.get("members") if isinstance(page, dict) else None
    found = []
    for member in listed if isinstance(listed, list) else ():
        user_id = member.get("user_id") if isinstance(member, dict) else None
        if not isinstance(user_id, str) or not user_id:
            continue
        if len(user_id) > MAX_USER_ID:
            raise TooLarge(f"has a user id longer than {MAX_USER_ID} characters")
        name = member.get("name")
        name = name[:MAX_NAME] if isinstance(name, str) and name.strip() else user_id
        found.append(Member(user_id, name, is_learner(member)))
    return found


def is_learner(member: dict) -> bool:
    """A student of the course, whichever role form the platform sends (Moodle sends "Learner")."""
    member_roles = member.get("roles")
    return isinstance(member_roles, list) and roles.is_learner(member_roles)
