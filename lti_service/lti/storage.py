"""Server-side storage for pylti1p3's OIDC state and nonces (instead of the signed cookie session)."""

from __future__ import annotations

import datetime as dt
import typing as t

from pylti1p3.launch_data_storage.base import LaunchDataStorage
from sqlalchemy import delete
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from ..db import Database, KeyValue, utcnow

DEFAULT_LIFETIME = 3600


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
            "expires_at": utcnow() + dt.timedelta(seconds=exp or DEFAULT_LIFETIME),
        }
        insert = postgresql_insert if self.db.engine.dialect.name == "postgresql" else sqlite_insert
        statement = insert(KeyValue).values(**row)
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

    def purge_expired(self) -> int:
        with self.db.session() as session:
            return session.execute(delete(KeyValue).where(KeyValue.expires_at <= utcnow())).rowcount
