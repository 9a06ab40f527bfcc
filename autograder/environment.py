"""The Python environment an assignment needs: its packages installed once per machine, from PyPI.

An autograder zip says what its notebooks import in `environment.yml` (conda format: `otter assign`
always lists python, pip, jupyter_server and `otter-grader[...]`, and puts the assignment's own
packages under `pip:`) and sometimes in `requirements.txt`. `requirements_of` reads both and keeps
what the grader does not already have:

- The grader provides Python, pip, Jupyter and Otter itself (GRADER_PROVIDED): those entries are
  ignored whatever version the zip asks for; notebooks always run on the grader's own.
- A pip requirement the grader's own environment already satisfies is dropped. A conda dependency that
  names a package the grader has counts as that pip requirement (`numpy=1.26` as `numpy==1.26.*`: a pinned
  version is installed, as the assignment's own environment would have it). Any other conda dependency is
  refused: packages come from PyPI only, and a conda name may belong to another project on PyPI.

`prepare` turns the rest into an Environment. Nothing left means the grader's own environment (no
build, no cost). Otherwise a virtual environment is made with the grader's interpreter and a `.pth`
file that adds the grader's site-packages AFTER its own: every package of the grader is importable
there, pip sees them as installed and does not fetch them again, and a package pinned to another
version is installed in the environment and shadows the grader's. Environments live in a cache
directory under a key hashed from the requirements and the grader's own environment (interpreter and
installed packages: a layer built over another base could be inconsistent), so zips asking for the
same packages share one. A lock file makes concurrent `prepare` calls, in any process, build it once.

Building runs third-party code's installer, and requirements come from course staff (later maybe
from TAs uploading assignments), so the build is confined: pip installs wheels only
(`--only-binary=:all:`: a wheel is unpacked, no code of the package runs; a package without wheels
is refused with an error saying so) from the index in GRADER_PIP_INDEX_URL (PyPI by default; the
zip cannot choose another index), and pip itself runs in bubblewrap as an unprivileged uid that sees
/usr, the Python installation and the few files of /etc that DNS and TLS need, read-only, can write
only the environment being built, and shares the host's network to reach the index, in a cgroup of its
own (PIP_LIMITS: memory, processes, CPU) killed as a whole at its time limit. The finished
environment is then owned by root and read-only for everyone else. Installed packages run later only
in that assignment's own boxes (its grading processes and sandboxes, both confined): never in the
caller's process, which reads what is installed from package metadata alone.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import io
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .options import GradeOptions
from .sandbox import SandboxUnavailable, find_bwrap
from .sandbox.builds import OutputTooLarge, Watch, run_in_cgroup
from .sandbox.cgroups import CgroupUnavailable, SandboxCgroup
from .sandbox.cgroups import Limits as CgroupLimits

log = logging.getLogger(__name__)

if TYPE_CHECKING:  # imported where used: grading a zip that needs nothing never loads them
    import importlib.metadata

    from packaging.requirements import Requirement


def canonicalize_name(name: str) -> str:
    """A distribution name as PEP 503 normalises it (packaging.utils.canonicalize_name)."""
    return re.sub(r"[-_.]+", "-", name).lower()


GRADER_PROVIDED = frozenset(
    canonicalize_name(name)
    for name in (
        "python", "pip", "setuptools", "wheel", "otter-grader", "ipykernel", "jupyter", "jupyter_server",
        "jupyter_client", "jupyter_core", "notebook", "jupyterlab", "nbformat", "nbclient", "nbconvert",
        "nb_conda_kernels",
    )
)  # fmt: skip
"""What the grader brings itself: a zip's entries for these are ignored, whatever version they pin."""

