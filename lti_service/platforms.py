"""The platform registry: add (or extend with a deployment), list, remove, and a cached directory."""

from __future__ import annotations

import threading
import time
from urllib.parse import urlsplit

from sqlalchemy import func, select
from sqlalchemy.exc import SQLAlchemyError

from .db import Attempt, Database, Platform

DIRECTORY_TTL = 5.0  # seconds a process may use its copy of the platforms table


class PlatformDirectory:
    """The registered platforms as one process sees them, re-read at most every DIRECTORY_TTL seconds.

    Every launch looks platforms up several times (pylti1p3's registration and deployment checks, the
    Content-Security-Policy of each response); one query per few seconds serves them all. A platform
    added or removed elsewhere is seen within DIRECTORY_TTL.
    """

    def __init__(self, db: Database, ttl: float = DIRECTORY_TTL) -> None:
        self.db, self.ttl = db, ttl
        self._lock = threading.Lock()
        self._platforms: list[Platform] = []
        self._loaded_at = float("-inf")

    def all(self) -> list[Platform]:
        """The platforms; the last copy read while the database does not answer (if there is one)."""
        with self._lock:
            if time.monotonic() - self._loaded_at > self.ttl:
                try:
                    self._platforms, self._loaded_at = list_platforms(self.db), time.monotonic()
                except SQLAlchemyError:
                    if self._loaded_at == float("-inf"):
                        raise
            return self._platforms

    def invalidate(self) -> None:
        """Forget the copy (after this process changed the table)."""
        with self._lock:
            self._loaded_at = float("-inf")

    def find(self, issuer: str, client_id: str | None) -> Platform | None:
        """The platform for an issuer and client id (or the issuer's only one when client_id is None)."""
        matches = [p for p in self.all() if p.issuer == issuer and (client_id is None or p.client_id == client_id)]
        return matches[0] if len(matches) == 1 else None

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
