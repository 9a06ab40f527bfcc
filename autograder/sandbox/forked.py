"""Grading processes and student sandboxes forked by zygotes: started in milliseconds, not in half a second.

An interpreter with the grader's code and its libraries imported is most of what starting either costs
(numpy and pandas: about half a second of CPU). A Zygote (inside/zygote.py) is that interpreter, in
bubblewrap like any box but as root with only the capabilities its children need to set themselves up;
it never reads a zip, runs a test or sees a student value. For each grading it forks a child that at once
takes namespaces of its own (a fresh /tmp and IPC; for a sandbox also pid, network and UTS, as bubblewrap
gives a sandbox started afresh) and becomes a uid of the pool (all capabilities gone); this process then
moves the child into a cgroup of its own before it runs anything but the grader's code, and a watchdog kills
it at its deadline, as for any Confined process. Per worker process: one zygote of grading processes per
assignment, and zygotes of sandboxes (for every assignment without packages of its own) per set of libraries
its notebooks import. A replaced zygote ends with its last child (they live in its pid namespace).
"""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from ..errors import SandboxUnavailable
from ..inside.control import Control, ControlError
from ..options import Limits
from ..recent import Recent
from .bwrap import (
    _UIDS,
    Confined,
    SandboxPipes,
    _close_all,
    _processes_of,
    bwrap_argv,
    python_roots,
    rlimits,
    wait_until_reaped,
)

GRADING_START = (
    "import sys; sys.path.insert(0, '/opt/grader'); from autograder.inside.startup import add_site_dirs; "
    "import json; add_site_dirs(json.loads(sys.argv[3])); from autograder.zygote import main; "
    "main(int(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[4]))"
)
SANDBOX_START = (
    "import sys; sys.path.insert(0, '/opt/grader'); from _autograder_inside.zygote import sandbox_main; sandbox_main()"
)
LIFETIME = 600.0  # seconds a zygote serves before a fresh one replaces it
SETTLE_TIMEOUT = 10.0  # seconds a forked sandbox may take to be ready to move into its cgroup


class Zygote:
    """The zygote process and the socket its fork requests go through (one thread at a time). `start`: its
    program (GRADING_START or SANDBOX_START); `caps`: the capabilities its children need before they drop
    them all."""

    def __init__(
        self,
        start: str,
        limits: Limits,
        site_dirs: Sequence[str],
        binds: Sequence[tuple[str, str]],
        preload: Sequence[str],
        caps: Sequence[str] = (),
    ) -> None:
        ours, theirs = socket.socketpair()
        self.control, fd = Control(ours), theirs.detach()
        self.lock = threading.Lock()
        self.born, self.children, self.retired = time.monotonic(), 0, False
        under_tmp = [path for path in [*python_roots(site_dirs), *(target for _, target in binds)]
                     if path.startswith("/tmp/")]  # fmt: skip

        def program(uid: int) -> list[str]:
            argv = bwrap_argv(limits, None, site_dirs, binds, caps)
            return argv + [sys.executable, "-I", "-S", "-c", start, str(fd), json.dumps(list(preload)),
                           json.dumps(list(site_dirs)), json.dumps(under_tmp)]  # fmt: skip

        try:  # no deadline: it runs only the grader's code, and its children die with it
            self.process = Confined(limits, math.inf, program, [fd])
        except BaseException:
            self.control.close()
            raise

    @property
    def alive(self) -> bool:
        return self.process.proc.poll() is None and time.monotonic() < self.born + LIFETIME

    def fork(self, uid: int, limits: Limits, fds: Sequence[int]) -> None:
        """Ask for a child; `release()` once it has ended."""
        request = {"uid": uid, "rlimits": rlimits(limits), "tmp_bytes": limits.tmp_mb * 1024 * 1024}
        with self.lock:
            if self.retired and not self.children:
                raise ControlError("this zygote has been replaced")
            self.control.send(request, fds)
            self.children += 1

    def release(self) -> None:
        """A child has ended: a replaced zygote ends with its last child."""
        with self.lock:
            self.children -= 1
            done = self.retired and not self.children
        if done:
            self._stop()

    def close(self) -> None:
        """Replaced (or this process exits): it ends once its children have, since they live in its pid
        namespace and would die with it."""
        with self.lock:
            self.retired = True
            done = not self.children
        if done:
            self._stop()

    def _stop(self) -> None:
        self.process.close()
        self.control.close()


