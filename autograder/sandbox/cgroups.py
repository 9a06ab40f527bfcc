"""One resource limit for a whole sandbox: memory, processes and CPU of all its processes together.

Per-process rlimits do not bound a sandbox (six forked children each under a 1 GiB RLIMIT_AS hold 6 GiB),
so every sandbox gets its own cgroup: cgroup v2 (`memory.max`, `memory.swap.max`, `pids.max`, `cpu.max`)
where the memory, pids and cpu controllers are available, else cgroup v1 (`memory.limit_in_bytes` with
`memory.memsw.limit_in_bytes`, `pids.max`, `cpu.cfs_quota_us`, `cpuacct.usage`). Where neither can be
set up, grading refuses (CgroupUnavailable): student code never runs without them.

GRADER_CGROUP names the parent cgroup for sandboxes (a path below the cgroup root, such as a systemd
unit's delegated cgroup); by default the grader's own cgroup.
"""

from __future__ import annotations

import errno
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
CPU_PERIOD_US = 100_000
V2_CONTROLLERS = ("cpu", "memory", "pids")
SETUP_HINT = (
    "the grader limits each sandbox with a cgroup, so it needs root and either cgroup v2 with the memory, "
    "pids and cpu controllers available to its cgroup (systemd: Delegate=yes; GRADER_CGROUP may name a "
    "delegated cgroup) or cgroup v1 with the memory, pids, cpu and cpuacct controllers mounted"
)


class CgroupUnavailable(RuntimeError):
    """No cgroup can limit the sandbox; str() says what the operator must provide."""


@dataclass(frozen=True)
class Limits:
    memory_bytes: int
    """memory of all the sandbox's processes together (no swap)"""
    max_processes: int
    """processes and threads of the sandbox together"""
    cpus: float
    """CPU rate: how many cores the sandbox may keep busy at once"""


class SandboxCgroup:
    """The cgroup of one sandbox (one directory per controller on v1, one directory on v2)."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files  # role -> file: procs*, cpu_usage, memory_peak, kill
        self.procs_files = sorted({p for role, p in files.items() if role.startswith("procs")})

    @classmethod
    def create(cls, name: str, limits: Limits) -> SandboxCgroup:
        """A fresh cgroup called `name` with the limits set, or CgroupUnavailable. A process joins it by
        writing "0" to each of `procs_files`."""
        try:
            v2 = _v2_parent()
            return cls(_create_v2(v2 / "decode-grader" / name, limits) if v2 else _create_v1(name, limits))
        except OSError as error:
            raise CgroupUnavailable(f"cannot set up the sandbox's cgroup ({error}): {SETUP_HINT}") from None

    def pids(self) -> list[int]:
        found: set[int] = set()
        for procs in self.procs_files:
            try:
                found.update(int(p) for p in procs.read_text().split())
            except FileNotFoundError:
                pass
        return sorted(found)

    def cpu_seconds(self) -> float:
        """CPU time used so far by every process the sandbox ever had."""
        text = self.files["cpu_usage"].read_text()
        if self.files["cpu_usage"].name == "cpu.stat":
            return int(dict(line.split() for line in text.splitlines())["usage_usec"]) / 1e6
        return int(text) / 1e9

    def memory_peak(self) -> int:
        """The most memory the sandbox held at once, in bytes (0 where the kernel does not say)."""
        peak = self.files.get("memory_peak")
        return int(peak.read_text()) if peak is not None and peak.exists() else 0

    def kill(self) -> None:
        """SIGKILL every process in the cgroup, until none is left."""
        deadline = time.monotonic() + 10
        while pids := self.signal_kill():
            if time.monotonic() > deadline:
                raise RuntimeError(f"processes {pids} of a sandbox cgroup survived SIGKILL")
            time.sleep(0.002)  # a killed process takes a moment to leave its cgroup

    def signal_kill(self) -> list[int]:
        """SIGKILL every process in the cgroup now, without waiting for them to leave it (a process forked
        meanwhile is left to `kill`); the processes signalled."""
        if "kill" in self.files and self.files["kill"].exists():
            _write(self.files["kill"], "1")
        pids = self.pids()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return pids

    def remove(self) -> None:
        """Kill whatever is left and delete the cgroup."""
        self.kill()
        for procs in self.procs_files:
            _rmdir(procs.parent)


def _own_path(controller: str) -> str:
    """This process's cgroup for a v1 controller ("" = the v2 hierarchy), from /proc/self/cgroup."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        if controller in names.split(",") or (controller == "" and names == ""):
            return os.environ.get("GRADER_CGROUP") or path
    raise CgroupUnavailable(f"this process is in no {controller or 'v2'} cgroup: {SETUP_HINT}")


