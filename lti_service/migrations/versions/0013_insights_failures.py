"""why a link's insights did not finish, for staff (link_insights.failure, failures); stored insights in the
new shape (user ids and names kept apart, pages show names or opaque references): the old ones are computed again

Revision ID: 0013_insights_failures
Revises: 0012_link_insights
"""

import sqlalchemy as sa
from alembic import op

revision = "0013_insights_failures"
down_revision = "0012_link_insights"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("link_insights") as batch_op:
        batch_op.add_column(sa.Column("failure", sa.String(length=500), nullable=True))
        batch_op.add_column(sa.Column("failures", sa.Integer(), nullable=False, server_default="0"))
    op.execute("UPDATE link_insights SET data = NULL, status = 'stale', lease_until = NULL")


def downgrade() -> None:
    op.execute("UPDATE link_insights SET data = NULL, status = 'stale', lease_until = NULL")
    with op.batch_alter_table("link_insights") as batch_op:
        batch_op.drop_column("failures")
        batch_op.drop_column("failure")
