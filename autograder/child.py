"""The grading process: where an assignment's tests (course code) run, on student values from its sandbox.

The grader (grader.py) starts one per grading in bubblewrap, as an unprivileged uid of its own, in a
cgroup of its own, with no network and nothing of the grader's: the system and Python read-only, the
grader's `autograder` package, the assignment's autograder zip (an open file it inherits, read-only) and
a size-capped /tmp as its working directory, where the support files are put (tests read them by relative
path, as under `otter run`). It talks to the grader over one Unix socket (control.py) and to its student
sandbox over the pipes the grader hands it; it cannot start anything itself. In order:

1. It loads the test files and reports what they are (manifest.py), before any student value is here.
2. It prepares the first sandbox the grader hands it (seed, support files, libraries imported ahead).
3. It grades one notebook (grading.py), asking the grader for a fresh sandbox after a crash or a hang, and
   reports which test cases passed, with their messages; then it exits.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any
from zipfile import BadZipFile

from .assignment import Assignment, AssignmentError, read_assignment
from .errors import SandboxUnavailable
from .grading import SUPPORT_FOLDER, Grading, Ready, Session, start_ready
from .inside.control import GRADING_PROCESS, Control, encode
from .manifest import MAX_CELL_ERRORS, MAX_MESSAGE, MAX_NAME
from .notebook import MAX_FILE_NAME, Cell
from .options import Limits
from .protocol import SandboxFailure
from .testfiles import TestFile, TestFileError

MAX_MODULES = 2000  # names of modules the notebook imported an outcome carries (what sandboxes import ahead)


class GivenSandbox:
    """A student sandbox the grader started for this process: its pipes here; killing it and freeing it are
    asked of the grader, which holds its cgroup and uid."""

    def __init__(self, control: Control, number: int, fds: list[int]) -> None:
        self.control, self.number = control, number
        self.read_fd, self.write_fd = fds
        self.closed = False

    def terminate(self) -> None:
        self.control.send({"kill": self.number})

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.control.send({"close": self.number})
            os.close(self.read_fd)
            os.close(self.write_fd)

    def output(self) -> str:
        return ""


def receive_sandbox(control: Control) -> tuple[GivenSandbox, dict[str, Any]]:
    """The next sandbox the grader sends (SandboxUnavailable if it has none to give)."""
    message, fds = control.recv()
    if message.get("sandbox") is None or len(fds) != 2:
        for fd in fds:
            os.close(fd)
        raise SandboxUnavailable(str(message.get("reason", "the grader started no sandbox")))
    return GivenSandbox(control, message["sandbox"], fds), message


def declared(tests: list[TestFile]) -> list[dict[str, Any]]:
    """The tests' manifest as sent to the grader, which reads it with Manifest.from_data (the one writer of it)."""
    return [
        {"name": tf.name, "all_or_nothing": bool(tf.all_or_nothing),
         "cases": [[case.name, bool(case.hidden), case.points] for case in tf.test_cases]}
        for tf in tests
    ]  # fmt: skip


def grade(control: Control, assignment: Assignment, tests: list[TestFile]) -> None:
    """Steps 2 and 3 of the module's docstring."""
    sandbox, message = receive_sandbox(control)
    limits = Limits(**message["limits"])
    preload = tuple(message["preload"])
    for name in preload:  # the libraries its notebooks' values come in (decoding a DataFrame needs pandas)
        try:
            __import__(name)
        except ImportError:
            pass
    try:
        first: Ready | None = start_ready(assignment, limits, time.monotonic() + limits.total_timeout, sandbox, preload)
    except SandboxFailure as e:
        control.send({"unavailable": f"the sandbox did not start ({e})"})
        return
    control.send({"ready": True})
    message, _ = control.recv()
    cells = [Cell(index, source) for index, source in message["grade"]]
    file_name = message.get("file_name")
    if not (isinstance(file_name, str) and 0 < len(file_name) <= MAX_FILE_NAME and "/" not in file_name):
        file_name = None

    def new_sandbox() -> GivenSandbox:
        control.send({"want": "sandbox"})
        return receive_sandbox(control)[0]

    session = Session(assignment, limits, new_sandbox, first, preload, file_name)
    control.send_encoded(fitted(Grading(assignment, tests, cells, session).run()))


def fitted(outcome: dict[str, Any]) -> bytes:
    """The outcome's message, within what the grader accepts in one (GRADING_PROCESS): texts student code can
    make long (tests' messages, cells' errors) are cut, shorter and shorter until it fits, never a result; as
    many cell errors as the grader keeps, and short names of modules only."""
    if isinstance(modules := outcome["modules"], list):
        outcome["modules"] = [m for m in modules[:MAX_MODULES] if isinstance(m, str) and len(m) <= MAX_NAME]
    messages, errors, cap = outcome["messages"], outcome["cell_errors"][:MAX_CELL_ERRORS], MAX_MESSAGE
    while True:
        outcome["messages"] = {name: [m[:cap] for m in texts] for name, texts in messages.items()}
        outcome["cell_errors"] = [e[:cap] for e in errors]
        data = encode({"outcome": outcome})
        if not cap or GRADING_PROCESS.excess(data) is None:
            return data
        cap //= 4


def main(control_fd: int, zip_fd: int) -> None:
    """Run by START (grader.py) once the packages are on the path and the limits set (inside/startup.py)."""
    serve(Control(socket.socket(fileno=control_fd)), zip_fd)


def serve(control: Control, zip_fd: int) -> None:
    """Steps 1 to 3 of the module's docstring, in a process started afresh or forked by a zygote. The support
    files go to its working directory (SUPPORT_FOLDER), where tests read them by relative path."""
    try:
        with os.fdopen(zip_fd, "rb") as autograder:
            assignment = read_assignment(autograder, "the autograder zip")
            tests = assignment.load_tests(autograder)
            assignment.put_files(autograder, SUPPORT_FOLDER)
    except (AssignmentError, TestFileError, OSError, ValueError, BadZipFile) as e:  # ValueError: a link in the way
        control.send({"error": str(e)[:2000]})
        return
    control.send({"manifest": declared(tests)})
    grade(control, assignment, tests)
