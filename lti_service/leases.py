"""Rows one worker at a time may hold for a while: gradings (attempts, preview grades), the gradebook's outbox
and a link's insights, each under the same kind of lease.

A claim is one compare-and-set: a single UPDATE that writes a fresh random lease id and the lease's end where
the row is free (what free means is the caller's: queued, due, or its holder's lease ended), so of claims that
race the database lets exactly one through, however close together they come. The holder renews the end while
it works and writes its outcome through `held`, which matches nothing once another worker took the row over
(its lease id changed): the late result of a worker that froze is dropped, never recorded over the new one.
"""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Update, update
from sqlalchemy.orm import Session

from .db import utcnow

LEASE_ID_CHARS = 32
"""hexadecimal characters of a lease id (the tables' lease_id columns hold this many)"""


@dataclass(frozen=True)
class Leases:
    """The leases of one table: its `lease_id` column and `until`, the name of the column of the lease's end."""

    table: Any
    until: str

    def ended(self, now: dt.datetime) -> ColumnElement[bool]:
        """The row's lease has run out: its holder died or froze, and another worker may take it over."""
        return getattr(self.table, self.until) < now

    def claim(
        self, session: Session, row_id: int, free: ColumnElement[bool], seconds: float, **values: Any
    ) -> str | None:
        """Lease the row for `seconds` if `free` holds for it at this moment, setting `values` too; the lease id,
        or None when the row was not free (another claim won)."""
        lease_id = secrets.token_hex(LEASE_ID_CHARS // 2)
        taken = session.execute(
            update(self.table)
            .where(self.table.id == row_id, free)
            .values(lease_id=lease_id, **{self.until: _end(seconds)}, **values)
        )
        return lease_id if taken.rowcount == 1 else None

    def held(self, row_id: int, lease_id: str) -> Update:
        """An UPDATE of the row that does nothing once this lease no longer holds it."""
        return update(self.table).where(self.table.id == row_id, self.table.lease_id == lease_id)

    def renew(self, session: Session, row_id: int, lease_id: str, seconds: float) -> bool:
        """Move the lease's end `seconds` from now; False when the lease was lost."""
        return session.execute(self.held(row_id, lease_id).values(**{self.until: _end(seconds)})).rowcount == 1


def _end(seconds: float) -> dt.datetime:
    return utcnow() + dt.timedelta(seconds=seconds)
