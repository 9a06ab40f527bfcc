"""what the class got wrong and who wrote alike, per link, computed in the background (link_insights)

Revision ID: 0012_link_insights
Revises: 0011_accommodations
"""

import sqlalchemy as sa
from alembic import op

revision = "0012_link_insights"
down_revision = "0011_accommodations"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "link_insights",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("platform_id", sa.Integer(), nullable=False),
        sa.Column("context_id", sa.String(length=400), nullable=False),
        sa.Column("resource_link_id", sa.String(length=400), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("requested_at", sa.DateTime(), nullable=False),
        sa.Column("lease_until", sa.DateTime(), nullable=True),
        sa.Column("computed_at", sa.DateTime(), nullable=True),
        sa.Column("seconds", sa.Float(), nullable=True),
        sa.Column("data", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(["platform_id"], ["platforms.id"], ondelete="CASCADE"),
        sa.UniqueConstraint("platform_id", "context_id", "resource_link_id"),
    )
    op.create_index("ix_link_insights_status", "link_insights", ["status"])


def downgrade() -> None:
    op.drop_index("ix_link_insights_status", table_name="link_insights")
    op.drop_table("link_insights")
