"""What `otter assign` runs in (assignments/confined.py), probed with commands of our own: uploaded master
notebooks are untrusted, so the build sees its inputs and a scratch directory and nothing else."""

from __future__ import annotations

import os
import socket
import sys
import tempfile
from pathlib import Path

import pytest

from autograder.options import Limits
from lti_service.assignments import confined
from lti_service.assignments.confined import ConfinedLimits, ConfinementError, run_confined
from testbed.host import WORKER_MEMORY_MB, sandbox_processes, worker_cost

PROBE = """
import os, pathlib, socket
print("uid", os.getuid())
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2)
    print("reached the host")
except OSError:
    print("no network")
for path in ("/input/given.txt", "/usr/planted", "{host_file}", "/etc/planted"):
    try:
        open(path, "w").write("x")
        print("wrote", path)
    except OSError:
        print("refused", path)
print("sees the host's file" if os.path.exists("{secret}") else "sees no host file")
print("environment", sorted(os.environ))
pathlib.Path("out/made.txt").write_text(open("given.txt").read() + " back")
"""


def test_a_build_sees_its_inputs_and_scratch_only(tmp_path, monkeypatch):
    monkeypatch.setenv("DECODE_TEST_SECRET", "x")
    secret = tmp_path / "secret_key"
    secret.write_text("s3cret")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        probe = PROBE.format(port=listener.getsockname()[1], host_file=tmp_path / "planted", secret=secret)
        run = run_confined([sys.executable, "-c", probe], {"given.txt": b"hello"})
    assert run.status == 0, run.log
    lines = run.log.splitlines()
    base = Limits().sandbox_uid
    assert base <= int(lines[0].split()[1]) < base + 64  # an unprivileged uid of the sandboxes' pool
    assert lines[1:7] == [
        "no network",
        "refused /input/given.txt",
        "refused /usr/planted",
        f"refused {tmp_path / 'planted'}",
        "refused /etc/planted",
        "sees no host file",
    ]
    assert "DECODE_TEST_SECRET" not in lines[7]
    assert run.outputs == {"made.txt": b"hello back"}
    assert not (tmp_path / "planted").exists() and sandbox_processes() == []


def test_a_build_is_stopped_at_its_limits_and_leaves_nothing_running():
    hog = "bytearray(1024 * 1024 * 1024)"
    assert run_confined([sys.executable, "-c", hog], {}, ConfinedLimits(memory_mb=256)).status != 0
    daemon = "setsid sleep 300 & echo started; sleep 300"
    with pytest.raises(ConfinementError, match="ran longer than its limit of 2 s"):
        run_confined(["/bin/sh", "-c", daemon], {}, ConfinedLimits(timeout=2))
    assert sandbox_processes() == []
    with pytest.raises(ValueError, match="goes up out of its folder"):
        run_confined(["true"], {"../escape.txt": b"x"})


def test_a_python_installation_under_tmp_is_not_hidden_by_the_scratch_directory(monkeypatch):
    """A checkout (and its .venv) may live under /tmp, where the build's scratch tmpfs is mounted too."""
    with tempfile.TemporaryDirectory(dir="/tmp") as site:
        os.chmod(site, 0o755)
        (Path(site) / "decode_probe_module.py").write_text("VALUE = 'found'\n")
        monkeypatch.setattr(confined, "SITE_DIRS", [*confined.SITE_DIRS, site])
        probe = (
            f"import sys; sys.path.insert(0, {site!r}); import decode_probe_module; print(decode_probe_module.VALUE)"
        )
        run = run_confined([sys.executable, "-c", probe], {})
    assert (run.status, run.log.strip()) == (0, "found"), run.log


def test_what_a_build_writes_holds_little_of_the_workers_memory():
    """The worker keeps the end of a build's log and at most its scratch space's worth of outputs: a build
    writing 300 MB to its log, or leaving a sparse file of 100 MB (nothing in its scratch space, all of it in
    the outputs' tar stream), costs it no more than that."""
    to_log = "head -c 300000000 /dev/zero; echo done"
    sparse = "truncate -s 100M out/sparse"
    with worker_cost() as cost:
        run = run_confined(["/bin/sh", "-c", to_log], {})
        with pytest.raises(ConfinementError, match="wrote more than 8 MB to its output, more than its scratch"):
            run_confined(["/bin/sh", "-c", sparse], {}, ConfinedLimits(scratch_mb=8))
    assert (run.status, run.log[-5:], len(run.log)) == (0, "done\n", confined.LOG_TAIL)
    assert cost["memory_mb"] < WORKER_MEMORY_MB, cost
    assert sandbox_processes() == []
