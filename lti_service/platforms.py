"""The platform registry: add (or extend with a deployment), list, remove."""

from __future__ import annotations

from sqlalchemy import select

from .db import Database, Platform


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


def remove_platform(db: Database, platform_id: int) -> bool:
    with db.session() as session:
        platform = session.get(Platform, platform_id)
        if platform is None:
            return False
        session.delete(platform)
        return True
