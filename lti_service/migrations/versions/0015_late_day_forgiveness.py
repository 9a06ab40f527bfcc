"""late days given back forgive that many days of lateness (late_day_uses.forgiven), not all of a link's lateness
(refunded)

A link given back before this kept no count of its days (refund set them to 0): the count is read back from the
line of history the refund wrote ("2 late days given back, lateness forgiven").

Revision ID: 0015_late_day_forgiveness
Revises: 0014_lite_draft_usage
"""

import re

import sqlalchemy as sa
from alembic import op

revision = "0015_late_day_forgiveness"
down_revision = "0014_lite_draft_usage"
branch_labels = None
depends_on = None

GIVEN_BACK = re.compile(r"(\d+) late days? given back")


def upgrade() -> None:
    with op.batch_alter_table("late_day_uses", schema=None) as batch_op:
        batch_op.add_column(sa.Column("forgiven", sa.Integer(), nullable=False, server_default="0"))
    connection = op.get_bind()
    refunded = connection.execute(
        sa.text("SELECT id, platform_id, context_id, resource_link_id, user_id FROM late_day_uses WHERE refunded")
    ).all()
    for use_id, *link_and_user in refunded:
        connection.execute(
            sa.text("UPDATE late_day_uses SET forgiven = :days WHERE id = :id"),
            {"days": _given_back(connection, *link_and_user), "id": use_id},
        )
    with op.batch_alter_table("late_day_uses", schema=None) as batch_op:
        batch_op.drop_column("refunded")


def _given_back(connection, platform_id: int, context_id: str, resource_link_id: str, user_id: str) -> int:
    """The days the refund gave back, from its line of history (0 when there is none to read)."""
    changes = connection.execute(
        sa.text(
            "SELECT change FROM accommodation_changes WHERE platform_id = :p AND context_id = :c "
            "AND resource_link_id = :r AND user_id = :u ORDER BY id DESC"
        ),
        {"p": platform_id, "c": context_id, "r": resource_link_id, "u": user_id},
    ).scalars()
    return next((int(found.group(1)) for change in changes if (found := GIVEN_BACK.match(change))), 0)


def downgrade() -> None:
    with op.batch_alter_table("late_day_uses", schema=None) as batch_op:
        batch_op.add_column(sa.Column("refunded", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.execute("UPDATE late_day_uses SET refunded = (forgiven > 0)")
    with op.batch_alter_table("late_day_uses", schema=None) as batch_op:
        batch_op.drop_column("forgiven")
