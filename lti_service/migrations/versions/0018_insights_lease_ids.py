"""a link's insights are leased like gradings and the outbox (leases.py): a random lease id (link_insights.lease_id)
beside the lease's end, which was the id before (two claims in the same microsecond had the same one)

A computation under way when this runs has no lease id: its result is not stored, and the link is computed
again once its lease ends.

Revision ID: 0018_insights_lease_ids
Revises: 0017_link_rosters
"""

import sqlalchemy as sa
from alembic import op

revision = "0018_insights_lease_ids"
down_revision = "0017_link_rosters"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("link_insights", schema=None) as batch_op:
        batch_op.add_column(sa.Column("lease_id", sa.String(length=32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("link_insights", schema=None) as batch_op:
        batch_op.drop_column("lease_id")
