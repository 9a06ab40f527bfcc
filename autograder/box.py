"""A grading box: one grading process (child.py: the assignment's tests, course code) with the student
sandboxes it is given, both in bubblewrap with a uid, a cgroup and a deadline of their own; started afresh or
forked from a zygote. What the assignment's tests are (its manifest) is learned from the first box.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import socket
import sysconfig
import threading
import time
from typing import Any

from .assignment import Assignment, AssignmentError
from .errors import SandboxUnavailable
from .inside.control import GRADING_PROCESS, Control, ControlError, ControlLimit
from .manifest import Manifest, ManifestError
from .notebook import Cell
from .options import GradeOptions, Limits
from .results import GradeResult
from .sandbox.bwrap import INSIDE, INSIDE_MOUNT, SITE_DIRS, Confined, Sandbox, bwrap_argv, python_argv, release_later
from .sandbox.forked import GRADING_START, SANDBOX_START, Forked, ForkedSandbox, Zygote, zygote_for

log = logging.getLogger(__name__)
PACKAGE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_MOUNT = "/opt/grader/autograder"
START = (
    "import sys; sys.path.insert(0, '/opt/grader'); from autograder.inside.startup import start; "
    "fds = start(2); from autograder.child import main; main(*fds)"
)
START_TIMEOUT = 60.0  # seconds a grading process may take to load its tests and prepare its sandbox
SLACK = 5.0  # seconds a grading process may take beyond its grading's own limit (imports, the outcome)
ZYGOTE_PRELOAD = ("numpy", "pandas")  # what most assignments' values come in, imported once per zygote
SENT_LIMITS = ("cell_timeout", "test_timeout", "total_timeout", "grace", "max_restarts", "value_mb")


class GradingBox:
    """A grading process for one grading of an assignment, with the student sandboxes it is given: the first
    (with `sandbox=True`) is started beside it and handed over once its tests are loaded (`wait_ready`); a
    fresh one whenever it asks, up to its limit of restarts. `forked`: forked from the assignment's zygote
    (for a service that grades many notebooks; an assignment with packages of its own never is)."""

    def __init__(
        self,
        assignment: Assignment,
        limits: Limits,
        deadline: float,
        preload: tuple[str, ...] = (),
        sandbox: bool = True,
        forked: bool = False,
    ) -> None:
        self.assignment, self.limits = assignment, limits
        self.site_dirs = site_dirs(assignment)
        self.sandboxes: dict[int, Sandbox] = {}
        self.started = 0
        self.peak_memory, self.cpu_seconds = 0, 0.0
        self.manifest: Manifest | None = None
        self.modules: Any = None
        ours, theirs = socket.socketpair()
        self.control = Control(ours, GRADING_PROCESS)
        fds = [theirs.detach()]
        try:
            fds.append(os.open(assignment.path, os.O_RDONLY | os.O_CLOEXEC))  # readable by root only, maybe
        except OSError as e:
            self.control.close()
            os.close(fds[0])
            raise AssignmentError(f"cannot read autograder zip {assignment.path}: {e.strerror}") from None

        def program(uid: int) -> list[str]:
            argv = bwrap_argv(limits, uid, self.site_dirs, [(PACKAGE, PACKAGE_MOUNT)])
            return argv + python_argv(START, limits, fds, self.site_dirs)

        try:
            if forked and not assignment.requirements:  # its packages run only in its own processes
                self.process: Confined = Forked(zygote_for((assignment.path,), _zygote), limits, deadline, fds)
            else:
                self.process = Confined(limits, deadline, program, fds)
        except BaseException:
            self.control.close()
            raise
        self.preload = preload
        if sandbox:  # started now, beside the grading process; handed over once it has loaded its tests
            try:
                self._start_sandbox(deadline)
            except BaseException:
                self.close()
                raise

    # -- start -----------------------------------------------------------------------------------
    def read_manifest(self) -> Manifest:
        """The tests' manifest, the grading process's first message (AssignmentError for broken tests)."""
        if isinstance(self.process, Forked):  # into its cgroup before it runs anything but the grader's code
            self._recv(time.monotonic() + START_TIMEOUT, "start")
            self.process.settle()
            self.control.send({"settled": True})
        message = self._recv(time.monotonic() + START_TIMEOUT, "load the assignment's tests")
        if "error" in message:
            raise AssignmentError(str(message["error"])[:2000])
        try:
            self.manifest = Manifest.from_data(message.get("manifest"))
        except ManifestError as e:
            raise AssignmentError(f"the assignment's tests cannot be read ({e})") from None
        return self.manifest

    def wait_ready(self) -> None:
        """Until the grading process has loaded its tests and prepared its first sandbox."""
        if self.manifest is None:
            self.read_manifest()
        details = {"limits": {k: getattr(self.limits, k) for k in SENT_LIMITS}, "preload": list(self.preload)}
        try:
            self._hand_over(self.started, details)
        except ControlError as e:
            raise SandboxUnavailable(self._stopped(e)) from None
        message = self._recv(time.monotonic() + START_TIMEOUT, "prepare the sandbox")
        if "ready" not in message:
            raise SandboxUnavailable(str(message.get("unavailable", "the sandbox could not be prepared"))[:2000])

    @property
    def alive(self) -> bool:
        return self.process.alive and all(s.alive for s in self.sandboxes.values())

    # -- grading ---------------------------------------------------------------------------------
    def grade(self, cells: list[Cell], label: str, file_name: str | None = None) -> GradeResult:
        """Grade the notebook's cells (saved as `file_name`, if known); an outcome the grading process could
        not give is the result's error."""
        assert self.manifest is not None
        now = time.monotonic()
        deadline = now + self.limits.total_timeout + SLACK
        self.process.deadline = deadline
        for sandbox in self.sandboxes.values():
            sandbox.deadline = now + self.limits.total_timeout + self.limits.grace
        try:
            self.control.send({"grade": [[cell.index, cell.source] for cell in cells], "file_name": file_name})
            while True:
                message = self._recv(deadline, "finish the tests")
                if "outcome" in message:
                    break
                self._serve(message, deadline)
            outcome = message["outcome"]
            self.modules = outcome.get("modules") if isinstance(outcome, dict) else None
            self._close_sandboxes()
            return self.manifest.result(label, outcome, self.usage())
        except ControlError as e:
            return GradeResult(label, self.manifest.points, error=f"the tests could not be run: {self._stopped(e)}")
        except (SandboxUnavailable, ManifestError, AssignmentError) as e:
            return GradeResult(label, self.manifest.points, error=f"the tests could not be run: {e}")

    def _serve(self, message: dict[str, Any], deadline: float) -> None:
        """A request of the grading process: a fresh sandbox, or one killed or freed."""
        if message.get("want") == "sandbox":
            try:
                if self.started > self.limits.max_restarts:
                    raise SandboxUnavailable("the sandbox was restarted too often")
                self._start_sandbox(deadline - SLACK + self.limits.grace)
                self._hand_over(self.started, {})
            except SandboxUnavailable as e:
                self.control.send({"sandbox": None, "reason": str(e)})
            return
        number = message.get("kill") if "kill" in message else message.get("close")
        if type(number) is int and number in self.sandboxes:
            if "kill" in message:
                self.sandboxes[number].terminate()
            else:
                self._close_sandbox(number)

    def _start_sandbox(self, deadline: float) -> None:
        self.started += 1
        if isinstance(self.process, Forked):  # a service's grading of an assignment without packages
            preload = self.preload
            zygote = zygote_for(("sandboxes", preload), lambda: _sandbox_zygote(preload))
            sandbox: Sandbox | ForkedSandbox = ForkedSandbox(zygote, self.limits, deadline)
        else:
            sandbox = Sandbox(self.limits, deadline, self.site_dirs)
        self.sandboxes[self.started] = sandbox

    def _hand_over(self, number: int, details: dict[str, Any]) -> None:
        sandbox = self.sandboxes[number]
        try:
            self.control.send({"sandbox": number, **details}, [sandbox.read_fd, sandbox.write_fd])
        finally:
            sandbox.hand_over()  # the grading process holds its pipes: this process never talks to it

    def _recv(self, deadline: float, doing: str) -> dict[str, Any]:
        try:
            message, fds = self.control.recv(deadline)
        except ControlLimit as e:
            raise AssignmentError(self._overran(e)) from None
        except ControlError as e:
            if time.monotonic() >= min(deadline, self.process.deadline):  # its watchdog may have been first
                raise SandboxUnavailable(f"the grading process did not {doing} in time") from None
            raise SandboxUnavailable(self._stopped(e)) from None
        for fd in fds:  # it has nothing to hand over
            os.close(fd)
        return message

    def _overran(self, limit: ControlLimit) -> str:
        """Why a grading process that sent more than the grader takes was stopped, for course staff: only
        test code writing to its socket can (an outcome is fitted to the bounds, child.py)."""
        self.process.signal_kill()
        log.warning("a grading process of %s sent %s", self.assignment.path, limit)
        return (
            f"the assignment's tests sent the grader {limit}, more than a grading may send (does a test write "
            "to the grading process's socket?): the grading was stopped"
        )

    def _stopped(self, error: ControlError) -> str:
        """Why it stopped, for the result (which students may see: its own output, which may quote hidden
        tests, goes to the log only)."""
        log.warning("a grading process stopped (%s): %s", error, self.process.last_words()[-2000:])
        return (
            f"the grading process stopped before the end ({error}): a test took more time or memory than the "
            "grading's limits, or crashed"
        )

    # -- the end -----------------------------------------------------------------------------------
    def usage(self) -> dict[str, float]:
        """What the sandboxes used (the student's code), and what the grading process used (the tests)."""
        self._close_sandboxes()
        return {
            "peak_memory_mb": round(self.peak_memory / 2**20, 1),
            "cpu_seconds": round(self.cpu_seconds, 3),
            "restarts": max(0, self.started - 1),
            "tests_cpu_seconds": round(self.process.cpu_seconds(), 3),
            "tests_peak_memory_mb": round(self.process.memory_peak() / 2**20, 1),
        }

    def _close_sandbox(self, number: int) -> None:
        sandbox = self.sandboxes.pop(number)
        self.peak_memory = max(self.peak_memory, sandbox.memory_peak())
        self.cpu_seconds += sandbox.cpu_seconds()
        release_later(sandbox)

    def _close_sandboxes(self) -> None:
        for number in list(self.sandboxes):
            self._close_sandbox(number)

    def close(self) -> None:
        """Kill the grading process and its sandboxes (their resources are freed in the background:
        `released()`); idempotent."""
        self.process.signal_kill()
        self._close_sandboxes()
        release_later(self.process)
        self.control.close()


