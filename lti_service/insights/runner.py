"""A link's insights computed in a child process of the worker, never in the worker's own threads.

The analysis reads every student's notebook, text a student chose; in the worker it would hold the GIL (a
regex runs in C from start to end) and stop that worker's grading and its leases' heartbeats. The child
(`python -I`, which runs `main` of this very copy of the tool) reads the database, runs under rlimits (address
space, CPU time) at a low priority, and prints the result as JSON, at most MAX_RESULT bytes, into a file.
The worker's database poll starts it and looks at it at each round without waiting (`Analysis.running`):
the child is killed at INSIGHTS_DEADLINE, and its result is stored only if it is JSON of the expected shape
(cache.fits), else why it did not finish is recorded, in staff's words.
"""

from __future__ import annotations

import json
import logging
import math
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

from ..config import Config
from ..db import Database
from ..rules.settings import load
from ..services import Services
from . import cache

MEMORY = 2 << 30  # bytes of address space the child may map (its imports alone map ~400 MB)
MAX_RESULT = 16 << 20  # bytes of JSON the child may print: the worker reads and checks all of it (~0.2 s)
MAX_REQUEST = 10_000  # bytes of the request (the link's key and its score policy) the child reads
NICE = 10  # the child runs behind grading on the worker's CPU
TOO_LONG = "The analysis took too long (more than {seconds:g} seconds) and was stopped."
TOO_BIG = "The analysis needed more memory, or found more to show, than it may and was stopped."
BROKEN = "The analysis failed (a fault of the tool, logged for its operators)."
EXIT_MEMORY, EXIT_TOO_BIG = 3, 4
ROOT = str(Path(__file__).resolve().parents[2])  # the folder of lti_service/ (isolated, the child is told it)
CHILD = "import sys; sys.path.insert(0, sys.argv[1]); from lti_service.insights.runner import main; " \
        "sys.exit(main(float(sys.argv[2]), sys.stdin.buffer, sys.stdout))"  # fmt: skip
log = logging.getLogger("lti_service.insights")


class Analysis:
    """One link's analysis running in a child process; `running` looks at it without waiting."""

    def __init__(self, services: Services, claim: cache.Claim) -> None:
        self.services, self.claim = services, claim
        self.deadline = services.config.insights_deadline
        self.started = time.monotonic()
        request = json.dumps({"key": claim.key, "policy": load(services, claim.key).score_policy}).encode()
        self._out, self._err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        command = [sys.executable, "-I", "-c", CHILD, ROOT, str(self.deadline)]
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
        self._child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=self._out, stderr=self._err, env=env)
        try:
            self._child.stdin.write(request)  # far below a pipe's buffer: never waits for the child
        finally:
            self._child.stdin.close()

    @classmethod
    def start(cls, services: Services) -> Analysis | None:
        """The analysis of a link that is due, started; None when none is."""
        claimed = cache.claim(services)
        if claimed is None:
            return None
        try:
            return cls(services, claimed)
        except Exception:  # no process could start (out of processes, memory): like a computation that failed
            log.exception("the insights of link %s could not be started", claimed.key["resource_link_id"][:40])
            cache.fail(services, claimed, BROKEN)
            return None

    def running(self) -> bool:
        """Whether the child still runs within the deadline (past it, it is killed)."""
        if self._child.poll() is not None:
            return False
        if time.monotonic() - self.started < self.deadline:
            return True
        self.stop()
        return False

    def finish(self) -> None:
        """Once the child is done: its result stored, or why there is none recorded."""
        try:
            seconds = time.monotonic() - self.started
            data = self._result()
            if data is not None:
                cache.store(self.services, self.claim, data, seconds)
        finally:
            self._close()

    def stop(self) -> None:
        """Kill the child (the deadline passed); `finish` then records why."""
        if self._child.poll() is None:
            self._child.kill()
        self._child.wait()

    def abandon(self) -> None:
        """Kill the child and give the link back (the worker stops): another worker computes it."""
        self.stop()
        self._close()
        cache.release(self.services, self.claim)

    def _result(self) -> dict | None:
        """The child's result if it is one (else the failure is recorded and None)."""
        code = self._child.returncode
        if code != 0:  # killed at the deadline (SIGKILL), or its CPU time ran out (SIGXCPU)
            too_long = code in (-signal.SIGKILL, -signal.SIGXCPU)
            self._failed(TOO_LONG.format(seconds=self.deadline) if too_long else
                         TOO_BIG if code in (EXIT_MEMORY, EXIT_TOO_BIG) else BROKEN)  # fmt: skip
            return None
        self._out.seek(0)
        text = self._out.read(MAX_RESULT + 1)
        try:
            data = json.loads(text) if len(text) <= MAX_RESULT else None
        except (ValueError, RecursionError):
            data = None
        if not cache.fits(data):
            self._failed(BROKEN, "a result that is not insights")
            return None
        return data

    def _failed(self, message: str, detail: str = "") -> None:
        self._err.seek(0, os.SEEK_END)
        self._err.seek(max(0, self._err.tell() - 4000))
        tail = self._err.read().decode(errors="replace")
        log.warning("the insights of link %s did not finish: %s %s\n%s", self.claim.key["resource_link_id"][:40],
                    message, detail, tail)  # fmt: skip
        cache.fail(self.services, self.claim, message)

    def _close(self) -> None:
        for file in (self._out, self._err):
            file.close()


def _limit(deadline: float) -> None:
    """The child's own bounds, set before it reads anything: CPU time (so it ends by the deadline even if the
    worker that waits for it died) and address space; no core files. (No RLIMIT_FSIZE: a reader of SQLite may
    checkpoint its log into the database file, and the output is bounded by `main` itself.)"""
    cpu = math.ceil(deadline) + 1
    for kind, value in ((resource.RLIMIT_CPU, cpu), (resource.RLIMIT_AS, MEMORY), (resource.RLIMIT_CORE, 0)):
        hard = resource.getrlimit(kind)[1]
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)  # lowered only, never raised
        resource.setrlimit(kind, (value, value))
    os.nice(NICE)


def main(deadline: float, stdin: IO[bytes], stdout: IO[str]) -> int:
    """The child: the request from stdin, the insights as JSON on stdout; the exit status says how it ended."""
    _limit(deadline)
    try:
        request = json.loads(stdin.read(MAX_REQUEST))
        database = Database(Config().sqlalchemy_url)
        try:
            text = json.dumps(cache.compute(database, request["key"], request["policy"]))
        finally:
            database.engine.dispose()
    except MemoryError:
        return EXIT_MEMORY
    if len(text.encode()) > MAX_RESULT:
        return EXIT_TOO_BIG
    stdout.write(text)
    return 0
