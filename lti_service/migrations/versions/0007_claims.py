"""claims: how many times workers have taken an attempt or a preview grade, so that a notebook whose
grading stops its worker every time is set aside after a few tries instead of taking every worker in turn

Revision ID: 0007_claims
Revises: 0006_assignments
"""

import sqlalchemy as sa
from alembic import op

revision = "0007_claims"
down_revision = "0006_assignments"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for table in ("attempts", "preview_grades"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column("claims", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    for table in ("attempts", "preview_grades"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column("claims")
