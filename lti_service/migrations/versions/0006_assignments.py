"""assignments as data: many assignments in versions, the version each link is pinned to, uploads being
built, and links moving to a new version; Decode stored as version 1 and every earlier link pinned to it

Revision ID: 0006_assignments
Revises: 0005_reliability
"""

import sqlalchemy as sa
from alembic import op

revision = "0006_assignments"
down_revision = "0005_reliability"
branch_labels = None
depends_on = None


def _link_columns() -> list[sa.Column]:
    return [
        sa.Column("platform_id", sa.Integer(), nullable=False),
        sa.Column("context_id", sa.String(length=400), nullable=False),
        sa.Column("resource_link_id", sa.String(length=400), nullable=False),
    ]


# Every link the tool knew before: it graded Decode, so it keeps Decode's version 1.
PIN_EARLIER_LINKS = """
INSERT INTO assignment_links (platform_id, context_id, resource_link_id, version_id, bound_at)
SELECT platform_id, context_id, resource_link_id, :version_id, :now FROM (
    SELECT platform_id, context_id, resource_link_id FROM attempts
    UNION SELECT platform_id, context_id, resource_link_id FROM link_settings
    UNION SELECT platform_id, context_id, resource_link_id FROM link_lineitems
    UNION SELECT platform_id, context_id, resource_link_id FROM launches
        WHERE message_type = 'LtiResourceLinkRequest' AND resource_link_id != ''
) AS earlier
"""


def upgrade() -> None:
    _create_tables()
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("assignment_version_id", sa.Integer(), nullable=True))
    version_id = _store_decode()
    bind = op.get_bind()
    bind.execute(sa.text(PIN_EARLIER_LINKS), {"version_id": version_id, "now": _now()})
    bind.execute(sa.text("UPDATE attempts SET assignment_version_id = :v"), {"v": version_id})
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.alter_column("assignment_version_id", existing_type=sa.Integer(), nullable=False)
        batch_op.create_foreign_key(
            "fk_attempts_assignment_version", "assignment_versions", ["assignment_version_id"], ["id"]
        )


def _now():
    from lti_service.db import utcnow

    return utcnow()


def _store_decode() -> int:
    """Decode's version 1 from the build's outputs (the files that graded every earlier attempt)."""
    from lti_service.assignments.builtin import SOURCE, decode_built
    from lti_service.assignments.catalog import version_values
    from lti_service.config import Config

    config = Config()
    assignments = sa.table(
        "assignments",
        sa.column("id"),
        sa.column("name"),
        sa.column("scope"),
        sa.column("builtin"),
        sa.column("created_at"),
    )
    versions = sa.table(
        "assignment_versions", sa.column("id"), sa.column("assignment_id"), sa.column("number"), sa.column("title"),
        sa.column("points"), sa.column("questions", sa.JSON()), sa.column("requirements"), sa.column("environment"),
        sa.column("autograder_zip", sa.LargeBinary()), sa.column("zip_sha256"),
        sa.column("handout", sa.LargeBinary()), sa.column("handout_name"), sa.column("source"),
        sa.column("created_by"), sa.column("created_at"),
    )  # fmt: skip
    built = decode_built(config)
    bind = op.get_bind()
    assignment_id = bind.execute(
        assignments.insert()
        .values(name=built.summary.name, scope="", builtin=True, created_at=_now())
        .returning(assignments.c.id)
    ).scalar_one()
    values = version_values(built, config.assignment_title, SOURCE, "the build")
    values = {name: value for name, value in values.items() if name in versions.c}  # later columns: later migrations
    return bind.execute(
        versions.insert().values(assignment_id=assignment_id, number=1, **values).returning(versions.c.id)
    ).scalar_one()


def _create_tables() -> None:
    op.create_table(
        "assignments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("scope", sa.String(length=450), nullable=False),
        sa.Column("platform_id", sa.Integer(), nullable=True),
        sa.Column("context_id", sa.String(length=400), nullable=True),
        sa.Column("builtin", sa.Boolean(), nullable=False),
        sa.Column("retired_at", sa.DateTime(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["platform_id"], ["platforms.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("scope", "name"),
    )
    op.create_table(
        "assignment_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("assignment_id", sa.Integer(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(length=300), nullable=False),
        sa.Column("points", sa.Float(), nullable=False),
        sa.Column("questions", sa.JSON(), nullable=False),
        sa.Column("requirements", sa.Text(), nullable=False),
        sa.Column("environment", sa.Text(), nullable=False),
        sa.Column("autograder_zip", sa.LargeBinary(), nullable=False),
        sa.Column("zip_sha256", sa.String(length=64), nullable=False),
        sa.Column("handout", sa.LargeBinary(), nullable=False),
        sa.Column("handout_name", sa.String(length=300), nullable=False),
        sa.Column("source", sa.String(length=40), nullable=False),
        sa.Column("created_by", sa.String(length=400), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["assignment_id"], ["assignments.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("assignment_id", "number"),
    )
    op.create_index("ix_assignment_versions_assignment_id", "assignment_versions", ["assignment_id"])
    op.create_table(
        "assignment_builds",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("platform_id", sa.Integer(), nullable=False),
        sa.Column("context_id", sa.String(length=400), nullable=False),
        sa.Column("assignment_id", sa.Integer(), nullable=True),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("title", sa.String(length=300), nullable=False),
        sa.Column("inputs", sa.LargeBinary(), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("step", sa.Text(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("version_id", sa.Integer(), nullable=True),
        sa.Column("created_by", sa.String(length=400), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("deadline", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["assignment_id"], ["assignments.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["platform_id"], ["platforms.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["version_id"], ["assignment_versions.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "assignment_links",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.Column("bound_at", sa.DateTime(), nullable=False),
        *_link_columns(),
        sa.ForeignKeyConstraint(["platform_id"], ["platforms.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["version_id"], ["assignment_versions.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("platform_id", "context_id", "resource_link_id"),
    )
    op.create_table(
        "link_moves",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("from_version_id", sa.Integer(), nullable=False),
        sa.Column("to_version_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        *_link_columns(),
        sa.ForeignKeyConstraint(["from_version_id"], ["assignment_versions.id"]),
        sa.ForeignKeyConstraint(["platform_id"], ["platforms.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["to_version_id"], ["assignment_versions.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "preview_grades",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("move_id", sa.Integer(), nullable=False),
        sa.Column("attempt_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("deadline", sa.DateTime(), nullable=True),
        sa.Column("lease_id", sa.String(length=32), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("max_score", sa.Float(), nullable=True),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("feedback", sa.JSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["attempt_id"], ["attempts.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["move_id"], ["link_moves.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("move_id", "attempt_id"),
    )
    op.create_index("ix_preview_grades_move_id", "preview_grades", ["move_id"])
    op.create_index("ix_preview_grades_status", "preview_grades", ["status"])


def downgrade() -> None:
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.drop_constraint("fk_attempts_assignment_version", type_="foreignkey")
        batch_op.drop_column("assignment_version_id")
    for table in ("preview_grades", "link_moves", "assignment_links", "assignment_builds", "assignment_versions"):
        op.drop_table(table)
    op.drop_table("assignments")
