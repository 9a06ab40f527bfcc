"""A zygote (sandbox/forked.py): a grading process's interpreter, libraries imported, forked per grading.

It runs in bubblewrap as root with only the capabilities to change uid, and runs nothing but the grader's
code and the grader's own libraries: no zip, no test, no student value ever reaches it. For each request
of the grader (a uid, the child's rlimits, its control socket and zip) it forks. The child becomes the uid
(every capability gone), makes itself a directory of its own in /tmp (0700; /tmp is sticky), waits until
the grader has moved it into a cgroup of its own, and is then a grading process as child.py describes;
it removes its directory at its end. Children are reaped as they end.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import tempfile

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
        uid = request["uid"]
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)  # every capability goes with uid 0
        scratch = tempfile.mkdtemp(dir="/tmp")
        os.chdir(scratch)
        limit_resources(*request["rlimits"])
        control = Control(socket.socket(fileno=fds[0]))
        control.send({"forked": True})
        control.recv()  # the grader has moved this process into its own cgroup
        from .child import serve

        serve(control, fds[1])
        shutil.rmtree(scratch, ignore_errors=True)
    finally:
        os._exit(0)


def _reap(signum, frame) -> None:
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return
