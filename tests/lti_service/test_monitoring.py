"""What operators watch (lti_service/monitoring.py): /healthz, /readyz, /metrics and `status`."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from dataclasses import replace

from prometheus_client.parser import text_string_to_metric_families

from lti_service import create_app
from lti_service.config import Config
from lti_service.db import Attempt, Database, Launch, utcnow
from lti_service.jobs import DatabasePoll, grade_and_send
from lti_service.platforms import add_platform
from lti_service.services import Services
from lti_service.submissions.grading import create_attempt
from lti_service.views import dashboard
from testbed.submissions import notebook_bytes

TOKEN = "scrape-token-for-tests"


def samples(body: str) -> dict[tuple[str, tuple], float]:
    """(sample name, sorted labels) -> value, from Prometheus's text format."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(body)
        for sample in family.samples
    }


def test_health_readiness_and_metrics_say_what_the_database_holds(tmp_path, built_assignment):
    services = Services.from_config(Config(data_dir=tmp_path, metrics_token=TOKEN))
    platform = add_platform(services.db, "https://lms.example", "c1", ["d"], "a", "t", "j")
    ids = []
    for user in ("graded", "waiting"):
        launch = Launch(platform_id=platform.id, context_id="c", resource_link_id="r", user_id=user, claims={})
        ids.append(create_attempt(services, launch, "decode.ipynb", notebook_bytes())[0].id)
    grade_and_send(services, ids[0])
    with services.db.session() as session:
        session.get(Attempt, ids[1]).created_at = utcnow() - dt.timedelta(minutes=5)
    client = create_app(services=services).test_client()

    assert client.get("/healthz").get_json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.get_json() == {"ready": True, "database": "ok", "queue": "ok", "sandbox": "ok"}

    assert client.get("/metrics").status_code == 404  # only with the token
    assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 404
    scraped = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert scraped.status_code == 200 and scraped.mimetype == "text/plain"
    figures = samples(scraped.get_data(as_text=True))
    assert figures[("decode_grader_uploads_total", ())] == 2
    assert figures[("decode_grader_gradings_total", (("outcome", "graded"),))] == 1
    assert figures[("decode_grader_queue_depth", ())] == 1
    assert 290 < figures[("decode_grader_oldest_waiting_attempt_seconds", ())] < 600
    assert figures[("decode_grader_upload_to_grade_seconds_count", ())] == 1
    assert figures[("decode_grader_upload_to_grade_seconds_bucket", (("le", "+Inf"),))] == 1
    assert figures[("decode_grader_workers_alive", ())] == 0
    DatabasePoll(services, consumer_busy=lambda: True).round()  # a worker's round notes it is alive
    again = samples(client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).get_data(as_text=True))
    assert again[("decode_grader_workers_alive", ())] == 1


def test_readiness_names_what_is_down(tmp_path):
    """A database that does not answer: /readyz says 503 and which part; /healthz still answers."""
    services = Services.from_config(Config(data_dir=tmp_path))
    gone = Database("postgresql+psycopg://tool:secret@127.0.0.1:9/tool")  # nothing listens on the discard port
    client = create_app(services=replace(services, db=gone)).test_client()
    ready = client.get("/readyz")
    assert ready.status_code == 503 and ready.get_json()["ready"] is False
    assert ready.get_json()["database"] == "unavailable" and ready.get_json()["sandbox"] == "ok"
    assert "127.0.0.1" not in ready.get_data(as_text=True)  # the reason goes to the log, not to the caller
    assert client.get("/healthz").status_code == 200


def test_status_prints_readiness_and_the_metrics(tmp_path):
    env = {"DATA_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-m", "lti_service", "db", "upgrade"], env=env, check=True, capture_output=True)
    run = subprocess.run([sys.executable, "-m", "lti_service", "status"], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.splitlines()[:3] == ["database  ok", "queue     ok", "sandbox   ok"]
    assert samples(run.stdout.split("\n", 3)[3])[("decode_grader_queue_depth", ())] == 0


def test_staff_are_told_when_their_notebooks_wait_long_to_be_graded(tmp_path):
    """The dashboard's alert: only notebooks still waiting after SLOW_GRADING count, the oldest named."""
    services = Services.from_config(Config(data_dir=tmp_path, max_waiting_uploads=10))
    platform = add_platform(services.db, "https://lms.example", "c1", ["d"], "a", "t", "j")
    now = utcnow()
    ages = {"fresh": 1, "slow": 5, "slower": 9, "graded long ago": 30}
    for user, minutes in ages.items():
        launch = Launch(platform_id=platform.id, context_id="c", resource_link_id="r", user_id=user, claims={})
        attempt_id = create_attempt(services, launch, "n.ipynb", user.encode())[0].id
        with services.db.session() as session:
            row = session.get(Attempt, attempt_id)
            row.created_at = now - dt.timedelta(minutes=minutes)
            row.status = "graded" if user == "graded long ago" else "queued"
    with services.db.session() as session:
        attempts = list(session.query(Attempt))
    slow = dashboard.slow_grading(attempts, now)
    assert slow.count == 2 and slow.since == now - dt.timedelta(minutes=9)
    assert dashboard.slow_grading([a for a in attempts if a.user_id == "fresh"], now) is None
