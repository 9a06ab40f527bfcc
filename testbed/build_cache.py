"""Builds the tests and benchmarks share (an `otter assign` of a corpus assignment, of the toy), made once by the
first process to ask and kept under build/test-cache/ by the hash of everything they are made from.

Under pytest-xdist every worker process asks for the same builds; a later run of an unchanged checkout builds
nothing again. The key holds the inputs' bytes, the command, the interpreter and every installed package's
version (a new Otter is a new key). What the tests check of a build itself (the same zip twice, a build that
fails with a clear message) is built afresh, never taken from here.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import importlib.metadata
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from testbed.submissions import ROOT

CACHE = ROOT / "build" / "test-cache"
READY = ".ready"


def key(*parts: str | bytes | Path) -> str:
    """A hash of the parts (a folder: every file's relative path and bytes) and of the Python environment."""
    digest = hashlib.sha256(_environment().encode())
    for part in parts:
        if isinstance(part, Path):
            files = sorted(p for p in part.rglob("*") if p.is_file()) if part.is_dir() else [part]
            for file in files:
                digest.update(b"\0file\0" + str(file.relative_to(part.parent)).encode() + b"\0" + file.read_bytes())
        else:
            digest.update(b"\0part\0" + (part.encode() if isinstance(part, str) else part))
    return digest.hexdigest()[:24]


@functools.cache
def _environment() -> str:
    packages = sorted(f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions())
    return "\n".join([sys.version, *packages])


def cached(kind: str, digest: str, make: Callable[[Path], None]) -> Path:
    """The folder `make` filled for this key: found, or made now (one process makes it, the others wait)."""
    folder = CACHE / f"{kind}-{digest}"
    if (folder / READY).exists():
        return folder
    CACHE.mkdir(parents=True, exist_ok=True)
    with _locked(CACHE / f"{kind}-{digest}.lock"):
        if not (folder / READY).exists():
            partial = folder.with_name(folder.name + ".partial")
            for leftover in (folder, partial):  # of a run that was killed while making it
                shutil.rmtree(leftover, ignore_errors=True)
            partial.mkdir()
            make(partial)
            (partial / READY).touch()
            partial.rename(folder)
    return folder


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def otter_assign(folder: Path, notebook: str, *options: str, afresh_in: Path | None = None) -> Path:
    """`otter assign` of `folder/notebook` (a copy of the folder, its data files with it) into `dist`; the
    folder the copy was made in: its `source/dist` holds the student notebook and the autograder zip.
    `afresh_in`: built now in that new folder, not shared."""

    def make(out: Path) -> None:
        source = out / "source"
        shutil.copytree(folder, source)
        command = [sys.executable, "-m", "otter", "assign", *options, notebook, "dist"]
        process = subprocess.run(command, cwd=source, capture_output=True, text=True)
        if process.returncode != 0:
            raise RuntimeError(f"otter assign failed for {notebook}:\n{process.stdout[-3000:]}{process.stderr[-3000:]}")

    if afresh_in:
        afresh_in.mkdir(parents=True)
        make(afresh_in)
        return afresh_in
    return cached("otter-assign", key(folder, notebook, *options), make)
