"""The job queue: Huey on SQLite (embedded default) or Redis (QUEUE_URL), with its tasks.

The queue only carries ids; the database says what is left to do, so a lost or repeated task is
harmless and the periodic sweep re-queues whatever a vanished worker left behind.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

from huey import Huey, RedisHuey, SqliteHuey, crontab

from . import batches, grading, passback
from .assignments import builds, moves
from .db import Attempt, Launch, Passback, utcnow
from .lti.storage import DatabaseLaunchDataStorage
from .services import Services

log = logging.getLogger("lti_service.jobs")
LOST_AFTER = dt.timedelta(minutes=2)  # a queued attempt older than this probably lost its task


@dataclass
class Queue:
    huey: Huey
    grade: object
    send_score: object
    sweep: object
    grade_preview: object
    """grade an attempt against the version its link is moving to (assignments/moves.py)"""
    build_assignment: object
    """build and store an assignment uploaded in the browser (assignments/builds.py)"""

    def consumer(self, workers: int = 2):
        """A Huey consumer: worker threads, and the scheduler for retries and the periodic sweep."""
        return self.huey.create_consumer(
            workers=workers, worker_type="thread", periodic=True, initial_delay=0.01, max_delay=0.1, backoff=1.1
        )


def build_queue(services: Services) -> Queue:
    config = services.config
    if config.queue_url:
        huey: Huey = RedisHuey("decode-grader", url=config.queue_url, results=False)
    else:
        huey = SqliteHuey("decode-grader", filename=str(config.data_dir / "queue.db"), results=False)

    @huey.task(name="grade")
    def grade(attempt_id: int) -> None:
        attempt = grading.grade_attempt(services, attempt_id)
        if attempt is None:
            return
        batches.finish(services, Attempt, attempt.id, failed=attempt.status != "graded")
        if attempt.status == "graded" and attempt.lineitem_url:
            send_score(passback.record_grade(services, attempt))

    @huey.task(name="send_score")
    def send_score(passback_id: int) -> None:
        delay = passback.send(services, passback_id)
        if delay is not None:
            send_score.schedule((passback_id,), delay=delay)
        elif (status := passback.status_of(services, passback_id)) in ("sent", "failed"):
            batches.finish(services, Passback, passback_id, failed=status == "failed")

    @huey.periodic_task(crontab(minute="*"), name="sweep")
    def sweep() -> None:
        for attempt_id in grading.stale_attempts(services, LOST_AFTER):
            log.info("re-queueing attempt %s", attempt_id)
            grade(attempt_id)
        for row_id in passback.due_passbacks(services):
            send_score(row_id)
        DatabaseLaunchDataStorage(services.db).purge_expired()
        with services.db.session() as session:
            session.query(Launch).filter(Launch.expires_at < utcnow()).delete()
        sweep_assignments()

    grade_preview, build_assignment, sweep_assignments = _assignment_tasks(huey, services)
    return Queue(huey, grade, send_score, sweep, grade_preview, build_assignment)


def _assignment_tasks(huey: Huey, services: Services) -> tuple:
    """The tasks of assignments/ and what the sweep does for them."""

    @huey.task(name="grade_preview")
    def grade_preview(preview_id: int) -> None:
        moves.grade_preview(services, preview_id)

    @huey.task(name="build_assignment")
    def build_assignment(build_id: int) -> None:
        builds.run(services, build_id)

    def sweep_assignments() -> None:
        for preview_id in moves.stale_previews(services, LOST_AFTER):
            grade_preview(preview_id)
        builds.fail_abandoned(services)

    return grade_preview, build_assignment, sweep_assignments
