"""`backup` and `restore` of the embedded default (lti_service/backup.py), through the command line."""

from __future__ import annotations

import subprocess
import sys
import threading

from lti_service.config import Config
from lti_service.db import Attempt, Launch
from lti_service.keys import KeyStore
from lti_service.platforms import add_platform
from lti_service.services import Services
from lti_service.submissions.grading import create_attempt


def cli(data_dir, *args: str) -> subprocess.CompletedProcess:
    env = {"DATA_DIR": str(data_dir), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "lti_service", *args], env=env, capture_output=True, text=True)


def test_a_backup_taken_while_uploads_arrive_restores_every_upload_and_the_keys(tmp_path):
    live, other = tmp_path / "live", tmp_path / "other"
    services = Services.from_config(Config(data_dir=live))
    secret = services.config.ensure_secret_key()
    platform = add_platform(services.db, "https://lms.example", "c1", ["d"], "a", "t", "j")

    def upload(user: str) -> int:
        launch = Launch(platform_id=platform.id, context_id="c", resource_link_id="r", user_id=user, claims={})
        return create_attempt(services, launch, "n.ipynb", user.encode())[0].id

    upload("before")
    stop = threading.Event()
    writer = threading.Thread(target=lambda: [upload(f"during-{i}") for i in range(10_000) if not stop.is_set()])
    writer.start()
    try:
        made = cli(live, "backup", str(tmp_path / "backup"))
    finally:
        stop.set()
        writer.join()
    assert made.returncode == 0, made.stderr[-2000:]
    assert cli(live, "backup", str(tmp_path / "backup")).returncode == 2  # never over an earlier backup

    restored = cli(other, "restore", str(tmp_path / "backup"))
    assert restored.returncode == 0, restored.stderr[-2000:]
    services_after = Services.from_config(Config(data_dir=other))
    with services_after.db.session() as session:
        users = {a.user_id for a in session.query(Attempt)}
    assert "before" in users and users <= {"before"} | {f"during-{i}" for i in range(10_000)}
    assert KeyStore(other / "keys").jwks() == KeyStore(live / "keys").jwks()
    assert Config(data_dir=other).ensure_secret_key() == secret


def test_backup_says_what_to_do_on_postgresql(tmp_path):
    env = {"DATA_DIR": str(tmp_path), "PATH": "/usr/bin:/bin", "DATABASE_URL": "postgresql://u:p@127.0.0.1:9/x"}
    run = subprocess.run(
        [sys.executable, "-c", "from lti_service.backup import *; from lti_service.config import Config; "
         "import pathlib; backup(Config(), pathlib.Path('b'))"],
        env=env, capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode != 0 and "pg_dump" in run.stderr
