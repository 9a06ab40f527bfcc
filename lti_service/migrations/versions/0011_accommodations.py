"""per-student accommodations (extension, extra attempts, excused) with their history, a link's own due date,
a course's late days and what each student spent, and the due date the LMS sent with each upload

Revision ID: 0011_accommodations
Revises: 0010_written_answers
"""

import sqlalchemy as sa
from alembic import op

revision = "0011_accommodations"
down_revision = "0010_written_answers"
branch_labels = None
depends_on = None

LINK = ("platform_id", "context_id", "resource_link_id")


def _link_columns() -> list[sa.Column]:
    return [
        sa.Column("platform_id", sa.Integer(), nullable=False),
        sa.Column("context_id", sa.String(length=400), nullable=False),
        sa.Column("resource_link_id", sa.String(length=400), nullable=False),
        sa.Column("user_id", sa.String(length=400), nullable=False),
    ]


def _course_columns() -> list[sa.Column]:
    return [
        sa.Column("platform_id", sa.Integer(), nullable=False),
        sa.Column("context_id", sa.String(length=400), nullable=False),
    ]


FK = ("platform_id",), ("platforms.id",)


def upgrade() -> None:
    with op.batch_alter_table("link_settings", schema=None) as batch_op:
        batch_op.add_column(sa.Column("due_at", sa.DateTime(), nullable=True))
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("lms_due_at", sa.DateTime(), nullable=True))
    op.create_table(
        "accommodations",
        sa.Column("id", sa.Integer(), primary_key=True),
        *_link_columns(),
        sa.Column("due_at", sa.DateTime(), nullable=True),
        sa.Column("extra_attempts", sa.Integer(), nullable=False),
        sa.Column("excused", sa.Boolean(), nullable=False),
        sa.Column("set_by", sa.String(length=400), nullable=False),
        sa.Column("set_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(*FK, ondelete="CASCADE"),
        sa.UniqueConstraint(*LINK, "user_id"),
    )
    op.create_table(
        "accommodation_changes",
        sa.Column("id", sa.Integer(), primary_key=True),
        *_link_columns(),
        sa.Column("change", sa.Text(), nullable=False),
        sa.Column("set_by", sa.String(length=400), nullable=False),
        sa.Column("set_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(*FK, ondelete="CASCADE"),
    )
    op.create_table(
        "course_settings",
        sa.Column("id", sa.Integer(), primary_key=True),
        *_course_columns(),
        sa.Column("late_days", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(*FK, ondelete="CASCADE"),
        sa.UniqueConstraint("platform_id", "context_id"),
    )
    op.create_table(
        "late_day_accounts",
        sa.Column("id", sa.Integer(), primary_key=True),
        *_course_columns(),
        sa.Column("user_id", sa.String(length=400), nullable=False),
        sa.Column("used", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(*FK, ondelete="CASCADE"),
        sa.UniqueConstraint("platform_id", "context_id", "user_id"),
    )
    op.create_table(
        "late_day_uses",
        sa.Column("id", sa.Integer(), primary_key=True),
        *_link_columns(),
        sa.Column("days", sa.Integer(), nullable=False),
        sa.Column("refunded", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(*FK, ondelete="CASCADE"),
        sa.UniqueConstraint(*LINK, "user_id"),
    )


def downgrade() -> None:
    for table in ("late_day_uses", "late_day_accounts", "course_settings", "accommodation_changes", "accommodations"):
        op.drop_table(table)
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.drop_column("lms_due_at")
    with op.batch_alter_table("link_settings", schema=None) as batch_op:
        batch_op.drop_column("due_at")
