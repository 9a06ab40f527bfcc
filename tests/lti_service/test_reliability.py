"""Faults injected into the real tool (small classes; `make soak` runs the full scenarios): no grade is
lost or held back by a backlog, an LMS outage, a dead worker, a lost queue task, or a connection flood."""

from __future__ import annotations

import datetime as dt
import os
import re
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from alembic import command
from huey import SqliteHuey
from sqlalchemy import select, text
from sqlalchemy.exc import SQLAlchemyError

from lti_service import jobs
from lti_service.config import Config
from lti_service.db import Attempt, Launch, Passback
from lti_service.jobs import DatabasePoll, build_queue
from lti_service.lti.ags import SCORE_SCOPE
from lti_service.migrate import alembic_config, upgrade
from lti_service.platforms import add_platform
from lti_service.services import Services
from lti_service.submissions import batches, grading
from lti_service.submissions.grading import MAX_CLAIMS, SubmissionRefused, claim, create_attempt
from testbed.classroom import Classroom
from testbed.host import sandbox_processes_under
from testbed.lms import Lms, StudentPage, in_gradebook, start_lms
from testbed.submissions import notebook_bytes, slow_notebook
from testbed.tool import children, free_port, wait_for

FAST_CLOCK = {"PASSBACK_BACKOFF": "0.05", "PASSBACK_MAX_BACKOFF": "0.2", "WORKER_POLL": "0.25"}
UNREACHABLE = "http://127.0.0.1:9"  # nothing listens on the discard port: connections are refused


@pytest.fixture(scope="module")
def fast_lms(tmp_path_factory, built_assignment):
    """The tool with short retry waits (the 72 h retry window stays the default)."""
    lms = start_lms(tmp_path_factory.mktemp("fast"), **FAST_CLOCK)
    yield lms
    lms.tool.stop()
    lms.platform.stop()


def tool_database(lms: Lms) -> sqlite3.Connection:
    return sqlite3.connect(Path(lms.tool.env["DATA_DIR"]) / "decode-grader.db", timeout=10, isolation_level=None)


