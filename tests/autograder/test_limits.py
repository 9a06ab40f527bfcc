"""One limit for a whole sandbox, and deadlines that hold whatever student code does (issue 8).

Memory, processes and CPU are limited for all of a sandbox's processes together (its cgroup), not per
process; a watchdog kills a sandbox at its deadline; a sandbox that stops reading cannot hold the grader;
without cgroups nothing runs.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest

from autograder import GradeOptions, SandboxUnavailable, grade_submission
from autograder.options import Limits
from autograder.protocol import Channel
from autograder.sandbox import Sandbox
from autograder.values import Values
from testbed.host import sandbox_processes


class Running:
    """A sandbox and a channel to it, closed when the test ends."""

    def __init__(self, limits: Limits, total: float = 60) -> None:
        self.sandbox = Sandbox(limits, time.monotonic() + total)
        self.channel = Channel(
            self.sandbox.read_fd, self.sandbox.write_fd, self.sandbox.terminate, 1, 30, time.monotonic() + total
        )
        self.values = Values(self.channel)
        self.channel.hello(10)

    def run(self, source: str) -> None:
        self.channel.request("exec", 30, source=source, name="<test>")

    def get(self, name: str):
        return self.values.request("get", name=name)


@pytest.fixture
def running():
    started = []

    def start(**limits) -> Running:
        started.append(Running(replace(Limits(), **limits)))
        return started[-1]

    yield start
    for sandbox in started:
        sandbox.sandbox.close()
    assert sandbox_processes() == []


HOARDERS = """
import os, select, signal
ready_read, ready_write = os.pipe()
children = set()
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        hoard = bytearray(150 * 1024 * 1024)  # under each process's own limit, not under the sandbox's
        os.write(ready_write, b"1")
        signal.pause()
    children.add(pid)
os.close(ready_write)
holding = 0
while children and holding < len(children):
    if select.select([ready_read], [], [], 0.05)[0]:
        holding += len(os.read(ready_read, 4))
    children = {pid for pid in children if os.waitpid(pid, os.WNOHANG)[0] == 0}
"""


def test_memory_is_limited_for_all_processes_together(running):
    sandbox = running(memory_mb=256)
    sandbox.run(HOARDERS)
    assert sandbox.get("holding") < 4  # the kernel killed hoarders
    assert sandbox.sandbox.memory_peak() <= 256 * 2**20


FORKS = """
import os
read_end, write_end = os.pipe()
started = 0
try:
    for _ in range(200):
        if os.fork() == 0:
            os.read(read_end, 1)  # wait until the cell is over
            os._exit(0)
        started += 1
except OSError:
    pass
"""


def test_processes_are_limited_for_the_whole_sandbox(running):
    sandbox = running(max_processes=20)
    sandbox.run(FORKS)
    assert 0 < sandbox.get("started") < 20


SPINNERS = """
import os, time
end = time.monotonic() + 1.5
children = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        while time.monotonic() < end:
            pass
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
"""


@pytest.mark.alone
def test_cpu_is_limited_for_the_whole_sandbox(running):
    sandbox = running(cpus=0.5)
    before, started = sandbox.sandbox.cpu_seconds(), time.monotonic()
    sandbox.run(SPINNERS)
    used, elapsed = sandbox.sandbox.cpu_seconds() - before, time.monotonic() - started
    assert used <= 0.5 * elapsed + 0.2  # three spinners on two cores would use up to 2 s per second


def test_the_watchdog_kills_a_sandbox_at_its_deadline_even_when_nobody_waits_for_it():
    sandbox = Sandbox(Limits(), time.monotonic() + 1)
    try:
        assert sandbox.proc.wait(timeout=30) is not None  # killed although no request was ever sent
    finally:
        sandbox.close()
    assert sandbox_processes() == []


@pytest.mark.alone
def test_a_sandbox_that_stops_reading_cannot_hold_the_grader(toy):
    # The cell keeps the request pipe open in a child but reads nothing from it any more: the grader's
    # next, large request fills the pipe and its write must still end within the cell's limit.
    stop_reading = (
        "import os, sys, time\n"
        "if os.fork() == 0:\n    time.sleep(600)\n"
        "read_end, _ = os.pipe()\n"
        "os.dup2(read_end, int(sys.argv[1]))\n"
    )
    large_cell = "# padding\n" * 30_000 + "padded = True\n"  # a request larger than a pipe holds
    notebook = toy.notebook("stops-reading", extra=[(None, stop_reading), (None, large_cell)])
    options = GradeOptions(cell_timeout=1, test_timeout=1, grace=0.5, total_timeout=20)
    started = time.monotonic()
    result = grade_submission(toy.zip, notebook, options)
    assert time.monotonic() - started < 3 * (1 + 0.5) + 5  # each try bounded by the cell's limit
    assert result.score == 5.0  # the honest answers, checked before these cells, keep their points
    assert sandbox_processes() == []


@pytest.mark.alone
def test_the_overall_deadline_holds_whatever_the_cells_do(toy):
    slow = "import signal, time\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\ntime.sleep(60)\n"
    notebook = toy.notebook("slow", extra=[(None, slow)] * 3)
    started = time.monotonic()
    result = grade_submission(toy.zip, notebook, GradeOptions(cell_timeout=30, total_timeout=3, grace=0.5))
    assert time.monotonic() - started < 3 + 5
    assert any("not run" in error or "time limit" in error for error in result.cell_errors)


def test_without_cgroups_nothing_runs(toy, tmp_path, monkeypatch):
    marker = tmp_path / "ran"
    notebook = toy.notebook("no-cgroup", extra=[(None, f"open({str(marker)!r}, 'w').write('x')\n")])
    monkeypatch.setenv("GRADER_CGROUP", "/no-such-parent/cgroup")
    with pytest.raises(SandboxUnavailable, match="cgroup"):
        grade_submission(toy.zip, notebook)
    assert not marker.exists()


DESCRIBE = """
import inspect, types
def describe(f):
    return [type(f) is types.FunctionType, f.__name__, f.__qualname__, str(inspect.signature(f)),
            f.__defaults__, f.__code__.co_name, callable(f)]
"""


def test_a_function_of_the_grader_looks_like_an_ordinary_function_to_student_code(running):
    def broken_generate(next_token, prompt, n=3, *rest, limit=None, **options):
        return list(prompt)

    sandbox = running()
    sandbox.run(DESCRIBE)
    signature = "(next_token, prompt, n=3, *rest, limit=None, **options)"
    described = sandbox.get("describe")(broken_generate)
    name, qualname = "broken_generate", broken_generate.__qualname__
    assert described == [True, name, qualname, signature, (3,), name, True]
    assert sandbox.get("describe")(lambda sequence: 1)[1] == "<lambda>"


def test_a_sandbox_closed_as_soon_as_it_is_spawned_is_gone():
    """Closing races the start (the sandbox's shell may not have joined its cgroup yet): as when the
    command line spawns a sandbox early and the notebook then turns out unusable."""

    def spawn_and_close() -> None:
        for _ in range(20):
            Sandbox(Limits(), time.monotonic() + 60).close()

    closer = threading.Thread(target=spawn_and_close, daemon=True)
    closer.start()
    closer.join(timeout=60)
    assert not closer.is_alive(), "close() waited for a sandbox it had not killed"
    assert sandbox_processes() == []
