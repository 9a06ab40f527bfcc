"""Build commands (`otter assign` on an upload, pip installing an assignment's packages) run to their end in a
cgroup of their own, as the sandboxes run in theirs: limited from their first instruction, killed as a whole
at their time limit. What they write is read within bounds: whatever runs there (course code, a process it
left behind) may write without end, and what this process keeps is its memory, not the cgroup's."""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from collections.abc import Callable

from .bwrap import JOIN_CGROUP
from .cgroups import SandboxCgroup

STDERR_TAIL = 64 * 1024  # bytes of the end of stderr kept: a log, read for the reason of a failure
READ_CHUNK = 1 << 16


class OutputTooLarge(RuntimeError):
    """A build command wrote more to stdout than its caller takes; it has been killed. str() says how much."""


Watch = Callable[[bytes], None]
"""Called with the stdout so far every WATCH_EVERY seconds while a build runs (progress, a disk budget); an
exception it raises stops the build (every process of the cgroup killed) and propagates."""
WATCH_EVERY = 2.0


def run_in_cgroup(
    cgroup: SandboxCgroup, argv: list[str], timeout: float, max_stdout: int, watch: Watch | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run `argv` (bwrap and what it confines) in `cgroup`, collecting stdout (at most `max_stdout` bytes:
    OutputTooLarge past them) and the end of stderr (STDERR_TAIL bytes). At `timeout`, past `max_stdout`, or
    when `watch` raises, kill every process in the cgroup and raise subprocess.TimeoutExpired, OutputTooLarge
    or what `watch` raised."""
    process = subprocess.Popen(
        ["/bin/sh", "-c", JOIN_CGROUP, "sh", *map(str, cgroup.procs_files), "--", *argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + timeout
    try:
        stdout, stderr = _collect(process, deadline, timeout, max_stdout, watch)
        process.wait(max(0.0, deadline - time.monotonic()))
    except BaseException:
        process.kill()  # not yet in the cgroup if it has only just started
        cgroup.kill()
        process.wait()
        raise
    finally:
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
    return subprocess.CompletedProcess(argv, process.returncode, bytes(stdout), bytes(stderr))


def _collect(
    process: subprocess.Popen[bytes], deadline: float, timeout: float, max_stdout: int, watch: Watch | None
) -> tuple[bytearray, bytearray]:
    """Read both pipes until they end (every process holding them gone), within the bounds above."""
    assert process.stdout is not None and process.stderr is not None
    stdout, stderr = bytearray(), bytearray()
    watched = time.monotonic()
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ, stdout)
        selector.register(process.stderr, selectors.EVENT_READ, stderr)
        while selector.get_map():
            now = time.monotonic()
            left = deadline - now
            if left <= 0:
                raise subprocess.TimeoutExpired(process.args, timeout)
            if watch is not None and now - watched >= WATCH_EVERY:
                watch(bytes(stdout))
                watched = now
            for key, _ in selector.select(min(left, WATCH_EVERY) if watch else left):
                chunk = os.read(key.fd, READ_CHUNK)
                if not chunk:
                    selector.unregister(key.fileobj)
                key.data.extend(chunk)
            del stderr[:-STDERR_TAIL]
            if len(stdout) > max_stdout:
                raise OutputTooLarge(f"it wrote more than {max_stdout / 2**20:g} MB to its output")
    return stdout, stderr
