"""grading leases, passback retries by time

Revision ID: 0005_reliability
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0005_reliability"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("lease_id", sa.String(length=32), nullable=True))
    with op.batch_alter_table("passbacks", schema=None) as batch_op:
        batch_op.add_column(sa.Column("lease_id", sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column("failing_since", sa.DateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("passbacks", schema=None) as batch_op:
        batch_op.drop_column("failing_since")
        batch_op.drop_column("lease_id")
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.drop_column("lease_id")