def test_a_score_leaves_right_after_grading_whatever_is_queued(fast_lms):
    """Scores do not queue behind the grading backlog: the first arrives before half the class is graded.
    The column's maximum is read once per worker process (the tool's two), not once per score."""
    room = Classroom(fast_lms, 12, "backlog", prefix="backlog")
    room.launch()
    reads_before = fast_lms.state()["lineitem_reads"]
    room.upload(threads=12)
    wait_for(room.all_scores_in, timeout=60)
    assert 1 <= fast_lms.state()["lineitem_reads"] - reads_before <= len(fast_lms.tool.worker_pids()) == 2
    tally = room.tally(fast_lms.tool.env)
    assert (tally.recorded, tally.wrong, tally.duplicates) == (12, 0, 0)
    graded = sorted(graded for _, graded in room.attempt_times(fast_lms.tool.env).values())
    assert min(tally.first_score_at.values()) < graded[len(graded) // 2]
    assert statistics.median(tally.graded_to_score_s) < 1.0


def dashboard_html(staff: StudentPage) -> str:
    return staff.session.get(staff.url, timeout=10).text


def waiting_alert(staff: StudentPage) -> str:
    """The dashboard's alert about grades waiting to reach the gradebook ("" when there is none)."""
    found = re.search(r'id="grades-waiting"[^>]*>([^<]*)', dashboard_html(staff))
    return found.group(1) if found else ""


def test_grades_wait_out_an_lms_outage_and_arrive_without_a_resend(fast_lms):
    """The instructor sees how many grades wait, since when and why (never the platform's response body);
    the student sees "will retry"; once the LMS is back every grade arrives, with nobody re-sending."""
    lms = fast_lms
    lms.hook("resource-link", resource_link_id="outage", line_item=True)
    ada, grace = lms.open("student-ada", "outage"), lms.open("student-grace", "outage")
    staff = lms.open("instructor-turing", "outage")
    lms.hook("outage", status=503)
    try:
        ada.upload(notebook_bytes())
        grace.upload(notebook_bytes("decode_time_one_step_short"))
        assert wait_for(lambda: ada.attempts()[0]["gradebook_state"] == "retrying")
        alert = wait_for(lambda: "2 grades are waiting" in (text := waiting_alert(staff)) and text)
        assert " UTC (last reason: the platform answered HTTP 503)" in alert
        assert "test hook" not in dashboard_html(staff)  # the body of the platform's answer
        # more tries than the old policy allowed (8, then the grade was dropped for good)
        tries = re.compile(r"\(try (\d+)\); the tool keeps trying")
        wait_for(lambda: min(map(int, tries.findall(dashboard_html(staff))) or [0]) >= 10)
    finally:
        lms.hook("outage", status=None)
    scores = wait_for(lambda: len(book := lms.gradebook("outage")) == 2 and book)
    assert scores == {"student-ada": in_gradebook(16), "student-grace": in_gradebook(14)}
    assert wait_for(lambda: not waiting_alert(staff))


def test_retries_stop_only_after_the_retry_window(fast_lms):
    """The default window is 72 h from the first failure: still retried at 71 h, given up at 73 h."""
    lms = fast_lms
    lms.hook("resource-link", resource_link_id="long-outage", line_item=True)
    page = lms.open("student-ada", "long-outage")
    lms.hook("outage", status=503)
    database = tool_database(lms)
    row = "FROM passbacks WHERE resource_link_id = 'long-outage'"

    def tries() -> int:
        return database.execute(f"SELECT tries {row}").fetchone()[0]

    def failing_for(hours: int) -> None:
        since = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(hours=hours)
        database.execute(f"UPDATE passbacks SET failing_since = ? WHERE {row.split('WHERE ')[1]}", (str(since),))

    try:
        page.upload(notebook_bytes())
        wait_for(lambda: page.attempts()[0]["gradebook_state"] == "retrying")
        failing_for(71)
        before = tries()
        wait_for(lambda: tries() >= before + 2)
        assert page.attempts()[0]["gradebook_state"] == "retrying"
        failing_for(73)
        assert wait_for(lambda: page.attempts()[0]["gradebook_state"] == "failed")
        assert (
            database.execute(f"SELECT last_error {row}")
            .fetchone()[0]
            .startswith("the platform answered HTTP 503; gave up after 73")
        )
    finally:
        lms.hook("outage", status=None)
        database.close()


@pytest.mark.parametrize(("status", "retried"), [(408, True), (429, True), (503, True), (400, False), (422, False)])
def test_only_a_refusal_of_the_request_itself_stops_the_retries(fast_lms, status, retried):
    """A 4xx other than 401/408/409/429 says the request is wrong: no retry. Anything else is retried."""
    link = f"answer-{status}"
    fast_lms.hook("resource-link", resource_link_id=link, line_item=True)
    page = fast_lms.open("student-grace", link)
    fast_lms.hook("fail-scores", count=1, status=status)
    page.upload(notebook_bytes())
    assert wait_for(lambda: page.attempts()[0]["gradebook_state"] == ("sent" if retried else "failed"))
    assert [p["status"] for p in fast_lms.score_posts("student-grace", link)] == (
        [status, 200] if retried else [status]
    )


def test_a_failing_line_item_read_never_posts_a_score_on_the_wrong_scale(fast_lms):
    """While the platform fails to say the line item's maximum nothing is posted (the notebook's 16 points
    as the maximum would show 14 of the line item's 100); once it answers, 87.5 of 100 arrives."""
    lms = fast_lms
    lms.hook("resource-link", resource_link_id="scale", line_item=True)
    page = lms.open("student-ada", "scale")
    lms.hook("outage", status=503, endpoints=["lineitem"])
    try:
        page.upload(notebook_bytes("decode_time_one_step_short"))
        assert wait_for(lambda: page.attempts()[0]["gradebook_state"] == "retrying")
    finally:
        lms.hook("outage", status=None)
    assert wait_for(lambda: lms.gradebook("scale")) == {"student-ada": in_gradebook(14)}
    posted = [(p["scoreGiven"], p["scoreMaximum"]) for p in lms.score_posts("student-ada", "scale")]
    assert posted == [(in_gradebook(14), 100.0)]


@pytest.mark.alone
def test_a_class_worth_of_idle_connections_locks_nobody_out_and_grading_goes_on(fast_lms):
    """1100 idle connections (waitress's default allowed 100; past 1023 open files, select() fails)."""
    page = fast_lms.open("student-ada", "idle-connections")
    idle = [socket.create_connection(("127.0.0.1", fast_lms.tool.port)) for _ in range(1100)]
    try:
        started = time.monotonic()
        assert requests.get(f"{fast_lms.tool.url}/lti/jwks.json", timeout=10).status_code == 200
        assert time.monotonic() - started < 2
        assert page.upload(notebook_bytes()).status_code == 200
        assert page.wait_graded(1)[0]["score"] == 16.0
    finally:
        for connection in idle:
            connection.close()


def cpus_of(pid: int) -> list[int]:
    """The CPUs any thread of the process may run on."""
    return sorted(set().union(*(os.sched_getaffinity(int(t)) for t in os.listdir(f"/proc/{pid}/task"))))


def test_serve_runs_worker_processes_and_starts_them_again_when_they_die(fast_lms):
    """Two grading processes by default (not threads of one: they would share one GIL), each on a CPU of its
    own (this machine has two), which a worker started again gets back, and its sandboxes keep to."""
    own_cpus = [[cpu] for cpu in sorted(os.sched_getaffinity(0))[:2]]
    killed = fast_lms.tool.worker_pids()
    assert len(killed) == 2
    assert wait_for(lambda: sorted(map(cpus_of, killed)) == own_cpus)  # once each has started
    for worker in killed:
        os.kill(worker, signal.SIGKILL)

    def both_started_again() -> bool:
        workers = fast_lms.tool.worker_pids()
        return len(workers) == 2 and not set(workers) & set(killed)

    wait_for(both_started_again)
    page = fast_lms.open("student-grace", "worker-restarted")
    page.upload(notebook_bytes())
    assert page.wait_graded(1)[0]["score"] == 16.0
    workers = fast_lms.tool.worker_pids()
    assert wait_for(lambda: sorted(map(cpus_of, workers)) == own_cpus)
    grader = wait_for(lambda: [w for w in workers if len(sandbox_processes_under(w)) >= 2])[0]  # tests and sandbox
    assert all(cpus_of(sandbox) == cpus_of(grader) for sandbox in sandbox_processes_under(grader))


def test_an_upload_saved_while_the_queue_is_down_is_graded(tmp_path, built_assignment):
    """No 5xx for a saved upload: the student sees it queued, and a worker finds it in the database."""
    lms = start_lms(tmp_path, QUEUE_URL=f"redis://127.0.0.1:{free_port()}/0", **FAST_CLOCK)
    try:
        page = lms.open("student-ada", "decode-1")
        response = page.upload(notebook_bytes())
        assert response.status_code == 200 and "Attempt 1" in response.text
        (attempt,) = page.wait_graded(1)
        assert attempt["score"] == 16.0
        assert wait_for(lambda: lms.scores("student-ada"))[0]["score_given"] == in_gradebook(16)
    finally:
        lms.tool.stop()
        lms.platform.stop()


@pytest.fixture(scope="module")
def workers_apart(tmp_path_factory, built_assignment):
    """`serve --no-worker` on the embedded stores, with a short grading lease; tests start the workers."""
    lms = start_lms(tmp_path_factory.mktemp("apart"), "--no-worker", GRADING_LEASE="2", **FAST_CLOCK)
    yield lms
    lms.tool.stop()
    lms.platform.stop()


@pytest.mark.alone
def test_a_lost_grading_job_is_queued_again_by_an_upload_and_found_by_a_worker(workers_apart):
    lms = workers_apart
    queue = SqliteHuey("decode-grader", filename=str(Path(lms.tool.env["DATA_DIR"]) / "queue.db"))
    page = lms.open("student-ada", "decode-1")
    page.upload(notebook_bytes())
    queue.flush()  # the task is lost (e.g. the process died between saving and queueing)
    assert page.upload(notebook_bytes()).status_code == 200  # the student tries again: the same notebook
    assert queue.pending_count() == 1
    queue.flush()
    worker = lms.tool.start_worker()
    try:
        started = time.monotonic()
        (attempt,) = page.wait_graded(1)
        assert attempt["score"] == 16.0 and time.monotonic() - started < 10
    finally:
        worker.terminate()
        worker.wait(timeout=20)


@pytest.mark.alone
def test_a_killed_workers_attempt_is_graded_elsewhere_once(workers_apart):
    """A worker killed mid-grading: another takes over once its short lease ends. A live worker renews its
    lease while grading takes longer than the lease, so nobody takes its attempt."""
    lms = workers_apart
    doomed = lms.tool.start_worker()
    page = lms.open("student-grace", "decode-1")
    page.upload(slow_notebook(3))
    attempt_id = wait_for(lambda: page.attempts()[0]["status"] == "grading" and page.attempts()[0]["id"])
    doomed.send_signal(signal.SIGKILL)
    killed_at = time.monotonic()
    others = [lms.tool.start_worker(), lms.tool.start_worker()]
    try:
        (attempt,) = page.wait_graded(1)
        assert attempt["score"] == 16.0 and time.monotonic() - killed_at < 15
    finally:
        for worker in others:
            worker.terminate()
            worker.wait(timeout=20)
    claims = [e for e in lms.tool.log_events() if e.get("event") == "grading" and e.get("attempt") == attempt_id]
    assert len(claims) == 2, claims  # the killed worker's, then one other worker's (renewed, never stolen)


def test_a_notebook_that_brings_down_every_worker_grading_it_is_set_aside_and_the_next_worker_moves_on(
    workers_apart,
):
    """Real worker processes, each killed while it grades the same notebook (as a notebook that brought
    its worker down would leave it): after MAX_CLAIMS of them the attempt is failed with a message, never
    taken a fourth time, and the next worker grades another student's notebook."""
    lms = workers_apart
    lms.hook("enrol", users=["student-poison", "student-next"])
    poison, other = lms.open("student-poison", "decode-1"), lms.open("student-next", "decode-1")
    poison.upload(slow_notebook(120))
    attempt_id = poison.attempts()[0]["id"]

    def claims() -> int:
        return sum(1 for e in lms.tool.log_events() if e.get("event") == "grading" and e.get("attempt") == attempt_id)

    for taken in range(1, MAX_CLAIMS + 1):
        worker = lms.tool.start_worker()
        wait_for(lambda taken=taken: claims() == taken, timeout=30)
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=20)
    worker = lms.tool.start_worker()
    try:
        other.upload(notebook_bytes())
        (graded,) = other.wait_graded(1)
        (failed,) = poison.wait_graded(1)
    finally:
        worker.terminate()
        worker.wait(timeout=20)
    assert graded["score"] == 16.0
    assert failed["status"] == "failed" and "set aside" in failed["error"]
    assert claims() == MAX_CLAIMS