DEFAULT_INDEX = "https://pypi.org/simple"
BUILD_TIMEOUT = 900.0
MAX_ENV_MB = 16 * 1024
"""disk an environment may take while it is built, downloads included (GRADER_ENV_MAX_MB): machine learning
packages are large (torch with its CUDA libraries about 5 GB, CPU-only about 1 GB; tensorflow about 2 GB)"""
BUILD_TMP = ".build-tmp"
"""pip's temporary folder, inside the environment being built: on disk, where the budget counts it (a /tmp of
the build's own is memory, and a wheel of a gigabyte would not fit the build's memory limit)"""
READY_FILE = "environment.json"
BASE_PTH = "_decode_grader_base.pth"
ETC_FOR_PIP = (
    "resolv.conf",
    "hosts",
    "nsswitch.conf",
    "host.conf",
    "gai.conf",
    "ld.so.cache",
    "ssl/certs",
    "ssl/openssl.cnf",
    "ca-certificates",
)
"""what pip needs of /etc: DNS, TLS certificates and the dynamic linker's cache (not /etc/ssl/private)"""
MAX_REQUIREMENTS_BYTES = 512 * 1024
"""environment.yml or requirements.txt larger than this is refused before it is read"""
MAX_PIP_OUTPUT = 16 * 1024 * 1024
"""bytes of pip's stdout kept (its log: a few KB per package)"""
PIP_LIMITS = CgroupLimits(memory_bytes=2048 * 1024 * 1024, max_processes=256, cpus=1.0)
"""pip's cgroup, as for other confined work (a build of an upload): memory (its /tmp included), processes, CPU"""
NETWORK_ERRORS = (
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Network is unreachable",
    "Connection refused",
    "ConnectTimeoutError",
    "ProxyError",
    "Could not fetch URL",
)


class EnvironmentBuildError(RuntimeError):
    """An assignment's environment cannot be prepared; the message says why and what to do."""


@dataclass(frozen=True)
class Requirements:
    """The pip requirements an assignment needs beyond the grader's own environment, normalised."""

    pip: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.pip)

    def __str__(self) -> str:
        return ", ".join(self.pip) or "nothing beyond the grader's own packages"


@dataclass(frozen=True)
class Environment:
    """A ready environment: run `python`; make `paths` visible (read-only) wherever it runs."""

    key: str
    """content hash of the requirements and the grader's base ('' for the grader's own environment)"""
    python: str
    """interpreter to run (sys.executable for the grader's own)"""
    paths: tuple[str, ...]
    """directories that must be visible read-only in the sandbox (the environment), () if none"""


GRADER_OWN = Environment(key="", python=sys.executable, paths=())


# --- Reading what a zip asks for --------------------------------------------------------------


def requirements_of(autograder: bytes | str | os.PathLike[str]) -> Requirements:
    """What an autograder zip (bytes or path) needs beyond the grader's environment.

    Raises EnvironmentBuildError for what cannot be installed from PyPI (a conda-only dependency,
    an index option, a URL or local path) or cannot be parsed.
    """
    source = io.BytesIO(autograder) if isinstance(autograder, bytes) else autograder
    try:
        with zipfile.ZipFile(source) as zf:
            environment, requirements_txt = (_small_text(zf, name) for name in ("environment.yml", "requirements.txt"))
    except (OSError, zipfile.BadZipFile, UnicodeDecodeError) as e:
        raise EnvironmentBuildError(f"cannot read the autograder zip: {e}") from e
    if not any(_requirements_txt_lines(requirements_txt)) and _only_grader_provided(environment):
        return Requirements()  # what `otter assign` writes for an assignment without packages of its own
    pip_lines = [*_environment_yml_pip(environment), *_requirements_txt_lines(requirements_txt)]
    wanted = {str(r): r for r in map(_normalised, pip_lines)}
    return Requirements(tuple(sorted(text for text, r in wanted.items() if not _provided_or_satisfied(r))))


def _small_text(zf: zipfile.ZipFile, name: str) -> str:
    """A requirements file of the zip ('' if it has none), unpacked only if small enough to be one."""
    try:
        info = zf.getinfo(name)
    except KeyError:
        return ""
    if info.file_size > MAX_REQUIREMENTS_BYTES:
        limit = MAX_REQUIREMENTS_BYTES // 1024
        raise EnvironmentBuildError(f"{name} is larger than {limit} KB: is it a list of packages?")
    return zf.read(info).decode()


