"""The job queue and what a worker process runs.

Huey (on SQLite by default, Redis with QUEUE_URL) carries attempt ids so that a worker starts grading an
upload at once; the grade's score leaves from the same worker right after grading. The database says
what is left to do, so the queue may lose or repeat a task: every worker process also polls the database
(WORKER_POLL) for what the queue does not carry (attempts whose task was lost, attempts whose worker died,
grades due for a retry; the same for preview grades of links moving to a new version, and assignments
uploaded in the browser) and does it itself. Doing anything twice is harmless. While the process's queue
consumer is running a task, the queue is busy and its waiting attempts are not lost: the poll then only
takes over attempts whose worker died, so that one process grades one notebook at a time. When the queue is
idle the poll also starts a link's insights, in a child process it looks after at each round without
waiting for it (insights/runner.py), so that grading and lease heartbeats go on meanwhile.
"""

from __future__ import annotations

import datetime as dt
import importlib
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .assignments import builds
from .db import Attempt, Launch, Passback, PreviewGrade, WorkerHeartbeat, utcnow
from .gradebook import passback
from .insights.runner import Analysis
from .lti.storage import DatabaseLaunchDataStorage
from .services import Services
from .submissions import batches, grading, moves

if TYPE_CHECKING:
    from huey import Huey
    from huey.api import TaskWrapper

    from .config import Config

log = logging.getLogger("lti_service.jobs")
DUE_BATCH = 50  # grades sent per poll round before the poll looks for lost attempts again
TURN_CANDIDATES = 5  # attempts whose turn it is that a task tries, when other workers take the first ones
HOUSEKEEPING_EVERY = 60.0  # seconds between purges of expired launches and LTI state


@dataclass
class Queue:
    huey: Huey
    grade: TaskWrapper
    send_score: TaskWrapper
    grade_preview: TaskWrapper
    """grade an attempt against the version its link is moving to (submissions/moves.py)"""
    build_assignment: TaskWrapper
    """build and store an assignment uploaded in the browser (assignments/builds.py)"""
    running: Running
    """the tasks this process's consumer is running"""

    def submit(self, task: TaskWrapper, row_id: int) -> None:
        """Enqueue, best effort: when the queue is down, a worker's poll finds the row in the database."""
        try:
            task(row_id)
        except Exception:  # Redis down or restarting, SQLite queue locked...: the database is the record
            log.warning("could not queue %s(%s); a worker's poll will find it", task.name, row_id, exc_info=True)

    def run_worker(self, services: Services) -> None:
        """Huey's consumer with one worker thread (a grading worker process grades one notebook at a time:
        see cli._supervise_workers) and the database poll, until Ctrl-C or SIGTERM."""
        poll = DatabasePoll(services, consumer_busy=self.running.__bool__)
        poll.start()
        # Idle workers poll SQLite (every 0.1 s at most); Redis hands tasks over as they come, so there the
        # waits only follow errors (Redis away): a few seconds apart rather than ten logged errors a second.
        waits = dict(backoff=2, max_delay=5.0) if self.huey.storage.blocking else dict(backoff=1.1, max_delay=0.1)
        consumer = self.huey.create_consumer(
            workers=1, worker_type="thread", initial_delay=0.01, **waits,
            periodic=False, scheduler_interval=60,  # nothing is scheduled for later: retries come from the poll
        )  # fmt: skip
        try:
            consumer.run()
        finally:
            poll.stop()


class Running:
    """A count of the tasks a consumer is running, kept by the tasks themselves (`with running:`), never by
    the queue's hooks: huey skips its post-execute hooks when its own bookkeeping after a task fails (Redis
    gone), and a count stuck above zero would keep the database poll from taking over for good."""

    def __init__(self) -> None:
        self._count, self._lock = 0, threading.Lock()

    def __bool__(self) -> bool:
        return self._count > 0

    def __enter__(self) -> None:
        with self._lock:
            self._count += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._count -= 1


def build_queue(services: Services) -> Queue:
    huey = _huey(services.config)
    running = Running()

    @huey.task(name="grade")
    def grade(attempt_id: int) -> None:
        with running:
            grade_and_send(services, attempt_id)

    @huey.task(name="send_score")
    def send_score(passback_id: int) -> None:
        with running:
            send(services, passback_id)

    @huey.task(name="grade_preview")
    def grade_preview(preview_id: int) -> None:
        with running:
            moves.grade_preview(services, preview_id)

    @huey.task(name="build_assignment")
    def build_assignment(build_id: int) -> None:
        with running:
            builds.run(services, build_id)

    return Queue(huey, grade, send_score, grade_preview, build_assignment, running)


