"""Launching and killing the bubblewrap sandbox that runs student code.

bwrap runs as root without a user namespace, and the student interpreter is
started through ``setpriv`` as a dedicated unprivileged uid, so RLIMIT_NPROC
applies.  Nothing but /usr, the Python installation and the runner script is
visible (read-only); /tmp is a size-capped tmpfs.  The grader never falls back
to running student code unsandboxed: any failure raises SandboxUnavailable.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from .options import GradeOptions

RUNNER = Path(__file__).with_name("runner.py")
LOCK_DIR = Path("/run/decode-grader-uids") if os.access("/run", os.W_OK) else Path("/tmp/decode-grader-uids")
RUNNER_IN_SANDBOX = "/opt/grader/runner.py"
OUTPUT_CAP = 64 * 1024
INSTALL_HINT = (
    "the grader needs bubblewrap and root privileges to sandbox student code; "
    "install it with `apt-get install bubblewrap` (or set GRADER_BWRAP to its path) "
    "and run the grader as root"
)


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot be started; student code is never run without it."""


class _UidPool:
    """One uid per live sandbox, across every grading process on the machine, so RLIMIT_NPROC of one
    sandbox cannot starve another: a uid is held by an exclusive lock on its own lock file.

    Uids are tried round-robin: a killed sandbox's processes may take a moment to be reaped and still
    count against its uid's process limit, so the uid it released is the last one reused.
    """

    def __init__(self, size: int = 64, lock_dir: Path = LOCK_DIR) -> None:
        self._size, self._lock_dir = size, lock_dir
        self._held: dict[int, int] = {}  # uid -> fd of its lock file
        self._next = 0
        self._lock = threading.Lock()

    def acquire(self, base: int) -> int:
        self._lock_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        with self._lock:
            for step in range(self._size):
                offset = (self._next + step) % self._size
                uid = base + offset
                if uid in self._held:
                    continue
                fd = os.open(self._lock_dir / f"uid-{uid}.lock", os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                self._held[uid], self._next = fd, offset + 1
                return uid
        raise SandboxUnavailable(f"more than {self._size} sandboxes running at once on this machine")

    def release(self, uid: int) -> None:
        with self._lock:
            fd = self._held.pop(uid, None)
        if fd is not None:
            os.close(fd)  # closing the file drops the lock


_UIDS = _UidPool()


def find_bwrap(options: GradeOptions) -> str:
    """Resolve the bwrap binary or fail closed with an installation hint."""
    path = options.bwrap or shutil.which("bwrap")
    if not path or not os.access(path, os.X_OK):
        raise SandboxUnavailable(f"bubblewrap not found ({path or 'bwrap not on PATH'}): {INSTALL_HINT}")
    return path


def _kill(pid: int) -> None:
    """SIGKILL a process (or, for a negative pid, a process group) that may already be gone."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _process_uids() -> list[tuple[int, int]]:
    """(pid, real uid) of every live process, from /proc."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/status", "rb") as f:
                    uid_line = next(line for line in f if line.startswith(b"Uid:"))
            except (OSError, StopIteration):
                continue
            found.append((int(entry.name), int(uid_line.split()[1])))
    return found


def _ancestors(path: str) -> list[str]:
    parents = [str(p) for p in Path(path).parents if str(p) != "/"]
    return sorted(parents, key=len)


def bwrap_argv(options: GradeOptions, uid: int, read_fd: int, write_fd: int, info_fd: int) -> list[str]:
    """The full command line; read_fd/write_fd are the runner's protocol pipe ends."""
    python_roots = sorted({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix)})
    dirs = sorted({d for root in python_roots for d in _ancestors(root)}, key=len)
    argv = [
        find_bwrap(options),
        "--unshare-ipc",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--info-fd", str(info_fd),
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
        "--perms", "1777", "--size", str(options.tmp_bytes), "--tmpfs", "/tmp",
    ]  # fmt: skip
    for d in dirs:
        argv += ["--perms", "0755", "--dir", d]
    for root in python_roots:
        argv += ["--ro-bind", root, root]
    argv += ["--perms", "0755", "--dir", "/opt/grader"]
    argv += ["--ro-bind", str(RUNNER), RUNNER_IN_SANDBOX, "--chdir", "/tmp", "--"]
    argv += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    argv += ["--inh-caps=-all", "--bounding-set=-all", "--"]
    argv += [sys.executable, "-I", RUNNER_IN_SANDBOX, str(read_fd), str(write_fd)]
    argv += [str(options.memory_bytes), str(options.cpu_seconds), str(options.max_processes)]
    argv += [str(options.tmp_bytes)]
    return argv


class Sandbox:
    """One running sandbox: a child process plus the two protocol pipe ends."""

    def __init__(self, options: GradeOptions) -> None:
        self.uid = _UIDS.acquire(options.sandbox_uid)
        child_read, self.write_fd = os.pipe()
        self.read_fd, child_write = os.pipe()
        self._info_fd, child_info = os.pipe()
        os.set_blocking(self._info_fd, False)
        self._output = bytearray()
        self._closed = False
        try:
            argv = bwrap_argv(options, self.uid, child_read, child_write, child_info)
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=(child_read, child_write, child_info),
                start_new_session=True,
            )
        except BaseException as e:
            for fd in (self.write_fd, self.read_fd, self._info_fd):
                os.close(fd)
            _UIDS.release(self.uid)
            if isinstance(e, OSError):
                raise SandboxUnavailable(f"cannot start bwrap ({e}): {INSTALL_HINT}") from e
            raise
        finally:
            for fd in (child_read, child_write, child_info):
                os.close(fd)
        self._drainer = threading.Thread(target=self._drain, daemon=True)
        self._drainer.start()

    def _drain(self) -> None:
        """Read the sandbox's fds 1/2 to EOF so it never blocks, keeping only a capped prefix."""
        assert self.proc.stdout is not None
        while chunk := self.proc.stdout.read1(65536):
            if len(self._output) < OUTPUT_CAP:
                self._output += chunk[: OUTPUT_CAP - len(self._output)]

    def _kill_leftovers(self) -> None:
        """Defence in depth: no process may keep running as this sandbox's uid (held by it alone)."""
        for _ in range(200):
            pids = [pid for pid, uid in _process_uids() if uid == self.uid]
            if not pids:
                return
            for pid in pids:
                _kill(pid)
            time.sleep(0.005)  # killed processes need a moment to be reaped by their parent
        raise SandboxUnavailable(f"processes of sandbox uid {self.uid} survived SIGKILL: {pids}")

    def _child_pid(self) -> int | None:
        """Host pid of the pid namespace's init, from bwrap's --info-fd JSON (if written yet)."""
        try:
            info = json.loads(os.read(self._info_fd, 4096) or b"{}")
            return int(info["child-pid"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def output(self) -> str:
        """What bwrap or the interpreter wrote to fds 1/2 (useful when startup fails)."""
        return self._output.decode("utf-8", "replace").strip()

    def kill(self) -> None:
        """Kill the whole sandbox and reap it; idempotent. Returns only once none of its processes is left."""
        if self._closed:
            return
        self._closed = True
        if self.proc.returncode is None:
            # Killing the pid namespace's init makes the kernel kill and reap every process in it; bwrap
            # exits after that. Killing bwrap first would return while the namespace is still dying.
            child = self._child_pid()
            _kill(child) if child else _kill(-self.proc.pid)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                _kill(-self.proc.pid)
                self.proc.wait()
        self._kill_leftovers()
        for fd in (self.write_fd, self.read_fd, self._info_fd):
            os.close(fd)
        self._drainer.join(timeout=5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        _UIDS.release(self.uid)