def _only_grader_provided(environment_yml: str) -> bool:
    """True when every dependency an environment file names (conda or pip) is one the grader provides,
    read line by line without a YAML parser: keys at the start of a line, list items (`- name`, at any
    indentation) under `dependencies:`. Anything else answers False, and the full reading decides."""
    section, names = "", []
    for line in environment_yml.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if key := re.match(r"^([A-Za-z_][\w.-]*)\s*:(.*)$", line):
            section = key.group(1)
            if section == "dependencies" and key.group(2).strip():
                return False  # a flow-style list
            continue
        if section != "dependencies":
            continue
        item = re.match(r"^\s*-\s*(?:[\w.-]+::)?([A-Za-z0-9_.-]+)\s*(:?)", line)
        if item is None:
            return False
        if not item.group(2):  # `- pip:` opens the pip list
            names.append(item.group(1))
    return all(canonicalize_name(name) in GRADER_PROVIDED for name in names)


def _environment_yml_pip(text: str) -> list[str]:
    """The pip section of a conda environment file, and the conda dependencies it pins (see _conda_as_pip)."""
    from .safe_yaml import load_yaml  # only read when needed: it imports a YAML parser

    try:
        spec = load_yaml(text) or {}
    except ValueError as e:
        raise EnvironmentBuildError(f"environment.yml {e}") from None
    dependencies = (spec.get("dependencies") if isinstance(spec, dict) else None) or []
    if not isinstance(dependencies, list):
        raise EnvironmentBuildError("environment.yml: `dependencies` must be a list")
    pip: list[str] = []
    for dependency in dependencies:
        if isinstance(dependency, dict):
            pip += [str(line) for line in dependency.get("pip") or []]
        elif (pinned := _conda_as_pip(str(dependency))) is not None:
            pip.append(pinned)
    return pip


def _conda_as_pip(spec: str) -> str | None:
    """A conda dependency as the pip requirement to install, or None when the grader has what it asks.

    Only a package the grader itself has is accepted: its name is then known to be that project on PyPI
    (the grader installed it from there), so a version the grader does not have (`numpy=1.26`: a course
    whose tests print `True` where NumPy 2 prints `np.True_`) is installed from PyPI, as `otter run` in
    that environment would run it. Any other conda name may belong to another project on PyPI: refused."""
    import importlib.metadata

    match = re.fullmatch(r"(?:[\w.-]+::)?([A-Za-z0-9_.-]+)\s*(.*)", spec.strip())
    name = canonicalize_name(match.group(1)) if match else spec
    if name in GRADER_PROVIDED:
        return None
    version = _conda_version(match.group(2)) if match else None
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        version = None
    if version is None:
        raise EnvironmentBuildError(
            f"environment.yml lists the conda package '{spec}', which the grader's own environment does not "
            "provide: the grader installs packages from PyPI only. If the package is on PyPI under that name, "
            "list it under `- pip:` in environment.yml (or in requirements.txt) and rebuild the assignment."
        )
    return f"{name}{version}"


