"""Files people download, made safe for what opens them.

- `attachment` is the one place a Content-Disposition is built: file names come from LMS claims (user
  ids, resource link ids), so they are encoded as RFC 6266 and RFC 5987 say (an ASCII fallback with
  anything unsafe replaced, and the exact name as filename*=UTF-8''...), never pasted into quotes.
- `csv_download` writes CSV that a spreadsheet cannot run: a text cell starting with = + - @, a tab or a
  carriage return gets a leading single quote (OWASP's rule for CSV injection); numbers stay numbers.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Sequence
from urllib.parse import quote

from flask import Response

NOTEBOOK_TYPE = "application/x-ipynb+json"
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
UNSAFE_IN_FALLBACK = re.compile(r"[^A-Za-z0-9._-]")
MAX_NAME = 150


def attachment(filename: str) -> str:
    """The Content-Disposition value for downloading `filename` (any text) as a file."""
    name = filename[:MAX_NAME]
    fallback = UNSAFE_IN_FALLBACK.sub("_", name).lstrip(".") or "download"
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


def spreadsheet_safe(cell: object) -> object:
    """A CSV cell that a spreadsheet shows as text rather than evaluates."""
    if isinstance(cell, str) and cell.startswith(FORMULA_STARTS):
        return "'" + cell
    return cell


def csv_download(filename: str, header: Sequence[str], rows: Iterable[Sequence[object]]) -> Response:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows([spreadsheet_safe(cell) for cell in row] for row in rows)
    return Response(out.getvalue(), mimetype="text/csv", headers={"Content-Disposition": attachment(filename)})


def file_download(body: bytes, filename: str, mimetype: str) -> Response:
    return Response(body, mimetype=mimetype, headers={"Content-Disposition": attachment(filename)})
