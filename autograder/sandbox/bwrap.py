"""Starting, watching and killing the bubblewrap sandbox that runs student code.

bwrap runs as root without a user namespace; the student interpreter is started through `setpriv` as a
dedicated unprivileged uid. Only /usr, the Python installation and the grader's `inside` package are
visible (read-only); /tmp is a size-capped tmpfs; there is no network. The whole sandbox (bwrap and
every process it starts) is in its own cgroup that caps memory, processes and CPU together, and a
watchdog thread kills it at the grading's deadline whatever the grading thread is doing. The grader
never falls back to running student code unsandboxed: any failure raises SandboxUnavailable.
"""

from __future__ import annotations

import compileall
import fcntl
import json
import logging
import os
import shutil
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..errors import SandboxUnavailable
from ..options import Limits
from .cgroups import CgroupUnavailable, SandboxCgroup
from .cgroups import Limits as CgroupLimits
from .uids import UidPool

log = logging.getLogger(__name__)
INSIDE = Path(__file__).resolve().parent.parent / "inside"
INSIDE_MOUNT = "/opt/grader/_autograder_inside"
OUTPUT_CAP = 64 * 1024
DISCARD_CHUNK = 1 << 20  # bytes of output past OUTPUT_CAP dropped at a time (the pipe's size then)
DISCARD_PAUSE = 0.01  # seconds between two drops: at most 100 MB/s of output, for a few wakeups of this process
WATCH_INTERVAL = 1.0  # seconds between a watchdog's looks at a deadline that may have moved
INSTALL_HINT = (
    "the grader needs bubblewrap and root privileges to sandbox student code; "
    "install it with `apt-get install bubblewrap` (or set GRADER_BWRAP to its path) "
    "and run the grader as root"
)
START = "import sys; sys.path.insert(0, '/opt/grader'); from _autograder_inside.runner import main; main()"
# Joins the sandbox's cgroup, then becomes bwrap: everything bwrap starts is limited from its first
# instruction (Popen's preexec_fn would do the same but makes Python fork instead of vfork: 50 ms in a
# large worker process).
JOIN_CGROUP = 'for f do [ "$f" = -- ] && break; echo 0 > "$f" || exit 125; shift; done; shift; exec "$@"'
# The environment's packages: its site-packages, and those its .pth files add (an assignment's own
# environment is layered over the grader's). Never other sys.path entries (a checkout holds tests).
SITE_DIRS = [
    path
    for path in dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *sys.path])
    if path.endswith(("site-packages", "dist-packages")) and os.path.isdir(path)
]


_UIDS = UidPool()
compileall.compile_dir(INSIDE, quiet=2)  # every sandbox then loads the runner from bytecode


def find_bwrap(limits: Limits) -> str:
    """Resolve the bwrap binary or fail closed with an installation hint."""
    path = limits.bwrap or shutil.which("bwrap")
    if not path or not os.access(path, os.X_OK):
        raise SandboxUnavailable(f"bubblewrap not found ({path or 'bwrap not on PATH'}): {INSTALL_HINT}")
    return path


def _ancestors(path: str) -> list[str]:
    parents = [str(p) for p in Path(path).parents if str(p) != "/"]
    return sorted(parents, key=len)


def python_roots(site_dirs: Sequence[str]) -> list[str]:
    """The directories that hold the interpreter and the packages it sees (none inside another)."""
    roots = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, *site_dirs)}
    return sorted(r for r in roots if not any(r.startswith(other + os.sep) for other in roots))


def bwrap_argv(
    limits: Limits,
    uid: int | None,
    site_dirs: Sequence[str],
    binds: Sequence[tuple[str, str]],
    zygote_caps: Sequence[str] = (),
) -> list[str]:
    """bwrap up to the program to run: the system, Python and `binds` (host path, path inside) read-only, a
    size-capped /tmp, no network, and the program started as `uid` with no capabilities. `uid` None: as
    root with only the capabilities to change uid and to mount, and `zygote_caps` (a zygote, forked.py)."""
    roots = python_roots(site_dirs)
    inside = [target for _, target in binds]
    dirs = sorted({d for path in [*roots, *inside] for d in _ancestors(path)}, key=len)
    argv = [
        find_bwrap(limits),
        "--unshare-ipc",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--setenv", "PATH", "/usr/bin:/bin",
        "--setenv", "HOME", "/tmp",
        "--setenv", "LANG", "C.UTF-8",
        "--setenv", "OPENBLAS_NUM_THREADS", "1",
        "--setenv", "OMP_NUM_THREADS", "1",
        "--setenv", "MPLBACKEND", "Agg",
        "--setenv", "PYTHONDONTWRITEBYTECODE", "1",
        "--ro-bind", "/usr", "/usr",
        "--symlink", "usr/lib", "/lib",
        "--symlink", "usr/lib64", "/lib64",
        "--symlink", "usr/bin", "/bin",
        "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
        "--proc", "/proc",
        "--dev", "/dev",
        "--perms", "1777", "--size", str(limits.tmp_mb * 1024 * 1024), "--tmpfs", "/tmp",
    ]  # fmt: skip
    for d in dirs:
        argv += ["--perms", "0755", "--dir", d]
    for root in roots:
        argv += ["--ro-bind", root, root]
    for source, target in binds:
        argv += ["--ro-bind", source, target]
    if uid is None:
        caps = ["--cap-drop", "ALL"]
        for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_SYS_ADMIN", *zygote_caps):
            caps += ["--cap-add", cap]
        return argv + [*caps, "--chdir", "/tmp", "--"]
    argv += ["--chdir", "/tmp", "--"]
    argv += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    return argv + ["--inh-caps=-all", "--bounding-set=-all", "--"]


