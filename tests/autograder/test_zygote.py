"""What a grading process or a student sandbox forked by a zygote gets of its own (inside/zygote.py)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from dataclasses import replace

import pytest

from autograder import GradeOptions, grade_submission
from autograder.box import _sandbox_zygote
from autograder.inside.control import ControlError
from autograder.options import Limits
from autograder.pool import close_all
from autograder.sandbox.forked import ForkedSandbox

OWN_TMP = """
import json, os, sys
from autograder.inside.zygote import own_tmp

package, other = sys.argv[1:3]
own_tmp(1 << 20, [package])
report = {"read": open(os.path.join(package, "mod.py")).read(), "other": os.path.exists(other),
          "tmp": sorted(os.listdir("/tmp"))}
try:
    open(os.path.join(package, "new.py"), "w").close()
    report["write"] = "written"
except OSError as e:
    report["write"] = e.strerror
print(json.dumps(report))
"""


def test_its_own_tmp_still_shows_a_virtualenv_kept_under_tmp(tmp_path):
    """A checkout or virtualenv under /tmp (a CI machine's may be) is bound into the grader's boxes there:
    the empty /tmp a forked grading process takes shows it again, read-only, and nothing else of /tmp."""
    package = tmp_path / "venv" / "site-packages"
    package.mkdir(parents=True)
    (package / "mod.py").write_text("x = 1\n")
    (tmp_path / "another-grading.txt").write_text("left behind")
    command = [sys.executable, "-c", OWN_TMP, str(package), str(tmp_path / "another-grading.txt")]
    run = subprocess.run(command, capture_output=True, text=True, timeout=60)  # its own mount namespace
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(run.stdout)
    assert report["read"] == "x = 1\n" and report["write"] == "Read-only file system"
    assert not report["other"] and report["tmp"] == [str(package).split("/")[2]]
    assert (tmp_path / "another-grading.txt").exists()  # this process's /tmp untouched


@pytest.fixture(params=[0, 1], ids=["started by bubblewrap", "forked from the zygote"])
def options(request):
    yield replace(GradeOptions(cell_timeout=5.0, test_timeout=5.0, total_timeout=60), prestart=request.param)
    close_all()


STUDENT_LOOKS_AROUND = r"""
import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
KEY, IPC_CREAT = 0x51C3, 0o1000
found = []
status = dict(line.split(":\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\t" in line)
found += [] if status["NoNewPrivs"].strip() == "1" else ["NoNewPrivs unset"]
found += [f"{cap} {status[cap].strip()}" for cap in ("CapPrm", "CapEff", "CapAmb") if int(status[cap], 16)]
found += ["root"] if 0 in (os.getuid(), os.getgid()) else []
others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid())]
found += [f"processes {[open(f'/proc/{p}/cmdline').read()[:60] for p in others]}"] if others else []
found += [p for p in ("/tmp/left-by-student", "/dev/shm/left-by-student") if os.path.exists(p)]
found += ["a System V segment"] if libc.shmget(KEY, 0, 0) >= 0 else []
try:
    socket.socket(socket.AF_UNIX).connect("\0left-by-student")
    found.append("another sandbox's abstract socket")
except OSError:
    pass
try:
    socket.create_connection(("127.0.0.1", PORT), timeout=1).close()
    found.append("the host's loopback")
except OSError:
    pass
with socket.socket() as server:  # a loopback of its own, as under otter run
    server.bind(("127.0.0.1", 0))
    server.listen()
    socket.create_connection(server.getsockname(), timeout=1).close()
for path in ("/tmp/left-by-student", "/dev/shm/left-by-student"):
    try:
        open(path, "w").write("a hidden test's input")
    except OSError:
        pass
libc.shmget(KEY, 4096, IPC_CREAT | 0o666)
listener = socket.socket(socket.AF_UNIX)
listener.bind("\0left-by-student")
listener.listen()
if os.fork() == 0:  # outlives the cell, if it can
    import time
    time.sleep(60)
    os._exit(0)


def square(x):
    assert not found, f"what a sandbox can reach: {found}"
    return x * x
"""


def test_a_sandbox_reaches_nothing_of_the_host_or_of_another(toy, options):
    """Forked from the sandbox zygote (a service) or started by bubblewrap: no privilege, no process but its
    own, no network but a loopback of its own, and nothing another sandbox left (files in /tmp and
    /dev/shm, System V IPC, an abstract socket, a process)."""
    with socket.socket() as host_listener:
        host_listener.bind(("127.0.0.1", 0))
        host_listener.listen()
        source = STUDENT_LOOKS_AROUND.replace("PORT", str(host_listener.getsockname()[1]))
        for round in range(3):
            result = grade_submission(toy.zip, toy.notebook(f"looks-around-{round}", {"q1": source}), options)
            (q1,) = [q for q in result.questions if q.name == "q1"]
            assert result.error is None and q1.score == 2, (round, [t.message for t in q1.tests])


def test_a_replaced_zygote_ends_with_its_last_child_not_before():
    """A zygote is replaced after a while (or to make room for another assignment's): the sandboxes it
    forked live in its pid namespace, so killing it at once would kill gradings under way."""
    zygote = _sandbox_zygote(())
    sandbox = ForkedSandbox(zygote, Limits(), time.monotonic() + 60)
    try:
        zygote.close()  # what replacing it does
        assert sandbox.alive and zygote.process.alive
        sandbox.close()  # its last child
        assert not zygote.process.alive
        with pytest.raises(ControlError):  # and a replaced zygote forks no more
            zygote.fork(Limits().sandbox_uid, Limits(), [])
    finally:
        sandbox.close()
        zygote.close()