def _conda_version(constraint: str) -> str | None:
    """A conda version constraint ('', '=1.26', '=1.26=py311_0', '1.26.*', '>=1.2,<2') as a pip
    specifier, or None if it has no pip equivalent."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    constraint = constraint.strip()
    if re.match(r"=[^=]", constraint):  # conda's '=1.26[=build]' means 1.26.*
        constraint = f"=={constraint[1:].split('=')[0].removesuffix('.*')}.*"
    elif constraint[:1].isdigit():  # '1.26.* [build]'
        constraint = f"=={constraint.split()[0]}"
    else:
        constraint = constraint.split(" ")[0]
    try:
        return str(SpecifierSet(constraint))
    except InvalidSpecifier:
        return None


def _requirements_txt_lines(text: str) -> Iterator[str]:
    """Requirement lines of a requirements file (comments, blank lines and continuations handled)."""
    for line in re.sub(r"\\\n", "", text).splitlines():
        line = re.sub(r"(^|\s)#.*", "", line).strip()
        if line:
            yield line


def _normalised(line: str) -> Requirement:
    """A requirement from PyPI with a canonical name; options, URLs and paths are refused."""
    from packaging.requirements import InvalidRequirement, Requirement

    what_to_do = "list packages by name and version only, e.g. `datascience==0.17.6` or `pandas>=2`"
    if line.startswith("-"):
        raise EnvironmentBuildError(
            f"requirement option '{line}' is not supported (packages come from PyPI only): {what_to_do}"
        )
    try:
        requirement = Requirement(line)
    except InvalidRequirement as e:
        raise EnvironmentBuildError(f"invalid requirement '{line}' ({e}): {what_to_do}") from e
    if requirement.url:
        raise EnvironmentBuildError(f"requirement '{line}' names a URL or path: {what_to_do}")
    requirement.name = canonicalize_name(requirement.name)
    requirement.extras = set(map(canonicalize_name, requirement.extras))
    return requirement


def _provided_or_satisfied(requirement: Requirement, extra: str = "") -> bool:
    """True if the grader provides this package or its own environment already satisfies it."""
    import importlib.metadata

    if requirement.name in GRADER_PROVIDED:
        return True
    if requirement.marker and not requirement.marker.evaluate({"extra": extra}):
        return True  # not for this platform
    try:
        dist = importlib.metadata.distribution(requirement.name)
    except importlib.metadata.PackageNotFoundError:
        return False
    if not requirement.specifier.contains(dist.version, prereleases=True):
        return False
    extra_deps = [(dep, wanted) for wanted in requirement.extras for dep in _extra_deps(dist, wanted)]
    return all(_provided_or_satisfied(dep, wanted) for dep, wanted in extra_deps)


def _extra_deps(dist: importlib.metadata.Distribution, extra: str) -> Iterator[Requirement]:
    """The requirements a distribution adds for one of its extras."""
    from packaging.requirements import Requirement

    for line in dist.requires or []:
        dep = Requirement(line)
        if dep.marker and dep.marker.evaluate({"extra": extra}) and not dep.marker.evaluate({"extra": ""}):
            dep.marker = None
            yield dep


# --- Building and caching -------------------------------------------------------------------------


def default_cache_dir() -> Path:
    """$GRADER_ENV_DIR, else /var/cache/decode-grader/envs if writable, else ~/.cache/decode-grader/envs."""
    if os.environ.get("GRADER_ENV_DIR"):
        return Path(os.environ["GRADER_ENV_DIR"])
    system = Path("/var/cache/decode-grader/envs")
    writable = next((p for p in (system, *system.parents) if p.exists()), Path("/"))
    return system if os.access(writable, os.W_OK) else Path.home() / ".cache" / "decode-grader" / "envs"


def environment_key(requirements: Requirements) -> str:
    """Content hash of an environment: its requirements and the grader's environment it is layered on."""
    content = json.dumps({"pip": requirements.pip, "base": _base_fingerprint()}, sort_keys=True)
    return hashlib.sha256(content.encode()).hexdigest()[:24]


@functools.cache
def _base_fingerprint() -> dict:
    """The grader's interpreter, site-packages and installed distributions (an environment depends on them)."""
    import importlib.metadata

    dists = sorted({f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions()})
    return {"python": sys.version, "executable": os.path.realpath(sys.executable), "site": _base_site(), "dists": dists}


