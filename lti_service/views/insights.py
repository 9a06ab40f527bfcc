"""What the class got wrong, and who wrote alike: the insights a worker computed for the link (insights/),
for its course staff only. Nothing is computed here: the page shows the stored result and when it was made.

"Without names" (`?anonymous=1`, on the page, the side-by-side view and the downloads) shows each student as
their opaque reference on the link (rules/refs.py), never a name or an LMS id: the stored result keeps those,
and only the labels made here reach the page."""

from __future__ import annotations

from collections.abc import Callable

from flask import Blueprint, abort, redirect, render_template, request, url_for

from ..insights import cache
from ..rules.refs import student_ref
from ..rules.settings import link_key
from . import services
from .downloads import csv_download
from .launches import check_csrf, csrf_token
from .staff import staff_launch

bp = Blueprint("insights", __name__, url_prefix="/a/<launch_id>/staff/insights")
MISTAKE_COLUMNS = ("question", "test", "message", "value", "students", "share", "examples")
PAIR_COLUMNS = ("student_a", "student_b", "similarity")
REF_SHOWN = 10  # hexadecimal characters of a reference a page shows ("Student 3fa9c20b17")


def _stored(launch_id: str):
    """The launch, the link's stored row, its data (None before the first result), and how students are named."""
    launch = staff_launch(launch_id)
    key = link_key(launch)
    row = cache.cached(services(), key)
    anonymous = request.args.get("anonymous") == "1"
    return launch, row, (row.data if row and row.data else None), anonymous, _labeller(key, anonymous)


def _labeller(key: dict, anonymous: bool) -> Callable[[str, str], str]:
    """(user id, name) -> what the page calls the student: the name, or their reference without names."""
    if not anonymous:
        return lambda _user_id, name: name
    return lambda user_id, _name: f"Student {student_ref(services(), key, user_id)[:REF_SHOWN]}"


def _mistakes(data: dict | None, label: Callable[[str, str], str]) -> list[dict]:
    """The stored mistakes, each example's student as the page names them (no id or name otherwise)."""
    return [
        {**m, "examples": [{"student": label(e["user_id"], e["name"]), "code": e["code"]} for e in m["examples"]]}
        for m in (data or {}).get("mistakes", [])
    ]


def _pairs(data: dict | None, label: Callable[[str, str], str]) -> list[dict]:
    """The stored pairs as the page names their students (their codes and spans kept, their ids left out)."""
    return [
        {"a_label": label(p["a"], p["a_name"]), "b_label": label(p["b"], p["b_name"]), "score": p["score"],
         "a_code": p["a_code"], "b_code": p["b_code"], "a_spans": p["a_spans"], "b_spans": p["b_spans"]}
        for p in (data or {}).get("pairs", [])
    ]  # fmt: skip


@bp.get("")
def page(launch_id: str):
    launch, row, data, anonymous, label = _stored(launch_id)
    by_question: dict[str, list[dict]] = {}
    for mistake in _mistakes(data, label):
        by_question.setdefault(mistake["question"], []).append(mistake)
    return render_template("insights.html", launch=launch, row=row, data=data, by_question=by_question,
                           pairs=_pairs(data, label), anonymous=anonymous, csrf_token=csrf_token(launch))  # fmt: skip


@bp.post("/refresh")
def refresh(launch_id: str):
    launch = staff_launch(launch_id)
    check_csrf(launch)
    cache.request(services(), link_key(launch))
    return redirect(url_for("insights.page", launch_id=launch_id), 303)


@bp.get("/pairs/<int:number>")
def pair(launch_id: str, number: int):
    """Two students' answers side by side, the parts that match highlighted."""
    launch, _, data, anonymous, label = _stored(launch_id)
    pairs = _pairs(data, label)
    if not 0 <= number < len(pairs):
        abort(404, "There is no such pair (the analysis may have been computed again since).")
    found = pairs[number]
    sides = [(found["a_label"], _marked(found["a_code"], found["a_spans"])),
             (found["b_label"], _marked(found["b_code"], found["b_spans"]))]  # fmt: skip
    return render_template("insights_pair.html", launch=launch, pair=found, sides=sides, anonymous=anonymous)


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


@bp.post("/mistakes.csv")
def mistakes_csv(launch_id: str):
    launch, _, data, _, label = _stored(launch_id)
    check_csrf(launch)
    rows = [[m["question"], m["test"], m["message"], m["value"], m["students"], round(m["share"], 4),
             " || ".join(f"{e['student']}: {e['code']}" for e in m["examples"])]
            for m in _mistakes(data, label)]  # fmt: skip
    return csv_download(f"mistakes-{launch.resource_link_id[:40]}.csv", MISTAKE_COLUMNS, rows)


@bp.post("/similar.csv")
def similar_csv(launch_id: str):
    launch, _, data, _, label = _stored(launch_id)
    check_csrf(launch)
    rows = [[p["a_label"], p["b_label"], round(p["score"], 4)] for p in _pairs(data, label)]
    return csv_download(f"similar-{launch.resource_link_id[:40]}.csv", PAIR_COLUMNS, rows)
