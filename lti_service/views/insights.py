"""What the class got wrong, and who wrote alike: the insights a worker computed for the link (insights/),
for its course staff only. Nothing is computed here: the page shows the stored result and when it was made."""

from __future__ import annotations

from flask import Blueprint, abort, redirect, render_template, request, url_for

from ..insights import cache
from ..links.settings import link_key
from . import services
from .downloads import csv_download
from .launches import check_csrf, csrf_token
from .staff import staff_launch

bp = Blueprint("insights", __name__, url_prefix="/a/<launch_id>/staff/insights")
MISTAKE_COLUMNS = ("question", "test", "message", "value", "students", "share", "examples")
PAIR_COLUMNS = ("student_a", "student_b", "similarity")


def _stored(launch_id: str):
    launch = staff_launch(launch_id)
    row = cache.cached(services(), link_key(launch))
    return launch, row, (row.data if row and row.data else None)


@bp.get("")
def page(launch_id: str):
    launch, row, data = _stored(launch_id)
    anonymous = request.args.get("anonymous") == "1"
    mistakes = (data or {}).get("mistakes_anonymous" if anonymous else "mistakes", [])
    by_question: dict[str, list[dict]] = {}
    for mistake in mistakes:
        by_question.setdefault(mistake["question"], []).append(mistake)
    return render_template("insights.html", launch=launch, row=row, data=data, by_question=by_question,
                           anonymous=anonymous, csrf_token=csrf_token(launch))  # fmt: skip


@bp.post("/refresh")
def refresh(launch_id: str):
    launch = staff_launch(launch_id)
    check_csrf(launch)
    cache.request(services(), link_key(launch))
    return redirect(url_for("insights.page", launch_id=launch_id), 303)


@bp.get("/pairs/<int:number>")
def pair(launch_id: str, number: int):
    """Two students' answers side by side, the parts that match highlighted."""
    launch, _, data = _stored(launch_id)
    pairs = (data or {}).get("pairs", [])
    if not 0 <= number < len(pairs):
        abort(404, "There is no such pair (the analysis may have been computed again since).")
    found = pairs[number]
    sides = [(found["a_name"], _marked(found["a_code"], found["a_spans"])),
             (found["b_name"], _marked(found["b_code"], found["b_spans"]))]  # fmt: skip
    return render_template("insights_pair.html", launch=launch, pair=found, sides=sides, number=number)


def _marked(code: str, spans: list) -> list[tuple[str, bool]]:
    """The code as pieces, each marked when it is part of a match (the template escapes every piece)."""
    pieces, at = [], 0
    for start, end in sorted((int(s), int(e)) for s, e in spans):
        start, end = max(start, at), min(end, len(code))
        if start >= end:
            continue
        pieces += [(code[at:start], False), (code[start:end], True)]
        at = end
    return [piece for piece in [*pieces, (code[at:], False)] if piece[0]]


@bp.get("/mistakes.csv")
def mistakes_csv(launch_id: str):
    launch, _, data = _stored(launch_id)
    key = "mistakes_anonymous" if request.args.get("anonymous") == "1" else "mistakes"
    rows = [[m["question"], m["test"], m["message"], m["value"], m["students"], round(m["share"], 4),
             " || ".join(f"{e['student']}: {e['code']}" for e in m["examples"])]
            for m in (data or {}).get(key, [])]  # fmt: skip
    return csv_download(f"mistakes-{launch.resource_link_id[:40]}.csv", MISTAKE_COLUMNS, rows)


@bp.get("/similar.csv")
def similar_csv(launch_id: str):
    launch, _, data = _stored(launch_id)
    rows = [[p["a_name"], p["b_name"], round(p["score"], 4)] for p in (data or {}).get("pairs", [])]
    return csv_download(f"similar-{launch.resource_link_id[:40]}.csv", PAIR_COLUMNS, rows)
