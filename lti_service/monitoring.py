"""What operators watch: liveness, readiness, and metrics in Prometheus's text format.

The figures come from the database, the record every process shares, so the web process, each worker
and each machine report the same numbers whichever one is scraped, and a restart loses none of them.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import func, select, text

from autograder import SandboxUnavailable
from autograder.options import Limits
from autograder.sandbox.bwrap import find_bwrap
from autograder.sandbox.cgroups import CgroupUnavailable, SandboxCgroup
from autograder.sandbox.cgroups import Limits as CgroupLimits

from .db import Attempt, Passback, WorkerHeartbeat, utcnow
from .jobs import Queue
from .services import Services

PREFIX = "decode_grader"
GRADE_BUCKETS = (1, 2, 5, 10, 30, 60, 120, 300, 600, 1800)  # seconds from upload to grade
RECENT = dt.timedelta(hours=1)  # the window of the upload-to-grade histogram
MAX_RECENT = 10_000  # gradings the histogram reads at most (a scrape stays cheap in a deadline burst)


def readiness(services: Services, queue: Queue) -> dict[str, str]:
    """ "ok" or what is wrong, for the database, the queue and the sandbox (no student code is run)."""
    return {"database": _check(_database, services), "queue": _check(_queue, queue), "sandbox": _check(_sandbox)}


def _check(probe, *args) -> str:
    try:
        probe(*args)
    except Exception as e:  # noqa: BLE001 - whatever fails is what the operator must see
        return f"{type(e).__name__}: {str(e)[:300]}"
    return "ok"


def _database(services: Services) -> None:
    with services.db.session() as session:
        session.execute(text("SELECT 1"))


def _queue(queue: Queue) -> None:
    queue.huey.pending_count()


def _sandbox() -> None:
    """bubblewrap present and a cgroup can be made: what every grading needs before it starts."""
    find_bwrap(Limits())
    name = f"readiness-{os.getpid()}-{threading.get_ident()}"
    try:
        SandboxCgroup.create(name, CgroupLimits(64 * 1024 * 1024, 8, 0.1)).remove()
    except CgroupUnavailable as e:
        raise SandboxUnavailable(str(e)) from None


def metrics(services: Services, queue: Queue) -> bytes:
    """Every metric, in Prometheus's text format."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Figures(services, queue))
    return generate_latest(registry)


class _Figures(Collector):
    def __init__(self, services: Services, queue: Queue) -> None:
        self.services, self.queue = services, queue
        self.alive_for = dt.timedelta(seconds=max(3 * services.config.worker_poll, 10))  # a few missed rounds

    def collect(self) -> Iterator[Metric]:
        now = utcnow()
        with self.services.db.session() as session:
            attempts = dict(session.execute(select(Attempt.status, func.count()).group_by(Attempt.status)).all())
            passbacks = dict(session.execute(select(Passback.status, func.count()).group_by(Passback.status)).all())
            oldest_attempt = session.scalar(select(func.min(Attempt.created_at)).where(Attempt.status == "queued"))
            waiting_since = func.coalesce(Passback.failing_since, Passback.next_try_at)  # first failure, or due
            oldest_score = session.scalar(select(func.min(waiting_since)).where(Passback.status == "pending"))
            alive = session.scalar(
                select(func.count()).select_from(WorkerHeartbeat).where(WorkerHeartbeat.seen_at >= now - self.alive_for)
            )
            recent = session.execute(
                select(Attempt.created_at, Attempt.graded_at)
                .where(Attempt.graded_at >= now - RECENT)
                .order_by(Attempt.graded_at.desc())
                .limit(MAX_RECENT)
            ).all()
        uploads = CounterMetricFamily(f"{PREFIX}_uploads", "Notebooks uploaded (attempts stored)")
        uploads.add_metric([], sum(attempts.values()))
        yield uploads
        gradings = CounterMetricFamily(f"{PREFIX}_gradings", "Gradings finished, by outcome", labels=["outcome"])
        for outcome in ("graded", "failed"):
            gradings.add_metric([outcome], attempts.get(outcome, 0))
        yield gradings
        yield _gauge("attempts", "Attempts by status", "status", attempts, ("queued", "grading", "graded", "failed"))
        depth = GaugeMetricFamily(f"{PREFIX}_queue_depth", "Attempts waiting for a worker")
        depth.add_metric([], attempts.get("queued", 0))
        yield depth
        yield _age(
            "oldest_waiting_attempt_seconds", "Age of the oldest attempt waiting for a worker", oldest_attempt, now
        )
        yield _age("oldest_pending_score_seconds", "Age of the oldest score not yet in a gradebook", oldest_score, now)
        yield _gauge(
            "passbacks", "Scores for gradebooks, by status", "status", passbacks, ("pending", "sent", "failed")
        )
        yield _upload_to_grade(recent)
        workers = GaugeMetricFamily(f"{PREFIX}_workers_alive", "Worker processes that polled the database lately")
        workers.add_metric([], alive)
        yield workers


def _gauge(name: str, documentation: str, label: str, counts: dict, known: tuple[str, ...]) -> Metric:
    gauge = GaugeMetricFamily(f"{PREFIX}_{name}", documentation, labels=[label])
    for value in dict.fromkeys([*known, *counts]):
        gauge.add_metric([value], counts.get(value, 0))
    return gauge


def _age(name: str, documentation: str, since: dt.datetime | None, now: dt.datetime) -> Metric:
    gauge = GaugeMetricFamily(f"{PREFIX}_{name}", documentation + " (0 when none)")
    gauge.add_metric([], 0.0 if since is None else max((now - since).total_seconds(), 0.0))
    return gauge


def _upload_to_grade(recent: list) -> Metric:
    """Seconds from upload to grade of the gradings of the last hour (waiting in the queue included)."""
    seconds = [(graded - created).total_seconds() for created, graded in recent]
    buckets = [(str(bound), sum(s <= bound for s in seconds)) for bound in GRADE_BUCKETS]
    histogram = HistogramMetricFamily(
        f"{PREFIX}_upload_to_grade_seconds", "Seconds from upload to grade, gradings of the last hour"
    )
    histogram.add_metric([], [*buckets, ("+Inf", len(seconds))], sum_value=sum(seconds))
    return histogram
