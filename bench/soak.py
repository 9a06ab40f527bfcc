"""`make soak`: the tool under a class at a deadline, with faults injected, over real HTTP on loopback.

Each scenario starts the dev platform (its own process) and the real tool in a temporary directory,
enrols a class of distinct students, launches them all, has every one upload one notebook at the same
moment (full marks, unanswered and partial notebooks, whose scores are known), injects its fault while
the burst is being graded, and counts what the platform's gradebook received:

- expected / recorded: students, and students with a score in the gradebook;
- wrong: a score other than the notebook's; duplicates: score posts accepted beyond one per student;
- lost: no score once everything settled; 5xx saved: 5xx answers to an upload the tool had saved;
- drain: first upload to last score at the platform; upload->score and graded->score p50/p95;
- recovery: from the end of the fault to the last score at the platform;
- one student floods: the class's p95 wait for a grade beside one student's many uploads, over its own
  p95 wait with no flood (target at most 1.5x).

Settings are the tool's defaults (the LMS outages run for SOAK_OUTAGE seconds, 600 by default); the
PostgreSQL and Redis scenarios use private instances started here, so restarting them disturbs nobody.
Usage: `make soak` or `PYTHONPATH=. .venv/bin/python bench/soak.py [scenario ...]`.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import requests

from testbed.classroom import Classroom, Tally, median, percentile
from testbed.lms import Lms, start_lms
from testbed.servers import PrivatePostgres, PrivateRedis, TcpRelay
from testbed.submissions import notebook_bytes
from testbed.tool import free_port, wait_for

DEFAULTS = {"PASSBACK_BACKOFF": "2", "MAX_UPLOAD_BYTES": str(5 * 1024 * 1024)}  # undo the test suite's settings
SETTLE = 300  # seconds to wait for the last score once the uploads and the fault are over
RECOVERY_TARGET = 60.0  # seconds from the end of a crash or restart to the last score
REDIS_DOWN = 10.0  # seconds Redis stays down in its scenario
FLOOD = 20  # notebooks one student uploads beside the class
MAX_FLOOD_RATIO = 1.5  # the class's p95 wait beside the flood, over its p95 wait alone
OUTAGE = float(os.environ.get("SOAK_OUTAGE", "600"))
IDLE_CONNECTIONS = 500
POLL = 1.0  # seconds between looks at the platform's state (a big JSON; times come from its own clock)
PROMPT = 1.0  # seconds within which a request must be answered with the idle connections open


@dataclass
class Row:
    """One scenario's outcome and the issue's targets for it (a limit of None: no target)."""

    scenario: str
    tally: Tally | None
    recovery_s: float | None = None
    note: str = ""
    max_drain_s: float | None = None
    max_graded_to_score_p50_s: float | None = None
    max_recovery_s: float | None = None
    answer_s: float | None = None
    """idle connections: how long the new request took to be answered (None: it was not)"""
    ratio: float | None = None
    max_ratio: float | None = None
    """one student floods: the class's p95 wait for a grade over the same class's without the flood"""

    def misses(self) -> list[str]:
        t = self.tally
        if t is None:
            return [] if self.answer_s is not None and self.answer_s < PROMPT else [self.note]
        missed = [f"{n} {what}" for n, what in ((t.wrong, "wrong"), (t.duplicates, "duplicated"), (t.lost, "lost"),
                  (t.server_errors_after_save, "5xx after saving")) if n]  # fmt: skip
        for value, limit, what in (
            (t.drain_s, self.max_drain_s, "drain"),
            (median(t.graded_to_score_s), self.max_graded_to_score_p50_s, "graded->score p50"),
            (self.recovery_s, self.max_recovery_s, "recovery"),
        ):
            if limit is not None and (value is None or value >= limit):
                missed.append(f"{what} {_num(value)} s >= {limit:g} s")
        if self.max_ratio is not None and (self.ratio is None or self.ratio > self.max_ratio):
            missed.append(f"p95 wait {_num(self.ratio)}x > {self.max_ratio:g}x")
        return missed


def run_scenario(name: str, lms: Lms, inject: Callable[[], None] | None = None, size: int = 200, **limits) -> Row:
    """Launch `size` students and have them upload at once; once a quarter of the scores are in, run
    `inject` (it returns when the fault is over); wait for the gradebook to settle. Stops the LMS."""
    try:
        room = Classroom(lms, size, "soak")
        room.launch()
        uploads = room.upload_in_background()
        fault_ended = None
        if inject is not None:
            wait_for(lambda: len(lms.gradebook("soak")) >= size / 4, timeout=300, interval=POLL)
            inject()
            fault_ended = time.time()
        uploads.join()
        tally = settled(room, lms)
    finally:
        stop(lms)
    recovery = None if fault_ended is None or tally.last_score_at is None else tally.last_score_at - fault_ended
    return Row(name, tally, recovery, **limits)


def settled(room: Classroom, lms: Lms) -> Tally:
    """What the gradebook holds once every score is in, or SETTLE seconds have passed (the rest is lost)."""
    try:
        wait_for(room.all_scores_in, timeout=SETTLE, interval=POLL)
    except AssertionError:
        pass  # counted as lost
    return room.tally(lms.tool.env)


def stop(lms: Lms) -> None:
    lms.tool.stop()
    lms.platform.stop()


def burst(workdir: Path) -> Row:
    lms = start_lms(workdir, platform_process=True, **DEFAULTS)
    return run_scenario(
        "burst of 1000, embedded default", lms, size=1000, max_drain_s=60, max_graded_to_score_p50_s=1.0
    )


def kill_worker(workdir: Path) -> Row:
    """One of `serve`'s worker processes is killed; serve starts another, and the killed one's attempts
    are taken over once their leases end."""
    lms = start_lms(workdir, platform_process=True, **DEFAULTS)

    def kill() -> None:
        os.kill(lms.tool.worker_pids()[0], signal.SIGKILL)

    return run_scenario("200, kill -9 of a worker", lms, kill, max_recovery_s=RECOVERY_TARGET)


def kill_serve(workdir: Path) -> Row:
    """`serve` (web and worker in one process) killed mid-burst and started again."""
    lms = start_lms(workdir, platform_process=True, **DEFAULTS)

    def kill_and_restart() -> None:
        serve = lms.tool.processes[0]
        serve.send_signal(signal.SIGKILL)
        serve.wait()
        lms.tool.start()

    return run_scenario("200, kill -9 of serve, restarted", lms, kill_and_restart, max_recovery_s=RECOVERY_TARGET)


def restart_redis(workdir: Path) -> Row:
    """Redis shut down without saving mid-burst and back REDIS_DOWN seconds later, empty."""

    def restart(pg: PrivatePostgres, redis: PrivateRedis) -> None:
        redis.stop()
        time.sleep(REDIS_DOWN)  # the outage's length is the scenario, not a wait for some state
        redis.start()

    return _scale_out(workdir, f"200, Redis down {REDIS_DOWN:g} s, back empty", restart)


def restart_postgres(workdir: Path) -> Row:
    return _scale_out(workdir, "200, PostgreSQL restarted (PostgreSQL + Redis)", lambda pg, redis: pg.restart())


def _scale_out(workdir: Path, name: str, restart: Callable[[PrivatePostgres, PrivateRedis], None]) -> Row:
    """The scale-out shape (web apart, two worker processes) on a private PostgreSQL and Redis, one of
    which is restarted mid-burst."""
    pg, redis = PrivatePostgres(), PrivateRedis()
    try:
        stores = {"DATABASE_URL": pg.url, "QUEUE_URL": redis.url}
        lms = start_lms(workdir, "--no-worker", platform_process=True, **stores, **DEFAULTS)
        lms.tool.start_worker()
        lms.tool.start_worker()
        return run_scenario(name, lms, lambda: restart(pg, redis), max_recovery_s=RECOVERY_TARGET)
    finally:
        redis.stop()
        pg.stop()


def one_student_floods(workdir: Path) -> Row:
    """A student of another course uploads FLOOD different notebooks as fast as the tool answers while a
    class of 200 uploads once each: the class's p95 wait for a grade against the same class alone."""
    _, alone, _ = _class_beside(workdir / "alone", flood=0)
    tally, flooded, accepted = _class_beside(workdir / "flood", flood=FLOOD)
    ratio = None if alone is None or flooded is None else flooded / alone
    note = (f"class p95 wait for a grade {_num(flooded)} s beside the flood, {_num(alone)} s alone; "
            f"the flooder's notebooks accepted: {accepted} of {FLOOD}")  # fmt: skip
    return Row(f"200, one student floods ({FLOOD} uploads)", tally, note=note, ratio=ratio, max_ratio=MAX_FLOOD_RATIO)