def _zygote() -> Zygote:
    """A zygote for the grading processes of one assignment without packages of its own."""
    preload = [name for name in ZYGOTE_PRELOAD if importlib.util.find_spec(name)]
    return Zygote(GRADING_START, Limits(), SITE_DIRS, [(PACKAGE, PACKAGE_MOUNT)], preload)


def _sandbox_zygote(preload: tuple[str, ...]) -> Zygote:
    """A zygote of student sandboxes with `preload` imported (what the assignment's notebooks import, as the
    pool learned it: a sandbox forked with pandas it does not need forks its snapshots slower), for every
    assignment without packages of its own (nothing in it belongs to an assignment); its children bring up
    a loopback of their own."""
    binds = [(str(INSIDE), INSIDE_MOUNT)]
    return Zygote(SANDBOX_START, Limits(), SITE_DIRS, binds, preload, ["CAP_NET_ADMIN"])


def site_dirs(assignment: Assignment) -> list[str]:
    """The packages the assignment's processes see: its environment's, then the grader's own."""
    if not assignment.requirements:
        return list(SITE_DIRS)
    from .environment import EnvironmentBuildError, prepare  # only assignments with packages pay for it

    try:
        environment = prepare(assignment.requirements)
    except EnvironmentBuildError as e:
        raise AssignmentError(f"the assignment's packages are not available: {e}") from None
    (target,) = environment.paths
    own = sysconfig.get_path("purelib", vars={"base": target, "platbase": target})
    return [own, *SITE_DIRS]