def _base_site() -> list[str]:
    return list(dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib")))


def versions_used(requirements: Requirements, cache_dir: Path | None = None) -> dict[str, str]:
    """The version of each package the assignment asks for beyond the grader's, as its boxes import it
    (its environment's own copy): what the staff view says ran. Empty when it asks for nothing more."""
    environment = lookup(requirements, cache_dir)
    if not requirements or environment is None:
        return {}
    return dict(_installed_versions(environment.paths[0], requirements))


@functools.lru_cache(maxsize=64)
def _installed_versions(target: str, requirements: Requirements) -> tuple[tuple[str, str], ...]:
    """Read once per environment (a finished one never changes): asked after every grading of its assignment."""
    import importlib.metadata

    site = sysconfig.get_path("purelib", vars={"base": target, "platbase": target})
    dists = importlib.metadata.distributions(path=[site])
    installed = {canonicalize_name(d.metadata["Name"]): d.version for d in dists}
    names = [_normalised(line).name for line in requirements.pip]
    return tuple((name, installed[name]) for name in names if name in installed)


def lookup(requirements: Requirements, cache_dir: Path | None = None) -> Environment | None:
    """The environment for these requirements if it is ready, without building anything."""
    if not requirements:
        return GRADER_OWN
    key = environment_key(requirements)
    target = (cache_dir or default_cache_dir()) / key
    return _environment(key, target) if (target / READY_FILE).exists() else None


def prepare(
    requirements: Requirements, cache_dir: Path | None = None, progress: Callable[[str], None] | None = None
) -> Environment:
    """The environment for these requirements, built first if missing (once, under a lock). `progress` hears,
    every few seconds of a build, what pip is doing and how much disk it has taken (for staff to see)."""
    if not requirements:
        log.info("nothing to install: the grader's own environment")
        return GRADER_OWN
    cache_dir = cache_dir or default_cache_dir()
    key = environment_key(requirements)
    target = cache_dir / key
    if not (target / READY_FILE).exists():
        cache_dir.mkdir(parents=True, exist_ok=True, mode=0o755)
        with _locked(cache_dir / f"{key}.lock"):
            if not (target / READY_FILE).exists():  # nobody built it while we waited for the lock
                started = time.monotonic()
                _build(requirements, target, progress or (lambda text: None))
                elapsed = time.monotonic() - started
                log.info("built environment %s (%s) at %s in %.1f s", key, requirements, target, elapsed)
                return _environment(key, target)
    log.info("reused environment %s (%s) at %s", key, requirements, target)
    return _environment(key, target)


def _environment(key: str, target: Path) -> Environment:
    return Environment(key=key, python=str(target / "bin" / "python"), paths=(str(target),))


class _locked:
    """An exclusive flock on a lock file for a with-block. The lock belongs to the open file, and each
    prepare opens its own, so threads of one process exclude each other as processes do."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self) -> None:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)  # closing the file drops the lock


def _build(requirements: Requirements, target: Path, progress: Callable[[str], None]) -> None:
    """Make the environment at `target` (removing a previous, unfinished attempt) and mark it ready; a
    failed attempt is removed (it may hold gigabytes)."""
    if os.geteuid() != 0:
        raise EnvironmentBuildError(
            "building an assignment's environment needs root (pip runs in bubblewrap as an unprivileged uid), "
            "as grading does: run `python -m autograder prepare --autograder ZIP` as root"
        )
    shutil.rmtree(target, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(target)], check=True, capture_output=True)
    site_packages = Path(sysconfig.get_path("purelib", vars={"base": str(target), "platbase": str(target)}))
    lines = [f"import site; site.addsitedir({path!r})" for path in _base_site()]
    (site_packages / BASE_PTH).write_text("\n".join(lines) + "\n")
    (target / BUILD_TMP).mkdir()
    builder = _build_uid()
    _chown_tree(target, builder)
    try:
        _run_pip(requirements, target, builder, progress)
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    shutil.rmtree(target / BUILD_TMP)
    _chown_tree(target, 0)
    _chmod_tree_read_only(target)
    ready = {"requirements": list(requirements.pip), "base": _base_fingerprint(), "built": time.time()}
    (target / READY_FILE).write_text(json.dumps(ready, indent=1))


def _build_uid() -> int:
    return int(os.environ.get("GRADER_BUILD_UID", "63999"))


def _chown_tree(root: Path, uid: int) -> None:
    for path in _walk(root):
        os.lchown(path, uid, uid)


def _chmod_tree_read_only(root: Path) -> None:
    """Only the owner (root) may write; everyone may read, run executables and enter directories."""
    for path in _walk(root):
        if not path.is_symlink():
            executable = path.is_dir() or path.stat().st_mode & 0o100
            path.chmod(0o755 if executable else 0o644)


def _walk(root: Path) -> Iterable[Path]:
    yield root
    for folder, dirs, files in os.walk(root):
        yield from (Path(folder, name) for name in (*dirs, *files))


def _run_pip(requirements: Requirements, target: Path, uid: int, progress: Callable[[str], None]) -> None:
    """pip install, confined in bubblewrap, within a time and a disk budget; a failure becomes a clear error.
    The index is the operator's choice (GRADER_PIP_INDEX_URL, and GRADER_PIP_EXTRA_INDEX_URL for one they
    trust beside it, such as a CPU-only index of torch), never the zip's."""
    index = os.environ.get("GRADER_PIP_INDEX_URL", DEFAULT_INDEX)
    extra = os.environ.get("GRADER_PIP_EXTRA_INDEX_URL", "").split()
    timeout = float(os.environ.get("GRADER_ENV_BUILD_TIMEOUT", BUILD_TIMEOUT))
    budget = _BuildWatch(target, float(os.environ.get("GRADER_ENV_MAX_MB", MAX_ENV_MB)), progress)
    pip = [str(target / "bin" / "python"), "-m", "pip", "install", "--isolated", "--no-cache-dir"]
    pip += ["--only-binary=:all:", "--disable-pip-version-check", "--no-input", "--progress-bar", "off"]
    pip += ["--no-warn-script-location", "--index-url", index]
    pip += [option for url in extra for option in ("--extra-index-url", url)]
    try:
        process = _confined([*pip, *requirements.pip], target, uid, timeout, budget)
        budget(process.stdout)  # once more at the end: a build quicker than a look counts too
    except OutputTooLarge as e:
        raise EnvironmentBuildError(f"installing {requirements} stopped: pip {e}") from None
    except subprocess.TimeoutExpired:
        raise EnvironmentBuildError(
            f"installing {requirements} took longer than {timeout:g} s (GRADER_ENV_BUILD_TIMEOUT): "
            "check the network, or raise the limit for large packages, and prepare again"
        ) from None
    except OverBudget as e:
        raise EnvironmentBuildError(
            f"installing {requirements} stopped: it took {e.used_mb:.0f} MB of disk, more than the "
            f"{budget.max_mb:g} MB an environment may take (GRADER_ENV_MAX_MB). Packages built for GPUs are "
            "the largest: the operator may offer a CPU-only index (GRADER_PIP_EXTRA_INDEX_URL) or raise the "
            "limit; then prepare again"
        ) from None
    if process.returncode != 0:
        output = (process.stdout + process.stderr).decode("utf-8", "replace")
        raise EnvironmentBuildError(_pip_failure(requirements, index, output))


