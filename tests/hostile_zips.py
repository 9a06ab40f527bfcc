"""Autograder zips with one hostile support file, named to land outside the grader's working directory (up and
out, absolute, a backslash, a symbolic link, a NUL): graded by the grader (tests/autograder/test_upload_paths.py)
and added to the tool (tests/lti_service/test_upload_paths.py), each must be refused with its entry named."""

from __future__ import annotations

import io
import json
import stat
import zipfile
from collections.abc import Callable
from pathlib import Path

UP = "../" * 20  # from any working directory up to /


def _up_to(canary: Path) -> str:
    return UP + str(canary).lstrip("/")


# id: (the hostile entry's name, given the canary path it aims at; what the refusal says)
HOSTILE: dict[str, tuple[Callable[[Path], str], str]] = {
    "dot-dot": (lambda canary: f"files/{_up_to(canary)}", "goes up out of its folder"),
    "absolute-after-the-prefix": (lambda canary: f"files/{canary}", "has an empty or '.' part"),
    "dot-dot-below-a-folder": (lambda canary: f"files/a/{_up_to(canary)}", "goes up out of its folder"),
    "backslash": (lambda canary: "files/..\\..\\canary", "has a backslash"),
    "symbolic-link": (lambda canary: "files/data.csv", "is a symbolic link"),
    "nul": (lambda canary: f"files/a\x00/{_up_to(canary)}", "has a control character"),
}


def hostile_zip(source: Path, folder: Path, case: str, name: str | None = None) -> tuple[Path, str]:
    """A copy of the real autograder zip `source` with one hostile support file aimed at folder/canary (the
    symbolic link points there), for an assignment called `name` if given; its path and its refusal's words."""
    make_name, reason = HOSTILE[case]
    entry = make_name(folder / "canary")
    placeholder = entry.replace("\x00", "\x01")  # zipfile cuts a name at a NUL: patched into the bytes below
    buffer = io.BytesIO()
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(buffer, "w") as copy:
        for info in original.infolist():
            data = original.read(info)
            if info.filename == "otter_config.json" and name:
                data = json.dumps({**json.loads(data), "assignment_name": name}).encode()
            copy.writestr(info, data)
        info = zipfile.ZipInfo(placeholder)
        if case == "symbolic-link":
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
        copy.writestr(info, str(folder / "canary") if case == "symbolic-link" else "planted")
    path = folder / f"hostile-{case}.zip"
    path.write_bytes(buffer.getvalue().replace(placeholder.encode(), entry.encode()))
    shown = entry.replace("\x00", "\\x00")
    return path, f"the entry '{shown}' {reason}"
