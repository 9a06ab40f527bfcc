"""Building notebooks for the written-answer tests: cells, images, and a student's edits of a handout."""

from __future__ import annotations

import base64
import copy
import json
import struct
import zlib
from pathlib import Path
from typing import Any

from autograder.written import PLACEHOLDER

CORPUS = Path(__file__).parent
PS88 = CORPUS / "ps88-lab3"
PS88_WRITTEN = ["q2c", "q3a", "q3b", "q3c", "q", "q4b", "q4d", "q4f", "q4g"]
"""the written questions of the PS 88 lab, counted by reading its master notebook"""
KERNEL = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}


def md(source: str, **metadata: Any) -> dict:
    return {"cell_type": "markdown", "metadata": metadata, "source": source}


def raw(source: str) -> dict:
    return {"cell_type": "raw", "metadata": {}, "source": source}


def code(source: str, outputs: list | None = None, **metadata: Any) -> dict:
    return {"cell_type": "code", "metadata": metadata, "source": source, "outputs": outputs or [],
            "execution_count": None}  # fmt: skip


def notebook(cells: list[dict]) -> dict:
    return {"cells": cells, "metadata": copy.deepcopy(KERNEL), "nbformat": 4, "nbformat_minor": 5}


def dump(nb: dict) -> bytes:
    return json.dumps(nb).encode()


def png(width: int, height: int) -> bytes:
    """A real PNG of that size (red), small: one compressed row per line."""
    row = b"\x00" + b"\xff\x00\x00" * width
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + _chunk(b"IDAT", zlib.compress(row * height)) + _chunk(b"IEND", b""))  # fmt: skip


def png_claiming(width: int, height: int) -> bytes:
    """A small file whose PNG header claims a huge image (a decompression bomb's header)."""
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def image_output(data: bytes, mime: str = "image/png") -> dict:
    return {"output_type": "display_data", "metadata": {}, "data": {mime: b64(data), "text/plain": "<Figure>"}}


def answer_cells(nb: dict) -> list[dict]:
    """The handout's answer cells (tagged otter_answer_cell by Otter 7), in order."""
    return [c for c in nb["cells"] if "otter_answer_cell" in c.get("metadata", {}).get("tags", [])]


def source(cell: dict) -> str:
    text = cell["source"]
    return text if isinstance(text, str) else "".join(text)


def marker_indices(nb: dict) -> list[int]:
    return [i for i, cell in enumerate(nb["cells"]) if "<!-- BEGIN QUESTION -->" in source(cell)]


def ps88_submission() -> tuple[bytes, dict[str, dict]]:
    """The course's handout answered: a distinctive text in every markdown answer cell, code with a PNG
    output in every code answer cell; and what each answer's cells must be."""
    nb = json.loads((PS88 / "student.ipynb").read_bytes())
    expected = {}
    for name, index in zip(PS88_WRITTEN, marker_indices(nb), strict=True):
        cell = nb["cells"][index + 1]
        if cell["cell_type"] == "markdown":
            assert source(cell) == PLACEHOLDER
            cell["source"] = [f"My answer to {name}: the pivotal voter\n", "matters *less* as n grows.  \n"]
            expected[name] = {"cell_type": "markdown", "source": "".join(cell["source"])}
        else:
            cell["source"] = f"simtable.hist('sims20', bins=range(21))  # {name}"
            cell["outputs"] = [image_output(png(3, 2)), {"output_type": "stream", "name": "stdout", "text": name}]
            expected[name] = {"cell_type": "code", "source": cell["source"], "outputs": [
                {"output_type": "display_data", "data": {"image/png": b64(png(3, 2)), "text/plain": "<Figure>"}},
                {"output_type": "stream", "name": "stdout", "text": name},
            ]}  # fmt: skip
    return dump(nb), expected