def _v2_parent() -> Path | None:
    """The v2 cgroup to create sandboxes in, when the unified hierarchy has the controllers we need."""
    if not (ROOT / "cgroup.controllers").exists():
        return None
    parent = ROOT / _own_path("").lstrip("/")
    available = set((parent / "cgroup.controllers").read_text().split())
    return parent if set(V2_CONTROLLERS) <= available else None


def _create_v2(group: Path, limits: Limits) -> dict[str, Path]:
    _enable_controllers(group.parent.parent)
    group.parent.mkdir(exist_ok=True)
    _enable_controllers(group.parent)
    _fresh_dir(group)
    _write(group / "memory.max", str(limits.memory_bytes))
    _write(group / "memory.swap.max", "0")
    _write(group / "pids.max", str(limits.max_processes))
    _write(group / "cpu.max", f"{int(limits.cpus * CPU_PERIOD_US)} {CPU_PERIOD_US}")
    return {
        "procs": group / "cgroup.procs",
        "cpu_usage": group / "cpu.stat",
        "memory_peak": group / "memory.peak",
        "kill": group / "cgroup.kill",
    }


def _create_v1(name: str, limits: Limits) -> dict[str, Path]:
    dirs: dict[str, Path] = {}
    for controller in ("memory", "pids", "cpu", "cpuacct"):
        mount = (ROOT / controller).resolve()  # cpu and cpuacct may share one mount
        if not (mount / "cgroup.procs").exists():
            raise CgroupUnavailable(f"no cgroup v1 {controller} controller under {ROOT}: {SETUP_HINT}")
        dirs[controller] = mount / _own_path(controller).lstrip("/") / "decode-grader" / name
    for directory in dict.fromkeys(dirs.values()):
        directory.parent.mkdir(exist_ok=True)
        _fresh_dir(directory)
    memory = dirs["memory"]
    _write(memory / "memory.limit_in_bytes", str(limits.memory_bytes))
    if (memory / "memory.memsw.limit_in_bytes").exists():  # with swap accounting: memory + swap together
        _write(memory / "memory.memsw.limit_in_bytes", str(limits.memory_bytes))
    _write(dirs["pids"] / "pids.max", str(limits.max_processes))
    _write(dirs["cpu"] / "cpu.cfs_period_us", str(CPU_PERIOD_US))
    _write(dirs["cpu"] / "cpu.cfs_quota_us", str(int(limits.cpus * CPU_PERIOD_US)))
    files = {f"procs_{c}": d / "cgroup.procs" for c, d in dirs.items()}
    return {
        **files,
        "cpu_usage": dirs["cpuacct"] / "cpuacct.usage",
        "memory_peak": memory / "memory.max_usage_in_bytes",
    }


def _enable_controllers(group: Path) -> None:
    """v2: let a cgroup's children use the controllers (a no-op where they are enabled already)."""
    control = group / "cgroup.subtree_control"
    missing = set(V2_CONTROLLERS) - set(control.read_text().split())
    if missing:
        _write(control, " ".join(f"+{c}" for c in sorted(missing)))


def _fresh_dir(directory: Path) -> None:
    """Create the cgroup, first removing a leftover of the same name (from a grader that was killed)."""
    try:
        directory.mkdir()
    except FileExistsError:
        SandboxCgroup({"procs": directory / "cgroup.procs"}).remove()
        directory.mkdir()


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _rmdir(directory: Path) -> None:
    deadline = time.monotonic() + 5
    while True:
        try:
            directory.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as error:
            if error.errno != errno.EBUSY or time.monotonic() > deadline:
                raise
            time.sleep(0.002)  # the last killed process is still leaving