def _huey(config: Config) -> Huey:
    """Huey on Redis (QUEUE_URL) or on SQLite in DATA_DIR. huey's storage module imports the client of each of its
    storages that is installed (redis, psycopg: ~0.15 s of every process's start): for SQLite it is imported with
    them hidden, and loaded again with redis when a Redis queue follows a SQLite one in a process (the tests)."""
    if config.queue_url:
        from huey import Huey, storage

        if storage.Redis is None:  # imported for a SQLite queue
            importlib.reload(storage)
        return Huey("decode-grader", storage_class=storage.RedisStorage, url=config.queue_url, results=False)
    hidden = [name for name in ("redis", "psycopg") if name not in sys.modules]
    sys.modules.update(dict.fromkeys(hidden))  # None there: `import redis` raises ImportError
    try:
        from huey import SqliteHuey
    finally:
        for name in hidden:
            del sys.modules[name]
    return SqliteHuey("decode-grader", filename=str(config.data_dir / "queue.db"), results=False)


def grade_and_send(services: Services, attempt_id: int, in_turn: bool = True) -> None:
    """Grade the queued attempt whose turn it is (grading.turn_order; each attempt's task grades one,
    so every attempt is graded), else (or, not `in_turn`, only) this one if it still needs it; then send
    its score from this worker at once (the outbox row, written with the grade, is the durable record if
    sending fails)."""
    turns = grading.turn_order(services, TURN_CANDIDATES) if in_turn else []
    for candidate in dict.fromkeys([*turns, attempt_id]):
        finished = grading.grade_attempt(services, candidate)
        if finished is not None:
            break
    else:
        return
    batches.finish(services, Attempt, finished.attempt.id, failed=finished.attempt.status != "graded")
    if finished.passback_id is not None:
        send(services, finished.passback_id)


def send(services: Services, passback_id: int) -> None:
    status = passback.send(services, passback_id)
    if status in ("sent", "failed"):
        batches.finish(services, Passback, passback_id, failed=status == "failed")


class DatabasePoll:
    """A worker process's thread that does what the queue does not carry, found in the database."""

    def __init__(self, services: Services, consumer_busy: Callable[[], bool] = lambda: False) -> None:
        self.services, self.consumer_busy = services, consumer_busy
        self.interval = services.config.worker_poll
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="database-poll", daemon=True)
        self._housekept_at = self._beat_at = 0.0
        self._analysis: Analysis | None = None
        """this worker's insights computation (a child process), while it runs"""

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        if self._analysis is not None:
            self._analysis.abandon()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                busy = self.round()
            except Exception:  # e.g. the database restarting: try again at the next round
                log.warning("database poll failed", exc_info=True)
                busy = False
            if not busy:
                self._stop.wait(self.interval)

    def round(self) -> bool:
        """Send the grades that are due, then grade one attempt no worker holds, then other work; True when there
        was work (the next round then starts at once)."""
        self._beat()
        if time.monotonic() - self._housekept_at >= HOUSEKEEPING_EVERY:
            self._housekeeping()
        due = passback.due(self.services, DUE_BATCH)
        for row_id in due:
            send(self.services, row_id)
        lost = None if self.consumer_busy() else dt.timedelta(seconds=2 * self.interval)
        attempt_id = grading.unclaimed(self.services, queued_for=lost)
        if attempt_id is not None:
            log.info("picking up attempt %s from the database", attempt_id)
            grade_and_send(self.services, attempt_id, in_turn=lost is not None)  # busy: only a dead worker's
        work = bool(due) or attempt_id is not None or self._assignment_work(lost)
        return self._insights(start=not work and lost is not None) or work

    def _assignment_work(self, lost: dt.timedelta | None) -> bool:
        """A preview grade, or else an uploaded assignment, that no worker holds; True when there was one."""
        preview_id = grading.unclaimed(self.services, queued_for=lost, job=PreviewGrade)
        if preview_id is not None:
            moves.grade_preview(self.services, preview_id)
            return True
        build_id = None if lost is None else builds.unclaimed(self.services, queued_for=lost)
        if build_id is not None:
            builds.run(self.services, build_id)
            return True
        return False

    def _insights(self, start: bool) -> bool:
        """Look at this worker's insights computation without waiting (killed at its deadline) and, once it has
        ended, store what it found; else, `start` (the worker idle), start one for a link that is due. True when
        one ended (another link may be due)."""
        analysis = self._analysis
        if analysis is None:
            self._analysis = Analysis.start(self.services) if start else None
            return False
        if analysis.running():
            return False
        self._analysis = None
        analysis.finish()
        return True

    def _beat(self) -> None:
        """Note that this worker process is alive (monitoring.py counts the recent ones), once per interval
        however quickly rounds follow each other in a burst."""
        if time.monotonic() - self._beat_at < self.interval:
            return
        self._beat_at = time.monotonic()
        with self.services.db.session() as session:
            session.merge(WorkerHeartbeat(worker=f"{socket.gethostname()}:{os.getpid()}", seen_at=utcnow()))

    def _housekeeping(self) -> None:
        self._housekept_at = time.monotonic()
        with self.services.db.session() as session:  # workers gone for a day are forgotten
            session.query(WorkerHeartbeat).filter(WorkerHeartbeat.seen_at < utcnow() - dt.timedelta(days=1)).delete()
        DatabaseLaunchDataStorage(self.services.db).purge_expired()
        builds.fail_abandoned(self.services)
        with self.services.db.session() as session:
            session.query(Launch).filter(Launch.expires_at < utcnow()).delete()
