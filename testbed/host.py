"""What a submission may have left behind on the host (processes and files), and what grading cost the grader's
own process."""

from __future__ import annotations

import glob
import os
import resource
import sys
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from autograder.assignment import load_assignment
from autograder.grading import start_ready
from autograder.options import Limits
from autograder.protocol import Channel
from autograder.sandbox import Sandbox
from autograder.sandbox.bwrap import released
from autograder.values import Values

# Where the attack corpus tries to write, and the names it writes there.
WRITE_TARGETS = ["/tmp", "/var/tmp", "/etc", "/usr", "/root", "/work", sys.prefix, os.path.dirname(sys.executable)]
ARTIFACTS = ["results.json", "pwned-by-pickle", "written-by-student.txt", "filler-*"]


def sandbox_processes_under(ancestor: int) -> list[int]:
    """Pids of live processes running as a sandbox uid that descend from process `ancestor`."""
    base = Limits().sandbox_uid
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and base <= _status(int(entry.name)).get("Uid", base - 1) < base + 64:
            pid = int(entry.name)
            while pid > 1 and pid != ancestor:
                pid = _status(pid).get("PPid", 1)
            if pid == ancestor:
                found.append(int(entry.name))
    return found


def _status(pid: int) -> dict[str, int]:
    """The Uid (real) and PPid of a process; empty once it is gone."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return {}
    fields = dict(line.split(":", 1) for line in lines if line.startswith(("Uid:", "PPid:")))
    return {key: int(value.split()[0]) for key, value in fields.items()}


def sandbox_processes(*_: object) -> list[str]:
    """Live processes running as one of the sandbox uids, described (pid, state, parent, command), once this
    process has freed what its gradings asked it to (autograder.sandbox.bwrap.released)."""
    released()
    base = Limits().sandbox_uid
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                status = dict(line.split(":", 1) for line in (entry / "status").read_text().splitlines())
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:100]
            except (OSError, ValueError):
                continue
            if base <= int(status["Uid"].split()[0]) < base + 64:
                found.append(f"{entry.name} {status['State'].strip()} ppid={status['PPid'].strip()} {command}")
    return found


def host_artifacts() -> set[str]:
    """Files with the attack corpus's names in the places it tries to write."""
    return {path for folder in WRITE_TARGETS for name in ARTIFACTS for path in glob.glob(os.path.join(folder, name))}


WORKER_MEMORY_MB = 32  # the most the grader's own process may hold at once for one hostile grading
WORKER_CPU_SECONDS = 2.0  # and the CPU it may spend on it (a toy grading costs it under a tenth of a second)


@contextmanager
def worker_cost() -> Iterator[dict[str, float]]:
    """What the block costs this process, the grader's side (for the tool, a worker): the most memory it held
    at once beyond what it held before (tracemalloc's peak) and the CPU time of all its threads."""
    cost: dict[str, float] = {}
    tracemalloc.start()
    before = resource.getrusage(resource.RUSAGE_SELF)
    try:
        yield cost
    finally:
        after = resource.getrusage(resource.RUSAGE_SELF)
        cost["memory_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        cost["cpu_seconds"] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


@contextmanager
def started_sandbox(zip_path: Path, limits: Limits) -> Iterator[tuple[Channel, Values]]:
    """A real sandbox ready for the assignment, spoken to from this process (the grading process's side)."""
    deadline = time.monotonic() + 600
    ready = start_ready(load_assignment(zip_path), limits, deadline, Sandbox(limits, deadline))
    try:
        yield ready.channel, Values(ready.channel)
    finally:
        ready.close()


def reset_peak_memory() -> bool:
    """Start this process's peak resident memory (VmHWM) again from its current size; False if not allowed."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def peak_memory_kib() -> int:
    status = Path("/proc/self/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM")).split()[1])
