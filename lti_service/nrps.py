"""Names and Role Provisioning Services: the course roster, so staff see who has not submitted."""

from __future__ import annotations

import requests

from .ags import NRPS_SCOPE, AgsClient, AgsError
from .db import Platform
from .lti import roles

MEMBERSHIP = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
MAX_PAGES = 50


def members(ags: AgsClient, platform: Platform, url: str) -> list[dict]:
    """Every member, following rel="next" links (kept as sent: pylti1p3 lower-cases them); AgsError on failure."""
    token = ags.access_token(platform, [NRPS_SCOPE])
    found: list[dict] = []
    for _ in range(MAX_PAGES):
        try:
            response = requests.get(
                url, headers={"Authorization": f"Bearer {token}", "Accept": MEMBERSHIP}, timeout=ags.timeout
            )
        except requests.RequestException as error:
            raise AgsError(f"{url}: {type(error).__name__}", retryable=True) from None
        if response.status_code != 200:
            raise AgsError(f"{url}: HTTP {response.status_code}", retryable=response.status_code >= 500)
        found += [m for m in response.json().get("members", []) if isinstance(m, dict)]
        url = response.links.get("next", {}).get("url")
        if not url:
            break
    return found


def is_learner(member: dict) -> bool:
    """A student of the course, whichever role form the platform sends (Moodle sends "Learner")."""
    member_roles = member.get("roles")
    return isinstance(member_roles, list) and roles.is_learner(member_roles)
