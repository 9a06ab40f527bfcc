"""security: registration invites, login state per client, attempt numbers, platform service origins

Revision ID: 0003_security
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003_security"
down_revision = "0002"
branch_labels = None
depends_on = None

# Existing attempts are numbered in the order they were stored, per user and link.
NUMBER_EXISTING_ATTEMPTS = """
UPDATE attempts SET number = (
    SELECT count(*) FROM attempts AS earlier
    WHERE earlier.platform_id = attempts.platform_id AND earlier.context_id = attempts.context_id
      AND earlier.resource_link_id = attempts.resource_link_id AND earlier.user_id = attempts.user_id
      AND earlier.id <= attempts.id
)
"""


def upgrade() -> None:
    op.create_table(
        "registration_invites",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token_sha256", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("used_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_sha256"),
    )
    with op.batch_alter_table("platforms", schema=None) as batch_op:
        batch_op.add_column(sa.Column("service_origins", sa.JSON(), nullable=False, server_default="[]"))
    with op.batch_alter_table("lti_state", schema=None) as batch_op:
        batch_op.add_column(sa.Column("client", sa.String(length=64), nullable=True))
        batch_op.create_index(batch_op.f("ix_lti_state_client"), ["client"], unique=False)
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("number", sa.Integer(), nullable=True))
    op.execute(NUMBER_EXISTING_ATTEMPTS)
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.alter_column("number", existing_type=sa.Integer(), nullable=False)
        batch_op.create_unique_constraint(
            "uq_attempt_number", ["platform_id", "context_id", "resource_link_id", "user_id", "number"]
        )


def downgrade() -> None:
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.drop_constraint("uq_attempt_number", type_="unique")
        batch_op.drop_column("number")
    with op.batch_alter_table("lti_state", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_lti_state_client"))
        batch_op.drop_column("client")
    with op.batch_alter_table("platforms", schema=None) as batch_op:
        batch_op.drop_column("service_origins")
    op.drop_table("registration_invites")
