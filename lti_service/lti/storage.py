"""Server-side storage for pylti1p3's OIDC state and nonces (instead of the signed cookie session).

The rows are written by anonymous OIDC logins, so they are kept for minutes (pylti1p3 asks for 24 h),
each remembers the client address that caused it (login_limits.py bounds rows per client and in all),
and a successful launch deletes its login's rows.
"""

from __future__ import annotations

import datetime as dt
import typing as t

from flask import has_request_context, request
from pylti1p3.launch_data_storage.base import LaunchDataStorage
from sqlalchemy import delete, func, select

from ..db import Database, KeyValue, utcnow

STATE_LIFETIME = 600  # seconds: a login that has not come back as a launch by then is abandoned


def client_address() -> str | None:
    """The requesting client's address (the proxy's X-Forwarded-For with TRUST_PROXY=1), as stored."""
    return (request.remote_addr or "unknown")[:64] if has_request_context() else None


class DatabaseLaunchDataStorage(LaunchDataStorage[t.Any]):
    """Keys are global (no session cookie): state and nonce values are random and single-use."""

    def __init__(self, db: Database) -> None:
        super().__init__()
        self.db = db

    def get_session_cookie_name(self) -> str | None:
        return None

    def can_set_keys_expiration(self) -> bool:
        return True

    def get_value(self, key: str) -> t.Any:
        with self.db.session() as session:
            row = session.get(KeyValue, self._prepare_key(key))
            return row.value if row is not None and row.expires_at > utcnow() else None

    def set_value(self, key: str, value: t.Any, exp: int | None = None) -> None:
        """One upsert statement (no read first): this runs twice in every OIDC login."""
        row = {
            "key": self._prepare_key(key),
            "value": value,
            "expires_at": utcnow() + dt.timedelta(seconds=min(exp or STATE_LIFETIME, STATE_LIFETIME)),
            "client": client_address(),
        }
        statement = self.db.insert(KeyValue).values(**row)
        statement = statement.on_conflict_do_update(
            index_elements=[KeyValue.key], set_={"value": row["value"], "expires_at": row["expires_at"]}
        )
        with self.db.session() as session:
            session.execute(statement)

    def check_value(self, key: str) -> bool:
        return self.get_value(key) is not None

    def consume(self, key: str) -> bool:
        """Delete a live key; True for exactly one caller, however many race (a nonce is used once)."""
        with self.db.session() as session:
            result = session.execute(
                delete(KeyValue).where(KeyValue.key == self._prepare_key(key), KeyValue.expires_at > utcnow())
            )
            return result.rowcount == 1

    def take(self, key: str) -> t.Any:
        """A live key's value, deleted as it is read: for exactly one caller, however many race."""
        value = self.get_value(key)
        return value if value is not None and self.consume(key) else None

    def live_rows(self, client: str) -> int:
        """Unexpired rows stored by one client's logins."""
        live = (KeyValue.client == client) & (KeyValue.expires_at > utcnow())
        with self.db.session() as session:
            return session.scalar(select(func.count()).select_from(KeyValue).where(live))

    def all_rows(self) -> int:
        with self.db.session() as session:
            return session.scalar(select(func.count()).select_from(KeyValue))

    def purge_expired(self) -> int:
        with self.db.session() as session:
            return session.execute(delete(KeyValue).where(KeyValue.expires_at <= utcnow())).rowcount