def _class_beside(workdir: Path, flood: int) -> tuple[Tally, float | None, int]:
    """(tally, the class's p95 upload-to-graded wait, the flooder's accepted uploads)."""
    lms = start_lms(workdir, platform_process=True, **DEFAULTS)
    try:
        room = Classroom(lms, 200, "soak")
        room.launch()
        flooder = None
        if flood:
            lms.hook("enrol", users=["flooder"])
            lms.hook("resource-link", resource_link_id="soak-flood", context_id="other-course", line_item=True)
            flooder = lms.open("flooder", "soak-flood")
            notebooks = [notebook_bytes() + b" " * i for i in range(flood)]  # each a new notebook
            threading.Thread(target=lambda: [flooder.upload(n) for n in notebooks], daemon=True).start()
        room.upload()
        tally = settled(room, lms)
        waits = [graded - saved for saved, graded in room.attempt_times(lms.tool.env).values() if saved and graded]
        accepted = len(flooder.attempts()) if flooder else 0
    finally:
        stop(lms)
    return tally, percentile(waits, 0.95), accepted


def lms_unavailable(workdir: Path) -> Row:
    """The LMS answers 503 to every service call for SOAK_OUTAGE seconds, mid-burst."""
    lms = start_lms(workdir, platform_process=True, **DEFAULTS)

    def outage() -> None:
        lms.hook("outage", status=503)
        time.sleep(OUTAGE)  # the outage's length is the scenario, not a wait for some state
        lms.hook("outage", status=None)

    return run_scenario(f"200, LMS answers 503 for {OUTAGE:g} s", lms, outage)


