"""Reading a submitted notebook: checks that it is a gradable notebook for the assignment, and its cells.

Only structure is checked here (in linear time, nothing executed, no IPython): the cells' code, IPython
syntax included, is compiled inside the sandbox, under the sandbox's limits, so no notebook can make the
grader or a web request spend unbounded CPU preparing it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from .inside.control import MB, Bounds

IGNORE_TAG = "otter_ignore"
CELL_TYPES = ("code", "markdown", "raw")
MAX_FILE_NAME = 255
"""characters of a submission's file name kept (what `otter run` would see: see grader.submission_name)"""

SHAPE = Bounds(64 * MB, 100_000, 500_000)
"""What a notebook's JSON may hold before it is parsed (by the web process at upload, by the worker, and for
master notebooks by the build): parsing costs ~100 bytes a list or object and ~60 an item however short its
text, so 5 MB of `[[],[],...]` would take 150 MB. Jupyter's notebooks hold far fewer: Decode's 556 and 2,231
(a 5 MB notebook of printed output, a list item a line, about 100,000)."""


class InvalidSubmission(ValueError):
    """The input cannot be graded; str() is a one-line reason."""


@dataclass(frozen=True)
class Cell:
    index: int
    """position among all cells of the notebook (for messages)"""
    source: str
    """the cell's code as written (IPython syntax included)"""


def read_notebook(path: str | os.PathLike[str], cap: int) -> bytes:
    """At most cap+1 bytes of a file, so a huge file is refused without loading it."""
    try:
        with open(path, "rb") as f:
            return f.read(cap + 1)
    except OSError as e:
        raise InvalidSubmission(f"cannot read {path}: {e.strerror}") from None


def load_cells(data: bytes, assignment_name: str | None, max_bytes: int) -> list[Cell]:
    """Check the submission and return the code cells Otter would run, or raise InvalidSubmission."""
    if not data.strip():
        raise InvalidSubmission("the file is empty")
    if len(data) > max_bytes:
        raise InvalidSubmission(f"the file is over the size limit of {max_bytes} bytes")
    if excess := SHAPE.excess(data):
        raise InvalidSubmission(f"the file has {excess}: it is not a notebook Jupyter wrote")
    try:
        notebook = json.loads(data)
    except (ValueError, RecursionError):
        raise InvalidSubmission("the file is not JSON (is it a .ipynb notebook?)") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise InvalidSubmission("the file is JSON but not a Jupyter notebook")
    if notebook.get("nbformat") != 4:
        raise InvalidSubmission("the notebook is not valid nbformat: only nbformat 4 notebooks can be graded")
    metadata = notebook.get("metadata")
    if not isinstance(metadata, dict):
        raise InvalidSubmission("the notebook is not valid nbformat: it has no metadata")
    checked = [(cell, *_checked_cell(index, cell)) for index, cell in enumerate(notebook["cells"])]
    otter = metadata.get("otter")
    got = otter.get("assignment_name") if isinstance(otter, dict) else None
    if assignment_name and got != assignment_name:
        raise InvalidSubmission(f"the notebook is for assignment {str(got)[:100]!r}, not {assignment_name!r}")
    cells = []
    for index, (cell, source, cell_metadata) in enumerate(checked):
        if cell["cell_type"] != "code" or _ignored(cell_metadata):
            continue
        cells.append(Cell(index, source))
        cells += [Cell(index, _check_call(name)) for name in _metadata_checks(cell_metadata)]
    return cells


def _checked_cell(index: int, cell: Any) -> tuple[str, dict[str, Any]]:
    if not isinstance(cell, dict) or cell.get("cell_type") not in CELL_TYPES:
        raise InvalidSubmission(f"the notebook is not valid nbformat: cell {index} has no valid cell_type")
    source = cell.get("source")
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        source = "".join(source)
    if not isinstance(source, str):
        raise InvalidSubmission(f"the notebook is not valid nbformat: cell {index} has no source")
    metadata = cell.get("metadata", {})
    if not isinstance(metadata, dict):
        raise InvalidSubmission(f"the notebook is not valid nbformat: cell {index} has invalid metadata")
    return source, metadata


def _ignored(metadata: dict[str, Any]) -> bool:
    """Same rule as Otter's GradingPreprocessor.filter_ignored_cells."""
    tags = metadata.get("tags", [])
    otter = metadata.get("otter", {})
    return (isinstance(tags, list) and IGNORE_TAG in tags) or (isinstance(otter, dict) and bool(otter.get("ignore")))


def _metadata_checks(metadata: dict[str, Any]) -> list[str]:
    """Questions Otter checks right after this cell (GradingPreprocessor.add_checks)."""
    otter = metadata.get("otter", {})
    tests = otter.get("tests") if isinstance(otter, dict) else None
    return [str(t) for t in tests] if isinstance(tests, list) else []


def _check_call(question: str) -> str:
    return f"__import__('otter').Notebook().check({question!r})\n"
