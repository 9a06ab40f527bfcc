"""Running a build command (`otter assign`) on files course staff uploaded, confined like untrusted code.

A course may let teaching assistants upload master notebooks, so what reads them runs as the grader's
sandboxes do (autograder/sandbox/, whose pieces are reused here): bubblewrap as an unprivileged uid from
the sandboxes' own pool (GRADER_SANDBOX_UID), no network (a network namespace of its own), its own pid
namespace, a read-only system and Python, the inputs read-only, and a size-capped tmpfs as the only
writable place. One cgroup caps the memory, processes and CPU of everything it starts, and it is killed
at its time limit. What it made under /tmp/out comes back as a tar stream on stdout, read in memory
(never extracted to disk) up to the tmpfs's size; of its log, the end.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from autograder.options import Limits
from autograder.paths import check_members, write_under
from autograder.sandbox.builds import OutputTooLarge, run_in_cgroup
from autograder.sandbox.bwrap import SITE_DIRS, find_bwrap, wait_until_reaped
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
MAX_OUTPUTS = 10_000  # files and folders it may send back (an autograder zip holds at most as many entries)
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
            return _run(cgroup, [*argv, *command], limits)
    finally:
        cgroup.remove()
        wait_until_reaped(uid)
        _UIDS.release(uid)


def _write_inputs(folder: Path, inputs: dict[str, bytes]) -> None:
    """The inputs in a folder the unprivileged uid may read (and nothing else may write); ValueError for a
    name that is not a safe relative path."""
    folder.chmod(0o755)
    for name, data in inputs.items():
        write_under(folder, name, data)  # files 0644, folders 0755


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


def _run(cgroup: SandboxCgroup, argv: list[str], limits: ConfinedLimits) -> ConfinedRun:
    """Start bwrap inside the cgroup (as the grader's sandboxes join theirs) and collect what it sends: the tar
    stream of its outputs, no larger than the scratch tmpfs they were in (a sparse file takes no room there, and
    all its size in the stream), and the end of its log."""
    try:
        process = run_in_cgroup(cgroup, argv, limits.timeout, limits.scratch_mb * 1024 * 1024)
    except subprocess.TimeoutExpired:
        raise ConfinementError(f"it ran longer than its limit of {limits.timeout:g} s and was stopped") from None
    except OutputTooLarge as error:
        raise ConfinementError(f"{error}, more than its scratch space holds, and was stopped") from None
    log = process.stderr.decode("utf-8", "replace")[-LOG_TAIL:]
    if process.returncode == 125 and not process.stdout:
        raise ConfinementError(f"the confined build could not start: {log.strip()[-500:]}")
    return ConfinedRun(process.returncode, _files(process.stdout), log)


def _files(tar: bytes) -> dict[str, bytes]:
    """The regular files of a tar stream, by relative path (links, devices and the like are ignored). What the
    command left running can write into the stream too: ConfinementError for a name that is not a safe path,
    or for more than MAX_OUTPUTS members (each costs memory here however small)."""
    files: list[tuple[str, bytes]] = []
    try:
        with tarfile.open(fileobj=io.BytesIO(tar), mode="r:") as archive:
            for count, member in enumerate(archive, 1):
                if count > MAX_OUTPUTS:
                    raise ConfinementError(f"it wrote more than {MAX_OUTPUTS} files")
                if member.isreg():
                    files.append((member.name.removeprefix("./"), archive.extractfile(member).read()))
    except tarfile.TarError:
        return {}
    try:
        check_members((name, False) for name, _ in files)
    except ValueError as error:
        raise ConfinementError(f"what it wrote cannot be used: {error}") from None
    return dict(files)
