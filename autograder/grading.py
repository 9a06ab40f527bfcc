"""Grading one submission: run its cells in the sandbox, then Otter's tests on the trusted side.

Like `otter run`, a question whose check (`grader.check("q1")`) was called by
the notebook is graded at that moment (the last call wins) and the others are
graded after the last cell.  If the sandbox hangs or dies, a fresh one is
started and the cells that had completed are replayed, so honest answers in
other cells still count.
"""

from __future__ import annotations

import base64
import os
import time
from dataclasses import replace

from otter.test_files import ExceptionTestFile
from otter.test_files.abstract_test import TestCaseResult

from .assignment import Assignment, load_assignment
from .notebook import Cell, InvalidSubmission, load_cells
from .options import GradeOptions
from .protocol import Channel, SandboxFailure, StudentEnv
from .results import GradeResult, QuestionResult
from .sandbox import Sandbox, SandboxUnavailable

STARTUP_TIMEOUT = 10.0
MAX_CHECKS = 200


class Session:
    """The current sandbox of one grading, restarted (with replay) after a hang or crash."""

    def __init__(self, assignment: Assignment, options: GradeOptions) -> None:
        self.assignment, self.options = assignment, options
        self.deadline = time.monotonic() + options.total_timeout
        self.completed: list[Cell] = []
        self.restarts = 0
        self.replaying = False
        self.sandbox: Sandbox | None = None
        self.channel: Channel | None = None
        self.on_check = lambda question: None

    def start(self) -> None:
        sandbox = self.sandbox = Sandbox(self.options)
        channel = self.channel = Channel(
            sandbox.read_fd, sandbox.write_fd, sandbox.kill, self.options.grace,
            self.options.test_timeout, self.deadline,
        )  # fmt: skip
        channel.on_check = lambda question: None if self.replaying else self.on_check(question)
        try:
            channel.hello(STARTUP_TIMEOUT)
        except SandboxFailure as e:
            sandbox.kill()
            output = sandbox.output()[-500:]
            raise SandboxUnavailable(f"the sandbox did not start ({e}): {output}") from None
        for path, data in self.assignment.files:
            channel.request("put", STARTUP_TIMEOUT, path=path, data=base64.b64encode(data).decode())

    def alive(self) -> bool:
        """True if a usable sandbox is running, restarting and replaying one if allowed."""
        assert self.channel is not None and self.sandbox is not None
        while self.channel.dead is not None:
            if self.restarts >= self.options.max_restarts or time.monotonic() >= self.deadline:
                return False
            self.restarts += 1
            self.sandbox.kill()
            self.start()
            self.replaying = True
            try:
                for cell in self.completed:
                    self.exec(cell)
            except SandboxFailure:
                pass
            finally:
                self.replaying = False
        return True

    def exec(self, cell: Cell) -> str | None:
        """Run one cell; return its error text, if any (SandboxFailure propagates)."""
        assert self.channel is not None
        try:
            self.channel.request("exec", self.options.cell_timeout, source=cell.source, name=f"<cell {cell.index}>")
        except SandboxFailure:
            raise
        except Exception as e:
            return f"cell {cell.index}: {type(e).__name__}: {e}"[:1000]
        return None

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.kill()


def run_test_file(tf: ExceptionTestFile, session: Session, restart: bool) -> None:
    """Otter's ExceptionTestFile.run, with a live sandbox ensured before each test case."""
    tf.test_case_results = []
    for tc in tf.test_cases:
        if restart and not session.alive():
            passed, message = False, f"❌ Test case failed\n{session.channel.dead}"
        else:
            passed, message = True, "✅ Test case passed"
            try:
                tc.body.call_func(StudentEnv(session.channel))
            except Exception as e:
                passed, message = False, "❌ Test case failed\n" + _error_message(tf, e)
        tf.test_case_results.append(TestCaseResult(test_case=tc, message=message, passed=passed))


def _error_message(tf: ExceptionTestFile, e: Exception) -> str:
    try:
        return tf._generate_error_message(e)
    except Exception:  # the traceback did not reach the test function (e.g. sandbox died first)
        return f"Error in test {tf.name}:\n{type(e).__name__}: {e}"


def grade_cells(assignment: Assignment, cells: list[Cell], options: GradeOptions) -> GradeResult:
    """Run the cells and the tests; the caller has validated the notebook."""
    templates = {tf.name: tf for tf in assignment.parse_tests()}
    graded: dict[str, ExceptionTestFile] = {}
    cell_errors: list[str] = []
    session = Session(assignment, options)
    checks = 0

    def on_check(question: str) -> None:
        nonlocal checks
        if question in templates and checks < MAX_CHECKS:
            checks += 1
            tf = _fresh(templates[question])
            run_test_file(tf, session, restart=False)
            graded[question] = tf

    session.on_check = on_check
    try:
        session.start()
        for cell in cells:
            if not session.alive():
                cell_errors.append(f"cell {cell.index}: not run: {session.channel.dead}")
                continue
            try:
                error = session.exec(cell)
                session.completed.append(cell)
            except SandboxFailure as e:
                error = f"cell {cell.index}: {e}"
            if error:
                cell_errors.append(error)
        for name, template in templates.items():
            if name not in graded:
                graded[name] = tf = _fresh(template)
                run_test_file(tf, session, restart=True)
    finally:
        session.close()
    # In the order they were graded, as Otter reports them: checked questions first, in notebook order.
    questions = [QuestionResult.from_otter(tf) for tf in graded.values()]
    return GradeResult(
        submission="",
        max_score=sum(q.max_score for q in questions),
        questions=questions,
        cell_errors=cell_errors,
    )


def _fresh(template: ExceptionTestFile) -> ExceptionTestFile:
    """A copy of a parsed test file with its own result list."""
    tf = ExceptionTestFile(template.name, template.path, template.test_cases, template.all_or_nothing)
    tf.source = template.source
    return tf


def grade_submission(
    autograder: str | os.PathLike[str],
    notebook: bytes | str | os.PathLike[str],
    options: GradeOptions | None = None,
    label: str | None = None,
) -> GradeResult:
    """Grade one notebook (bytes or a path) against an autograder zip; thread-safe.

    Unusable input gives a result with `error` set and `invalid_input` True; a missing or
    broken sandbox raises SandboxUnavailable (student code never runs unsandboxed).
    """
    options = options or GradeOptions()
    assignment = load_assignment(autograder)
    if isinstance(notebook, bytes):
        label = label or "<bytes>"
        data: bytes | None = notebook
    else:
        label = label or str(notebook)
        data = _read_capped(notebook, options.max_notebook_bytes)
    try:
        if data is None:
            raise InvalidSubmission(f"cannot read {label}")
        cells = load_cells(data, assignment.name, options.max_notebook_bytes)
    except InvalidSubmission as e:
        max_score = assignment.points
        return GradeResult(label, float(max_score), error=str(e), invalid_input=True)
    return replace(grade_cells(assignment, cells, options), submission=label)


def check_submission(autograder: str | os.PathLike[str], data: bytes, max_bytes: int) -> None:
    """Raise InvalidSubmission unless `data` is a gradable notebook for this assignment (runs nothing)."""
    load_cells(data, load_assignment(autograder).name, max_bytes)


def _read_capped(path: str | os.PathLike[str], cap: int) -> bytes | None:
    """Read at most cap+1 bytes, so a huge file is rejected without loading it."""
    try:
        with open(path, "rb") as f:
            return f.read(cap + 1)
    except OSError:
        return None
