"""Grading processes forked by a zygote: started in milliseconds, not in a tenth of a second.

A grading process's interpreter with the grader's code and its libraries imported is most of what starting
one costs (numpy and pandas: about half a second of CPU). A Zygote (zygote.py) is that interpreter, in
bubblewrap like any grading process but as root with only the capabilities to change uid and to mount; it
never reads a zip, runs a test or sees a student value. For each grading it forks a child that at once
takes a /tmp and IPC namespace of its own and becomes a uid of the pool (all capabilities gone); this
process then moves the child into a cgroup of its own before it runs anything but the grader's code, and a
watchdog kills it at its deadline, as for any Confined process. One zygote serves one assignment, per
process.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from ..control import Control, ControlError
from ..errors import SandboxUnavailable
from ..options import Limits
from ..recent import Recent
from .bwrap import _UIDS, Confined, _close_all, _processes_of, bwrap_argv, python_roots, rlimits, wait_until_reaped

START = (
    "import sys; sys.path.insert(0, '/opt/grader'); from autograder.inside.startup import add_site_dirs; "
    "import json; add_site_dirs(json.loads(sys.argv[3])); from autograder.zygote import main; "
    "main(int(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[4]))"
)
LIFETIME = 600.0  # seconds a zygote serves before a fresh one replaces it


class Zygote:
    """The zygote process and the socket its fork requests go through (one thread at a time)."""

    def __init__(self, limits: Limits, site_dirs: Sequence[str], binds: Sequence[tuple[str, str]], preload) -> None:
        ours, theirs = socket.socketpair()
        self.control, fd = Control(ours), theirs.detach()
        self.lock = threading.Lock()
        under_tmp = [path for path in [*python_roots(site_dirs), *(target for _, target in binds)]
                     if path.startswith("/tmp/")]  # fmt: skip

        def program(uid: int, info_fd: int) -> list[str]:
            argv = bwrap_argv(limits, None, info_fd, site_dirs, binds)
            return argv + [sys.executable, "-I", "-S", "-c", START, str(fd), json.dumps(list(preload)),
                           json.dumps(list(site_dirs)), json.dumps(under_tmp)]  # fmt: skip

        try:
            self.process = Confined(limits, time.monotonic() + LIFETIME, program, [fd])
        except BaseException:
            self.control.close()
            raise

    @property
    def alive(self) -> bool:
        return self.process.proc.poll() is None and time.monotonic() < self.process.deadline - 60

    def fork(self, uid: int, limits: Limits, fds: Sequence[int]) -> None:
        request = {"uid": uid, "rlimits": rlimits(limits), "tmp_bytes": limits.tmp_mb * 1024 * 1024}
        with self.lock:
            self.control.send(request, fds)

    def close(self) -> None:
        self.process.close()
        self.control.close()


class Forked(Confined):
    """A grading process forked by `zygote`, as a uid of the pool, in a cgroup of its own once `settle`d."""

    def __init__(self, zygote: Zygote, limits: Limits, deadline: float, fds: Sequence[int]) -> None:
        def program(uid: int, info_fd: int) -> list[str]:
            zygote.fork(uid, limits, fds)
            return []

        self.pid: int | None = None
        self.settled = False  # in its cgroup, where killing the cgroup kills it and all it started
        super().__init__(limits, deadline, program, fds)

    def _start(self, program, uid: int, pass_fds: Sequence[int]) -> None:
        try:
            program(uid, -1)
        except ControlError as e:
            self.cgroup.remove()
            _UIDS.release(uid)
            raise SandboxUnavailable(f"the zygote did not fork ({e})") from None
        finally:
            _close_all(pass_fds)

    def settle(self) -> None:
        """Move the child (the one process of its uid, waiting for this) into its own cgroup."""
        found = _processes_of(self.uid)
        if len(found) != 1:
            raise SandboxUnavailable(f"the forked grading process is not alone as its uid ({found})")
        self.pid = found[0]
        for procs in self.cgroup.procs_files:
            with open(procs, "w") as f:
                f.write(str(self.pid))
        self.settled = True

    @property
    def alive(self) -> bool:
        return self.pid is None or os.path.exists(f"/proc/{self.pid}")

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
        _UIDS.release(self.uid)


MAX_ZYGOTES = 4
_ZYGOTES: Recent[Zygote] = Recent(MAX_ZYGOTES)
_KEEPER = ThreadPoolExecutor(1, thread_name_prefix="zygotes")
"""starts every zygote: bwrap dies with the thread that started it, so one that lives as long as this process"""


def zygote_for(key: tuple, start: Callable[[], Zygote]) -> Zygote:
    """The live zygote for `key` (an assignment), started with `start()` when there is none."""
    return _ZYGOTES.get(key, lambda zygote: not zygote.alive, lambda: _KEEPER.submit(start).result())
