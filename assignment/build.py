"""Build the student notebook and the autograder zip from the master notebook with `otter assign`.

Why a wrapper: `otter assign` names the zip with a timestamp and takes its grading settings from the
master notebook. Course staff keep those settings in the top-level `otter_config.json`, and the rest of
the system wants stable file names and a reproducible zip, so this script injects the settings, runs
`otter assign` in a scratch directory and copies the outputs to fixed names:

    dist/student/decode.ipynb             the notebook students download (public tests only)
    dist/autograder/decode-autograder.zip every test, hidden ones included: staff and grader only
    dist/autograder/decode.ipynb          the solution notebook: staff only, never served to students
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parent.parent
MASTER = ROOT / "assignment" / "decode.ipynb"
OTTER_CONFIG = ROOT / "otter_config.json"
DIST = ROOT / "dist"
ZIP_NAME = "decode-autograder.zip"
FIXED_ZIP_TIME = (1980, 1, 1, 0, 0, 0)
GRADER_SETTINGS = ("grading_limits",)  # read by this project's grader; `otter assign` does not keep them


def inject_grading_settings(master: Path, settings: dict, target: Path) -> None:
    """Write a copy of the master notebook whose ASSIGNMENT CONFIG `generate:` holds `settings`."""
    nb = nbformat.read(master, as_version=4)
    config_cell = nb.cells[0]
    header, _, body = config_cell.source.partition("\n")
    if header.strip() != "# ASSIGNMENT CONFIG":
        raise SystemExit(f"{master}: the first cell must be the raw '# ASSIGNMENT CONFIG' cell")
    config = yaml.safe_load(body) or {}
    config["generate"] = settings
    config_cell.source = header + "\n" + yaml.safe_dump(config, sort_keys=False)
    nbformat.write(nb, target)


def repack_deterministically(source: Path, target: Path, extra_config: dict | None = None) -> None:
    """Copy a zip with sorted entries and fixed timestamps, so two builds give the same bytes; add
    `extra_config` (settings of this grader that `otter assign` drops) to its otter_config.json."""
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as dst:
        for name in sorted(src.namelist()):
            info = zipfile.ZipInfo(name, date_time=FIXED_ZIP_TIME)
            info.external_attr = (0o755 if name.endswith((".sh", "run_autograder")) else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            data = src.read(name)
            if name == "otter_config.json" and extra_config:
                data = (json.dumps({**json.loads(data), **extra_config}, indent=2) + "\n").encode()
            dst.writestr(info, data)


def build(master: Path = MASTER, otter_config: Path = OTTER_CONFIG, dist: Path = DIST) -> dict[str, Path]:
    """Run `otter assign` (which also checks every test passes on the solution) and place the outputs."""
    settings = json.loads(otter_config.read_text())
    with tempfile.TemporaryDirectory(prefix="decode-build-") as scratch:
        scratch_path = Path(scratch)
        scratch_master = scratch_path / master.name
        inject_grading_settings(master, settings, scratch_master)
        out = scratch_path / "out"
        subprocess.run(
            [sys.executable, "-m", "otter", "assign", str(scratch_master), str(out)],
            check=True,
            cwd=scratch_path,
        )
        (built_zip,) = (out / "autograder").glob(f"{master.stem}-autograder_*.zip")
        outputs = {
            "student": dist / "student" / master.name,
            "autograder_zip": dist / "autograder" / ZIP_NAME,
            "solution": dist / "autograder" / master.name,
        }
        for path in outputs.values():
            path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out / "student" / master.name, outputs["student"])
        shutil.copyfile(out / "autograder" / master.name, outputs["solution"])
        grader_only = {k: settings[k] for k in GRADER_SETTINGS if k in settings}
        repack_deterministically(built_zip, outputs["autograder_zip"], grader_only)
    return outputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dist", type=Path, default=DIST, help="output directory (default: dist/)")
    args = parser.parse_args()
    for role, path in build(dist=args.dist).items():
        print(f"{role:>15}: {path}")


if __name__ == "__main__":
    main()
