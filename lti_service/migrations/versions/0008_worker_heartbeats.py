"""worker heartbeats: each worker process notes when it last polled the database, so that operators can
count the workers alive from any process

Revision ID: 0008_worker_heartbeats
Revises: 0007_claims
"""

import sqlalchemy as sa
from alembic import op

revision = "0008_worker_heartbeats"
down_revision = "0007_claims"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "worker_heartbeats",
        sa.Column("worker", sa.String(length=300), primary_key=True),
        sa.Column("seen_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_worker_heartbeats_seen_at", "worker_heartbeats", ["seen_at"])


def downgrade() -> None:
    op.drop_index("ix_worker_heartbeats_seen_at", table_name="worker_heartbeats")
    op.drop_table("worker_heartbeats")