def lms_refusing(workdir: Path) -> Row:
    """Connections to the LMS are refused for SOAK_OUTAGE seconds, mid-burst (a relay in front of the
    platform closes its port)."""
    relay_port = free_port("127.0.0.2")
    lms = start_lms(workdir, platform_process=True, platform_url=f"http://127.0.0.2:{relay_port}", **DEFAULTS)
    relay = TcpRelay(("127.0.0.2", lms.platform.port), "127.0.0.2", relay_port)

    def outage() -> None:
        relay.refuse()
        time.sleep(OUTAGE)  # the outage's length is the scenario, not a wait for some state
        relay.accept()

    try:
        return run_scenario(f"200, LMS refuses connections for {OUTAGE:g} s", lms, outage)
    finally:
        relay.refuse()


def idle_connections(workdir: Path) -> Row:
    """IDLE_CONNECTIONS connections opened and left idle; then one new request, timed."""
    lms = start_lms(workdir, platform_process=True, **DEFAULTS)
    idle = [socket.create_connection(("127.0.0.1", lms.tool.port)) for _ in range(IDLE_CONNECTIONS)]
    answer_s = None
    try:
        started = time.perf_counter()
        try:
            status = requests.get(f"{lms.tool.url}/lti/jwks.json", timeout=30).status_code
            answer_s = time.perf_counter() - started if status == 200 else None
            note = f"HTTP {status} in {(time.perf_counter() - started) * 1000:.0f} ms"
        except requests.RequestException as error:
            note = f"no answer: {type(error).__name__} after {time.perf_counter() - started:.0f} s"
    finally:
        for connection in idle:
            connection.close()
        stop(lms)
    return Row(f"{IDLE_CONNECTIONS} idle connections, then a request", None, note=note, answer_s=answer_s)


SCENARIOS: dict[str, Callable[[Path], Row]] = {
    "burst": burst,
    "kill-worker": kill_worker,
    "kill-serve": kill_serve,
    "restart-redis": restart_redis,
    "restart-postgres": restart_postgres,
    "flood": one_student_floods,
    "lms-503": lms_unavailable,
    "lms-refusing": lms_refusing,
    "idle-connections": idle_connections,
}


def print_table(rows: list[Row]) -> None:
    header = (
        f"{'scenario':<48} {'expect':>6} {'record':>6} {'wrong':>5} {'dup':>4} {'lost':>4} {'5xx saved':>9} "
        f"{'drain s':>8} {'up->score p50/p95 s':>19} {'graded->score p50/p95 s':>23} {'recovery s':>10}  targets"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        t = row.tally
        verdict = "met" if not row.misses() else "MISSED: " + ", ".join(row.misses())
        if t is None:
            print(f"{row.scenario:<48} {row.note}  targets {verdict}")
            continue
        print(
            f"{row.scenario:<48} {t.expected:>6} {t.recorded:>6} {t.wrong:>5} {t.duplicates:>4} {t.lost:>4} "
            f"{t.server_errors_after_save:>9} {_num(t.drain_s):>8} "
            f"{_pair(t.upload_to_score_s):>19} {_pair(t.graded_to_score_s):>23} {_num(row.recovery_s):>10}  {verdict}"
        )
        if row.note:
            print(f"{'':<48} {row.note}")


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _pair(values: list[float]) -> str:
    return f"{_num(median(values))}/{_num(percentile(values, 0.95))}"


def main(names: list[str]) -> int:
    rows = []
    for name in names or list(SCENARIOS):
        with tempfile.TemporaryDirectory(prefix=f"soak-{name}-") as workdir:
            started = time.monotonic()
            rows.append(SCENARIOS[name](Path(workdir)))
            print(f"{name}: {time.monotonic() - started:.0f} s", file=sys.stderr)
    print_table(rows)
    return 0 if not any(row.misses() for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
