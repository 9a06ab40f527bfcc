"""written answers whose question marker was deleted get a digest of their own (autograder/written.py): the
attempts that stored a blank answer's digest for such a question read their notebook again when next shown

Revision ID: 0016_missing_answers
Revises: 0015_late_day_forgiveness
"""

import sqlalchemy as sa
from alembic import op

revision = "0016_missing_answers"
down_revision = "0015_late_day_forgiveness"
branch_labels = None
depends_on = None

EMPTY_DIGEST = "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"
"""the digest autograder/written.py gave an answer with nothing written, and, until this revision, an answer
that was not found"""
BATCH = 500


def upgrade() -> None:
    """Forget the stored digests of attempts where a blank answer's digest may stand for a missing one (a truly
    blank answer gets the same digest again, so its grade stays; a missing one is graded anew)."""
    attempts = sa.table("attempts", sa.column("id", sa.Integer), sa.column("written", sa.JSON))
    connection = op.get_bind()
    last = 0
    while rows := connection.execute(
        sa.select(attempts.c.id, attempts.c.written)
        .where(attempts.c.id > last, attempts.c.written.is_not(None))
        .order_by(attempts.c.id)
        .limit(BATCH)
    ).all():
        last = rows[-1].id
        stale = [row.id for row in rows if isinstance(row.written, dict) and EMPTY_DIGEST in row.written.values()]
        if stale:
            connection.execute(sa.update(attempts).where(attempts.c.id.in_(stale)).values(written=None))


def downgrade() -> None:
    """Nothing to undo: the digests are read again from the notebooks when needed."""
