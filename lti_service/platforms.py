"""The platform registry: add (or extend with a deployment), update, list, remove, and a cached directory."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from .db import Attempt, Database, Platform
from .lti.outbound import origin

if TYPE_CHECKING:
    from .lti.registration import RegisteredPlatform

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
        """The platforms; the last copy read while the database does not answer (if there is one)."""
        with self._lock:
            if time.monotonic() - self._loaded_at > self.ttl:
                try:
                    self._platforms, self._loaded_at = list_platforms(self.db), time.monotonic()
                except SQLAlchemyError:
                    if self._loaded_at == float("-inf"):
                        raise
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
        """Origins allowed to frame the tool: every registered platform's issuer, login URL and service origins
        (hosted Canvas shows courses on the school's domain, neither its issuer nor its sso login host)."""
        urls = [url for p in self.all() for url in (p.issuer, p.auth_login_url, *(p.service_origins or []))]
        return sorted({o for o in map(origin, urls) if o})


class PlatformConflict(ValueError):
    """A change that would silently alter a registered platform; str() says how to make it explicitly."""


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
    """Register a platform, or add deployments to the one with this issuer and client id. Its URLs are
    never changed here (PlatformConflict when they differ): `update_platform` does that, explicitly."""
    urls = (auth_login_url, auth_token_url, key_set_url)
    with db.session() as session:
        platform = session.scalars(select(Platform).filter_by(issuer=issuer, client_id=client_id)).first()
        if platform is None:
            platform = Platform(issuer=issuer, client_id=client_id, deployment_ids=[], service_origins=[])
            platform.auth_login_url, platform.auth_token_url, platform.key_set_url = urls
            session.add(platform)
        elif urls != (platform.auth_login_url, platform.auth_token_url, platform.key_set_url):
            raise PlatformConflict(
                f"platform {platform.id} ({issuer}, client {client_id}) is registered with other URLs; "
                f"change them with `platform update {platform.id} --auth-url ... --token-url ... --jwks-url ...`"
            )
        platform.deployment_ids = sorted(set(platform.deployment_ids or []) | set(deployment_ids))
        platform.name = name or platform.name or ""
        session.flush()
        return platform


def insert_platform(db: Database, registered: RegisteredPlatform, name: str) -> Platform:
    """A new platform from dynamic registration; never an update of an existing
    one: PlatformConflict when its issuer and client id are registered already."""
    try:
        with db.session() as session:
            platform = Platform(
                issuer=registered.issuer, client_id=registered.client_id, name=name[:200],
                deployment_ids=[registered.deployment_id] if registered.deployment_id else [], service_origins=[],
                auth_login_url=registered.auth_login_url, auth_token_url=registered.auth_token_url,
                key_set_url=registered.key_set_url,
            )  # fmt: skip
            session.add(platform)
            session.flush()
            return platform
    except IntegrityError:
        raise PlatformConflict(
            f"{registered.issuer} with client id {registered.client_id} is registered already; a registration "
            "never changes a registered platform (use `python -m lti_service platform update`)"
        ) from None


def update_platform(db: Database, platform_id: int, **changes: object) -> Platform | None:
    """Change a platform's URLs, name or service origins (the operator's explicit command); None if unknown."""
    with db.session() as session:
        platform = session.get(Platform, platform_id)
        if platform is None:
            return None
        for name, value in changes.items():
            setattr(platform, name, value)
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