def python_argv(start: str, limits: Limits, fds: Sequence[int], site_dirs: Sequence[str]) -> list[str]:
    """The interpreter running `start` (isolated, no `site`), with what its `main` reads from argv: the
    inherited fds, the rlimits to set (address space, CPU seconds, processes, file size) and the site dirs."""
    return [sys.executable, "-I", "-S", "-c", start, *map(str, [*fds, *rlimits(limits)]), json.dumps(list(site_dirs))]


def rlimits(limits: Limits) -> list[int]:
    """What a confined Python sets before anything else (inside/startup.py: limit_resources): address
    space, CPU seconds, processes of its uid, file size."""
    memory = limits.memory_mb * 1024 * 1024
    return [memory, int(limits.total_timeout) + 1, limits.max_processes, memory]


class Confined:
    """A process in bubblewrap as a uid of the pool (one per live process), in a cgroup of its own that caps
    memory, processes and CPU of everything it starts, killed by a watchdog at its deadline. `program(uid)`
    is its bwrap command line; `pass_fds` are the ends it inherits (closed here once it started)."""

    def __init__(
        self, limits: Limits, deadline: float, program: Callable[[int], list[str]], pass_fds: Sequence[int]
    ) -> None:
        uid = _UIDS.acquire(limits.sandbox_uid)
        if uid is None:
            _close_all(pass_fds)
            raise SandboxUnavailable("more than 64 sandboxes are running at once on this machine")
        self.uid = uid
        self._stopped = threading.Event()
        self._closed = False
        self._output = bytearray()
        self._own_fds: list[int] = []
        try:
            self.cgroup = SandboxCgroup.create(
                f"uid-{uid}", CgroupLimits(limits.memory_mb * 1024 * 1024, limits.max_processes, limits.cpus)
            )
        except CgroupUnavailable as e:
            _close_all(pass_fds)
            _UIDS.release(uid)
            raise SandboxUnavailable(str(e)) from None
        self._start(program, uid, pass_fds)
        self.deadline = deadline
        self._watchdog = threading.Thread(target=self._watch, daemon=True, name=f"watchdog-{uid}")
        self._watchdog.start()

    def _start(self, program: Callable[[int], list[str]], uid: int, pass_fds: Sequence[int]) -> None:
        try:
            argv = program(uid)
            self.proc = subprocess.Popen(
                ["/bin/sh", "-c", JOIN_CGROUP, "sh", *map(str, self.cgroup.procs_files), "--", *argv],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=pass_fds,
            )
        except BaseException as e:
            self.cgroup.remove()
            _UIDS.release(uid)
            if isinstance(e, OSError | SandboxUnavailable):
                raise SandboxUnavailable(f"cannot start bwrap ({e}): {INSTALL_HINT}") from None
            raise
        finally:
            _close_all(pass_fds)
        self._drainer = threading.Thread(target=self._drain, daemon=True)
        self._drainer.start()

    def _drain(self) -> None:
        """Read the process's fds 1/2 to EOF so it never blocks, keeping only its first OUTPUT_CAP bytes. The rest
        is dropped a pipeful at a time, DISCARD_PAUSE apart, spliced to /dev/null: read as it comes, it cost this
        process, where no cgroup counts it, about as much CPU as writing it costs the writer (a test printing
        without end: 40% of a core); a writer faster than DISCARD_CHUNK per pause waits."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while len(self._output) < OUTPUT_CAP:
            chunk = os.read(fd, OUTPUT_CAP - len(self._output))
            if not chunk:
                return
            self._output += chunk
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, DISCARD_CHUNK)
        with open(os.devnull, "wb") as null:
            while os.splice(fd, null.fileno(), DISCARD_CHUNK):
                time.sleep(DISCARD_PAUSE)

    def _watch(self) -> None:
        """Kill it at its deadline, whatever the grading thread is doing (blocked or not). The deadline may
        move (a sandbox started ahead gets its grading's deadline when it is taken)."""
        while not self._stopped.wait(min(max(self.deadline - time.monotonic(), 0), WATCH_INTERVAL)):
            if time.monotonic() >= self.deadline:
                self.terminate()
                return

    def output(self) -> str:
        """What bwrap or the interpreter wrote to fds 1/2 (useful when startup fails)."""
        return self._output.decode("utf-8", "replace").strip()

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def last_words(self) -> str:
        """Kill it, then everything it wrote to fds 1/2 (a traceback, when it failed)."""
        self.terminate()
        self.proc.wait()
        self._drainer.join(timeout=5)
        return self.output()

    def memory_peak(self) -> int:
        """The most memory all its processes held at once, in bytes."""
        return self.cgroup.memory_peak()

    def cpu_seconds(self) -> float:
        """CPU time used by all its processes so far."""
        return self.cgroup.cpu_seconds()

    def terminate(self) -> None:
        """Kill every process of it (bwrap and all below it); safe from any thread. The thread talking to it
        then reads end-of-file; its resources are freed by close()."""
        if not self._closed:
            self.cgroup.kill()

    def signal_kill(self) -> None:
        """SIGKILL it now without waiting for its processes to die: nothing of it runs another instruction
        once the signal is delivered, so a result need not wait (close() makes sure of it)."""
        if not self._closed:
            self.cgroup.signal_kill()

    def close(self) -> None:
        """Kill it and free its pipes, cgroup and uid; idempotent; called by the thread talking to it, or by
        `release_later` once none does (a pipe closed under a thread still reading it could be reused by
        another sandbox)."""
        if self._closed:
            return
        self._stopped.set()
        self._watchdog.join()
        self.proc.kill()  # a process closed just after its start may not have joined its cgroup yet
        self.cgroup.kill()
        self._closed = True
        self.proc.wait()
        self.cgroup.remove()
        wait_until_reaped(self.uid)
        _close_all(self._own_fds)
        self._drainer.join(timeout=5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        _UIDS.release(self.uid)


_RELEASER = ThreadPoolExecutor(1, thread_name_prefix="release")


def release_later(process: Confined) -> None:
    """Kill it now; make sure it is dead and free its uid, cgroup and pipes on a thread of its own: waiting
    for the kernel to reap its processes takes a grading tens of milliseconds its result need not wait for."""
    process.signal_kill()
    try:
        _RELEASER.submit(_release, process)
    except RuntimeError:  # the interpreter is shutting down
        process.close()


def _release(process: Confined) -> None:
    try:
        process.close()
    except Exception:  # noqa: BLE001 - logged; the uid stays held rather than shared
        log.exception("could not free a sandbox's resources")


def released() -> None:
    """Wait until every release asked so far is done (one thread frees them in order)."""
    _RELEASER.submit(lambda: None).result()


class SandboxPipes:
    """The two pipes this process holds to a student sandbox's runner, until it hands them over."""

    read_fd: int
    write_fd: int
    _own_fds: list[int]

    def hand_over(self) -> None:
        """Another process talks to it now (it holds the pipes): close this process's ends."""
        _close_all(self._own_fds)
        self._own_fds, self.read_fd, self.write_fd = [], -1, -1


class Sandbox(SandboxPipes, Confined):
    """The sandbox that runs student code: the runner of `inside/`, speaking over two pipes (read_fd,
    write_fd on this side). `site_dirs`: the packages it sees (an assignment's environment's, or the
    grader's own)."""

    def __init__(self, limits: Limits, deadline: float, site_dirs: Sequence[str] = ()) -> None:
        site_dirs = list(site_dirs or SITE_DIRS)
        child_read, self.write_fd = os.pipe()
        self.read_fd, child_write = os.pipe()

        def program(uid: int) -> list[str]:
            argv = bwrap_argv(limits, uid, site_dirs, [(str(INSIDE), INSIDE_MOUNT)])
            return argv + python_argv(START, limits, [child_read, child_write], site_dirs)

        try:
            super().__init__(limits, deadline, program, (child_read, child_write))
        except BaseException:
            _close_all([self.write_fd, self.read_fd])
            raise
        self._own_fds = [self.write_fd, self.read_fd]


def _close_all(fds: Sequence[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def wait_until_reaped(uid: int) -> None:
    """Killed processes leave the cgroup at once but stay in the process table (counting against the
    uid's RLIMIT_NPROC) until reaped: the uid goes back to the pool only when none is left."""
    deadline = time.monotonic() + 5
    while pids := _processes_of(uid):
        if time.monotonic() > deadline:
            raise SandboxUnavailable(f"processes {pids} of sandbox uid {uid} were not reaped")
        time.sleep(0.002)


def _processes_of(uid: int) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/status", "rb") as f:
                    uid_line = next(line for line in f if line.startswith(b"Uid:"))
            except (OSError, StopIteration):
                continue
            if int(uid_line.split()[1]) == uid:
                found.append(int(entry.name))
    return found