def test_worker_with_several_processes_supervises_them_and_stops_them_with_it(workers_apart):
    supervisor = workers_apart.tool.start_worker(workers=2)
    graders = wait_for(lambda: len(children(supervisor.pid)) == 2 and children(supervisor.pid))
    os.kill(graders[0], signal.SIGKILL)
    wait_for(lambda: len(children(supervisor.pid)) == 2 and graders[0] not in children(supervisor.pid))
    graders = {pid: started_at(pid) for pid in children(supervisor.pid)}
    supervisor.terminate()
    supervisor.wait(timeout=30)
    assert not [pid for pid, started in graders.items() if started_at(pid) == started]  # pids are reused


def started_at(pid: int) -> str | None:
    """When the process with this pid started (clock ticks since boot), None if there is none: a pid alone
    names another process once the first has ended and the pid was given out again."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except OSError:
        return None


STOP_WHILE_STARTING = """
import subprocess, sys
from pathlib import Path
from lti_service.cli import _stop_workers
sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
known, stray = subprocess.Popen(sleeper), subprocess.Popen(sleeper)  # the stray's Popen "never returned"
_stop_workers([known])
print(known.returncode, Path(f"/proc/{stray.pid}").exists())
"""


def test_a_worker_being_started_when_the_supervisor_stops_is_stopped_with_it():
    """A stop (SIGTERM) can interrupt the Popen of a worker being started again, which then never returns it:
    the supervisor stops that worker too (found among its own children), and waits for it. In a process of its
    own: the supervisor stops every child it has."""
    stopped = subprocess.run([sys.executable, "-c", STOP_WHILE_STARTING], capture_output=True, text=True, timeout=60)
    assert stopped.stdout.split() == [str(-signal.SIGTERM), "False"], stopped.stderr


def test_the_graded_status_and_the_outbox_row_are_one_transaction(tmp_path, built_assignment):
    """If the outbox row cannot be written, the grade is not recorded either; the attempt is graded again
    once its lease ends, and then both are written."""
    services = Services.from_config(Config(data_dir=tmp_path, grading_lease=0.5))
    platform = add_platform(services.db, UNREACHABLE, "c1", ["d"], f"{UNREACHABLE}/auth", f"{UNREACHABLE}/token", "j")
    ags = {"lineitem": f"{UNREACHABLE}/lineitem", "scope": [SCORE_SCOPE]}
    claims = {"https://purl.imsglobal.org/spec/lti-ags/claim/endpoint": ags}
    launch = Launch(platform_id=platform.id, context_id="c", resource_link_id="r", user_id="u", claims=claims)
    attempt, _ = create_attempt(services, launch, "decode.ipynb", notebook_bytes())
    with services.db.engine.begin() as connection:
        connection.execute(
            text("CREATE TRIGGER no_outbox BEFORE INSERT ON passbacks BEGIN SELECT RAISE(ABORT, 'x'); END")
        )
    with pytest.raises(SQLAlchemyError):
        build_queue(services).grade.call_local(attempt.id)  # the outbox write fails (as if the worker crashed)
    assert attempt_status(services, attempt.id) == "grading"  # not graded without its outbox row
    with services.db.engine.begin() as connection:
        connection.execute(text("DROP TRIGGER no_outbox"))
    poll = DatabasePoll(services)
    wait_for(lambda: poll.round() and attempt_status(services, attempt.id) == "graded", timeout=10)
    with services.db.session() as session:
        (row,) = session.scalars(select(Passback)).all()
    assert (row.user_id, row.status, row.last_error) == (
        "u",
        "pending",
        "could not connect (ConnectionError)",
    )


def attempt_status(services: Services, attempt_id: int) -> str:
    with services.db.session() as session:
        return session.get(Attempt, attempt_id).status


def test_an_attempt_whose_worker_vanished_is_graded_by_the_database_poll(tmp_path, built_assignment):
    """A worker died mid-grading (its lease has ended): a worker's poll grades the attempt again."""
    services = Services.from_config(Config(data_dir=tmp_path))
    platform = add_platform(services.db, "https://lms.example", "c1", ["d"], "a", "t", "j")
    launch = Launch(platform_id=platform.id, context_id="c", resource_link_id="r", user_id="u", claims={})
    attempt, _ = create_attempt(services, launch, "decode.ipynb", notebook_bytes())
    with services.db.session() as session:
        row = session.get(Attempt, attempt.id)
        row.status, row.deadline = "grading", dt.datetime(2000, 1, 1)
    assert DatabasePoll(services).round()
    with services.db.session() as session:
        row = session.get(Attempt, attempt.id)
        assert (row.status, row.score) == ("graded", 16.0)


