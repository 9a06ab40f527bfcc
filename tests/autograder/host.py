"""What a submission may have left behind on the host: processes and files."""

from __future__ import annotations

import glob
import os
import sys
from pathlib import Path

from autograder.options import Limits

# Where the attack corpus tries to write, and the names it writes there.
WRITE_TARGETS = ["/tmp", "/var/tmp", "/etc", "/usr", "/root", "/work", sys.prefix, os.path.dirname(sys.executable)]
ARTIFACTS = ["results.json", "pwned-by-pickle", "written-by-student.txt", "filler-*"]


def sandbox_processes(*_: object) -> list[int]:
    """Pids of live processes running as one of the sandbox uids."""
    base = Limits().sandbox_uid
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                status = (entry / "status").read_text()
            except OSError:
                continue
            uid = int(next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1])
            if base <= uid < base + 64:
                pids.append(int(entry.name))
    return pids


def host_artifacts() -> set[str]:
    """Files with the attack corpus's names in the places it tries to write."""
    return {path for folder in WRITE_TARGETS for name in ARTIFACTS for path in glob.glob(os.path.join(folder, name))}
