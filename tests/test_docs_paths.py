"""The documentation names only files that exist (issue 42: README named `assignments/links.py` after it went).

What is checked: every inline code span (`...`) of README.md and of every other .md file of the repository
(not shared/, nor folders of built, downloaded or third-party files) that is a path, meaning
- a relative path of at least two parts (`views/pages.py`, `tests/lti_service/`), made only of letters, digits,
  `_`, `-` and `.`, whose last part has the extension of a kind of file this repository holds (SOURCE_KINDS:
  not `data/grades.csv`, a course's file) or which ends with `/`; a test id
  (`lti_service/test_backup.py::test_name`) counts as the path before `::`. It must exist relative to the
  repository, to lti_service/, to autograder/, to tests/ or to the .md file's own folder.
  Paths into the folders builds make (GENERATED: a fresh checkout has none of them) are not checked.
- a bare file name of code (`lite_windows.py`, `charts.py`): some file of the repository has that name.
Spans with anything else (`...`, `<id>`, `$VAR`, a URL, a glob, an absolute path, a dotted Python name such
as `grader.check`) are not paths and are not checked.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GENERATED = {"build", "dist", "test-artifacts", "decode_grader.egg-info"}
SKIPPED = {".git", ".venv", ".pytest_cache", ".ruff_cache", "node_modules", "shared", *GENERATED}
THIRD_PARTY = {"tests/written_corpus"}  # copies of other repositories: their notes name the upstream's files
BASES = ("", "lti_service", "autograder", "tests")
SPAN = re.compile(r"`([^`\n]+)`")
SOURCE_KINDS = "py|html|js|css|json|yml|yaml|toml|txt|md|ipynb|sh|mako|cfg"  # what this repository holds
PATH = re.compile(rf"(?:[\w.-]+/)+(?:[\w-][\w.-]*\.(?:{SOURCE_KINDS}))?")
CODE_FILE = re.compile(r"[\w-]+\.(?:py|html|js|css)")


def documents() -> list[Path]:
    found = []
    for path in ROOT.rglob("*.md"):
        relative = path.relative_to(ROOT)
        if SKIPPED.isdisjoint(relative.parts) and not any(relative.is_relative_to(p) for p in THIRD_PARTY):
            found.append(path)
    return sorted(found)


def paths_in(text: str) -> list[str]:
    """The spans of `text` that are paths (see the module's docstring), test ids cut to their file."""
    spans = [span.split("::")[0] for span in SPAN.findall(text)]
    return [span for span in spans if (PATH.fullmatch(span) and checked(span)) or CODE_FILE.fullmatch(span)]


def checked(path: str) -> bool:
    """Not into a generated folder, and no `.`, `..` or `...` part (elisions and relative climbs)."""
    parts = path.rstrip("/").split("/")
    return parts[0] not in GENERATED and not any(part == "." or part.startswith("..") for part in parts)


FILE_NAMES = {path.name for path in ROOT.rglob("*") if SKIPPED.isdisjoint(path.relative_to(ROOT).parts)}


def exists(path: str, document: Path) -> bool:
    if "/" not in path:
        return path in FILE_NAMES
    folders = [ROOT / base for base in BASES] + [document.parent]
    return any((folder / path).exists() for folder in folders)


@pytest.mark.parametrize("document", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_path_a_document_names_exists(document: Path):
    missing = sorted({path for path in paths_in(document.read_text()) if not exists(path, document)})
    assert not missing, f"{document.relative_to(ROOT)} names files that do not exist: {missing}"


def test_what_counts_as_a_path():
    text = ("`views/pages.py` `lti/roles.py` `tests/e2e/` `e2e/test_browser.py::test_x[a]` `lite_windows.py` "
            "`grader.check` `api/contents/.../all.json` `https://a.example/x.py` `/lti/launch` `<id>/x.py` "
            "`$DATA_DIR/keys` `np.True_` `../up.py` `numpy==1.26.4` `build/lite/site/` `data/grades.csv`")  # fmt: skip
    assert paths_in(text) == ["views/pages.py", "lti/roles.py", "tests/e2e/", "e2e/test_browser.py",
                              "lite_windows.py"]  # fmt: skip
    assert exists("views/pages.py", ROOT / "README.md") and not exists("assignments/links.py", ROOT / "README.md")
    assert "README.md" in [str(d.relative_to(ROOT)) for d in documents()]
