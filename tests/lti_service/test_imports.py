"""A process imports only what its deployment uses: a grading worker of the embedded default (SQLite database
and queue) loads neither the migration tool (once the database has the newest schema) nor the Redis and
PostgreSQL clients (each a part of every start)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from lti_service.config import Config
from lti_service.services import Services

ROOT = Path(__file__).resolve().parents[2]
NOT_IN_AN_EMBEDDED_WORKER = ("alembic", "mako", "pygments", "redis", "psycopg", "sqlalchemy.dialects.postgresql")

EMBEDDED_WORKER = """
import json, sys
from types import SimpleNamespace

from lti_service import cli, jobs
from lti_service.config import Config
from lti_service.services import Services

services = Services.from_config(Config())  # what cli.main builds for `worker`: the schema is already the newest
queue = jobs.build_queue(services)  # what cli.run_worker builds, on SQLite in DATA_DIR
assert type(queue.huey.storage).__name__ == "SqliteStorage"
print(json.dumps(sorted(sys.modules)))
"""

SQLITE_THEN_REDIS = """
from types import SimpleNamespace

from lti_service import jobs
from lti_service.config import Config

jobs.build_queue(SimpleNamespace(config=Config()))
redis_queue = jobs.build_queue(SimpleNamespace(config=Config(queue_url="redis://127.0.0.1:6379/11")))
print(type(redis_queue.huey.storage.conn).__module__)
"""


def _run(code: str, data_dir: Path) -> str:
    env = {name: value for name, value in os.environ.items() if name not in ("QUEUE_URL", "DATABASE_URL")}
    env["DATA_DIR"] = str(data_dir)
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_an_embedded_worker_imports_no_migration_tool_nor_redis_nor_postgresql_client(tmp_path):
    first = Services.from_config(Config(data_dir=tmp_path, database_url=""))  # `serve`'s start migrates
    first.db.engine.dispose()
    modules = json.loads(_run(EMBEDDED_WORKER, tmp_path))
    loaded = [name for name in modules if name.startswith(tuple(f"{unused}." for unused in NOT_IN_AN_EMBEDDED_WORKER))
              or name in NOT_IN_AN_EMBEDDED_WORKER]  # fmt: skip
    assert loaded == []


def test_a_redis_queue_after_a_sqlite_queue_in_one_process_has_its_redis_client(tmp_path):
    """huey was first imported without redis (the SQLite queue); the Redis queue still gets a real client
    (none connects here: the pool connects on first use)."""
    assert _run(SQLITE_THEN_REDIS, tmp_path).strip() == "redis.client"
