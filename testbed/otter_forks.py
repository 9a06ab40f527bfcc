"""Stock `otter run` started as a fork of a process that has already imported Otter.

`python -m otter run` spends over a second importing Otter before it reads its arguments, and the suite runs it
about ninety times (the parity corpus, Decode's notebooks). One server per interpreter imports what `python -m
otter run` imports and forks a child for each run; the child runs `python -m otter`'s own code (`runpy` on the
`otter` package, with the run's arguments) in a session of its own. Everything after the imports is stock `otter
run` in a fresh process: the kernel it starts, the files it writes, its output and exit status.
"""

from __future__ import annotations

import atexit
import json
import subprocess
import threading
from pathlib import Path

SERVER = r"""
import json, os, runpy, signal, sys, traceback
import otter.cli, otter.execute, otter.run.run_autograder.runners.python_runner  # what a run imports
import jupyter_client, nbclient, nbconvert.preprocessors, pandas  # imported by Otter during a run
signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the server never waits: the kernel reaps its children
replies = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(os.open(os.devnull, os.O_RDWR), 1)
for line in sys.stdin:
    request = json.loads(line)
    if os.fork():
        continue
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # this child waits for the run and says how it ended
    run = os.fork()
    if run == 0:
        os.setsid()  # killed as a group, with its kernel, past its time
        os.dup2(os.open(os.devnull, os.O_RDWR), 0)
        os.dup2(os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 2)
        sys.argv = ["otter", *request["args"]]
        code = 0
        try:
            runpy.run_module("otter", run_name="__main__", alter_sys=True)
        except SystemExit as end:
            code = end.code if isinstance(end.code, int) else (0 if end.code is None else 1)
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    replies.write(json.dumps({"id": request["id"], "pid": run}) + "\n")
    _, status = os.waitpid(run, 0)
    replies.write(json.dumps({"id": request["id"], "code": os.waitstatus_to_exitcode(status)}) + "\n")
    os._exit(0)
"""


class Run:
    """One `otter run` under way: its process id (its session's too) once started, its exit status once ended."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.code: int | None = None
        self.changed = threading.Condition()

    def started(self, timeout: float) -> int:
        with self.changed:
            if not self.changed.wait_for(lambda: self.pid is not None, timeout):
                raise TimeoutError("the otter run server did not start the run")
            return self.pid

    def wait(self, timeout: float) -> int:
        """The exit status; subprocess.TimeoutExpired past `timeout` seconds (the run goes on)."""
        with self.changed:
            if not self.changed.wait_for(lambda: self.code is not None, timeout):
                raise subprocess.TimeoutExpired(["otter", "run"], timeout)
            return self.code


class OtterForks:
    """The server for one interpreter; ended when this process ends (its stdin closes)."""

    def __init__(self, python: str) -> None:
        self.process = subprocess.Popen(
            [python, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        self.runs: dict[int, Run] = {}
        self.lock = threading.Lock()
        threading.Thread(target=self._read_replies, name="otter-forks", daemon=True).start()

    def start(self, args: list[str], stderr: Path) -> Run:
        """`otter ARGS`, its standard error into `stderr`, its standard output discarded."""
        run = Run()
        with self.lock:
            number = len(self.runs)
            self.runs[number] = run
            self.process.stdin.write(json.dumps({"id": number, "args": args, "stderr": str(stderr)}) + "\n")
            self.process.stdin.flush()
        return run

    def _read_replies(self) -> None:
        for line in self.process.stdout:
            reply = json.loads(line)
            with self.lock:
                run = self.runs[reply["id"]]
            with run.changed:
                run.pid, run.code = reply.get("pid", run.pid), reply.get("code", run.code)
                run.changed.notify_all()
        with self.lock:  # the server has ended: runs it never answered fail now, not at their timeout
            unanswered = [run for run in self.runs.values() if run.code is None]
        for run in unanswered:
            with run.changed:
                run.code = -1
                run.changed.notify_all()

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)


def start(python: str, args: list[str], stderr: Path, fork: bool = True) -> Run:
    """`otter ARGS` run by `python`: forked from its server, or (`fork=False`: what a benchmark of stock Otter
    times) as `python -m otter ARGS`, a process started from nothing."""
    if fork:
        return server(python).start(args, stderr)
    run = Run()
    with stderr.open("wb") as errors:
        process = subprocess.Popen(
            [python, "-m", "otter", *args], stdout=subprocess.DEVNULL, stderr=errors, start_new_session=True
        )
    run.pid = process.pid

    def wait() -> None:
        code = process.wait()
        with run.changed:
            run.code = code
            run.changed.notify_all()

    threading.Thread(target=wait, name="otter-run", daemon=True).start()
    return run


_servers: dict[str, OtterForks] = {}
_servers_lock = threading.Lock()


def server(python: str) -> OtterForks:
    """The server for `python`, started on first use."""
    with _servers_lock:
        if python not in _servers:
            _servers[python] = OtterForks(python)
        return _servers[python]


@atexit.register
def _close_servers() -> None:
    for forks in _servers.values():
        forks.close()
