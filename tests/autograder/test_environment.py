"""Per-assignment environments: real installs, in bubblewrap, cached, built once, clear errors. The index is the
tests' own on loopback (tests/package_index.py: the wheels `make test` downloads), standing for PyPI.

Small pure-Python packages keep this quick: `six` (not in the grader's environment) and `iniconfig`
(in the grader's environment, pinned here to an older version to check that the environment's own
copy shadows the grader's).
"""

from __future__ import annotations

import fcntl
import importlib.metadata
import io
import json
import os
import socket
import ssl
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from autograder import environment, grade_submission
from autograder.environment import (
    GRADER_OWN,
    PIP_LIMITS,
    EnvironmentBuildError,
    Requirements,
    _only_grader_provided,
    environment_key,
    lookup,
    prepare,
    requirements_of,
)
from autograder.sandbox.cgroups import CPU_PERIOD_US, SandboxCgroup
from testbed.tool import wait_for

OTTER_DEPENDENCIES = ["python=3.13", "pip", "jupyter_server"]  # what `otter assign` always writes
SHADOWED = "iniconfig==2.0.0"


def autograder_zip(
    pip: list[str] = (), conda: list[str] = (), requirements_txt: str | None = None, environment_yml: str = ""
) -> bytes:
    """An autograder zip holding only what environments are made from (`environment_yml`: that file as given)."""
    environment = {
        "name": "otter-env",
        "channels": ["conda-forge"],
        "dependencies": [*OTTER_DEPENDENCIES, *conda, {"pip": ["otter-grader[grading,plugins]==7.0.0", *pip]}],
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("environment.yml", environment_yml or yaml.safe_dump(environment))
        if requirements_txt is not None:
            zf.writestr("requirements.txt", requirements_txt)
    return buffer.getvalue()


def run_in(python: str, code: str) -> str:
    return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("envs")


@pytest.fixture(scope="module")
def built(cache_dir):
    """One real build: six (new) and an older iniconfig than the grader's, from the index."""
    requirements = requirements_of(autograder_zip(pip=["six", SHADOWED]))
    return requirements, prepare(requirements, cache_dir)


def test_what_the_grader_provides_is_ignored_and_costs_nothing(tmp_path):
    zip_bytes = autograder_zip(
        pip=["ipykernel>=6", "otter-grader==6.0.0", "Jupyter-Server", f"numpy=={importlib.metadata.version('numpy')}"],
        conda=["numpy", "pandas>=2", "conda-forge::matplotlib", "nb_conda_kernels"],
        requirements_txt="# what the notebook imports\npandas  # already there\n\n",
    )
    requirements = requirements_of(zip_bytes)
    assert requirements == Requirements()
    assert prepare(requirements, tmp_path) == GRADER_OWN == lookup(requirements, tmp_path)
    assert GRADER_OWN.python == sys.executable and GRADER_OWN.paths == ()
    assert list(tmp_path.iterdir()) == []


def test_requirements_are_normalised_from_both_files(tmp_path):
    path = tmp_path / "a.zip"
    requirements_txt = "six>=1.0\nTOMLI_W\\\n<2\n"  # a continuation line
    path.write_bytes(autograder_zip(pip=["Six >= 1.0", "iniconfig==2.0.0"], requirements_txt=requirements_txt))
    assert requirements_of(path) == Requirements(("iniconfig==2.0.0", "six>=1.0", "tomli-w<2"))


def test_installs_from_pypi_into_an_environment_layered_over_the_graders(built):
    requirements, environment = built
    assert requirements == Requirements((SHADOWED, "six"))
    assert environment.key == environment_key(requirements)
    assert environment.paths == (str(Path(environment.python).parent.parent),)
    site = run_in(environment.python, "import six, sysconfig; print(sysconfig.get_path('purelib'))")
    assert site.startswith(environment.paths[0])
    # the grader's packages are used from the grader's environment, not installed again
    assert run_in(environment.python, "import numpy; print(numpy.__file__)").startswith(sys.prefix)
    assert not list(Path(site).glob("numpy*"))


def test_a_pinned_package_shadows_the_graders_version(built):
    _, environment = built
    assert importlib.metadata.version("iniconfig") != "2.0.0"
    assert run_in(environment.python, "import importlib.metadata as m; print(m.version('iniconfig'))") == "2.0.0"
    assert run_in(environment.python, "import iniconfig; print(iniconfig.__file__)").startswith(environment.paths[0])


def test_a_finished_environment_is_owned_by_root_and_read_only_for_others(built):
    _, environment = built
    for folder, _, files in os.walk(environment.paths[0]):
        for path in [Path(folder), *(Path(folder, name) for name in files)]:
            info = path.lstat()
            assert info.st_uid == 0, path
            assert path.is_symlink() or not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH), path


