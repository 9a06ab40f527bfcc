"""Build commands (`otter assign` on an upload, pip installing an assignment's packages) run to their end in a
cgroup of their own, as the sandboxes run in theirs: limited from their first instruction, killed as a whole
at their time limit."""

from __future__ import annotations

import subprocess

from .bwrap import JOIN_CGROUP
from .cgroups import SandboxCgroup


def run_in_cgroup(cgroup: SandboxCgroup, argv: list[str], timeout: float) -> subprocess.CompletedProcess[bytes]:
    """Run `argv` (bwrap and what it confines) in `cgroup`, collecting its output; at `timeout`, kill every
    process in the cgroup and raise subprocess.TimeoutExpired."""
    process = subprocess.Popen(
        ["/bin/sh", "-c", JOIN_CGROUP, "sh", *map(str, cgroup.procs_files), "--", *argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()  # not yet in the cgroup if it has only just started
        cgroup.kill()
        process.communicate()
        raise
    return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)
