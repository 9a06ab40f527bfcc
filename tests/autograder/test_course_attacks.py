"""A course's test code runs confined (issue 18): in a grading process of its own, it can affect only the
grading it belongs to.

Each attack is a test case in the toy assignment's q1 test file, written as course staff could write it;
the case PASSES only when the attack was blocked, so the question's score says whether it held. The grader
process sets secrets where the tool keeps them (keys, database, other assignments' zips and submissions,
environment variables) and listens on loopback; none of it may be reached.
"""

from __future__ import annotations

import socket
import textwrap
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from autograder import GradeOptions, grade_submission
from autograder.options import Limits
from autograder.pool import close_all
from tests.autograder.host import sandbox_processes

CANARY = "course-attack-canary-51c2"
OPTIONS = GradeOptions(cell_timeout=5, test_timeout=5, total_timeout=20, grace=0.5)

HEADER = """
from otter.test_files import test_case
import os, socket, json, struct
OK_FORMAT = False
name = "q1"
points = 2
UID_AT_LOAD = os.getuid()  # module-level code runs where the tests run, never as root
"""

ATTACKS = {
    "read the keys, the database, other courses' zips and submissions": """
        for path in SECRET_PATHS:
            try:
                data = open(path, "rb").read()
            except OSError:
                continue
            raise AssertionError(f"read {path}: {data[:40]!r}")
    """,
    "read the grader's environment variables": """
        assert not any(CANARY in value for value in os.environ.values()), "a secret of the grader's environment"
        assert "DECODE_GRADER_SECRET" not in os.environ
    """,
    "see the grader's processes in /proc": """
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
        for pid in pids:
            try:
                command = open(f"/proc/{pid}/cmdline", "rb").read()
            except OSError:
                continue
            assert b"-m" + bytes(1) + b"pytest" not in command, f"process {pid} is the grader: {command[:80]!r}"
            assert command.startswith(b"/usr/bin/bwrap") or b"autograder" in command, f"process {pid}: {command!r}"
    """,
    "keep root or a capability": """
        assert UID_AT_LOAD != 0 and os.getuid() != 0 and os.geteuid() != 0, "runs as root"
        status = open("/proc/self/status").read()
        for line in ("CapPrm:\t0000000000000000", "CapEff:\t0000000000000000", "NoNewPrivs:\t1"):
            assert line in status, status
        try:
            os.setuid(0)
        except PermissionError:
            pass
        else:
            raise AssertionError("became root again")
    """,
    "reach the network": """
        try:
            socket.create_connection(("127.0.0.1", LISTENER_PORT), timeout=2).close()
        except OSError:
            pass
        else:
            raise AssertionError("reached the grader's loopback")
    """,
    "write outside its scratch directory": """
        for folder in ["/", "/usr", "/opt/grader/autograder", "/etc", "/var", SECRET_DIR]:
            try:
                open(os.path.join(folder, "written-by-course.txt"), "w").write("x")
            except OSError:
                continue
            raise AssertionError(f"wrote into {folder}")
        open("scratch.txt", "w").write("its own working directory is writable")
    """,
    "fork without end": """
        children = 0
        try:
            for _ in range(5000):
                if os.fork() == 0:
                    import time
                    time.sleep(60)
                    os._exit(0)
                children += 1
        except OSError:
            pass
        assert children < 5000, "forked 5000 processes"
    """,
    "allocate without end": """
        try:
            hoard = [bytearray(256 << 20) for _ in range(64)]
        except MemoryError:
            pass
        else:
            raise AssertionError(f"held {len(hoard) * 256} MB")
    """,
}


def hostile_zip(toy, tmp_path: Path, body: str, **names) -> Path:
    """The toy assignment with q1's tests replaced by one case running `body` (it passes when blocked)."""
    source = HEADER + "".join(f"{k} = {v!r}\n" for k, v in names.items())
    source += "\n@test_case(points=None, hidden=False)\ndef test_attack(square):\n" + textwrap.indent(
        textwrap.dedent(body), "    "
    )
    target = tmp_path / "hostile-autograder.zip"
    with zipfile.ZipFile(toy.zip) as original, zipfile.ZipFile(target, "w") as out:
        for item in original.infolist():
            out.writestr(item, source if item.filename == "tests/q1.py" else original.read(item))
    return target


@pytest.fixture
def grader_secrets(tmp_path, monkeypatch):
    """Files and variables as the LTI tool holds them: each must stay out of reach of course code."""
    folder = tmp_path / "var"
    paths = []
    for name in ("keys/private.pem", "grader.db", "assignments/other-course.zip", "secret_key"):
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(CANARY)
        paths.append(str(path))
    monkeypatch.setenv("DECODE_GRADER_SECRET", CANARY)
    monkeypatch.setenv("SECRET_KEY", CANARY)
    return str(folder), paths


@pytest.fixture(params=[0, 1], ids=["started afresh", "forked from a zygote"])
def options(request):
    """Both ways a grading process starts: afresh (one-off gradings) or forked (services, prestart)."""
    yield replace(OPTIONS, prestart=request.param)
    close_all()


