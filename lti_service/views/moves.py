"""Moving a link to another version of its assignment (submissions/moves.py), from the link's dashboard:
review what the version changes, regrade every submission against it, compare each student's score
before and after, then send the new scores (or keep the link where it is). The link's staff only."""

from __future__ import annotations

from flask import Blueprint, abort, redirect, render_template, url_for
from sqlalchemy import func, select

from ..assignments import catalog, versions
from ..assignments.summary import differences, questions_of
from ..db import Attempt, Launch, LinkMove
from ..rules.settings import link_key
from ..submissions import moves
from . import grade_later, queue, services
from .launches import check_csrf, csrf_token
from .staff import staff_launch

bp = Blueprint("moves", __name__, url_prefix="/a/<launch_id>/staff/versions")


@bp.get("/<int:version_id>")
def review(launch_id: str, version_id: int):
    """What moving to this version would change, and the button that starts the regrade."""
    launch = staff_launch(launch_id)
    current = versions.version_for(services(), launch)
    target = catalog.version(services().db, version_id)
    if target is None or target.assignment_id != current.assignment_id or target.id == current.id:
        abort(404)
    with services().db.session() as session:
        submissions = session.scalar(select(func.count(Attempt.id)).filter_by(**link_key(launch)))
    changes = differences(questions_of(current.questions), questions_of(target.questions))
    return render_template("move_review.html", launch=launch, current=current, target=target, changes=changes,
                           submissions=submissions, csrf_token=csrf_token(launch))  # fmt: skip


@bp.post("/<int:version_id>/move")
def start(launch_id: str, version_id: int):
    launch = staff_launch(launch_id)
    check_csrf(launch)
    try:
        move, previews = moves.start(services(), link_key(launch), version_id)
    except moves.MoveRefused as refused:
        abort(409, str(refused))
    for preview_id in previews:
        queue().submit(queue().grade_preview, preview_id)
    if move is None:  # nobody submitted: moved at once
        return redirect(url_for("pages.assignment", launch_id=launch.id) + "#assignment", 303)
    return redirect(url_for("moves.move_page", launch_id=launch.id, move_id=move.id), 303)


def _move(launch: Launch, move_id: int) -> LinkMove:
    move = moves.get(services(), link_key(launch), move_id)
    if move is None:
        abort(404)
    return move


def _progress(move: LinkMove) -> dict:
    done, total = moves.progress(services(), move)
    finished = done >= total or move.status != "regrading"
    text = f"Regraded {done} of {total} submissions against the new version" + (" (finished)." if finished else "…")
    return {"id": move.id, "done": done, "total": total, "finished": finished, "text": text}


@bp.get("/moves/<int:move_id>")
def move_page(launch_id: str, move_id: int, error: str | None = None):
    launch = staff_launch(launch_id)
    move = _move(launch, move_id)
    before, after = (catalog.version(services().db, v) for v in (move.from_version_id, move.to_version_id))
    return render_template(
        "move.html", launch=launch, move=move, progress=_progress(move), error=error, before=before, after=after,
        rows=moves.comparison(services(), link_key(launch), move), csrf_token=csrf_token(launch),
    )  # fmt: skip


@bp.get("/moves/<int:move_id>.json")
def move_progress(launch_id: str, move_id: int):
    return _progress(_move(staff_launch(launch_id), move_id))


@bp.post("/moves/<int:move_id>/apply")
def apply(launch_id: str, move_id: int):
    """The new scores replace the old ones and go to the gradebook; the link is pinned to the new version."""
    launch = staff_launch(launch_id)
    check_csrf(launch)
    try:
        regrade, passbacks = moves.apply(services(), link_key(launch), move_id)
    except moves.MoveRefused as refused:
        return move_page(launch_id, move_id, error=str(refused)), 409
    for attempt_id in regrade:
        grade_later(attempt_id)
    for passback_id in passbacks:
        queue().submit(queue().send_score, passback_id)
    return redirect(url_for("pages.assignment", launch_id=launch.id) + "#assignment", 303)


@bp.post("/moves/<int:move_id>/cancel")
def cancel(launch_id: str, move_id: int):
    launch = staff_launch(launch_id)
    check_csrf(launch)
    moves.cancel(services(), link_key(launch), move_id)
    return redirect(url_for("pages.assignment", launch_id=launch.id) + "#assignment", 303)
