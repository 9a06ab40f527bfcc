"""Validating a submitted notebook and turning it into the code the sandbox runs.

Everything here is pure text processing on the trusted side; IPython syntax
(magics, `!` lines) is rewritten into get_ipython() calls that the sandbox
stubs out, exactly as Jupyter would rewrite it before running a cell.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import nbformat
from IPython.core.inputtransformer2 import TransformerManager

IGNORE_TAG = "otter_ignore"


class InvalidSubmission(ValueError):
    """The input cannot be graded; str() is a one-line reason."""


@dataclass(frozen=True)
class Cell:
    index: int
    """position among all cells of the notebook (for messages)"""
    source: str
    """Python source after IPython transformation"""


def load_cells(data: bytes, assignment_name: str | None, max_bytes: int) -> list[Cell]:
    """Check the submission and return its gradable code cells, or raise InvalidSubmission."""
    if not data.strip():
        raise InvalidSubmission("the file is empty")
    if len(data) > max_bytes:
        raise InvalidSubmission(f"the file is over the size limit of {max_bytes} bytes")
    try:
        raw = json.loads(data)
    except (ValueError, RecursionError):
        raise InvalidSubmission("the file is not JSON (is it a .ipynb notebook?)") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        raise InvalidSubmission("the file is JSON but not a Jupyter notebook")
    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
        nbformat.validate(nb)
    except Exception as e:  # nbformat raises several types for malformed notebooks
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InvalidSubmission(f"the notebook is not valid nbformat: {reason[:200]}") from None
    got = nb.metadata.get("otter", {}).get("assignment_name")
    if assignment_name and got != assignment_name:
        raise InvalidSubmission(f"the notebook is for assignment {str(got)[:100]!r}, not {assignment_name!r}")
    return [
        Cell(i, TransformerManager().transform_cell(cell.source))
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and not _ignored(cell)
    ]


def _ignored(cell: nbformat.NotebookNode) -> bool:
    """Same rule as Otter's GradingPreprocessor.filter_ignored_cells."""
    meta = cell.get("metadata", {})
    return IGNORE_TAG in meta.get("tags", []) or meta.get("otter", {}).get("ignore", False)
