"""Grading one submission in its grading process (child.py): the notebook's cells in the student sandbox,
Otter's tests here.

Like `otter run`, a question whose check (`grader.check("q1")`) the notebook calls is graded on the state
at its last check, and the other questions on the state after the last cell. Also like `otter run`, the
notebook's `otter.Notebook("name.ipynb")` fails when the submission is saved under another file name: its
`grader` is then never made, no check runs, and every question is graded on the final state.

Grading happens in two phases so that nothing student code sees during hidden tests can reach what the
student is shown:

1. The cells run in the main sandbox process. At every check the question's PUBLIC tests run against the
   main process (their messages are what the student sees), then the sandbox forks a snapshot (a copy
   that waits, untouched). After the last cell, the public tests of the questions never checked run and
   a final snapshot is taken.
2. Only then does any hidden input enter the sandbox: each snapshot is resumed in turn and the question's
   hidden tests run against it. A question's score counts its public tests as run in phase 1 (what the
   student saw) and its hidden tests as run here.

If the sandbox hangs or dies, a fresh one is started and the completed cells are replayed (re-taking the
snapshots), so one hostile cell or test costs only itself.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from .assignment import Assignment
from .errors import SandboxUnavailable
from .notebook import Cell
from .options import Limits
from .protocol import Channel, SandboxFailure
from .remote import StudentEnv, StudentNamespace
from .testfiles import OKTestFile, TestCase, TestCaseResult, TestFile, printoptions, run_case
from .values import Values

STARTUP_TIMEOUT = 10.0
OPERATION_TIMEOUT = 5.0  # the grader's own requests (a snapshot, a support file): nothing student-sized
MAX_CHECKS = 200
PUT_CHUNK = 4 * 1024 * 1024  # bytes of a support file one request carries (a message's raw bytes may be 64 MB)
SUPPORT_FOLDER = "/tmp"  # where a grading process puts the support files: its working directory (child.py)
FINAL = ""  # the snapshot after the last cell


class StudentSandbox(Protocol):
    """A started student sandbox as this process sees it: its pipes, and a way to kill and free it."""

    read_fd: int
    write_fd: int

    def terminate(self) -> None: ...
    def close(self) -> None: ...
    def output(self) -> str: ...


@dataclass
class Ready:
    """A sandbox ready for a notebook's first cell: its interpreter up, the assignment's seed set and
    support files in place, and the libraries its notebooks use already imported."""

    sandbox: StudentSandbox
    channel: Channel

    def close(self) -> None:
        self.sandbox.close()


def start_ready(
    assignment: Assignment, limits: Limits, deadline: float, sandbox: StudentSandbox, preload: tuple[str, ...] = ()
) -> Ready:
    """Prepare a started sandbox for the assignment (nothing of any student's in it yet)."""
    channel = Channel(sandbox.read_fd, sandbox.write_fd, sandbox.terminate, limits.grace, limits.test_timeout, deadline)
    channel.budget = int(limits.value_mb * 1024 * 1024)  # of one value, either way
    Values(channel)  # encodes the setup requests' arguments
    try:
        channel.hello(STARTUP_TIMEOUT)
    except SandboxFailure as e:
        sandbox.close()
        raise SandboxUnavailable(f"the sandbox did not start ({e}): {sandbox.output()[-500:]}") from None
    try:
        _operation(channel, "budget", {"value_bytes": channel.budget})  # the sandbox sends no more, it says why
        for op, args in _setup(assignment, preload):
            _operation(channel, op, args)
    except SandboxFailure:
        sandbox.close()
        raise
    return Ready(sandbox, channel)


def _setup(assignment: Assignment, preload: tuple[str, ...]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The requests that prepare a sandbox: the seed, the support files (from SUPPORT_FOLDER, PUT_CHUNK bytes a
    request: never a whole file in memory) and the libraries to import ahead."""
    if assignment.seed is not None:
        yield "configure", {"seed": assignment.seed, "seed_variable": assignment.seed_variable}
    for path, _ in assignment.files:
        with open(os.path.join(SUPPORT_FOLDER, path), "rb") as f:
            append = False
            while (data := f.read(PUT_CHUNK)) or not append:
                yield "put", {"path": path, "data": data, "append": append}
                append = True
    if preload:
        yield "preload", {"modules": list(preload)}


def _operation(channel: Channel, op: str, args: dict) -> object:
    """One of the grader's own requests (a snapshot, a support file): any error is the sandbox's."""
    try:
        return channel.request(op, OPERATION_TIMEOUT, **args)
    except SandboxFailure:
        raise
    except Exception as e:  # e.g. no process left for a snapshot after a fork bomb
        raise channel.fail(SandboxFailure(f"the sandbox failed to {op} ({type(e).__name__}: {e})")) from None


class Session:
    """The current sandbox of one grading; restarted (with the completed cells replayed) after a failure.

    Its first sandbox was prepared before the notebook arrived (`first`); restarts get a new one from
    `new_sandbox`."""

    def __init__(
        self,
        assignment: Assignment,
        limits: Limits,
        new_sandbox: Callable[[], StudentSandbox],
        first: Ready | None = None,
        preload: tuple[str, ...] = (),
        file_name: str | None = None,
    ) -> None:
        self.assignment, self.limits = assignment, limits
        self.new_sandbox, self.first, self.preload = new_sandbox, first, preload
        self.file_name = file_name  # the submission's, as otter run would see it (None: the one it expects)
        self.deadline = time.monotonic() + limits.total_timeout
        self.completed: list[Cell] = []
        self.restarts = 0
        self.snapshots: dict[str, int] = {}  # question (or FINAL) -> pid of its snapshot in this sandbox
        self.sandbox: StudentSandbox | None = None
        self.channel: Channel | None = None
        self.values: Values | None = None
        self.on_check = lambda question: None
        self.replaying = False
        self.cells_done = False  # after the last cell, a replay also takes the final snapshot

    def start(self) -> None:
        self.snapshots = {}
        ready, self.first = self.first, None
        ready = ready or start_ready(self.assignment, self.limits, self.deadline, self.new_sandbox(), self.preload)
        self.sandbox, self.channel = ready.sandbox, ready.channel
        self.channel.overall_deadline = self.deadline
        self.values = Values(self.channel)
        self.values.on_check = self._check
        if self.file_name is not None:
            self.request("submission", name=self.file_name)

    def _check(self, question: str) -> None:
        self.on_check(question)

    def request(self, op: str, **args: object) -> object:
        assert self.channel is not None
        return _operation(self.channel, op, args)

    @property
    def dead(self) -> str | None:
        return self.channel.dead if self.channel else "not started"

    def alive(self, replay_until: int | None = None) -> bool:
        """True if a usable sandbox is running, restarting it if allowed and replaying the completed cells
        (only those up to cell `replay_until` when that is all the rest of the grading needs: a later
        hostile cell then cannot break the sandbox again)."""
        while self.dead is not None:
            if self.restarts >= self.limits.max_restarts or time.monotonic() >= self.deadline:
                return False
            self.restarts += 1
            self.close()
            self.start()
            self.replaying = True
            try:
                for cell in self.completed:
                    if replay_until is None or cell.index <= replay_until:
                        self.exec(cell)
                if self.cells_done and replay_until is None:
                    self.snapshot(FINAL)
            except SandboxFailure:
                pass
            finally:
                self.replaying = False
        return True

    def exec(self, cell: Cell) -> str | None:
        """Run one cell; its error text, if any (SandboxFailure propagates)."""
        assert self.channel is not None
        try:
            self.channel.request("exec", self.limits.cell_timeout, source=cell.source, name=f"<cell {cell.index}>")
        except SandboxFailure:
            raise
        except Exception as e:
            return f"cell {cell.index}: {type(e).__name__}: {e}"[:1000]
        return None

    def snapshot(self, key: str) -> None:
        """Fork a snapshot of the main process for `key`, replacing an earlier one."""
        old = self.snapshots.pop(key, None)
        if old is not None:
            self.request("drop", pid=old)
        pid = self.request("snapshot")
        if type(pid) is not int:
            raise self.channel.fail(SandboxFailure("the sandbox did not take a snapshot"))  # type: ignore[union-attr]
        self.snapshots[key] = pid

    def printoptions(self) -> object:
        """numpy's print options in the sandbox (imports may change them; doctests compare printed text)."""
        assert self.channel is not None
        return self.channel.request("printoptions", self.limits.test_timeout)

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()


@dataclass
class Question:
    """One question's test file and what grading found."""

    template: TestFile
    results: dict[int, TestCaseResult] = field(default_factory=dict)
    """by case index: public cases as run at the check (the student sees these), hidden ones as run later
    on the snapshot"""
    checked: bool = False
    check_cell: int = -1
    """the cell whose run called the check that counts"""

    def cases(self, hidden: bool) -> list[tuple[int, TestCase]]:
        """The public or hidden cases still without a result."""
        return [(i, c) for i, c in enumerate(self.template.test_cases) if c.hidden == hidden and i not in self.results]

    @property
    def has_hidden(self) -> bool:
        return any(case.hidden for case in self.template.test_cases)


class Grading:
    def __init__(self, assignment: Assignment, tests: list[TestFile], cells: list[Cell], session: Session) -> None:
        self.assignment, self.cells, self.limits = assignment, cells, session.limits
        self.questions = {tf.name: Question(tf) for tf in tests}
        self.order: list[str] = []  # as Otter reports them: first check first, then the rest
        self.modules: object = None  # the top-level packages the notebook imported, for sandboxes started ahead
        self.session = session
        self.session.on_check = self._on_check
        self.cell_errors: list[str] = []
        self.checks = 0
        self.current_cell = -1
        self.testing = False  # a check called from inside a test is ignored

    def run(self) -> dict[str, Any]:
        """The outcome: questions in Otter's order, which of their cases passed and the messages (manifest.py
        turns it into scores on the grader's side)."""
        try:
            self.session.start()
            self._run_cells()
            self._score_hidden()
        finally:
            self.session.close()
        results = {name: [self.questions[name].results[i] for i in range(len(self.questions[name].template.test_cases))]
                   for name in self.order}  # fmt: skip
        return {
            "order": self.order,
            "passed": {name: [r.passed for r in rs] for name, rs in results.items()},
            "messages": {name: [r.message or "" for r in rs] for name, rs in results.items()},
            "cell_errors": self.cell_errors,
            "restarts": self.session.restarts,
            "modules": self.modules,
        }

    # -- phase 1: cells, snapshots and public tests ------------------------------------------------
    def _run_cells(self) -> None:
        for cell in self.cells:
            self.current_cell = cell.index
            if not self.session.alive():
                self.cell_errors.append(f"cell {cell.index}: not run: {self.session.dead}")
                continue
            try:
                error = self.session.exec(cell)
                self.session.completed.append(cell)
            except SandboxFailure as e:
                error = f"cell {cell.index}: {e}"
            if error:
                self.cell_errors.append(error)
        unchecked = [name for name, q in self.questions.items() if not q.checked]
        self.session.cells_done = True
        for name in unchecked:
            self._run_public(name)
        final_needed = any(q.has_hidden and (not q.checked or n not in self.session.snapshots)
                           for n, q in self.questions.items())  # fmt: skip
        if final_needed and self.session.alive():
            try:
                self.session.snapshot(FINAL)  # after the public tests, whose effects hidden tests see
            except SandboxFailure:
                pass
        if self.session.dead is None:  # what the next sandboxes of the assignment may import ahead
            try:
                self.modules = self.session.request("modules")
            except SandboxFailure:
                pass

    def _on_check(self, name: str) -> None:
        if name not in self.questions:
            raise FileNotFoundError(f"Test {name} does not exist")
        if self.testing or self.checks >= MAX_CHECKS:
            return
        self.checks += 1
        question = self.questions[name]
        if not self.session.replaying:
            question.checked, question.check_cell = True, self.current_cell
            question.results = {}  # the last check counts, as in Otter
            self._run_public(name)
        if question.has_hidden and self.session.dead is None:
            self.session.snapshot(name)  # after the public tests: as under `otter run`, the hidden tests
            # see what the public ones left (a student function that changed its argument, a global)

    def _run_public(self, name: str) -> None:
        """Run a question's public tests against the main process (never a hidden one)."""
        if name not in self.order:
            self.order.append(name)
        question = self.questions[name]
        cases = question.cases(hidden=False)
        question.results.update(self._run_cases(question.template, cases))
        for i, case in cases:  # those after a sandbox failure
            question.results.setdefault(i, _failed(case, self.session.dead))

    # -- phase 2: hidden tests against the snapshots -----------------------------------------------
    def _score_hidden(self) -> None:
        """Each checked question's hidden tests on its own snapshot; the others' (and any whose snapshot
        was lost) one question after another on the final one, as Otter runs them after the last cell."""
        pending = [name for name in self.order if self.questions[name].has_hidden]
        while pending:
            session = self.session
            needed = [self.questions[name] for name in pending]
            until = max(q.check_cell for q in needed) if all(q.checked for q in needed) else None
            if not session.alive(replay_until=until):
                for name in pending:
                    self._fail_rest(name, session.dead)
                return
            name = next((n for n in pending if self.questions[n].checked and n in session.snapshots), None)
            group, key = ([name], name) if name else (list(pending), FINAL)
            if key not in session.snapshots:
                for name in group:
                    self._fail_rest(name, "the notebook's state at the end could not be restored")
                    pending.remove(name)
                continue
            try:
                with session.channel.handover(session.snapshots.pop(key), session.deadline - time.monotonic()):
                    session.values.new_peer()
                    for name in group:
                        question = self.questions[name]
                        question.results.update(self._run_cases(question.template, question.cases(hidden=True)))
                        if session.dead is not None:
                            break
                        pending.remove(name)
            except SandboxFailure:
                pass  # restarted (and the snapshots taken again) at the top of the loop
            finally:
                session.values.new_peer()

    def _fail_rest(self, name: str, reason: str | None) -> None:
        question = self.questions[name]
        question.results.update({i: _failed(case, reason) for i, case in question.cases(hidden=True)})

    def _run_cases(self, tf: TestFile, cases: list[tuple[int, TestCase]]) -> dict[int, TestCaseResult]:
        """Run cases in order; stop after one during which the sandbox failed (its result says why)."""
        values = self.session.values
        env = StudentEnv(values)
        results: dict[int, TestCaseResult] = {}
        self.testing = True
        try:
            with printoptions(self.session.printoptions() if isinstance(tf, OKTestFile) else None):
                for i, case in cases:
                    results[i] = run_case(tf, case, env, lambda: StudentNamespace(values))
                    if self.session.dead is not None:
                        break
        except SandboxFailure:
            pass  # the sandbox died while asking for its print options
        finally:
            self.testing = False
        return results


def _failed(case, reason: str | None) -> TestCaseResult:
    return TestCaseResult(test_case=case, message=f"❌ Test case failed\n{reason}", passed=False)
