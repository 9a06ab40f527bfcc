"""The notebook in the browser (JupyterLite with Pyodide): which assignments can run there, and what one
launch's copy of the site holds.

One site, built once (`make lite`: build/lite/site), serves every assignment. Per window the tool adds
only data: the configuration (which packages the kernel loads; the work is kept by the tool, windows.py)
and the files of the handout, which is what students download anyway. Hidden tests live only in the
autograder zip, so they never reach the browser.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from autograder.assignment import check_directory, check_sizes

MAX_HANDOUT_FILES = 1000
MAX_HANDOUT_BYTES = 100 * 1024 * 1024  # unpacked; handouts are built by the tool, this bounds a bad one
NOTEBOOK_TYPE = "notebook"


@dataclass(frozen=True)
class Site:
    """A built JupyterLite site and the packages its Pyodide lock serves."""

    root: Path
    build_id: str
    """changes whenever the site does: its files are served under it, cached for a year"""
    packages: dict[str, str]
    """canonical package name -> version, from the served pyodide-lock.json"""
    defaults: tuple[str, ...]
    """what the kernel always loads: the grader's own packages, as far as notebooks import them"""
    own: frozenset[str]
    """packages whose wheels only this site serves (Otter's pure-Python set), not Pyodide's CDN"""
    config: dict
    """the site's own jupyter-lite.json"""
    lock: dict
    """the served pyodide-lock.json"""

    def file(self, name: str) -> Path | None:
        """A file of the site by its URL path, or None (also for anything outside the site)."""
        path = (self.root / name).resolve()
        return path if path.is_relative_to(self.root) and path.is_file() else None


def load_site(root: Path) -> Site | None:
    """The site at `root`, or None when it has not been built (then the tool offers downloads only)."""
    try:
        lock = json.loads((root / "static/pyodide/pyodide-lock.json").read_text())
        config = json.loads((root / "jupyter-lite.json").read_text())
        manifest = json.loads((root / "lite-manifest.json").read_text())
    except (OSError, ValueError):
        return None
    packages = {canonicalize_name(name): entry["version"] for name, entry in lock["packages"].items()}
    digest = hashlib.sha256(json.dumps([lock, config, manifest], sort_keys=True).encode()).hexdigest()[:16]
    own = frozenset(manifest["own_packages"])
    return Site(root.resolve(), digest, packages, tuple(manifest["default_packages"]), own, config, lock)


def cdn_lock(site: Site, files_url: str) -> dict:
    """The lock for browsers that load Pyodide from a CDN: Pyodide's own packages resolve against the CDN
    (relative names), this site's own wheels come from `files_url` (absolute: the tool's static/pyodide/).
    Pyodide checks every file against the lock's sha256 wherever it comes from."""
    lock = json.loads(json.dumps(site.lock))
    for entry in lock["packages"].values():
        if canonicalize_name(entry["name"]) in site.own:
            entry["file_name"] = files_url + entry["file_name"]
    return lock


@dataclass(frozen=True)
class BrowserFit:
    """Whether an assignment's packages run in the browser."""

    packages: tuple[str, ...]
    """what the kernel loads"""
    missing: tuple[str, ...]
    """requirements with no browser (Pyodide) version: when any, students work in their own Jupyter"""

    @property
    def runs(self) -> bool:
        return not self.missing


def browser_fit(site: Site, requirements: str) -> BrowserFit:
    """The packages a kernel needs for an assignment whose requirements are `requirements` ("a, b>=1"),
    as the version stores them."""
    loads, missing = list(site.defaults), []
    for text in filter(None, (part.strip() for part in requirements.split(","))):
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            missing.append(text)
            continue
        name = canonicalize_name(requirement.name)
        version = site.packages.get(name)
        if version is None or not requirement.specifier.contains(version, prereleases=True):
            missing.append(text)
        elif name not in loads:
            loads.append(name)
    return BrowserFit(tuple(loads), tuple(missing))


