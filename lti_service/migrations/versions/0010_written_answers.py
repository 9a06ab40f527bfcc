"""written answers graded by course staff: the questions a version has (assignment_versions.written), each
attempt's answers (attempts.written), rubric items and grades per link, the release and anonymity switches,
and the product a platform's launches name (its gradebook's rules differ: lti/quirks.py)

The built-in Decode stored by 0006 gets its written questions from the build's files here (0006 ran before
the column existed).

Revision ID: 0010_written_answers
Revises: 0009_browser_bindings
"""

import sqlalchemy as sa
from alembic import op

revision = "0010_written_answers"
down_revision = "0009_browser_bindings"
branch_labels = None
depends_on = None

LINK = ("platform_id", "context_id", "resource_link_id")


def _link_columns() -> list[sa.Column]:
    return [
        sa.Column("platform_id", sa.Integer(), nullable=False),
        sa.Column("context_id", sa.String(length=400), nullable=False),
        sa.Column("resource_link_id", sa.String(length=400), nullable=False),
    ]


def upgrade() -> None:
    with op.batch_alter_table("platforms", schema=None) as batch_op:
        batch_op.add_column(sa.Column("product_family", sa.String(length=100), nullable=False, server_default=""))
    with op.batch_alter_table("assignment_versions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("written", sa.JSON(), nullable=True))
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("written", sa.JSON(), nullable=True))
    with op.batch_alter_table("link_settings", schema=None) as batch_op:
        batch_op.add_column(sa.Column("written_released", sa.Boolean(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("anonymous_grading", sa.Boolean(), nullable=False, server_default="0"))
        batch_op.add_column(sa.Column("written_points", sa.JSON(), nullable=True))
    op.create_table(
        "rubric_items",
        sa.Column("id", sa.Integer(), primary_key=True),
        *_link_columns(),
        sa.Column("question", sa.String(length=200), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("points", sa.Float(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("removed", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(["platform_id"], ["platforms.id"], ondelete="CASCADE"),
        sa.UniqueConstraint(*LINK, "question", "position"),
    )
    op.create_table(
        "written_grades",
        sa.Column("id", sa.Integer(), primary_key=True),
        *_link_columns(),
        sa.Column("user_id", sa.String(length=400), nullable=False),
        sa.Column("question", sa.String(length=200), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("items", sa.JSON(), nullable=False),
        sa.Column("adjustment", sa.Float(), nullable=False),
        sa.Column("comment", sa.Text(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("graded_by", sa.String(length=400), nullable=False),
        sa.Column("graded_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["platform_id"], ["platforms.id"], ondelete="CASCADE"),
        sa.UniqueConstraint(*LINK, "user_id", "question", "digest"),
    )
    _decode_written()


def _decode_written() -> None:
    """The built-in Decode's written questions, when the version 0006 stored is the build's present zip."""
    import hashlib

    from lti_service.assignments.builtin import SOURCE, decode_written
    from lti_service.config import Config

    config = Config()
    if not config.autograder_zip.is_file():
        return
    digest = hashlib.sha256(config.autograder_zip.read_bytes()).hexdigest()
    versions = sa.table(
        "assignment_versions", sa.column("zip_sha256"), sa.column("source"), sa.column("written", sa.JSON())
    )
    op.get_bind().execute(
        versions.update()
        .where(versions.c.zip_sha256 == digest, versions.c.source == SOURCE)
        .values(written=[question.to_dict() for question in decode_written(config)])
    )


def downgrade() -> None:
    op.drop_table("written_grades")
    op.drop_table("rubric_items")
    with op.batch_alter_table("link_settings", schema=None) as batch_op:
        batch_op.drop_column("written_points")
        batch_op.drop_column("anonymous_grading")
        batch_op.drop_column("written_released")
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.drop_column("written")
    with op.batch_alter_table("assignment_versions", schema=None) as batch_op:
        batch_op.drop_column("written")
    with op.batch_alter_table("platforms", schema=None) as batch_op:
        batch_op.drop_column("product_family")
