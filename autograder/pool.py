"""Grading processes started ahead for a grading service (opt-in: GradeOptions.prestart).

Starting a grading process and its sandbox, loading the tests and importing the libraries a notebook uses
is most of what a small notebook costs (a pandas import alone is a fifth of a second). A WarmPool keeps
`size` of them ready for one assignment (tests loaded, seed set, support files in place, the libraries
its last graded notebook imported already imported) so the next grading starts at once; taking one starts
its replacement in the background. Each is still used by one grading only: nothing of any student's is
ever in a process that waits in the pool.

Idle ones are live processes under sandbox uids, so pooling is for long-running graders (the LTI tool's
workers, a command-line batch), not for one-off gradings.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections import deque
from typing import TYPE_CHECKING

from .recent import Recent

if TYPE_CHECKING:
    from .assignment import Assignment
    from .box import GradingBox
    from .options import Limits

log = logging.getLogger(__name__)
IDLE_LIFETIME = 120.0  # seconds a ready sandbox waits before it is replaced (its watchdog kills it)
MAX_RETRY_WAIT = 60.0  # seconds between tries to start a sandbox ahead while none can start
PRELOADABLE = frozenset({"numpy", "pandas", "scipy", "matplotlib"})
"""libraries whose import changes nothing a notebook can see but the time it takes (datascience, say,
changes numpy's print options: it is never imported ahead)"""


class WarmPool:
    """`size` grading processes of one assignment kept ready. They are started by one long-lived thread of
    the pool's: bwrap dies with the thread that started it (--die-with-parent), so not a short-lived one."""

    def __init__(self, assignment: Assignment, limits: Limits, size: int) -> None:
        self.assignment, self.limits, self.size = assignment, limits, size
        self.preload: tuple[str, ...] = ()
        self._ready: deque[GradingBox] = deque()
        self._wake = threading.Condition()
        self._closed = False
        self._starter = threading.Thread(target=self._keep_filled, daemon=True, name="warm-pool")
        self._starter.start()

    def take(self) -> GradingBox | None:
        """A ready grading process (None if none is ready yet); its replacement starts in the background."""
        with self._wake:
            ready = None
            while self._ready and ready is None:
                candidate = self._ready.popleft()
                if candidate.alive:
                    ready = candidate
                else:
                    candidate.close()
            self._wake.notify()
        return ready

    def learn(self, modules: object) -> None:
        """The libraries a graded notebook imported: the next sandboxes import them ahead."""
        if isinstance(modules, list):
            self.preload = tuple(sorted(PRELOADABLE.intersection(m for m in modules if isinstance(m, str))))

    def _keep_filled(self) -> None:
        from .box import started_box  # imported when first used: `python -m autograder` starts sooner

        failures = 0
        while True:
            with self._wake:
                self._wake.wait_for(lambda: self._closed or len(self._ready) < self.size, timeout=IDLE_LIFETIME / 2)
                if self._closed:
                    return
                expired = [r for r in self._ready if r.process.deadline - time.monotonic() < IDLE_LIFETIME / 2]
                for ready in expired:
                    self._ready.remove(ready)
                if len(self._ready) >= self.size:
                    continue
            for ready in expired:
                ready.close()
            try:
                ready = started_box(self.assignment, self.limits, self.preload, IDLE_LIFETIME, forked=True)
            except Exception as e:  # the grading that would have taken it starts its own and reports why
                if not failures:
                    log.warning("could not start a sandbox ahead (trying again, less and less often): %s", e)
                failures += 1
                with self._wake:  # not a hot loop (nor a log line a second) while sandboxes cannot start
                    self._wake.wait_for(lambda: self._closed, timeout=min(MAX_RETRY_WAIT, 0.5 * 2**failures))
                continue
            failures = 0
            with self._wake:
                if not self._closed:
                    self._ready.append(ready)
                    ready = None
            if ready is not None:
                ready.close()

    def close(self) -> None:
        """Kill the sandboxes waiting here, once the one being started (if any) is ready to be killed."""
        with self._wake:
            self._closed, ready = True, list(self._ready)
            self._ready.clear()
            self._wake.notify_all()
        for sandbox in ready:
            sandbox.close()
        if self._starter is not threading.current_thread():
            self._starter.join()


class SpawnedEarly:
    """One grading process and its sandbox spawned at once, for the one grading that follows in this
    process: they start while this process does other work (`python -m autograder` imports the rest of the
    grader meanwhile). The grading takes it (`take`) once it is ready."""

    def __init__(self, assignment: Assignment, limits: Limits) -> None:
        from .box import START_TIMEOUT, GradingBox

        self._box: GradingBox | None = GradingBox(assignment, limits, time.monotonic() + START_TIMEOUT)

    def take(self) -> GradingBox | None:
        box, self._box = self._box, None
        if box is not None:
            try:
                box.wait_ready()
            except BaseException:
                box.close()
                raise
        return box

    def close(self) -> None:
        """Kill it if no grading took it."""
        if self._box is not None:
            self._box.close()
            self._box = None


MAX_POOLS = 4
"""assignments (with their limits) whose grading processes are kept ready; the least recently graded one's stop"""
_POOLS: Recent[WarmPool] = Recent(MAX_POOLS)


def warm_pool(assignment: Assignment, limits: Limits, size: int) -> WarmPool:
    """The pool for an assignment (the loaded zip, so a changed zip gets a new one) and its limits. A
    service grading many assignments keeps pools for the MAX_POOLS it graded last."""
    return _POOLS.get(
        (id(assignment), limits, size),
        lambda pool: pool.assignment is not assignment,
        lambda: WarmPool(assignment, limits, size),
    )


@atexit.register
def close_all() -> None:
    """Kill every grading process waiting in a pool (they would die with this process anyway)."""
    _POOLS.close_all()