def test_second_prepare_reuses_the_environment_without_running_pip(built, cache_dir, monkeypatch):
    requirements, environment = built
    monkeypatch.setenv("GRADER_BWRAP", "/nonexistent/bwrap")  # any build would now fail
    assert lookup(requirements, cache_dir) == environment
    assert prepare(requirements, cache_dir) == environment


def test_concurrent_prepares_build_once(cache_dir):
    """Two CLI processes wait for the lock (held here like a builder would), then one builds, one reuses."""
    path = cache_dir / "concurrent.zip"
    path.write_bytes(autograder_zip(pip=["six==1.16.0"]))
    key = environment_key(requirements_of(path))
    env = {**os.environ, "GRADER_ENV_DIR": str(cache_dir)}
    command = [sys.executable, "-m", "autograder", "prepare", "--autograder", str(path)]
    lock = os.open(cache_dir / f"{key}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        procs = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True) for _ in range(2)]
        wait_for(lambda: _lock_waiters() >= {p.pid for p in procs}, timeout=60)
    finally:
        os.close(lock)
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert sorted(out.split()[0] for out in outputs) == ["built", "reused"]
    assert all(key in out for out in outputs)


def _lock_waiters() -> set[int]:
    """Pids blocked waiting for a flock (the `->` lines of /proc/locks)."""
    return {int(line.split()[5]) for line in Path("/proc/locks").read_text().splitlines() if " -> FLOCK " in line}


def test_unknown_package_is_a_clear_error_and_not_cached(cache_dir):
    requirements = requirements_of(autograder_zip(pip=["decode-grader-no-such-package-7f3a"]))
    with pytest.raises(EnvironmentBuildError, match="no installable version of 'decode-grader-no-such-package-7f3a'"):
        prepare(requirements, cache_dir)
    assert lookup(requirements, cache_dir) is None


def test_conflicting_pins_are_a_clear_error(cache_dir):
    requirements = requirements_of(autograder_zip(pip=["six==1.16.0", "six==1.17.0"]))
    with pytest.raises(EnvironmentBuildError, match="requirements conflict"):
        prepare(requirements, cache_dir)


def test_unreachable_index_is_a_clear_error(cache_dir, monkeypatch):
    with socket.socket() as closed:  # a loopback port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setenv("GRADER_PIP_INDEX_URL", f"http://127.0.0.1:{port}/simple")
    with pytest.raises(EnvironmentBuildError, match="cannot reach the package index"):
        prepare(requirements_of(autograder_zip(pip=["six==1.15.0"])), cache_dir)


def test_a_build_that_takes_too_long_is_stopped(cache_dir, monkeypatch):
    monkeypatch.setenv("GRADER_ENV_BUILD_TIMEOUT", "0.05")
    with pytest.raises(EnvironmentBuildError, match="took longer than"):
        prepare(requirements_of(autograder_zip(pip=["six==1.14.0"])), cache_dir)
    builder = int(os.environ.get("GRADER_BUILD_UID", "63999"))
    wait_for(lambda: _processes_of(builder) == [], timeout=10)  # the kernel reaps the killed namespace


def _processes_of(uid: int) -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _uid(p) == uid]


def _uid(proc: Path) -> int | None:
    try:
        return proc.stat().st_uid
    except OSError:
        return None


