"""The same flow on PostgreSQL and Redis, with the web process and two worker processes apart."""

from __future__ import annotations

import uuid

import psycopg
import pytest
import redis

from tests.lti_service.conftest import notebook_bytes, race_uploads, settings, start_lms
from tests.lti_service.tool import wait_for

POSTGRES = "postgresql://postgres@127.0.0.1:5432"
REDIS_DB = "redis://127.0.0.1:6379/11"


@pytest.fixture
def database():
    """A fresh PostgreSQL database for this test, dropped afterwards."""
    name = f"decode_grader_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    yield f"{POSTGRES}/{name}"
    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture
def queue():
    client = redis.Redis.from_url(REDIS_DB)
    client.flushdb()
    yield REDIS_DB
    client.flushdb()


def test_flow_on_postgresql_and_redis_with_separate_workers(tmp_path, database, queue, built_assignment):
    lms = start_lms(tmp_path, "--no-worker", DATABASE_URL=database, QUEUE_URL=queue)
    try:
        workers = [lms.tool.start_worker(), lms.tool.start_worker()]
        lms.hook("fail-scores", count=1, status=503)
        ada, grace = lms.open("student-ada", "decode-1"), lms.open("student-grace", "decode-1")
        ada.upload(notebook_bytes())
        grace.upload(notebook_bytes("decode_time_one_step_short"))
        assert ada.wait_graded(1)[0]["score"] == 16.0 and grace.wait_graded(1)[0]["score"] == 14.0
        assert wait_for(lambda: len(lms.state()["scores"]) == 2)
        scores = {s["user_id"]: s["score_given"] for s in lms.state()["scores"]}
        assert scores == {"student-ada": 100.0, "student-grace": 87.5}
        assert all(worker.poll() is None for worker in workers)
        with psycopg.connect(database) as connection:
            statuses = connection.execute("SELECT status, count(*) FROM attempts GROUP BY status").fetchall()
        assert statuses == [("graded", 2)]
        data_files = {p.name for p in (tmp_path / "tool").iterdir()}
        assert not data_files & {"queue.db", "decode-grader.db"}, "the embedded SQLite stores must stay unused"
    finally:
        lms.tool.stop()
        lms.platform.stop()


def test_an_attempt_limit_holds_when_uploads_race_on_postgresql(tmp_path, database, built_assignment):
    lms = start_lms(tmp_path, "--no-worker", DATABASE_URL=database)
    try:
        settings(lms.open("instructor-turing", "race"), attempt_limit="1")
        answers = race_uploads(lms.open("student-ada", "race"), 12)
        assert sorted(r.status_code for r in answers) == [303] + [400] * 11
        with psycopg.connect(database) as connection:
            assert connection.execute("SELECT count(*) FROM attempts").fetchone() == (1,)
    finally:
        lms.tool.stop()
        lms.platform.stop()