class OverBudget(Exception):
    def __init__(self, used_mb: float) -> None:
        self.used_mb = used_mb


class _BuildWatch:
    """Looks at a build every few seconds (sandbox/builds.py): the disk it has taken, which past `max_mb`
    stops it (OverBudget), and what pip says it is doing, for `progress`."""

    def __init__(self, target: Path, max_mb: float, progress: Callable[[str], None]) -> None:
        self.target, self.max_mb, self.progress = target, max_mb, progress

    def __call__(self, stdout: bytes) -> None:
        used_mb = _disk_bytes(self.target) / 2**20
        if used_mb > self.max_mb:
            raise OverBudget(used_mb)
        steps = re.findall(rb"^(?:Collecting|Downloading|Installing collected packages:) [^\n]{0,200}", stdout, re.M)
        doing = steps[-1].decode("utf-8", "replace") if steps else "starting pip"
        self.progress(f"installing its packages: {doing} ({used_mb:.0f} MB on disk so far)")


def _disk_bytes(root: Path) -> int:
    """The disk a folder takes (blocks, not sizes: what fills the disk), read without following links."""
    total = 0
    for folder, _, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
            except OSError:  # removed while pip works
                pass
    return total


def _confined(
    command: list[str], target: Path, uid: int, timeout: float, watch: Watch | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run `command` as pip runs: in bubblewrap as `uid`, `target` its only writable folder (_bwrap_argv), in a
    cgroup of its own (PIP_LIMITS) whose processes are all killed at `timeout` (subprocess.TimeoutExpired) or
    when `watch` raises."""
    argv = [*_bwrap_argv(target, uid), *command]
    try:
        cgroup = SandboxCgroup.create(f"env-{target.name}", PIP_LIMITS)  # one build per environment at a time
    except CgroupUnavailable as e:
        raise EnvironmentBuildError(str(e)) from None
    try:
        return run_in_cgroup(cgroup, argv, timeout, MAX_PIP_OUTPUT, watch)
    finally:
        cgroup.remove()


def _pip_failure(requirements: Requirements, index: str, output: str) -> str:
    """What went wrong, in words, with the end of pip's own output."""
    tail = "\n".join(output.strip().splitlines()[-12:])
    missing = re.search(r"No matching distribution found for (\S+)", output)
    if "No space left on device" in output:
        reason = "the disk that holds the environments (GRADER_ENV_DIR) is full: free some space or move them"
    elif any(sign in output for sign in NETWORK_ERRORS):
        reason = f"cannot reach the package index {index}: check this machine's network (or GRADER_PIP_INDEX_URL)"
    elif missing:
        reason = (
            f"no installable version of '{missing.group(1)}' on {index}: check its name and version on PyPI; "
            "the grader installs wheels only, so a package published only as source cannot be installed"
        )
    elif "ResolutionImpossible" in output or "conflicting dependencies" in output:
        reason = "the requirements conflict with each other: relax or remove one of the pins"
    else:
        reason = "pip failed"
    return f"cannot install {requirements}: {reason}; then prepare the assignment again.\npip said:\n{tail}"


def _bwrap_argv(target: Path, uid: int) -> list[str]:
    """bubblewrap for pip: read-only system and Python, `target` writable, host network, unprivileged uid."""
    try:
        bwrap = find_bwrap(GradeOptions())
    except SandboxUnavailable as e:
        raise EnvironmentBuildError(str(e)) from e
    python_roots = sorted({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, *_base_site())})
    visible = [*python_roots, str(target)]
    argv = [
        bwrap, "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try",
        "--die-with-parent", "--new-session", "--clearenv",
        "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", "/tmp", "--setenv", "LANG", "C.UTF-8",
        "--setenv", "PYTHONNOUSERSITE", "1", "--setenv", "TMPDIR", str(target / BUILD_TMP),
        "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
        "--symlink", "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp",
        "--perms", "0755", "--dir", "/etc", "--perms", "0755", "--dir", "/etc/ssl",  # bwrap would make it 0700
    ]  # fmt: skip
    for name in ETC_FOR_PIP:
        argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    for variable in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        if variable in os.environ:
            argv += ["--setenv", variable, os.environ[variable]]
    for folder in sorted({str(p) for path in visible for p in Path(path).parents if str(p) != "/"}, key=len):
        argv += ["--perms", "0755", "--dir", folder]
    for root in python_roots:
        argv += ["--ro-bind", root, root]
    argv += ["--bind", str(target), str(target), "--chdir", str(target), "--"]
    argv += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all"]
    return [*argv, "--bounding-set=-all", "--"]
