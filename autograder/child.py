"""A grading process of its own, for an assignment whose tests need more than the caller's process has:
its support files in the working directory (tests read them by relative path, as under `otter run`) or
packages of its own environment. The process stays to grade the assignment's next notebooks.

Parent side: `grade_in_child` takes an idle process of the assignment, or starts one with the
environment's interpreter in a directory holding the support files, and sends it the notebook.
Child side: `main` grades one request per line on stdin, answers one JSON line each on stdout, and exits
at the end of its input or after IDLE_EXIT seconds without work. Both processes are the grader's own:
nothing here comes from the sandbox.
"""

from __future__ import annotations

import base64
import json
import os
import select
import subprocess
import sys
import tempfile
import threading
from dataclasses import asdict

from .assignment import Assignment, load_assignment
from .notebook import load_cells
from .options import GradeOptions
from .protocol import ready
from .results import GradeResult
from .sandbox import SandboxUnavailable

IDLE_EXIT = 60.0  # seconds an idle grading process waits for work before it exits
SLACK = 60.0  # seconds a grading may take in a child beyond its own limit (start, imports)
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _Child:
    """One grading process: its interpreter, its working directory, its pipes."""

    def __init__(self, python: str, assignment: Assignment) -> None:
        self.workdir = tempfile.TemporaryDirectory(prefix="decode-grader-work-")
        for path, data in assignment.files:
            target = os.path.join(self.workdir.name, path)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as f:
                f.write(data)
        self.proc = subprocess.Popen(
            [python, "-m", "autograder.child", assignment.path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=self.workdir.name,
            env={**os.environ, "PYTHONPATH": PACKAGE_ROOT},
        )

    def ask(self, request: dict, timeout: float) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request).encode() + b"\n")
        self.proc.stdin.flush()
        if not ready(self.proc.stdout.fileno(), select.POLLIN, timeout):
            raise TimeoutError("the grading process did not answer in time")
        line = self.proc.stdout.readline()
        if not line:
            raise EOFError("the grading process exited")
        return json.loads(line)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.workdir.cleanup()


_IDLE: dict[tuple, list[_Child]] = {}
_IDLE_LOCK = threading.Lock()


def grade_in_child(assignment: Assignment, python: str, notebook: bytes, options: GradeOptions) -> GradeResult:
    """Grade in a process of the assignment's (started on first use, kept for the next notebooks)."""
    key = (id(assignment), python, tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("GRADER_"))))
    request = {"notebook": base64.b64encode(notebook).decode(), "options": asdict(options)}
    timeout = options.limits(assignment.limits).total_timeout + SLACK
    for _ in range(2):  # an idle process may have exited since its last grading: a new one, once
        with _IDLE_LOCK:
            idle = [c for c in _IDLE.get(key, []) if c.proc.poll() is None]
            child = idle.pop() if idle else None
            _IDLE[key] = idle
        child = child or _Child(python, assignment)
        try:
            reply = child.ask(request, timeout)
        except (OSError, EOFError, ValueError) as e:
            child.close()
            error = e
            continue
        except TimeoutError:
            child.close()
            raise SandboxUnavailable("the grading process did not finish in time") from None
        with _IDLE_LOCK:
            _IDLE.setdefault(key, []).append(child)
        if "sandbox_unavailable" in reply:
            raise SandboxUnavailable(reply["sandbox_unavailable"])
        if "error" in reply:
            raise RuntimeError(f"the grading process failed: {reply['error']}")
        return GradeResult.from_dict(reply["result"])
    raise RuntimeError(f"the grading process failed: {error!r}")


def main() -> int:
    from .grading import grade_cells

    assignment = load_assignment(sys.argv[1])
    while ready(sys.stdin.fileno(), select.POLLIN, IDLE_EXIT):
        line = sys.stdin.buffer.readline()
        if not line:
            break
        try:
            request = json.loads(line)
            options = GradeOptions(**request["options"])
            cells = load_cells(base64.b64decode(request["notebook"]), assignment.name, options.max_notebook_bytes)
            reply = {"result": grade_cells(assignment, cells, options).to_dict()}
        except SandboxUnavailable as e:
            reply = {"sandbox_unavailable": str(e)}
        except Exception as e:  # the parent reports it as a grader failure for this notebook
            reply = {"error": repr(e)[:1000]}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