def test_a_notebook_whose_grading_stops_its_worker_every_time_is_set_aside_not_looped(tmp_path, built_assignment):
    """Each worker that takes it dies or freezes (its lease runs out with no outcome): after MAX_CLAIMS takes
    it is failed, with a message staff read on the dashboard, instead of taking every worker in turn; a
    regrade gives it its tries again."""
    services = Services.from_config(Config(data_dir=tmp_path))
    platform = add_platform(services.db, "https://lms.example", "c1", ["d"], "a", "t", "j")
    launch = Launch(platform_id=platform.id, context_id="c", resource_link_id="r", user_id="u", claims={})
    attempt_id = create_attempt(services, launch, "decode.ipynb", notebook_bytes())[0].id
    for _ in range(MAX_CLAIMS):
        assert claim(services, attempt_id) is not None
        with services.db.session() as session:  # the worker that took it died: its lease runs out
            session.get(Attempt, attempt_id).deadline = dt.datetime(2000, 1, 1)
    assert DatabasePoll(services).round()
    with services.db.session() as session:
        row = session.get(Attempt, attempt_id)
        assert row.status == "failed" and "set aside" in row.error and "regrade" in row.error
    assert not DatabasePoll(services).round()  # nothing left to take
    batches.start(services, {"platform_id": platform.id, "context_id": "c", "resource_link_id": "r"}, "regrade")
    jobs.grade_and_send(services, attempt_id)  # what the regrade's task does
    assert attempt_status(services, attempt_id) == "graded"