@pytest.mark.parametrize("attack", ATTACKS, ids=str)
def test_a_course_test_file_cannot_reach_beyond_its_grading(toy, tmp_path, grader_secrets, attack, options):
    folder, paths = grader_secrets
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        names = dict(SECRET_PATHS=paths, SECRET_DIR=folder, CANARY=CANARY,
                     LISTENER_PORT=listener.getsockname()[1])  # fmt: skip
        zip_path = hostile_zip(toy, tmp_path, ATTACKS[attack], **names)
        result = grade_submission(zip_path, toy.notebook("course-attack"), options)
    (q1,) = [q for q in result.questions if q.name == "q1"]
    assert result.error is None
    assert q1.score == q1.max_score == 2, q1.tests[0].message
    assert not any(Path(folder, "written-by-course.txt").exists() for folder in ("/", "/usr", "/etc", "/var"))
    close_all()  # what was started ahead
    assert sandbox_processes() == []


def test_a_course_test_that_never_ends_costs_only_its_grading(toy, tmp_path):
    zip_path = hostile_zip(toy, tmp_path, "while True:\n    pass\n")
    options = GradeOptions(cell_timeout=2, test_timeout=2, total_timeout=3, grace=0.5)
    result = grade_submission(zip_path, toy.notebook("course-loop"), options)
    assert result.error is not None and ("in time" in result.error or "more time or memory" in result.error)
    assert result.score == 0
    assert sandbox_processes() == []


FORGE = """
sockets = []
for fd in map(int, os.listdir("/proc/self/fd")):
    try:
        s = socket.socket(fileno=os.dup(fd))
        s.getsockname()
        sockets.append(s)
    except OSError:
        pass
for s in sockets:
    if s.family == socket.AF_UNIX:
        forged = {"outcome": {"order": ["q1", "q2", "q9"], "passed": {"q1": [True], "q2": [True], "q9": [True]},
                              "messages": {"q1": [""], "q2": [""], "q9": [""]}}}
        data = json.dumps(forged).encode()
        s.sendall(struct.pack(">I", len(data)) + data)
os._exit(0)
"""


def test_a_forged_outcome_gives_no_question_or_point_the_assignment_does_not_have(toy, tmp_path):
    result = grade_submission(hostile_zip(toy, tmp_path, FORGE), toy.notebook("course-forge"), OPTIONS)
    assert result.error is not None and "could not be run" in result.error
    assert result.score == 0 and result.questions == []
    assert sandbox_processes() == []


def test_each_grading_runs_its_tests_as_a_uid_of_its_own(toy, tmp_path, options):
    """Not root, not the student's uid, and not the last grading's: one grading cannot reach another."""
    body = "raise AssertionError(f\"uids {os.getuid()} {env['student_uid']}\")"
    source = HEADER + "\n@test_case(points=None, hidden=False)\ndef test_uid(env):\n    " + body + "\n"
    target = tmp_path / "uid-autograder.zip"
    with zipfile.ZipFile(toy.zip) as original, zipfile.ZipFile(target, "w") as out:
        for item in original.infolist():
            out.writestr(item, source if item.filename == "tests/q1.py" else original.read(item))
    notebook = toy.notebook("course-uid", extra=[("q1", "import os\nstudent_uid = os.getuid()\n")])
    seen = []
    for _ in range(2):
        (q1,) = [q for q in grade_submission(target, notebook, options).questions if q.name == "q1"]
        tests_uid, student_uid = map(int, q1.tests[0].message.rsplit("uids ", 1)[1].split()[:2])
        seen.append(tests_uid)
        assert Limits().sandbox_uid <= tests_uid < Limits().sandbox_uid + 64 and tests_uid != student_uid
    assert seen[0] != seen[1]


LEAVE_BEHIND = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
KEY, IPC_CREAT = 0x51C2, 0o1000
found = [path for path in ("/tmp/left-by-course", "/dev/shm/left-by-course") if os.path.exists(path)]
found += ["a System V shared memory segment"] if libc.shmget(KEY, 0, 0) >= 0 else []
found += [name for name in os.listdir("/tmp") if name.startswith("tmp")]  # another grading's directory
for path in ("/tmp/left-by-course", "/dev/shm/left-by-course"):
    try:
        with open(path, "w") as f:
            f.write("a student's value seen in a hidden test")
        os.chmod(path, 0o666)
    except OSError:
        pass
libc.shmget(KEY, 4096, IPC_CREAT | 0o666)
assert not found, f"found what an earlier grading left: {found}"
"""


def test_nothing_a_grading_leaves_behind_reaches_the_next(toy, tmp_path, options):
    """Files in /tmp, shared memory: as with a process started afresh, the next grading of the same
    assignment (forked from the same zygote, as a service grades) finds none of it."""
    zip_path = hostile_zip(toy, tmp_path, LEAVE_BEHIND)
    for round in range(3):
        result = grade_submission(zip_path, toy.notebook(f"course-leftover-{round}"), options)
        (q1,) = [q for q in result.questions if q.name == "q1"]
        assert result.error is None and q1.score == 2, (round, q1.tests[0].message)
