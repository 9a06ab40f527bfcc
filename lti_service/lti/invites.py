"""Registration invites: dynamic registration only through an admin-issued, single-use, expiring URL.

`python -m lti_service platform invite` creates one and prints `<tool>/lti/register/<token>` for the
administrator to paste into the LMS. The database keeps only the token's SHA-256, and `redeem` marks
an invite used with one conditional UPDATE, so of any number of concurrent uses exactly one succeeds,
on SQLite and PostgreSQL alike.
"""

from __future__ import annotations

import datetime as dt
import re
import secrets

from sqlalchemy import select, update

from ..db import Database, RegistrationInvite, token_digest, utcnow

MAX_LIFETIME = dt.timedelta(days=30)
DURATION = re.compile(r"^(\d+)([smhd])$")
UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def parse_duration(text: str) -> dt.timedelta:
    """ "90s", "30m", "1h", "7d" -> a timedelta (ValueError for anything else, or more than 30 days)."""
    match = DURATION.match(text.strip())
    if not match or int(match.group(1)) == 0:
        raise ValueError(f"{text!r} is not a duration like 30m, 1h or 2d")
    lifetime = dt.timedelta(**{UNITS[match.group(2)]: int(match.group(1))})
    if lifetime > MAX_LIFETIME:
        raise ValueError("an invite may live at most 30 days")
    return lifetime


def create(db: Database, lifetime: dt.timedelta, name: str = "") -> tuple[str, RegistrationInvite]:
    """A new invite; its token (shown once, never stored) and its row."""
    token = secrets.token_urlsafe(32)
    with db.session() as session:
        invite = RegistrationInvite(token_sha256=token_digest(token), name=name[:200], expires_at=utcnow() + lifetime)
        session.add(invite)
    return token, invite


def redeem(db: Database, token: str) -> tuple[RegistrationInvite | None, str]:
    """Use an invite up. (the invite, "") for exactly one caller per valid token; otherwise (None, why):
    "missing", "unknown", "used" or "expired"."""
    if not token:
        return None, "missing"
    digest, now = token_digest(token), utcnow()
    with db.session() as session:
        taken = session.execute(
            update(RegistrationInvite)
            .where(
                RegistrationInvite.token_sha256 == digest,
                RegistrationInvite.used_at.is_(None),
                RegistrationInvite.expires_at > now,
            )
            .values(used_at=now)
        ).rowcount
        invite = session.scalars(select(RegistrationInvite).filter_by(token_sha256=digest)).first()
    if taken == 1:
        return invite, ""
    return None, "unknown" if invite is None else "used" if invite.used_at is not None else "expired"
