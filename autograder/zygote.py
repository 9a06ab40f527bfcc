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

from .control import Control
from .inside.startup import limit_resources


def main(control_fd: int, preload: list[str]) -> None:
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
            _child(control, request, fds)
        for fd in fds:
            os.close(fd)


def _child(zygote: Control, request: dict, fds: list[int]) -> None:
    """Become the grading process: never returns."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        zygote.close()
        own_tmp(int(request["tmp_bytes"]))
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
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x4000, 0x40000


def own_tmp(size: int) -> None:
    """A mount and IPC namespace of this process's own, with an empty /tmp of `size` bytes (mode 1777)."""
    libc = ctypes.CDLL(None, use_errno=True)
    calls = [
        ("unshare", lambda: libc.unshare(CLONE_NEWNS | CLONE_NEWIPC)),
        ("private mounts", lambda: libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None)),
        ("mount /tmp", lambda: libc.mount(b"tmpfs", b"/tmp", b"tmpfs", MS_NOSUID | MS_NODEV,
                                          f"size={size},mode=1777".encode())),
    ]  # fmt: skip
    for name, call in calls:
        if call() != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"{name}: {os.strerror(errno)}")


def _reap(signum, frame) -> None:
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return