def legacy_store(secret: str, user_id: str, link: dict) -> str:
    """Where the tool's earlier versions kept this student's work on this link in the browser (IndexedDB, which
    any code of the origin can read and write). The window hands its files to the tool once, which keeps them
    apart and never over the student's work (windows.recover), then deletes it (static/lite.js)."""
    key = json.dumps([user_id, link["platform_id"], link["context_id"], link["resource_link_id"]])
    return "grader-" + hmac.new(secret.encode(), key.encode(), hashlib.sha256).hexdigest()[:32]


@dataclass(frozen=True)
class Handout:
    """A version's handout as the browser sees it: the notebook alone, or the members of its zip, read one at a
    time when asked (a handout may hold data files of up to MAX_HANDOUT_BYTES: never all of it in memory)."""

    data: bytes
    """the handout as stored: a notebook, or a zip"""
    sizes: dict[str, int]
    """every file's path and size"""
    zipped: bool

    def read(self, path: str) -> bytes | None:
        if path not in self.sizes:
            return None
        if not self.zipped:
            return self.data
        with zipfile.ZipFile(io.BytesIO(self.data)) as archive:
            return archive.read(path)


def open_handout(handout: bytes, handout_name: str) -> Handout:
    """The handout's files by path (ValueError for a zip past MAX_HANDOUT_FILES or MAX_HANDOUT_BYTES: its
    directory is checked before anything is unpacked)."""
    if not handout_name.endswith(".zip"):
        return Handout(handout, {handout_name: len(handout)}, zipped=False)
    with io.BytesIO(handout) as file:
        check_directory(file)
        with zipfile.ZipFile(file) as archive:
            infos = archive.infolist()
    if len(infos) > MAX_HANDOUT_FILES:
        raise ValueError(f"the handout has more than {MAX_HANDOUT_FILES} files")
    check_sizes(infos, MAX_HANDOUT_BYTES, MAX_HANDOUT_BYTES)
    return Handout(handout, {info.filename: info.file_size for info in infos if not info.is_dir()}, zipped=True)


def notebook_path(files: dict[str, int]) -> str:
    """The notebook students open: the handout's one notebook at the top (else the first)."""
    notebooks = sorted(name for name in files if name.endswith(".ipynb"))
    top = [name for name in notebooks if "/" not in name]
    return (top or notebooks or [""])[0]


def listing(files: dict[str, tuple[int, dt.datetime]], directory: str) -> dict | None:
    """The contents model JupyterLite reads at api/contents/<directory>/all.json from files' paths, sizes and
    when each last changed (a handout file: when its version was added; a draft: when it was saved), or None for
    no such directory. A folder is dated by its newest file."""
    prefix = f"{directory}/" if directory else ""
    entries: dict[str, dict] = {}
    folders: dict[str, dt.datetime] = {}
    for path, (size, changed) in files.items():
        if not path.startswith(prefix):
            continue
        name, _, rest = path[len(prefix) :].partition("/")
        if rest:
            folders[name] = max(folders.get(name, changed), changed)
        else:
            entries[name] = _model(path, NOTEBOOK_TYPE if name.endswith(".ipynb") else "file", size, changed)
    entries |= {name: _model(prefix + name, "directory", None, changed) for name, changed in folders.items()}
    if directory and not entries:
        return None
    dates = [changed for path, (_, changed) in files.items() if path.startswith(prefix)]
    model = _model(directory, "directory", None, max(dates, default=dt.datetime(1970, 1, 1)))
    model["content"] = sorted(entries.values(), key=lambda entry: entry["name"])
    model["format"] = "json"
    return model


def _stamp(when: dt.datetime) -> str:
    return when.replace(tzinfo=dt.UTC).isoformat()


def _model(path: str, kind: str, size: int | None, changed: dt.datetime) -> dict:
    stamp = _stamp(changed)
    return {
        "name": PurePosixPath(path).name,
        "path": path,
        "type": kind,
        "content": None,
        "format": None,
        "mimetype": None,
        "size": size,
        "created": stamp,
        "last_modified": stamp,
        "writable": True,
    }