OTHERS = [f"student-{i:02d}" for i in range(20)]


def graded_in_turn(tmp_path, monkeypatch, flood: int) -> list[str]:
    """The users whose notebooks one worker grades, in order, after one student uploaded `flood` notebooks
    and then twenty students one each (tasks run in upload order, as one worker takes them)."""
    services = Services.from_config(Config(data_dir=tmp_path, max_waiting_uploads=50))
    platform = add_platform(services.db, "https://lms.example", "c1", ["d"], "a", "t", "j")
    graded = []
    monkeypatch.setattr(
        grading, "grade_notebook", lambda s, z, data, label: graded.append(data.decode()) or {"status": "graded"}
    )
    ids = []
    for user in ["flood"] * flood + OTHERS:
        launch = Launch(platform_id=platform.id, context_id="c", resource_link_id="r", user_id=user, claims={})
        ids.append(create_attempt(services, launch, "n.ipynb", f"{user} {len(ids)}".encode())[0].id)
    for attempt_id in ids:
        jobs.grade_and_send(services, attempt_id)
    assert all(attempt_status(services, i) == "graded" for i in ids)
    return [text.split()[0] for text in graded]


def test_a_students_many_uploads_never_wait_in_front_of_other_students_first(tmp_path, monkeypatch):
    """Served in turns over students: each of twenty students with one upload waits the same number of
    gradings whether another student uploaded once or twenty times."""
    alone = graded_in_turn(tmp_path / "one", monkeypatch, flood=1)
    flooded = graded_in_turn(tmp_path / "twenty", monkeypatch, flood=20)
    assert alone == ["flood", *OTHERS]
    waits = {user: flooded.index(user) for user in OTHERS}
    assert waits == {user: alone.index(user) for user in OTHERS}
    assert flooded[21:] == ["flood"] * 19