def test_conda_only_dependency_is_a_clear_error():
    with pytest.raises(EnvironmentBuildError, match=r"conda package 'r-base=4\.3'.*PyPI only.*- pip:"):
        requirements_of(autograder_zip(conda=["r-base=4.3"]))


def test_a_conda_pin_of_a_package_the_grader_has_is_installed_from_pypi():
    """`numpy=1.26` in environment.yml is the version the assignment's own environment runs (a course's
    doctests print `True` under it, `np.True_` under NumPy 2): numpy's name is known to be numpy on PyPI."""
    assert requirements_of(autograder_zip(conda=["numpy=1.26", "pandas>=2"])) == Requirements(("numpy==1.26.*",))
    assert requirements_of(autograder_zip(conda=["conda-forge::numpy 1.26.4 py311_0"])) == Requirements(
        ("numpy==1.26.4",)
    )


PRINTS_TRUE = """from otter.test_files import test_case
OK_FORMAT = False
name = "printed"
points = 1
@test_case(points=1, hidden=False)
def test_printed_as_true(flag):
    assert repr(flag) == "True", repr(flag)
"""


def test_the_tests_and_the_notebook_run_with_the_assignments_pinned_numpy(toy, tmp_path):
    """A test that compares what a value prints passes as under otter run in the assignment's environment,
    and the staff view says which version ran (built once per machine, in the default place, as in use)."""
    pinned = tmp_path / "pinned.zip"
    environment_yml = yaml.safe_dump({"dependencies": ["python=3.11", "pip", "numpy=1.26", {"pip": ["otter-grader"]}]})
    with zipfile.ZipFile(toy.zip) as source, zipfile.ZipFile(pinned, "w") as target:
        for info in source.infolist():
            if info.filename != "environment.yml":
                target.writestr(info, source.read(info))
        target.writestr("environment.yml", environment_yml)
        target.writestr("tests/printed.py", PRINTS_TRUE)
    notebook = toy.notebook("pinned", extra=[(None, "flag = np.bool_(True)\n")])
    result = grade_submission(pinned, notebook)
    (printed,) = [q for q in result.questions if q.name == "printed"]
    assert printed.score == 1.0, printed.tests[0].message  # 'np.True_' under the grader's own NumPy 2
    assert result.score == result.max_score
    assert result.to_dict()["packages"]["numpy"].startswith("1.26.")
    assert "packages" not in result.to_dict(student_view=True)


@pytest.mark.parametrize(
    "line",
    ["--extra-index-url https://example.invalid/simple", "evil @ https://example.invalid/evil.whl", "six >>> 1"],
)
def test_index_options_urls_and_nonsense_are_refused(line):
    with pytest.raises(EnvironmentBuildError, match="list packages by name and version only"):
        requirements_of(autograder_zip(pip=[line]))


@pytest.mark.parametrize(
    ("text", "needs_reading"),
    [
        ("dependencies:\n- python=3.11\n- pip:\n  - six\nname: x\n", True),  # items at column 0
        ("dependencies: [python, six]\n", True),  # flow style
        ("name: otter-env\ndependencies:\n  - python=3.13\n  - pip:\n      - otter-grader==7.0.0\n", False),
    ],
)
def test_the_quick_reading_of_environment_yml_never_overlooks_a_package(text, needs_reading):
    """requirements_of reads an environment file without a YAML parser when it names only what the
    grader provides (a CLI start saves the parser's import); anything else goes to the full reading."""
    assert _only_grader_provided(text) is not needs_reading


LAUGHS = "\n".join(
    [f"l0: &l0 [{', '.join(['lol'] * 10)}]"]
    + [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 4)]
    + ["dependencies: *l3"]
)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (LAUGHS, r"uses a YAML alias \(a '\*name', line 2\)"),
        ("dependencies:\n  - pip:\n    - six\n" + "# a comment\n" * 20_000, "is longer than 131072 characters"),
        ("dependencies:\n  - pip:\n    - six\n" + "#" * 600_000, r"is larger than 512 KB: is it a list of packages\?"),
    ],
    ids=["aliases", "too-long", "too-large-to-read"],
)
def test_environment_yml_is_read_within_bounds(text, reason):
    """yaml.safe_load takes aliases: a few hundred bytes of them ("billion laughs") expand beyond any memory."""
    with pytest.raises(EnvironmentBuildError, match=f"environment.yml {reason}"):
        requirements_of(autograder_zip(environment_yml=text))


