"""gradebook columns the tool finds or creates for links added without deep linking

Revision ID: 0004_lms
Revises: 0003_security
"""

import sqlalchemy as sa
from alembic import op

revision = "0004_lms"
down_revision = "0003_security"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "link_lineitems",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("lineitem_url", sa.String(length=1000), nullable=True),
        sa.Column("claimed_until", sa.DateTime(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("platform_id", sa.Integer(), nullable=False),
        sa.Column("context_id", sa.String(length=400), nullable=False),
        sa.Column("resource_link_id", sa.String(length=400), nullable=False),
        sa.ForeignKeyConstraint(["platform_id"], ["platforms.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("platform_id", "context_id", "resource_link_id"),
    )


def downgrade() -> None:
    op.drop_table("link_lineitems")