def test_a_student_cannot_have_more_notebooks_waiting_than_the_cap(tmp_path):
    services = Services.from_config(Config(data_dir=tmp_path, max_waiting_uploads=3))
    platform = add_platform(services.db, "https://lms.example", "c1", ["d"], "a", "t", "j")
    launch = Launch(platform_id=platform.id, context_id="c", resource_link_id="r", user_id="u", claims={})
    ids = [create_attempt(services, launch, "n.ipynb", f"version {i}".encode())[0].id for i in range(3)]
    with pytest.raises(SubmissionRefused, match="3 notebooks waiting to be graded already"):
        create_attempt(services, launch, "n.ipynb", b"version 4")
    with services.db.session() as session:
        session.get(Attempt, ids[0]).status = "graded"
    create_attempt(services, launch, "n.ipynb", b"version 4")  # one was graded: room for one more


def test_a_busy_consumers_poll_only_takes_over_attempts_whose_worker_died(tmp_path, built_assignment):
    """In a burst every queued attempt has waited long: it waits its turn in a busy queue rather than being
    graded by the poll beside the consumer (two gradings in one process share its GIL). Once the consumer
    is idle, the poll grades a long-queued attempt (its task may be lost)."""
    services = Services.from_config(Config(data_dir=tmp_path))
    platform = add_platform(services.db, "https://lms.example", "c1", ["d"], "a", "t", "j")
    ids = {}
    for user in ("queued", "orphaned"):
        launch = Launch(platform_id=platform.id, context_id="c", resource_link_id="r", user_id=user, claims={})
        ids[user] = create_attempt(services, launch, "decode.ipynb", notebook_bytes())[0].id
    with services.db.session() as session:
        session.get(Attempt, ids["queued"]).created_at = dt.datetime(2000, 1, 1)
        orphaned = session.get(Attempt, ids["orphaned"])
        orphaned.status, orphaned.deadline = "grading", dt.datetime(2000, 1, 1)
    busy = DatabasePoll(services, consumer_busy=lambda: True)
    assert busy.round() and not busy.round()
    assert [attempt_status(services, ids[u]) for u in ("queued", "orphaned")] == ["queued", "graded"]
    assert DatabasePoll(services, consumer_busy=lambda: False).round()
    assert attempt_status(services, ids["queued"]) == "graded"