PROBE = """
import json, os, ssl
print(json.dumps({
    "uid": os.getuid(),
    "certificates": os.access(ssl.get_default_verify_paths().openssl_cafile, os.R_OK),
    "environment": sorted(os.environ),
    "mounts": sorted({line.split()[4] for line in open("/proc/self/mountinfo")}),
    "cgroups": sorted({line.strip().rsplit(":", 1)[1] for line in open("/proc/self/cgroup")}),
}))
"""


def test_pip_runs_in_a_cgroup_of_its_own_and_sees_no_secret(tmp_path, monkeypatch):
    """What pip runs in (environment._confined), probed with a command of our own instead of pip."""
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "var"))  # the tool's secrets: its keys, its database
    monkeypatch.setenv("SECRET_KEY", "s3cret")
    seen = {}

    class Recorded(SandboxCgroup):
        def remove(self) -> None:
            seen.update(limits=_cgroup_limits(self), cpu_seconds=self.cpu_seconds())
            super().remove()

    monkeypatch.setattr(environment, "SandboxCgroup", Recorded)
    target, builder = _target(tmp_path)
    process = environment._confined([sys.executable, "-c", PROBE], target, builder, timeout=60)
    assert process.returncode == 0, process.stderr
    probe = json.loads(process.stdout)
    assert probe["uid"] == builder
    assert probe["certificates"] == os.path.exists(ssl.get_default_verify_paths().openssl_cafile)  # TLS to the index
    proxies = {"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"}
    assert set(probe["environment"]) <= {"HOME", "LANG", "PATH", "PWD", "PYTHONNOUSERSITE", "TMPDIR", *proxies}
    assert probe["cgroups"] == ["/"]  # a cgroup namespace rooted at its own cgroup
    python = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, *environment._base_site())}
    etc = {f"/etc/{name}" for name in environment.ETC_FOR_PIP}
    expected = {"/", "/usr", "/tmp", str(target), *python, *etc}
    assert [m for m in probe["mounts"] if m not in expected and not m.startswith(("/dev", "/proc"))] == []
    assert seen["limits"] == {
        "memory": str(PIP_LIMITS.memory_bytes),
        "processes": str(PIP_LIMITS.max_processes),
        "cpu": str(int(PIP_LIMITS.cpus * CPU_PERIOD_US)),
    }
    assert seen["cpu_seconds"] > 0  # the probe ran in it


def test_pip_is_killed_with_everything_it_started_at_its_time_limit(tmp_path):
    target, builder = _target(tmp_path)
    with pytest.raises(subprocess.TimeoutExpired):
        environment._confined(["/bin/sh", "-c", "setsid sleep 300 & sleep 300"], target, builder, timeout=0.5)
    wait_for(lambda: _processes_of(builder) == [], timeout=10)  # the kernel reaps the killed processes


def _target(tmp_path: Path) -> tuple[Path, int]:
    """An environment folder the build uid owns, as _build makes it, and that uid."""
    builder = environment._build_uid()
    target = tmp_path / "env"
    target.mkdir()
    os.chown(target, builder, builder)
    return target, builder


def _cgroup_limits(cgroup: SandboxCgroup) -> dict[str, str]:
    """The memory, process and CPU quota limits set in a cgroup's files (v2 or v1)."""
    if "procs" in cgroup.files:  # v2: one folder
        folder = cgroup.files["procs"].parent
        memory, processes, cpu = folder / "memory.max", folder / "pids.max", folder / "cpu.max"
    else:
        memory = cgroup.files["procs_memory"].parent / "memory.limit_in_bytes"
        processes = cgroup.files["procs_pids"].parent / "pids.max"
        cpu = cgroup.files["procs_cpu"].parent / "cpu.cfs_quota_us"
    texts = {"memory": memory, "processes": processes, "cpu": cpu}
    return {what: path.read_text().split()[0] for what, path in texts.items()}
