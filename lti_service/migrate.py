"""Schema migrations with Alembic, run by `serve`, `worker` and `db upgrade` before anything else."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from alembic.config import Config as AlembicConfig

MIGRATIONS = Path(__file__).with_name("migrations")


def alembic_config(sqlalchemy_url: str) -> AlembicConfig:
    # Alembic (with Mako and Pygments, ~0.15 s) is imported when migrating, not by every import of this module.
    from alembic.config import Config as AlembicConfig

    config = AlembicConfig()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", sqlalchemy_url.replace("%", "%%"))
    return config


def upgrade(sqlalchemy_url: str) -> None:
    """Bring the database to the newest schema (a no-op when it is already there)."""
    from alembic import command

    command.upgrade(alembic_config(sqlalchemy_url), "head")
