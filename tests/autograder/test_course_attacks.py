"""A course's test code runs confined (issue 18): in a grading process of its own, it can affect only the
grading it belongs to.

Each attack is a test case in the toy assignment's q1 test file, written as course staff could write it;
the case PASSES only when the attack was blocked, so the question's score says whether it held. The grader
process sets secrets where the tool keeps them (keys, database, other assignments' zips and submissions,
environment variables) and listens on loopback; none of it may be reached.
"""

from __future__ import annotations

import hashlib
import random
import socket
import textwrap
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from autograder import GradeOptions, grade_submission
from autograder.assignment import AssignmentError
from autograder.options import Limits
from autograder.pool import close_all
from testbed.host import WORKER_CPU_SECONDS, WORKER_MEMORY_MB, sandbox_processes, worker_cost

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


def with_support_file(toy, target: Path, name: str, chunks: Iterator[bytes], tests_q1: str | None = None) -> None:
    """The toy assignment with a support file `name` written from `chunks` (deflated, never whole in memory
    here either), and q1's tests replaced by `tests_q1` if given."""
    with zipfile.ZipFile(toy.zip) as original, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for item in original.infolist():
            replaced = item.filename == "tests/q1.py" and tests_q1 is not None
            out.writestr(item, tests_q1 if replaced else original.read(item))
        with out.open(f"files/{name}", "w", force_zip64=True) as member:
            for chunk in chunks:
                member.write(chunk)


def compressible(megabytes: int) -> Iterator[bytes]:
    """`megabytes` MB, always the same, that deflate about 150 times (a little noise in zeros: within the
    grader's MAX_RATIO)."""
    noise = random.Random(0)
    for _ in range(megabytes):
        yield noise.randbytes(6 * 1024) + bytes((1 << 20) - 6 * 1024)


FLOOD = """
import hashlib
support = hashlib.sha256(open("big.bin", "rb").read()).hexdigest()
assert support == digest_in_sandbox() == DIGEST, "the support file did not arrive whole"
frames = [b'{"x":[' + b"[]," * 500_000 + b"[]]}"] + [b'{"x":[' + b"[]," * 5_500_000 + b"[]]}"] * 3
for fd in map(int, os.listdir("/proc/self/fd")):
    try:
        s = socket.socket(fileno=os.dup(fd))
        s.getsockname()
    except OSError:
        continue
    if s.family == socket.AF_UNIX:  # the grading process's control socket
        for frame in frames:
            s.sendall(struct.pack(">I", len(frame)) + frame)
"""
SANDBOX_DIGEST = (
    "import hashlib\ndef digest_in_sandbox():\n    return hashlib.sha256(open('big.bin', 'rb').read()).hexdigest()\n"
)


def test_what_course_tests_send_and_their_support_files_cost_the_grader_little(toy, tmp_path, options):
    """Test code writing frames of nested lists on its control socket (a 66 MB one parsed into 1.6 GB here)
    ends its grading with a message for course staff, and a 100 MB support file (deflated to under 1 MB)
    reaches the tests and the sandbox whole without passing through the grader's memory."""
    digest = hashlib.sha256()
    for chunk in compressible(100):
        digest.update(chunk)
    source = HEADER + "\n@test_case(points=None, hidden=False)\ndef test_flood(square, digest_in_sandbox):\n"
    source += textwrap.indent(f"DIGEST = {digest.hexdigest()!r}\n" + FLOOD, "    ")
    zip_path = tmp_path / "flood-autograder.zip"
    with_support_file(toy, zip_path, "big.bin", compressible(100), source)
    notebook = toy.notebook("course-flood", extra=[("q1", SANDBOX_DIGEST)])
    with worker_cost() as cost:
        result = grade_submission(zip_path, notebook, options)
    assert result.error == (
        "the tests could not be run: the assignment's tests sent the grader more than 20000 lists and objects in "
        "one message, more than a grading may send (does a test write to the grading process's socket?): the "
        "grading was stopped"
    ), [test.message for question in result.questions for test in question.tests]
    assert result.score == 0
    assert cost["memory_mb"] < WORKER_MEMORY_MB and cost["cpu_seconds"] < WORKER_CPU_SECONDS, cost
    close_all()
    assert sandbox_processes() == []


def test_a_zip_bomb_is_refused_before_the_grader_unpacks_it(toy, tmp_path):
    """100 MB of zeros deflate into 100 KB: refused by what the zip's directory says, never unpacked."""
    zip_path = tmp_path / "bomb-autograder.zip"
    with_support_file(toy, zip_path, "zeros.bin", (bytes(1 << 20) for _ in range(100)))
    with worker_cost() as cost, pytest.raises(AssignmentError) as refused:
        grade_submission(zip_path, toy.notebook("course-bomb"), OPTIONS)
    assert "the entry 'files/zeros.bin' unpacks to more than 200 times its packed size" in str(refused.value)
    assert cost["memory_mb"] < WORKER_MEMORY_MB and cost["cpu_seconds"] < WORKER_CPU_SECONDS, cost


CHATTY = """
end, chunk = time.monotonic() + 3, b"x" * 65536
while time.monotonic() < end:
    os.write(1, chunk)
"""


def test_a_test_that_prints_without_end_costs_the_grader_little(toy, tmp_path, options):
    """The grader drains what a grading process writes to its stdout and stderr (to keep its first 64 KB for
    the log): read as it came, 3 s of writing cost the grader 1.2 s of CPU that no cgroup counted."""
    zip_path = hostile_zip(toy, tmp_path, "import time\n" + CHATTY)
    with worker_cost() as cost:
        result = grade_submission(zip_path, toy.notebook("course-chatty"), options)
    (q1,) = [q for q in result.questions if q.name == "q1"]
    assert result.error is None and q1.score == 2, q1.tests[0].message
    assert cost["cpu_seconds"] < 0.5, cost
