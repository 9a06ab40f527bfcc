"""Grading limits: defaults, an assignment's own (otter_config.json "grading_limits"), a caller's."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from typing import Any


def _env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


@dataclass(frozen=True)
class Limits:
    """What one grading may use. The defaults are generous (no honest notebook should meet them: Otter
    itself has no limit at all); an assignment can set its own in otter_config.json, e.g.
    "grading_limits": {"cell_timeout": 10, "total_timeout": 60}."""

    cell_timeout: float = 120.0
    """seconds one notebook cell may run"""
    test_timeout: float = 60.0
    """seconds one call from a test into student code may run"""
    total_timeout: float = 600.0
    """wall-clock seconds for the whole submission, after which everything is killed"""
    memory_mb: int = 2048
    """memory of the whole sandbox (every process together)"""
    max_processes: int = 64
    """processes and threads of the whole sandbox"""
    cpus: float = 1.0
    """cores the sandbox may keep busy at once"""
    tmp_mb: int = 256
    """size of the sandbox's only writable directory, /tmp (the support files are copied there)"""
    value_mb: int = 1024
    """raw data of one value crossing between student code and the tests (an array's bytes, a DataFrame's
    columns): a larger one stays in the sandbox and fails the tests that use it, saying so. The grading
    process holds it twice while rebuilding it, so memory_mb should be over twice this to use all of it."""
    grace: float = 1.0
    """seconds the sandbox gets to answer after its own soft timeout before it is killed"""
    max_restarts: int = 3
    """sandbox restarts (after a hang or crash) before the remaining work fails"""
    sandbox_uid: int = field(default_factory=lambda: _env_int("GRADER_SANDBOX_UID", 64000))
    """first of a pool of 64 uids the student process runs as (one per live sandbox)"""
    bwrap: str | None = field(default_factory=lambda: os.environ.get("GRADER_BWRAP"))
    """path of bwrap; None means look it up on PATH"""

    @classmethod
    def from_config(cls, config: Any) -> dict[str, Any]:
        """Validated "grading_limits" of an otter_config.json (ValueError says what is wrong)."""
        if config is None:
            return {}
        allowed = {"cell_timeout", "test_timeout", "total_timeout", "memory_mb", "max_processes", "cpus", "tmp_mb",
                   "value_mb"}  # fmt: skip
        if not isinstance(config, dict) or not set(config) <= allowed:
            raise ValueError(f"grading_limits must be an object with keys among {', '.join(sorted(allowed))}")
        for name, value in config.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ValueError(f"grading_limits.{name} must be a positive number")
        return dict(config)


@dataclass(frozen=True)
class GradeOptions:
    """A caller's settings; a limit left at None comes from the assignment, else from Limits' default."""

    cell_timeout: float | None = None
    test_timeout: float | None = None
    total_timeout: float | None = None
    memory_mb: int | None = None
    max_processes: int | None = None
    value_mb: int | None = None
    grace: float | None = None
    max_restarts: int | None = None
    bwrap: str | None = None
    max_notebook_bytes: int = 5 * 1024 * 1024
    prestart: int = 0
    """sandboxes to keep started ahead for this assignment (a grading service's concurrency; pool.py)"""

    def limits(self, assignment_limits: dict[str, Any]) -> Limits:
        names = {f.name for f in fields(Limits)}
        chosen = {f.name: getattr(self, f.name) for f in fields(self) if f.name in names}
        return replace(Limits(**assignment_limits), **{k: v for k, v in chosen.items() if v is not None})