class Forked(Confined):
    """A grading process forked by `zygote`, as a uid of the pool, in a cgroup of its own once `settle`d."""

    def __init__(self, zygote: Zygote, limits: Limits, deadline: float, fds: Sequence[int]) -> None:
        def program(uid: int) -> list[str]:
            zygote.fork(uid, limits, fds)
            self.zygote = zygote
            return []

        self.zygote: Zygote | None = None  # once it has forked this process
        self.pids: list[int] = []
        self.settled = False  # in its cgroup, where killing the cgroup kills it and all it started
        super().__init__(limits, deadline, program, fds)

    def _start(self, program, uid: int, pass_fds: Sequence[int]) -> None:
        try:
            program(uid)
        except ControlError as e:
            self.cgroup.remove()
            _UIDS.release(uid)
            raise SandboxUnavailable(f"the zygote did not fork ({e})") from None
        finally:
            _close_all(pass_fds)

    def settle(self, processes: int = 1) -> None:
        """Move the child (the `processes` of its uid, waiting for this) into its own cgroup."""
        found = _processes_of(self.uid)
        if len(found) != processes:
            raise SandboxUnavailable(f"the forked process is not alone as its uid ({found})")
        for pid in found:
            for procs in self.cgroup.procs_files:
                with open(procs, "w") as f:
                    f.write(str(pid))
        self.pids, self.settled = found, True

    @property
    def alive(self) -> bool:
        return all(os.path.exists(f"/proc/{pid}") for pid in self.pids)

    def terminate(self) -> None:
        if not self._closed:
            self.cgroup.kill()
            for pid in [] if self.settled else _processes_of(self.uid):  # not yet in its cgroup
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def signal_kill(self) -> None:
        if self.settled:
            super().signal_kill()
        else:  # not yet in its cgroup: found by its uid
            self.terminate()

    def output(self) -> str:
        return ""

    def last_words(self) -> str:
        self.terminate()
        return ""

    def close(self) -> None:
        if self._closed:
            return
        self._stopped.set()
        self._watchdog.join()
        self.terminate()
        self._closed = True
        self.cgroup.remove()
        wait_until_reaped(self.uid)  # its zygote reaps it
        _close_all(self._own_fds)
        _UIDS.release(self.uid)
        if self.zygote is not None:
            self.zygote.release()


MAX_ZYGOTES = 6  # of grading processes, one per assignment graded lately; of sandboxes, one per preload
_ZYGOTES: Recent[Zygote] = Recent(MAX_ZYGOTES)
_KEEPER = ThreadPoolExecutor(1, thread_name_prefix="zygotes")
"""starts every zygote: bwrap dies with the thread that started it, so one that lives as long as this process"""


def zygote_for(key: tuple, start: Callable[[], Zygote]) -> Zygote:
    """The live zygote for `key` (an assignment), started with `start()` when there is none."""
    return _ZYGOTES.get(key, lambda zygote: not zygote.alive, lambda: _KEEPER.submit(start).result())


class ForkedSandbox(SandboxPipes, Forked):
    """A student sandbox forked by the sandbox zygote (inside/zygote.py): the runner beside an init of its
    own in fresh namespaces, both a uid of the pool, moved into their cgroup before the runner reads its
    first request."""

    def __init__(self, zygote: Zygote, limits: Limits, deadline: float) -> None:
        child_read, self.write_fd = os.pipe()
        self.read_fd, child_write = os.pipe()
        ours, theirs = socket.socketpair()
        try:
            super().__init__(zygote, limits, deadline, (child_read, child_write, theirs.detach()))
        except BaseException:
            _close_all([self.write_fd, self.read_fd])
            ours.close()
            raise
        self._own_fds = [self.write_fd, self.read_fd]
        with ours:
            try:
                ours.settimeout(SETTLE_TIMEOUT)
                if ours.recv(1) != b"r":
                    raise SandboxUnavailable("the forked sandbox ended before it started")
                self.settle(processes=2)  # its init and its runner
                ours.sendall(b"g")
            except (OSError, SandboxUnavailable) as e:
                self.close()
                raise SandboxUnavailable(f"the forked sandbox did not start ({e})") from None
