"""Schema migrations with Alembic, run by `serve`, `worker` and `db upgrade` before anything else."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import create_engine, text
from sqlalchemy.exc import DBAPIError

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
    """Bring the database to the newest schema. Every process of the tool starts with this; when the schema
    is already the newest (every start but the first after an update) it reads one row and returns."""
    if current_revision(sqlalchemy_url) == newest_revision():
        return
    from alembic import command

    command.upgrade(alembic_config(sqlalchemy_url), "head")


def newest_revision() -> str:
    """The last migration: revisions are named after their files, numbered in the order they apply."""
    return max(path.stem for path in (MIGRATIONS / "versions").glob("[0-9]*.py"))


def current_revision(sqlalchemy_url: str) -> str | None:
    """The revision the database is at (None for a new database)."""
    engine = create_engine(sqlalchemy_url)
    try:
        with engine.connect() as connection:
            return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
    except DBAPIError:  # no such table: a new database
        return None
    finally:
        engine.dispose()
