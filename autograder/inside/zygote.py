"""Zygotes: an interpreter with its libraries imported, forked for each grading process (autograder/zygote.py)
or each student sandbox (`sandbox_main`), so that neither pays for its imports (numpy and pandas: about
half a second of CPU).

A zygote runs in bubblewrap as root with only the capabilities to change uid, to mount and (for sandboxes)
to bring up a loopback, and runs nothing but the grader's code and the grader's own libraries: no zip, no
test, no student value ever reaches it. For each request of the grader it forks. The child takes namespaces
of its own with a fresh size-capped /tmp (nothing one grading leaves there, or in System V IPC, reaches
another), becomes a uid of the pool (every capability gone) and waits until the grader has moved it into a
cgroup of its own before it runs anything but the grader's code. Children are reaped as they end.
"""

import ctypes
import os
import signal
import socket
import sys

from .control import Control
from .startup import limit_resources

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUTS = 0x20000, 0x8000000, 0x4000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 0x4000, 0x40000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
_libc = ctypes.CDLL(None, use_errno=True)


def serve(control_fd, preload, become):
    """Fork `become(request, fds)` for each request of the grader, until it goes away."""
    for name in preload:
        try:
            __import__(name)
        except ImportError:
            pass
    signal.signal(signal.SIGCHLD, _reap)
    control = Control(socket.socket(fileno=control_fd))
    while True:
        try:
            request, fds = control.recv()
        except Exception:  # the grader went away
            return
        if os.fork() == 0:
            try:
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                control.close()
                become(request, fds)
            finally:
                os._exit(0)
        for fd in fds:
            os.close(fd)


def become_uid(uid):
    """Drop root for a uid of the pool: every capability goes with uid 0."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    os.chdir("/tmp")


def own_tmp(size, under_tmp=(), namespaces=CLONE_NEWNS | CLONE_NEWIPC):
    """Namespaces of this process's own (a mount and an IPC namespace at least), with an empty /tmp of
    `size` bytes (mode 1777) in which the read-only paths `under_tmp` are bound again (the new /tmp would
    hide them)."""
    _call("unshare", _libc.unshare(namespaces))
    _call("private mounts", _libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None))
    held = [os.open(path, os.O_PATH | os.O_CLOEXEC) for path in under_tmp]  # still reachable once /tmp is new
    options = f"size={size},mode=1777".encode()
    _call("mount /tmp", _libc.mount(b"tmpfs", b"/tmp", b"tmpfs", MS_NOSUID | MS_NODEV, options))
    for path, fd in zip(under_tmp, held, strict=True):
        os.makedirs(path, mode=0o755, exist_ok=True)
        target = path.encode()
        _call(f"bind {path}", _libc.mount(f"/proc/self/fd/{fd}".encode(), target, None, MS_BIND | MS_REC, None))
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
        _call(f"read-only {path}", _libc.mount(None, target, None, flags, None))
        os.close(fd)


def _call(name, result):
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{name}: {os.strerror(errno)}")


def _reap(signum, frame):
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return


# -- student sandboxes ---------------------------------------------------------------------------------
def sandbox_main():
    """A zygote of student sandboxes (argv: its control socket, the libraries to import, the site dirs,
    the paths under /tmp its children must show again). One serves every assignment without packages of
    its own: nothing in it belongs to an assignment."""
    from .startup import add_site_dirs
    from .wire import loads

    control_fd = int(sys.argv[1])
    preload, site_dirs, under_tmp = (loads(arg.encode()) for arg in sys.argv[2:5])
    add_site_dirs(site_dirs)
    from . import runner  # noqa: F401 - imported here, once, for every sandbox

    serve(control_fd, preload, lambda request, fds: _become_sandbox(request, fds, under_tmp))


def _become_sandbox(request, fds, under_tmp):
    """As a sandbox started by bubblewrap is: pid, network, IPC, UTS and mount namespaces of its own, an
    init as pid 1 that reaps, the runner beside it; both as the request's uid. `fds`: the runner's two
    pipes and the socket on which the grader says it has moved both into the sandbox's cgroup."""
    namespaces = CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID | CLONE_NEWNET
    own_tmp(int(request["tmp_bytes"]), under_tmp, namespaces)
    if os.fork() != 0:
        return  # the init below is reaped by the zygote's own init
    _call("mount /proc", _libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None))
    _loopback_up()
    become_uid(request["uid"])
    runner_pid = os.fork()
    if runner_pid == 0:
        _run_sandbox(request, fds)
    for fd in fds:
        os.close(fd)
    _init(runner_pid)


def _loopback_up():
    """A new network namespace's loopback is down; bubblewrap brings it up, and so does this."""
    import fcntl
    import struct

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sh14x", b"lo", 0)
        flags = struct.unpack("16sh14x", fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sh14x", b"lo", flags | IFF_UP))


def _run_sandbox(request, fds):
    """The runner: limits set, settled into its cgroup, its randomness its own (not the zygote's)."""
    try:
        limit_resources(*request["rlimits"])
        read_fd, write_fd, settled = fds
        with socket.socket(fileno=settled) as sock:
            sock.sendall(b"r")
            if sock.recv(1) != b"g":
                return
        for name in ("random", "numpy.random"):
            module = sys.modules.get(name)
            if module is not None:
                module.seed()
        from .runner import serve_pipes

        serve_pipes(read_fd, write_fd)
    finally:
        os._exit(0)


def _init(runner_pid):
    """Pid 1 of the sandbox: reaps whatever is orphaned there, and ends (taking the namespace with it)
    when the runner does."""
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(0)
        if pid == runner_pid:
            os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
