"""a browser keeps no credential in a URL: a launch is bound to the browser that launched it by a cookie
(its token's hash here), a notebook window in the browser is signed in by a cookie of its own (lite_windows),
and the student's work in it is kept by the tool (lite_drafts), not in the browser

Revision ID: 0009_browser_bindings
Revises: 0008_worker_heartbeats
"""

import sqlalchemy as sa
from alembic import op

revision = "0009_browser_bindings"
down_revision = "0008_worker_heartbeats"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("launches", schema=None) as batch_op:
        batch_op.add_column(sa.Column("binding_hash", sa.String(length=64), nullable=True))
    op.create_table(
        "lite_windows",
        sa.Column("id", sa.String(length=64), primary_key=True),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("launch_id", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["launch_id"], ["launches.id"], ondelete="CASCADE"),
    )
    op.create_index("ix_lite_windows_launch_id", "lite_windows", ["launch_id"])
    op.create_index("ix_lite_windows_expires_at", "lite_windows", ["expires_at"])
    op.create_table(
        "lite_drafts",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("platform_id", sa.Integer(), nullable=False),
        sa.Column("context_id", sa.String(length=400), nullable=False),
        sa.Column("resource_link_id", sa.String(length=400), nullable=False),
        sa.Column("user_id", sa.String(length=400), nullable=False),
        sa.Column("path", sa.String(length=300), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.Column("saved_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["platform_id"], ["platforms.id"], ondelete="CASCADE"),
        sa.UniqueConstraint("platform_id", "context_id", "resource_link_id", "user_id", "path"),
    )


def downgrade() -> None:
    op.drop_table("lite_drafts")
    op.drop_index("ix_lite_windows_expires_at", table_name="lite_windows")
    op.drop_index("ix_lite_windows_launch_id", table_name="lite_windows")
    op.drop_table("lite_windows")
    with op.batch_alter_table("launches", schema=None) as batch_op:
        batch_op.drop_column("binding_hash")
