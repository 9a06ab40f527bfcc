"""The platform registry: add (or extend with a deployment), list, remove, and a cached directory."""

from __future__ import annotations

import threading
import time
from urllib.parse import urlsplit

from sqlalchemy import func, select

from .db import Attempt, Database, Platform

DIRECTORY_TTL = 5.0  # seconds a process may use its copy of the platforms table
MISS_RELOAD_INTERVAL = 0.5  # at most one re-read per this many seconds because a lookup found nothing


class PlatformDirectory:
    """The registered platforms as one process sees them, re-read at most every DIRECTORY_TTL seconds.

    Every launch looks platforms up several times (pylti1p3's registration and deployment checks, the
    Content-Security-Policy of each response); one query per few seconds serves them all. A platform
    removed elsewhere is forgotten within DIRECTORY_TTL; a lookup that finds nothing reads the table again
    (at most once per MISS_RELOAD_INTERVAL, so requests naming unknown issuers cannot each cost a query),
    so a platform or deployment just added with the CLI is accepted at once.
    """

    def __init__(self, db: Database, ttl: float = DIRECTORY_TTL) -> None:
        self.db, self.ttl = db, ttl
        self._lock = threading.Lock()
        self._platforms: list[Platform] = []
        self._loaded_at = self._miss_reloaded_at = float("-inf")

    def all(self) -> list[Platform]:
        with self._lock:
            if time.monotonic() - self._loaded_at > self.ttl:
                self._platforms, self._loaded_at = list_platforms(self.db), time.monotonic()
            return self._platforms

    def _reload_after_miss(self) -> bool:
        """Read the table again now, unless a miss did so less than MISS_RELOAD_INTERVAL ago."""
        with self._lock:
            now = time.monotonic()
            if now - self._miss_reloaded_at < MISS_RELOAD_INTERVAL:
                return False
            self._platforms, self._loaded_at = list_platforms(self.db), now
            self._miss_reloaded_at = now
            return True

    def invalidate(self) -> None:
        """Forget the copy (after this process changed the table)."""
        with self._lock:
            self._loaded_at = float("-inf")

    def find(self, issuer: str, client_id: str | None, deployment_id: str | None = None) -> Platform | None:
        """The platform for an issuer and client id (or the issuer's only one when client_id is None), and
        with that deployment when one is named."""
        found = self._find(issuer, client_id, deployment_id)
        if found is None and self._reload_after_miss():
            found = self._find(issuer, client_id, deployment_id)
        return found

    def _find(self, issuer: str, client_id: str | None, deployment_id: str | None) -> Platform | None:
        matches = [p for p in self.all() if p.issuer == issuer and (client_id is None or p.client_id == client_id)]
        if len(matches) != 1 or (deployment_id is not None and deployment_id not in (matches[0].deployment_ids or [])):
            return None
        return matches[0]

    def frame_origins(self) -> list[str]:
        """Origins allowed to frame the tool: every registered platform's issuer and login URL."""
        urls = [url for p in self.all() for url in (p.issuer, p.auth_login_url)]
        return sorted({f"{u.scheme}://{u.netloc}" for u in map(urlsplit, urls) if u.scheme in ("http", "https")})


def add_platform(
    db: Database,
    issuer: str,
    client_id: str,
    deployment_ids: list[str],
    auth_login_url: str,
    auth_token_url: str,
    key_set_url: str,
    name: str = "",
) -> Platform:
    """Register a platform, or update it and add deployments when issuer and client id exist."""
    with db.session() as session:
        platform = session.scalars(select(Platform).filter_by(issuer=issuer, client_id=client_id)).first()
        if platform is None:
            platform = Platform(issuer=issuer, client_id=client_id, deployment_ids=[])
            session.add(platform)
        platform.deployment_ids = sorted(set(platform.deployment_ids or []) | set(deployment_ids))
        platform.auth_login_url, platform.auth_token_url, platform.key_set_url = (
            auth_login_url,
            auth_token_url,
            key_set_url,
        )
        platform.name = name or platform.name or ""
        session.flush()
        return platform


def list_platforms(db: Database) -> list[Platform]:
    with db.session() as session:
        return list(session.scalars(select(Platform).order_by(Platform.id)))


def remove_platform(db: Database, platform_id: int, delete_data: bool = False) -> bool:
    """Forget a platform. Its students' attempts and grades go with it, so that needs delete_data."""
    with db.session() as session:
        platform = session.get(Platform, platform_id)
        if platform is None:
            return False
        attempts = session.scalar(select(func.count(Attempt.id)).filter_by(platform_id=platform_id))
        if attempts and not delete_data:
            raise ValueError(f"{attempts} submitted attempts belong to it; add --delete-data to delete them too")
        session.delete(platform)
        return True
