"""A zygote (sandbox/forked.py): a grading process's interpreter, libraries imported, forked per grading.

It runs in bubblewrap as root with only the capabilities to change uid and to mount, and runs nothing but
the grader's code and the grader's own libraries: no zip, no test, no student value ever reaches it. For
each request of the grader (a uid, the child's rlimits and /tmp size, its control socket and zip) it
forks. The child takes a mount and IPC namespace of its own with a fresh size-capped /tmp (nothing one
grading leaves there, or in System V IPC, reaches another, as if it had been started afresh), becomes the
uid (every capability gone), waits until the grader has moved it into a cgroup of its own, and is then a
grading process as child.py describes. Children are reaped as they end.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
from collections.abc import Sequence

from .control import Control
from .inside.startup import limit_resources


def main(control_fd: int, preload: list[str], under_tmp: list[str]) -> None:
    """`under_tmp`: bound paths inside /tmp (a checkout or virtualenv there), which each child's own /tmp
    must show again."""
    for name in preload:
        try:
            __import__(name)
        except ImportError:
            pass
    from . import child  # noqa: F401 - imported here, once, for every child

    signal.signal(signal.SIGCHLD, _reap)
    control = Control(socket.socket(fileno=control_fd))
    while True:
        try:
            request, fds = control.recv()
        except Exception:  # the grader went away
            return
        if os.fork() == 0:
            _child(control, request, fds, under_tmp)
        for fd in fds:
            os.close(fd)


def _child(zygote: Control, request: dict, fds: list[int], under_tmp: list[str]) -> None:
    """Become the grading process: never returns."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        zygote.close()
        own_tmp(int(request["tmp_bytes"]), under_tmp)
        uid = request["uid"]
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)  # every capability goes with uid 0
        os.chdir("/tmp")
        limit_resources(*request["rlimits"])
        control = Control(socket.socket(fileno=fds[0]))
        control.send({"forked": True})
        control.recv()  # the grader has moved this process into its own cgroup
        from .child import serve

        serve(control, fds[1])
    finally:
        os._exit(0)


CLONE_NEWNS, CLONE_NEWIPC = 0x00020000, 0x08000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 0x4000, 0x40000


def own_tmp(size: int, under_tmp: Sequence[str] = ()) -> None:
    """A mount and IPC namespace of this process's own, with an empty /tmp of `size` bytes (mode 1777) in
    which the read-only paths `under_tmp` are bound again (the new /tmp would hide them)."""
    libc = ctypes.CDLL(None, use_errno=True)

    def call(name: str, result: int) -> None:
        if result != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"{name}: {os.strerror(errno)}")

    call("unshare", libc.unshare(CLONE_NEWNS | CLONE_NEWIPC))
    call("private mounts", libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None))
    held = [os.open(path, os.O_PATH | os.O_CLOEXEC) for path in under_tmp]  # still reachable once /tmp is new
    options = f"size={size},mode=1777".encode()
    call("mount /tmp", libc.mount(b"tmpfs", b"/tmp", b"tmpfs", MS_NOSUID | MS_NODEV, options))
    for path, fd in zip(under_tmp, held, strict=True):
        os.makedirs(path, mode=0o755, exist_ok=True)
        target = path.encode()
        call(f"bind {path}", libc.mount(f"/proc/self/fd/{fd}".encode(), target, None, MS_BIND | MS_REC, None))
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
        call(f"read-only {path}", libc.mount(None, target, None, flags, None))
        os.close(fd)


def _reap(signum, frame) -> None:
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return
