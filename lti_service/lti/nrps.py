"""Names and Role Provisioning Services: the course roster, so staff see who has not submitted."""

from __future__ import annotations

from ..db import Platform
from . import roles
from .ags import NRPS_SCOPE, AgsClient, AgsError
from .outbound import OutboundError, fetch, platform_origins

MEMBERSHIP = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
MAX_PAGES = 50


def members(ags: AgsClient, platform: Platform, url: str) -> list[dict]:
    """Every member, following rel="next" links (kept as sent: pylti1p3 lower-cases them); AgsError on failure.
    Every page, the first and the linked ones, must be on the platform's origins."""
    token = ags.access_token(platform, [NRPS_SCOPE])
    headers = {"Authorization": f"Bearer {token}", "Accept": MEMBERSHIP}
    found: list[dict] = []
    for _ in range(MAX_PAGES):
        try:
            reply = fetch("get", url, origins=platform_origins(platform), timeout=ags.timeout, headers=headers)
        except OutboundError as error:
            raise AgsError(f"{url}: {error.reason}", retryable=error.retryable) from None
        if reply.status != 200:
            raise AgsError(f"{url}: HTTP {reply.status}", retryable=reply.status >= 500)
        page = reply.json()
        listed = page.get("members") if isinstance(page, dict) else None
        found += [m for m in listed if isinstance(m, dict)] if isinstance(listed, list) else []
        url = reply.links.get("next")
        if not url:
            break
    return found


def is_learner(member: dict) -> bool:
    """A student of the course, whichever role form the platform sends (Moodle sends "Learner")."""
    member_roles = member.get("roles")
    return isinstance(member_roles, list) and roles.is_learner(member_roles)
