"""The same flow on PostgreSQL and Redis, with the web process and two worker processes apart."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import psycopg
import pytest
import redis

from testbed.lms import in_gradebook, race_uploads, settings, start_lms
from testbed.submissions import notebook_bytes, slow_notebook
from testbed.tool import free_port, wait_for

REDIS_DB = "redis://127.0.0.1:6379/11"


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
        assert scores == {"student-ada": in_gradebook(16), "student-grace": in_gradebook(14)}
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


@pytest.fixture
def private_redis():
    """A Redis of this test's own (so it can be stopped without saving and started again), and a way to
    start it again on the same port; stopped afterwards."""
    port = free_port()
    command = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    servers = []

    def start() -> redis.Redis:
        servers.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        client = redis.Redis(port=port)
        wait_for(lambda: _answers(client), timeout=20)
        return client

    yield f"redis://127.0.0.1:{port}/0", start
    for server in servers:
        server.kill()
        server.wait()


def grading_a_slow_notebook(lms):
    """Ada's page once her notebook (which sleeps three seconds) is being graded by the queue's task: uploaded once
    the worker's queue consumer runs (uploaded before, it waited long enough for the worker's database poll to take
    it first, seen once: then no task is running when Redis goes away)."""
    assert wait_for(lambda: "Huey consumer started" in lms.tool.log.read_text())
    page = lms.open("student-ada", "decode-1")
    page.upload(slow_notebook(3))
    assert wait_for(lambda: [a["status"] for a in page.attempts()] == ["grading"])
    return page


def _answers(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


def test_redis_stopped_without_saving_mid_grading_strands_nothing(tmp_path, private_redis, built_assignment):
    """Redis shut down without saving while a task runs and while uploads wait, back a few seconds later,
    empty: huey's own bookkeeping after the task fails (so its post-execute hooks never run), the uploads
    made meanwhile were never queued, and the worker (one, so its busy state decides) grades them all from
    the database."""
    url, start_redis = private_redis
    client = start_redis()
    lms = start_lms(tmp_path, "--workers", "1", QUEUE_URL=url, WORKER_POLL="0.25")
    try:
        first = grading_a_slow_notebook(lms)
        try:
            client.shutdown(nosave=True)
        except redis.ConnectionError:  # some versions of the client report the connection it closed
            pass
        assert wait_for(lambda: not _answers(client))
        others = [lms.open("student-grace", link) for link in ("decode-1", "decode-2")]
        for page in others:
            assert page.upload(notebook_bytes()).status_code == 200  # saved; the queue is down
        assert first.wait_graded(1)[0]["score"] == 16.0  # the task ends while Redis is away...
        assert wait_for(lambda: "Unhandled error during execution" in lms.tool.log.read_text())  # ...and huey fails
        start_redis()
        for page in others:
            assert page.wait_graded(1)[0]["score"] == 16.0
    finally:
        lms.tool.stop()
        lms.platform.stop()


def test_tasks_lost_when_redis_is_flushed_are_graded_all_the_same(tmp_path, private_redis, built_assignment):
    """Redis emptied (FLUSHALL, or restarted without its data) while uploads wait behind a grading: their
    tasks are gone; the worker's poll finds them in the database once it is idle."""
    url, start_redis = private_redis
    client = start_redis()
    lms = start_lms(tmp_path, "--workers", "1", QUEUE_URL=url, WORKER_POLL="0.25")
    try:
        first = grading_a_slow_notebook(lms)
        others = [lms.open("student-grace", link) for link in ("decode-1", "decode-2")]
        for page in others:
            assert page.upload(notebook_bytes()).status_code == 200
        assert client.flushall() and [a["status"] for a in first.attempts()] == ["grading"]
        for page in [first, *others]:
            assert page.wait_graded(1)[0]["score"] == 16.0
    finally:
        lms.tool.stop()
        lms.platform.stop()


@pytest.fixture
def private_postgresql():
    """A PostgreSQL server of this test's own (so it can crash and restart), run as the postgres user; its
    URL and a function that restarts it the way a crash does (immediate shutdown, then recovery)."""
    (bin_dir,) = sorted(Path("/usr/lib/postgresql").glob("*/bin"))[-1:]
    data = Path(tempfile.mkdtemp(prefix="decode-grader-pg-"))
    shutil.chown(data, "postgres", "postgres")
    port = free_port()

    def as_postgres(*command: str) -> None:
        subprocess.run(["runuser", "-u", "postgres", "--", *command], check=True, capture_output=True, timeout=120)

    as_postgres(str(bin_dir / "initdb"), "-D", str(data / "db"), "-A", "trust", "-U", "postgres")
    options = f"-p {port} -k {data} -c listen_addresses=127.0.0.1"
    pg_ctl = [str(bin_dir / "pg_ctl"), "-D", str(data / "db"), "-o", options, "-l", str(data / "log"), "-w"]
    as_postgres(*pg_ctl, "start")
    try:
        yield (
            f"postgresql://postgres@127.0.0.1:{port}/postgres",
            lambda: as_postgres(*pg_ctl, "-m", "immediate", "restart"),
        )
    finally:
        as_postgres(*pg_ctl, "-m", "immediate", "stop")
        shutil.rmtree(data, ignore_errors=True)


def test_postgresql_crashing_mid_grading_loses_no_grade(tmp_path, private_postgresql, built_assignment):
    """The database crashes and recovers while a notebook is being graded: that grade is recorded (by the
    worker, or by another once its lease runs out) and later uploads are graded."""
    url, crash_and_recover = private_postgresql
    lms = start_lms(tmp_path, "--workers", "1", DATABASE_URL=url, WORKER_POLL="0.25", GRADING_LEASE="2")
    try:
        first = grading_a_slow_notebook(lms)
        crash_and_recover()
        assert first.wait_graded(1)[0]["score"] == 16.0
        later = lms.open("student-grace", "decode-1")
        later.upload(notebook_bytes())
        assert later.wait_graded(1)[0]["score"] == 16.0
    finally:
        lms.tool.stop()
        lms.platform.stop()