def test_the_queue_knows_when_its_consumer_is_running_a_task_even_when_the_queue_fails_after_it(tmp_path, monkeypatch):
    """Redis gone while a grading ran: the task ends, then huey's own bookkeeping fails (and its post-execute
    hooks never run). The consumer is idle again all the same, so the database poll takes over."""
    queue = build_queue(Services.from_config(Config(data_dir=tmp_path)))
    seen = []
    monkeypatch.setattr(jobs, "grade_and_send", lambda services, attempt_id: seen.append(bool(queue.running)))
    assert not queue.running
    queue.huey.execute(queue.grade.s(1))
    assert seen == [True] and not queue.running

    def queue_gone(key):
        raise ConnectionError("Redis is restarting")

    monkeypatch.setattr(queue.huey, "delete", queue_gone)  # what huey does right after a task
    with pytest.raises(ConnectionError):
        queue.huey.execute(queue.grade.s(2))
    assert seen == [True, True] and not queue.running


def test_grades_the_old_policy_dropped_are_retried_after_the_upgrade(tmp_path):
    """The old policy marked a grade failed after 8 tries even when the platform had only been down; the
    upgrade makes those grades pending again, and leaves the ones the platform refused."""
    url = f"sqlite:///{tmp_path / 'tool.db'}"
    command.upgrade(alembic_config(url), "0002")
    errors = {
        "down": "https://lms.example/li: HTTP 503 Service Unavailable",
        "unreachable": "https://lms.example/li: ConnectionError",
        "throttled": "https://lms.example/li: HTTP 429 slow down",
        "refused": "https://lms.example/li: HTTP 422 user is not enrolled",
    }
    with sqlite3.connect(tmp_path / "tool.db") as database:
        for user, error in errors.items():
            database.execute(
                "INSERT INTO passbacks (platform_id, context_id, resource_link_id, lineitem_url, user_id, status,"
                " tries, next_try_at, last_error) VALUES (1, 'c', 'r', 'https://lms.example/li', ?, 'failed', 8,"
                " '2026-01-01 00:00:00', ?)",
                (user, error),
            )
    upgrade(url)
    with sqlite3.connect(tmp_path / "tool.db") as database:
        statuses = dict(database.execute("SELECT user_id, status FROM passbacks"))
    assert statuses == {"down": "pending", "unreachable": "pending", "throttled": "pending", "refused": "failed"}


def test_uploads_are_graded_after_the_embedded_queue_file_is_deleted(tmp_path, built_assignment):
    """Someone deletes the embedded queue's file while the tool serves: processes that had it open go on
    with the deleted file, the others make a new one, so tasks go where no worker reads them; the database
    is the record and the workers' poll grades every upload all the same."""
    lms = start_lms(tmp_path, **FAST_CLOCK)
    try:
        page = lms.open("student-ada", "decode-1")
        page.upload(notebook_bytes())
        page.wait_graded(1)
        for path in Path(lms.tool.env["DATA_DIR"]).glob("queue.db*"):
            path.unlink()
        for number, link in enumerate(("decode-1", "decode-2"), start=2):
            other = lms.open("student-grace", link)
            assert other.upload(notebook_bytes()).status_code == 200
            assert other.wait_graded(1)[0]["score"] == 16.0, number
    finally:
        lms.tool.stop()
        lms.platform.stop()


def test_uploads_are_graded_while_the_embedded_queue_file_is_locked(tmp_path, built_assignment):
    """Another process holds the embedded queue's file locked (a backup tool, a stuck writer): an upload is
    still saved and answered (queueing gives up after its timeout), and the workers' poll grades it."""
    lms = start_lms(tmp_path, **FAST_CLOCK)
    try:
        page = lms.open("student-ada", "decode-1")
        page.upload(notebook_bytes())
        page.wait_graded(1)
        locker = sqlite3.connect(Path(lms.tool.env["DATA_DIR"]) / "queue.db", isolation_level=None)
        locker.execute("BEGIN EXCLUSIVE")
        try:
            other = lms.open("student-grace", "decode-1")
            assert other.upload(notebook_bytes()).status_code == 200
            assert other.wait_graded(1)[0]["score"] == 16.0
        finally:
            locker.execute("ROLLBACK")
            locker.close()
    finally:
        lms.tool.stop()
        lms.platform.stop()