_MANIFESTS: dict[int, tuple[Assignment, Manifest]] = {}
_MANIFESTS_LOCK = threading.Lock()


def manifest_of(assignment: Assignment, limits: Limits | None = None) -> Manifest:
    """What the assignment's tests are, from a grading process that loads them and nothing else (once per
    loaded zip)."""
    with _MANIFESTS_LOCK:
        known = _MANIFESTS.get(id(assignment))
    if known is not None and known[0] is assignment:
        return known[1]
    limits = limits or GradeOptions().limits(assignment.limits)
    box = GradingBox(assignment, limits, time.monotonic() + START_TIMEOUT, sandbox=False)
    try:
        manifest = box.read_manifest()
    finally:
        box.close()
    _remember(assignment, manifest)
    return manifest


def _remember(assignment: Assignment, manifest: Manifest) -> None:
    with _MANIFESTS_LOCK:
        _MANIFESTS[id(assignment)] = (assignment, manifest)
        while len(_MANIFESTS) > 16:
            del _MANIFESTS[next(iter(_MANIFESTS))]


def started_box(
    assignment: Assignment,
    limits: Limits,
    preload: tuple[str, ...] = (),
    lifetime: float | None = None,
    forked: bool = False,
) -> GradingBox:
    """A grading process with its first sandbox, ready (nothing of any student's in either yet); both are
    killed after `lifetime` seconds unless a grading takes them first."""
    lifetime = START_TIMEOUT + limits.total_timeout if lifetime is None else lifetime
    box = GradingBox(assignment, limits, time.monotonic() + lifetime, preload, forked=forked)
    try:
        box.wait_ready()
    except BaseException:
        box.close()
        raise
    assert box.manifest is not None
    _remember(assignment, box.manifest)
    return box
