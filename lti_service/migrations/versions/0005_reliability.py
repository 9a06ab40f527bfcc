"""grading leases, passback retries by time (and grades the old policy dropped are retried)

Revision ID: 0005_reliability
Revises: 0004_lms
"""

import sqlalchemy as sa
from alembic import op

revision = "0005_reliability"
down_revision = "0004_lms"
branch_labels = None
depends_on = None


# Errors the old policy gave up on after 8 tries (about 4 minutes) although the platform had not refused
# the request: no answer (no HTTP status in the message), 5xx, 401, 408, 409, 429.
RETRYABLE_ERRORS = " OR ".join(
    ["last_error NOT LIKE '%: HTTP %'"] + [f"last_error LIKE '%: HTTP {code}%'" for code in ("5", 401, 408, 409, 429)]
)


def upgrade() -> None:
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("lease_id", sa.String(length=32), nullable=True))
    with op.batch_alter_table("passbacks", schema=None) as batch_op:
        batch_op.add_column(sa.Column("lease_id", sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column("failing_since", sa.DateTime(), nullable=True))
    # Grades dropped by the old policy during an outage are sent again (the score is read when sent).
    op.execute(
        "UPDATE passbacks SET status = 'pending', tries = 0, next_try_at = '2000-01-01 00:00:00' "
        f"WHERE status = 'failed' AND ({RETRYABLE_ERRORS})"
    )


def downgrade() -> None:
    with op.batch_alter_table("passbacks", schema=None) as batch_op:
        batch_op.drop_column("failing_since")
        batch_op.drop_column("lease_id")
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.drop_column("lease_id")
