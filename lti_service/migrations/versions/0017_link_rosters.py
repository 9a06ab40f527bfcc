"""each link's roster as the platform last listed it, read at most once a minute by all web processes together

Revision ID: 0017_link_rosters
Revises: 0016_missing_answers
"""

import sqlalchemy as sa
from alembic import op

revision = "0017_link_rosters"
down_revision = "0016_missing_answers"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "link_rosters",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("platform_id", sa.Integer(), nullable=False),
        sa.Column("context_id", sa.String(length=400), nullable=False),
        sa.Column("resource_link_id", sa.String(length=400), nullable=False),
        sa.Column("tried_at", sa.DateTime(), nullable=False),
        sa.Column("students", sa.JSON(), nullable=True),
        sa.Column("read_at", sa.DateTime(), nullable=True),
        sa.Column("failure", sa.String(length=500), nullable=True),
        sa.ForeignKeyConstraint(["platform_id"], ["platforms.id"], ondelete="CASCADE"),
        sa.UniqueConstraint("platform_id", "context_id", "resource_link_id"),
    )


def downgrade() -> None:
    op.drop_table("link_rosters")
