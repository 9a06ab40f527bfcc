"""Large packages (torch, tensorflow, jax): an environment is built on disk within a disk budget, says how far
it got, and can come from a CPU-only index the operator chooses. Wheels made here, served on loopback as a
package index (a wheel of random bytes stands for a gigabyte of CUDA libraries, at a fraction of the size)."""

from __future__ import annotations

import os
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from autograder import environment
from autograder.environment import EnvironmentBuildError, Requirements, lookup, prepare
from autograder.sandbox import builds
from autograder.sandbox.cgroups import Limits as CgroupLimits
from tests.package_index import serve_index

HEAVY_MB = 160


def wheel(folder: Path, name: str, version: str, payload_mb: int = 0) -> Path:
    """A pure-Python wheel of `name`, with `payload_mb` MB of random (incompressible) bytes in it."""
    dist = f"{name}-{version}"
    files = {f"{name}/__init__.py": f"VERSION = {version!r}\n".encode()}
    if payload_mb:
        files[f"{name}/payload.bin"] = os.urandom(payload_mb << 20)
    files[f"{dist}.dist-info/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    files[f"{dist}.dist-info/WHEEL"] = b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files[f"{dist}.dist-info/RECORD"] = "\n".join([*(f"{n},," for n in files), f"{dist}.dist-info/RECORD,,"]).encode()
    path = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for name_in_zip, data in files.items():
            zf.writestr(name_in_zip, data)
    return path


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("wheels")
    return {
        "heavy": wheel(folder, "decode_heavy", "1.0", HEAVY_MB),  # what a GPU build is, at a smaller scale
        "cpu": wheel(folder, "decode_heavy", "1.0+cpu"),  # the same release, CPU-only, on the operator's index
        "small": wheel(folder, "decode_small", "1.0"),
    }


@pytest.fixture(scope="module")
def index(wheels, tmp_path_factory) -> Iterator[str]:
    """The package index: every package, the heavy build included."""
    yield from serve_index(tmp_path_factory.mktemp("index"), [wheels["heavy"], wheels["small"]])


@pytest.fixture(scope="module")
def cpu_index(wheels, tmp_path_factory) -> Iterator[str]:
    """An index of CPU-only builds (as https://download.pytorch.org/whl/cpu is for torch)."""
    yield from serve_index(tmp_path_factory.mktemp("cpu-index"), [wheels["cpu"]])


@pytest.fixture
def from_index(index, monkeypatch) -> str:
    monkeypatch.setenv("GRADER_PIP_INDEX_URL", index)
    monkeypatch.setattr(builds, "WATCH_EVERY", 0.05)  # these builds take a second or two, not minutes
    return index


def test_a_package_larger_than_the_builds_memory_is_downloaded_to_disk(from_index, tmp_path, monkeypatch):
    """pip's temporary files (the downloaded wheel) are on disk in the environment being built, not in a /tmp
    in memory that counts against the build's memory limit."""
    monkeypatch.setattr(environment, "PIP_LIMITS", CgroupLimits(memory_bytes=128 << 20, max_processes=64, cpus=1.0))
    built = prepare(Requirements(("decode-heavy==1.0",)), tmp_path)
    site = next(Path(built.paths[0]).glob("lib/python*/site-packages"))
    assert (site / "decode_heavy" / "payload.bin").stat().st_size == HEAVY_MB << 20
    assert not (Path(built.paths[0]) / environment.BUILD_TMP).exists()  # the downloads are gone


def test_a_build_past_its_disk_budget_is_stopped_and_removed(from_index, tmp_path, monkeypatch):
    monkeypatch.setenv("GRADER_ENV_MAX_MB", str(HEAVY_MB // 2))
    requirements = Requirements(("decode-heavy==1.0",))
    with pytest.raises(EnvironmentBuildError, match=rf"MB of disk, more than the {HEAVY_MB // 2} MB.*CPU-only index"):
        prepare(requirements, tmp_path)
    assert lookup(requirements, tmp_path) is None
    assert [p for p in tmp_path.iterdir() if p.suffix != ".lock"] == []  # nothing of it left on the disk


def test_staff_see_what_the_build_is_doing_and_the_disk_it_took(from_index, tmp_path):
    said: list[str] = []
    prepare(Requirements(("decode-heavy==1.0", "decode-small")), tmp_path, progress=said.append)
    assert said, "a build of several seconds reports at least once"
    assert all(text.startswith("installing its packages: ") and "MB on disk so far" in text for text in said)
    assert any("decode-heavy" in text or "decode_heavy" in text or "Installing" in text for text in said)


def test_the_operator_can_add_a_cpu_only_index_which_the_zip_cannot(from_index, cpu_index, tmp_path, monkeypatch):
    monkeypatch.setenv("GRADER_PIP_EXTRA_INDEX_URL", cpu_index)
    built = prepare(Requirements(("decode-heavy==1.0",)), tmp_path)
    site = next(Path(built.paths[0]).glob("lib/python*/site-packages"))
    assert (site / "decode_heavy-1.0+cpu.dist-info").is_dir()  # the CPU-only build: no payload
    assert not (site / "decode_heavy" / "payload.bin").exists()
    with pytest.raises(EnvironmentBuildError, match="requirement option"):  # a zip cannot name an index
        environment._normalised(f"--extra-index-url {cpu_index}")


def test_a_full_disk_is_said_in_words():
    output = "ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device"
    assert "the disk that holds the environments (GRADER_ENV_DIR) is full" in environment._pip_failure(
        Requirements(("torch",)), "https://pypi.org/simple", output
    )
