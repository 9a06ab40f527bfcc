"""Grading limits and settings, shared by the CLI and the library API."""

from __future__ import annotations

import os
from dataclasses import dataclass, field


def _env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


@dataclass(frozen=True)
class GradeOptions:
    """Every knob in one place so a web service and the CLI grade identically."""

    cell_timeout: float = 5.0
    """seconds one notebook cell may run"""
    test_timeout: float = 5.0
    """seconds one call from a test into student code may run"""
    total_timeout: float = 120.0
    """wall-clock seconds for the whole submission, after which everything is killed"""
    grace: float = 1.0
    """seconds the sandbox gets to answer after its own soft timeout before it is killed"""
    max_restarts: int = 3
    """sandbox restarts (after a hang or crash) before remaining work fails"""
    max_notebook_bytes: int = 5 * 1024 * 1024
    memory_bytes: int = 1024**3
    """RLIMIT_AS of the student process"""
    cpu_seconds: int = 120
    tmp_bytes: int = 64 * 1024 * 1024
    """size of the sandbox's only writable directory, /tmp"""
    max_processes: int = 32
    """RLIMIT_NPROC for the sandbox uid"""
    bwrap: str | None = field(default_factory=lambda: os.environ.get("GRADER_BWRAP"))
    """path of bwrap; None means look it up on PATH"""
    sandbox_uid: int = field(default_factory=lambda: _env_int("GRADER_SANDBOX_UID", 64000))
    """first of a small pool of uids the student process runs as (one per live sandbox)"""
