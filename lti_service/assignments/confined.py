"""Running a build command (`otter assign`) on files course staff uploaded, confined like untrusted code.

A course may let teaching assistants upload master notebooks, so what reads them runs as the grader's
sandboxes do (autograder/sandbox/, whose pieces are reused here): bubblewrap as an unprivileged uid from
the sandboxes' own pool (GRADER_SANDBOX_UID), no network (a network namespace of its own), its own pid
namespace, a read-only system and Python, the inputs read-only, and a size-capped tmpfs as the only
writable place. One cgroup caps the memory, processes and CPU of everything it starts, and it is killed
at its time limit. What it made under /tmp/out comes back as a tar stream on stdout, read in memory
(never extracted to disk) and capped by the tmpfs's size.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from autograder.options import Limits
from autograder.sandbox.bwrap import JOIN_CGROUP, SITE_DIRS, find_bwrap, wait_until_reaped
from autograder.sandbox.cgroups import CgroupUnavailable, SandboxCgroup
from autograder.sandbox.cgroups import Limits as CgroupLimits
from autograder.sandbox.uids import UidPool

INPUT, WORK = "/input", "/tmp"  # a tmpfs where the grader's sandboxes have theirs
# As the unprivileged uid: copy the inputs into the tmpfs, run the command (its output is the log), then
# send /tmp/out as a tar stream; the exit status is the command's (125: the wrapper itself failed).
WRAPPER = (
    f"cp -R {INPUT}/. {WORK}/ && mkdir -p {WORK}/out && cd {WORK} || exit 125; "
    f'"$@" >&2; status=$?; tar -C {WORK}/out -cf - . || exit 125; exit $status'
)
LOG_TAIL = 8000
_UIDS = UidPool()


class ConfinementError(RuntimeError):
    """The confined command could not run at all (no bubblewrap, no cgroup, no free uid, time limit)."""


@dataclass(frozen=True)
class ConfinedLimits:
    timeout: float = 120.0
    memory_mb: int = 2048
    max_processes: int = 64
    scratch_mb: int = 256
    """the tmpfs: the inputs, everything the command writes, and the outputs"""


@dataclass(frozen=True)
class ConfinedRun:
    status: int
    """the command's exit status"""
    outputs: dict[str, bytes]
    """the regular files it left under /tmp/out, by relative path"""
    log: str
    """the end of what it printed"""


def run_confined(command: list[str], inputs: dict[str, bytes], limits: ConfinedLimits | None = None) -> ConfinedRun:
    """Run `command` in /tmp, which holds `inputs` (relative path -> content), confined as described above."""
    limits = limits or ConfinedLimits()
    grader_limits = Limits()
    uid = _UIDS.acquire(grader_limits.sandbox_uid)
    if uid is None:
        raise ConfinementError("every sandbox uid is in use; try again in a moment")
    try:
        cgroup = SandboxCgroup.create(
            f"build-{uid}", CgroupLimits(limits.memory_mb * 1024 * 1024, limits.max_processes, 1.0)
        )
    except CgroupUnavailable as error:
        _UIDS.release(uid)
        raise ConfinementError(str(error)) from None
    try:
        with tempfile.TemporaryDirectory(prefix="decode-grader-build-") as folder:
            _write_inputs(Path(folder), inputs)
            argv = _bwrap_argv(find_bwrap(grader_limits), folder, uid, limits.scratch_mb)
            return _run(cgroup, [*argv, *command], limits.timeout)
    finally:
        cgroup.remove()
        wait_until_reaped(uid)
        _UIDS.release(uid)


def _write_inputs(folder: Path, inputs: dict[str, bytes]) -> None:
    """The inputs in a folder the unprivileged uid may read (and nothing else may write)."""
    folder.chmod(0o755)
    for name, data in inputs.items():
        path = folder / safe_relative(name)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        path.write_bytes(data)
        path.chmod(0o644)
    for directory in (p for p in folder.rglob("*") if p.is_dir()):
        directory.chmod(0o755)


def safe_relative(name: str) -> PurePosixPath:
    """A relative path that stays where it is put (ValueError for an absolute one or one with `..`)."""
    path = PurePosixPath(name)
    if not name or path.is_absolute() or ".." in path.parts or "\\" in name:
        raise ValueError(f"{name!r} is not a relative path inside the assignment's folder")
    return path


def _bwrap_argv(bwrap: str, inputs: str, uid: int, scratch_mb: int) -> list[str]:
    roots = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, *SITE_DIRS)}
    python_roots = sorted(r for r in roots if not any(r.startswith(other + os.sep) for other in roots))
    parents = sorted({str(p) for root in python_roots for p in Path(root).parents if str(p) != "/"}, key=len)
    argv = [
        bwrap, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
        "--die-with-parent", "--new-session", "--clearenv",
        "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", WORK, "--setenv", "TMPDIR", WORK,
        "--setenv", "LANG", "C.UTF-8", "--setenv", "USER", "builder", "--setenv", "MPLBACKEND", "Agg",
        "--setenv", "PYTHONDONTWRITEBYTECODE", "1",
        "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
        "--symlink", "usr/bin", "/bin", "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
        "--proc", "/proc", "--dev", "/dev",
        # the scratch tmpfs before Python: an installation under /tmp (a checkout's .venv) is bound over it,
        # not hidden by it
        "--perms", "1777", "--size", str(scratch_mb * 1024 * 1024), "--tmpfs", WORK,
    ]  # fmt: skip
    for folder in parents:
        argv += ["--perms", "0755", "--dir", folder]
    for root in python_roots:
        argv += ["--ro-bind", root, root]
    argv += ["--ro-bind", inputs, INPUT]
    argv += ["--chdir", WORK, "--", "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    return [*argv, "--inh-caps=-all", "--bounding-set=-all", "--", "/bin/sh", "-c", WRAPPER, "sh"]


def _run(cgroup: SandboxCgroup, argv: list[str], timeout: float) -> ConfinedRun:
    """Start bwrap inside the cgroup (as the grader's sandboxes join theirs) and collect what it sends."""
    process = subprocess.Popen(
        ["/bin/sh", "-c", JOIN_CGROUP, "sh", *map(str, cgroup.procs_files), "--", *argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        cgroup.kill()
        process.communicate()
        raise ConfinementError(f"it ran longer than its limit of {timeout:g} s and was stopped") from None
    log = stderr.decode("utf-8", "replace")[-LOG_TAIL:]
    if process.returncode == 125 and not stdout:
        raise ConfinementError(f"the confined build could not start: {log.strip()[-500:]}")
    return ConfinedRun(process.returncode, _files(stdout), log)


def _files(tar: bytes) -> dict[str, bytes]:
    """The regular files of a tar stream, by relative path (links, devices and the like are ignored)."""
    files: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(tar), mode="r:") as archive:
            for member in archive:
                name = member.name.removeprefix("./")
                if member.isreg() and name:
                    files[name] = archive.extractfile(member).read()
    except tarfile.TarError:
        return {}
    return files
