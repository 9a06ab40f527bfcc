"""The zygote of grading processes (inside/zygote.py): the grader's code imported once, each child a
grading process as child.py describes, in a mount and IPC namespace of its own with an empty /tmp."""

from __future__ import annotations

import socket

from .inside.control import Control
from .inside.startup import limit_resources
from .inside.zygote import become_uid, own_tmp, serve


def main(control_fd: int, preload: list[str], under_tmp: list[str]) -> None:
    """`under_tmp`: bound paths inside /tmp (a checkout or virtualenv there), which each child's own /tmp
    must show again."""
    from . import child  # noqa: F401 - imported here, once, for every child

    serve(control_fd, preload, lambda request, fds: _become_grading_process(request, fds, under_tmp))


def _become_grading_process(request: dict, fds: list[int], under_tmp: list[str]) -> None:
    own_tmp(int(request["tmp_bytes"]), under_tmp)
    become_uid(request["uid"])
    limit_resources(*request["rlimits"])
    control = Control(socket.socket(fileno=fds[0]))
    control.send({"forked": True})
    control.recv()  # the grader has moved this process into its own cgroup
    from .child import serve as serve_grading

    serve_grading(control, fds[1])
