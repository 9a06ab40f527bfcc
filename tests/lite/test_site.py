"""The JupyterLite site (`make lite`, which `make test` runs first): integrity of what it serves, and that it
carries no assignment files. That Otter's checks run in it with nothing from outside the tool:
tests/e2e/test_lite_browser.py, in Chromium."""

import hashlib
import json
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "build" / "lite" / "site"
PYODIDE = SITE / "static" / "pyodide"
PINS = json.loads((ROOT / "lite" / "pins.json").read_text())


@pytest.fixture(scope="module")
def site() -> Path:
    """The built site; a missing one fails (run `make lite`), it is never skipped."""
    assert (SITE / "lite-manifest.json").exists(), f"{SITE} is not built: run `make lite`"
    return SITE


@pytest.fixture(scope="module")
def lock(site) -> dict:
    """The lock the site serves."""
    return json.loads((PYODIDE / "pyodide-lock.json").read_text())


def official_lock() -> dict:
    """Pyodide's own lock, from the npm tarball the build verified."""
    tgz = ROOT / "build" / "lite-cache" / f"pyodide-{PINS['pyodide']['version']}.tgz"
    with tarfile.open(tgz) as tar:
        return json.load(tar.extractfile("package/pyodide-lock.json"))


def test_every_lock_entry_is_served_and_matches_its_hash(lock):
    for entry in lock["packages"].values():
        name = entry["file_name"]
        assert "/" not in name and ":" not in name, f"{name} points outside the site"
        assert hashlib.sha256((PYODIDE / name).read_bytes()).hexdigest() == entry["sha256"], name


def test_official_packages_keep_the_official_hash_and_ours_are_pinned(lock):
    official = {e["file_name"]: e["sha256"] for e in official_lock()["packages"].values()}
    ours = {w["file"]: w["sha256"] for w in PINS["pure_wheels"] + PINS["built_wheels"]}
    for entry in lock["packages"].values():
        expected = ours.get(entry["file_name"]) or official.get(entry["file_name"])
        assert entry["sha256"] == expected, entry["file_name"]
    served = {p.name for p in PYODIDE.iterdir()}
    assert served == {e["file_name"] for e in lock["packages"].values()} | {
        "pyodide.js",
        "pyodide.asm.js",
        "pyodide.asm.wasm",
        "python_stdlib.zip",
        "pyodide-lock.json",
    }


def test_settings_keep_the_browser_on_the_site(site):
    config = json.loads((site / "jupyter-lite.json").read_text())["jupyter-config-data"]
    kernel = config["litePluginSettings"]["@jupyterlite/pyodide-kernel-extension:kernel"]
    assert kernel["pyodideUrl"] == "./static/pyodide/pyodide.js"
    assert kernel["disablePyPIFallback"] is True
    assert kernel["loadPyodideOptions"]["packages"] == PINS["default_packages"]
    assert all(not url.startswith(("http:", "https:", "//")) for url in kernel["pipliteUrls"])
    assert config["settingsOverrides"]["@jupyterlab/docmanager-extension:plugin"]["autosaveInterval"] == 5
    assert sorted(p.name for p in site.iterdir() if (p / "index.html").exists()) == ["lab", "notebooks"]


def test_manifest_lists_the_served_packages(lock):
    manifest = json.loads((SITE / "lite-manifest.json").read_text())
    assert manifest["pyodide"] == PINS["pyodide"]["version"]
    assert manifest["default_packages"] == PINS["default_packages"]
    assert {"otter-grader", "ipywidgets", "numpy", "pandas", "matplotlib", "pyyaml"} <= set(manifest["packages"])
    assert len(manifest["packages"]) == len(lock["packages"])


def test_site_holds_no_assignment_files(site):
    """Hidden tests and solutions reach students only through the tool's per-launch contents, never here."""
    assert not list(site.rglob("*.ipynb"))
    assert not [p for p in site.rglob("tests") if p.is_dir()]
    assert not (site / "files").exists()
    assert not (site / "api" / "contents").exists()


def test_the_build_tools_stay_out_of_the_graders_environment():
    """Whatever .venv holds is the grader's: every grading imports from it, and an assignment's requirements it
    satisfies count as provided. jupyter-server there made each `import nbformat` 2 s slower (its jsonschema
    extras), so JupyterLite's tools live in build/lite-tools."""
    from importlib.metadata import PackageNotFoundError, distribution

    for name in PINS["jupyterlite"]:
        with pytest.raises(PackageNotFoundError):
            distribution(name)
    assert (ROOT / "build" / "lite-tools" / "bin" / "jupyter").exists()
