"""Backups of the embedded default: the SQLite database (every upload, grade and assignment), the signing
keys and the secret key, copied consistently while the tool serves, and put back.

The database is copied with SQLite's online backup (a snapshot, whatever writes meanwhile); the keys and
the secret key are small files copied as they are. PostgreSQL deployments use the database's own tools
(pg_dump, continuous archiving) and copy KEYS_DIR and SECRET_KEY beside them.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from sqlalchemy.engine import make_url

from .config import Config

DATABASE_FILE = "decode-grader.db"
KEYS = "keys"
SECRET_KEY_FILE = "secret_key"


class BackupError(Exception):
    """What stops a backup or a restore; str() says what to do."""


def backup(config: Config, target: Path) -> None:
    """Copy the database, the keys and the secret key into the new directory `target`."""
    database = _sqlite_file(config)
    try:
        target.mkdir(parents=True, mode=0o700)
    except FileExistsError:
        raise BackupError(f"{target} exists already: give a new directory for each backup") from None
    source = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    copy = sqlite3.connect(target / DATABASE_FILE)
    try:
        source.backup(copy)
    finally:
        copy.close()
        source.close()
    if config.keys_dir.is_dir():
        shutil.copytree(config.keys_dir, target / KEYS)
    if (config.data_dir / SECRET_KEY_FILE).is_file():
        shutil.copy2(config.data_dir / SECRET_KEY_FILE, target / SECRET_KEY_FILE)


def restore(config: Config, source: Path) -> None:
    """Put a backup back, with the tool stopped: the database, the keys and the secret key as they were.
    `serve` upgrades the schema at start if the backup is older."""
    database = _sqlite_file(config)
    if not (source / DATABASE_FILE).is_file():
        raise BackupError(f"{source} holds no backup ({DATABASE_FILE} is missing)")
    database.parent.mkdir(parents=True, exist_ok=True)
    backup_db, live = sqlite3.connect(f"file:{source / DATABASE_FILE}?mode=ro", uri=True), sqlite3.connect(database)
    try:
        backup_db.backup(live)
    finally:
        live.close()
        backup_db.close()
    if (source / KEYS).is_dir():  # the keys as they were: the backup's newest key signs again
        shutil.rmtree(config.keys_dir, ignore_errors=True)
        shutil.copytree(source / KEYS, config.keys_dir)
    if (source / SECRET_KEY_FILE).is_file():
        shutil.copy2(source / SECRET_KEY_FILE, config.data_dir / SECRET_KEY_FILE)


def _sqlite_file(config: Config) -> Path:
    url = make_url(config.sqlalchemy_url)
    if url.get_backend_name() != "sqlite" or not url.database:
        raise BackupError(
            "backup and restore are for the embedded SQLite database; with PostgreSQL use pg_dump (or "
            "continuous archiving) and copy KEYS_DIR and SECRET_KEY beside it"
        )
    return Path(url.database)
