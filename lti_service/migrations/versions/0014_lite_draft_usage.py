"""a student's drafts of the notebook in the browser are counted per link in one row (lite_draft_usage), changed
with every save in the save's transaction, so the quotas hold when saves race; each draft carries the revision
it was saved at, so a stale window cannot overwrite newer work

Revision ID: 0014_lite_draft_usage
Revises: 0013_insights_failures
"""

import sqlalchemy as sa
from alembic import op

revision = "0014_lite_draft_usage"
down_revision = "0013_insights_failures"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("lite_drafts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("revision", sa.Integer(), nullable=False, server_default="0"))
    op.create_table(
        "lite_draft_usage",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("platform_id", sa.Integer(), nullable=False),
        sa.Column("context_id", sa.String(length=400), nullable=False),
        sa.Column("resource_link_id", sa.String(length=400), nullable=False),
        sa.Column("user_id", sa.String(length=400), nullable=False),
        sa.Column("files", sa.Integer(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["platform_id"], ["platforms.id"], ondelete="CASCADE"),
        sa.UniqueConstraint("platform_id", "context_id", "resource_link_id", "user_id"),
    )
    op.execute(
        "INSERT INTO lite_draft_usage (platform_id, context_id, resource_link_id, user_id, files, size, revision) "
        "SELECT platform_id, context_id, resource_link_id, user_id, count(*), sum(length(content)), 0 "
        "FROM lite_drafts GROUP BY platform_id, context_id, resource_link_id, user_id"
    )


def downgrade() -> None:
    op.drop_table("lite_draft_usage")
    with op.batch_alter_table("lite_drafts", schema=None) as batch_op:
        batch_op.drop_column("revision")
