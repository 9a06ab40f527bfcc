"""Grading processes and their sandboxes started ahead (GradeOptions.prestart): each is used by one grading
only, starts clean, and imports ahead only what changes nothing a notebook can see."""

from __future__ import annotations

import time

import pytest

from autograder import GradeOptions, grade_submission
from autograder.assignment import load_assignment
from autograder.notebook import Cell
from autograder.options import Limits
from autograder.pool import WarmPool
from testbed.host import sandbox_processes


def wait_for_ready(pool: WarmPool):
    deadline = time.monotonic() + 30
    while (ready := pool.take()) is None:
        assert time.monotonic() < deadline, "no sandbox was started ahead"
        time.sleep(0.05)
    return ready


def test_a_sandbox_started_ahead_is_alive_and_imports_only_harmless_libraries(toy):
    pool = WarmPool(load_assignment(toy.zip), Limits(), size=1)
    try:
        pool.learn(["numpy", "datascience", "os", "pandas"])
        assert pool.preload == ("numpy", "pandas")  # datascience changes numpy's print options
        wait_for_ready(pool).close()  # the first may predate learn()
        ready = wait_for_ready(pool)
        assert ready.alive  # alive after the thread that started it went on
        imported = "import sys\nassert {'numpy', 'pandas'} <= set(sys.modules) and 'datascience' not in sys.modules\n"
        result = ready.grade([Cell(0, imported)], "imports")
        ready.close()
    finally:
        pool.close()
    assert result.cell_errors == []
    assert sandbox_processes() == []


def test_nothing_of_one_grading_reaches_the_next_through_the_pool(toy):
    options = GradeOptions(prestart=1, cell_timeout=5, test_timeout=5)
    leaves = "left_behind = 1\nopen('/tmp/left-behind', 'w').write('x')\n"
    finds = (
        "import os\n"
        "assert 'left_behind' not in globals(), 'a global of the last notebook'\n"
        "assert not os.path.exists('/tmp/left-behind'), 'a file of the last notebook'\n"
    )
    try:
        first = grade_submission(toy.zip, toy.notebook("pool-first", extra=[(None, leaves)]), options)
        for i in range(3):  # from the second on, they come from the pool
            later = grade_submission(toy.zip, toy.notebook(f"pool-later-{i}", extra=[(None, finds)]), options)
            assert later.cell_errors == [] and later.score == 5.0
        assert first.score == 5.0
    finally:
        from autograder.pool import close_all

        close_all()
    assert sandbox_processes() == []


def test_a_service_keeps_sandboxes_ready_only_for_the_assignments_it_graded_last(toy):
    from autograder.pool import MAX_POOLS, close_all, warm_pool

    assignment = load_assignment(toy.zip)
    try:
        # Other limits stand for other assignments: each pair gets a pool of its own.
        pools = [warm_pool(assignment, Limits(cell_timeout=10 + i), 1) for i in range(MAX_POOLS + 1)]
        assert warm_pool(assignment, Limits(cell_timeout=10 + MAX_POOLS), 1) is pools[-1]
        assert pools[0]._closed and not any(pool._closed for pool in pools[1:])
        for pool in pools[1:]:
            wait_for_ready(pool).close()  # each live pool can still serve
    finally:
        close_all()
    assert sandbox_processes() == []


@pytest.mark.alone
def test_while_sandboxes_cannot_start_the_pool_tries_less_and_less_often_and_says_so_once(toy, monkeypatch, caplog):
    """A machine without bubblewrap (or out of sandbox uids): one warning, waits that grow, a prompt close."""
    import threading

    from autograder import box
    from autograder.sandbox import SandboxUnavailable

    tries: list[float] = []
    tried = threading.Semaphore(0)

    def cannot_start(*_, **__):
        tries.append(time.monotonic())
        tried.release()
        raise SandboxUnavailable("bubblewrap not found")

    monkeypatch.setattr(box, "started_box", cannot_start)
    pool = WarmPool(load_assignment(toy.zip), Limits(), size=1)
    try:
        for _ in range(3):
            assert tried.acquire(timeout=30)
    finally:
        closing = time.monotonic()
        pool.close()
    assert time.monotonic() - closing < 1  # not held by the wait between tries
    waits = [later - earlier for earlier, later in zip(tries, tries[1:], strict=False)]
    assert waits[1] > waits[0] >= 0.9
    warnings = [r for r in caplog.records if "could not start a sandbox ahead" in r.getMessage()]
    assert len(warnings) == 1 and "bubblewrap not found" in warnings[0].getMessage()
