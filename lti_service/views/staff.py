"""The instructor dashboard of one resource link and its actions; course staff of that link only."""

from __future__ import annotations

import datetime as dt

from flask import Blueprint, Response, abort, redirect, render_template, request, url_for
from sqlalchemy import select

from ..assignments import versions
from ..db import Attempt, Launch, Passback
from ..gradebook.columns import gradebook_problem
from ..gradebook.passback import requeue
from ..rules import accommodations, roster
from ..rules.settings import link_key, load, save
from ..submissions import batches, moves
from . import charts, dashboard, queue, services
from .downloads import NOTEBOOK_TYPE, csv_download, file_download
from .launches import adding_note, check_csrf, csrf_token, current_launch, is_staff, may_add_assignments

bp = Blueprint("staff", __name__, url_prefix="/a/<launch_id>/staff")


def staff_launch(launch_id: str) -> Launch:
    """The launch, if it is course staff's launch of a resource link; 403 for anyone else."""
    launch = current_launch(launch_id)
    if not is_staff(launch) or launch.message_type != "LtiResourceLinkRequest":
        abort(403, "This page is for the course's instructors and teaching assistants.")
    return launch


def dashboard_page(launch: Launch, message: str | None = None) -> str:
    live = _live_context(launch)
    version = versions.version_for(services(), launch)
    late_day_budget, accommodated = accommodations.overview(services(), link_key(launch))
    return render_template(
        "dashboard.html",
        **live,
        late_day_budget=late_day_budget,
        accommodated=accommodated,
        title=version.title,
        version=version,
        newer=moves.newer(services(), version),
        move=moves.current(services(), link_key(launch)),
        may_add=may_add_assignments(launch),
        adding_note=adding_note(launch),
        settings=load(services(), link_key(launch)),
        retry_hours=services().config.passback_retry_for / 3600,
        slow_minutes=round(dashboard.SLOW_GRADING.total_seconds() / 60),
        csrf_token=csrf_token(launch),
        gradebook_problem=gradebook_problem(services(), launch, for_staff=True),
        message=message,
    )


def _live_context(launch: Launch) -> dict:
    """What the parts of the dashboard that background work changes are rendered from (the whole page and
    live.json), and whether that work is still under way (`live_pending`: the page keeps refreshing)."""
    board = dashboard.build(services(), launch)
    jobs = [batches.progress(job) for job in batches.recent(services(), link_key(launch))]
    return {
        "launch": launch, "board": board, "board_attempts": _attempts_by_user(launch), "jobs": jobs,
        "histogram": charts.score_histogram(board.gradebook_scores, board.max_score),
        "pass_rates": charts.pass_rates(board.question_rates),
        "live_pending": board.settling or not all(job["finished"] for job in jobs),
    }  # fmt: skip


def _attempts_by_user(launch: Launch) -> dict[str, list[Attempt]]:
    by_user: dict[str, list[Attempt]] = {}
    for attempt in dashboard.link_attempts(services(), launch):
        by_user.setdefault(attempt.user_id, []).append(attempt)
    return by_user


@bp.get("/live.json")
def live(launch_id: str):
    """The parts of the dashboard that background work changes (the roster, each student's attempts), for
    the page to refresh while gradings and grades are under way: after "Regrade all" the roster shows the
    new scores without a reload."""
    context = _live_context(staff_launch(launch_id))
    return {
        "parts": {"roster-rows": render_template("dashboard_roster.html", **context),
                  "charts": render_template("dashboard_charts.html", **context),
                  "attempt-lists": render_template("dashboard_attempts.html", **context)},
        "pending": context["live_pending"],
    }  # fmt: skip


@bp.post("/roster/refresh")
def refresh_roster(launch_id: str):
    """Read the roster from the course platform now (a student just enrolled), not a minute later; at most once
    per roster.REFRESH_GAP per link, so the button cannot be used to hammer the platform."""
    launch = staff_launch(launch_id)
    check_csrf(launch)
    if not roster.refresh(services(), launch):
        gap = round(roster.REFRESH_GAP.total_seconds())
        told = f"The roster was read from your course less than {gap} seconds ago: try again in a moment."
        return dashboard_page(launch, told), 429
    return redirect(url_for("pages.assignment", launch_id=launch.id) + "#students", 303)


@bp.post("/settings")
def settings(launch_id: str):
    launch = staff_launch(launch_id)
    check_csrf(launch)
    form = request.form
    try:
        limit = int(form["attempt_limit"]) if form.get("attempt_limit", "").strip() else None
        penalty = float(form.get("late_penalty") or 0)
    except ValueError:
        return dashboard_page(launch, "The attempt limit and the late penalty must be numbers."), 400
    try:
        link_due = _utc_time(form.get("due_at", ""))
    except accommodations.Refused as refused:
        return dashboard_page(launch, str(refused)), 400
    if form.get("score_policy") not in ("best", "latest") or form.get("late_policy") not in (
        "accept",
        "penalty",
        "refuse",
    ):
        return dashboard_page(launch, "Choose one of the offered options."), 400
    if (limit is not None and limit < 1) or not 0 <= penalty <= 100:
        return dashboard_page(launch, "The attempt limit must be at least 1 and the penalty between 0 and 100%."), 400
    save(
        services(), link_key(launch), score_policy=form["score_policy"], attempt_limit=limit,
        late_policy=form["late_policy"], late_penalty=penalty, show_hidden_after_due="show_hidden_after_due" in form,
        due_at=link_due,
    )  # fmt: skip
    return redirect(url_for("pages.assignment", launch_id=launch.id, saved=1) + "#settings-saved", 303)


def _utc_time(text: str) -> dt.datetime | None:
    """A date and time from a form's datetime-local field (UTC), None when empty; Refused when unreadable."""
    if not text.strip():
        return None
    try:
        return dt.datetime.fromisoformat(text.strip()[:32]).replace(tzinfo=None, second=0, microsecond=0)
    except ValueError:
        raise accommodations.Refused("Write the date and time as 2026-12-24 17:00 (UTC).") from None


def _change(form) -> accommodations.Change:
    """What staff asked for, from the accommodations form (Refused when a field cannot be read)."""
    extra = form.get("extra_attempts", "").strip()
    if extra and not (extra.isdigit() and len(extra) <= 6):
        raise accommodations.Refused("Extra attempts must be a whole number (0 takes extra attempts away).")
    excused = {"": None, "yes": True, "no": False}.get(form.get("excused", ""))
    return accommodations.Change(
        due_at=_utc_time(form.get("due_at", "")), clear_due="clear_due" in form,
        extra_attempts=int(extra) if extra else None, excused=excused,
    )  # fmt: skip


@bp.post("/accommodations")
def set_accommodations(launch_id: str):
    """A new due date, extra attempts or excused, for the students picked (several at once); every score they
    already have is looked at again (a late penalty an extension removes) and sent again."""
    launch = staff_launch(launch_id)
    check_csrf(launch)
    users = request.form.getlist("user")[: accommodations.MAX_PICKED]
    board = dashboard.build(services(), launch)
    settings = load(services(), link_key(launch))
    try:
        change = _change(request.form)
        known, used = {r.user_id: r.name for r in board.rows}, {r.user_id: r.attempts for r in board.rows}
        accommodations.check(change, users, known, used, settings.attempt_limit)
        accommodations.apply(services(), link_key(launch), users, change, launch.user_name or launch.user_id)
    except accommodations.Refused as refused:
        return dashboard_page(launch, f"Nothing was changed: {refused}"), 400
    try:
        _reassess(launch, users)
    except accommodations.Refused as refused:
        return dashboard_page(launch, f"Saved, but their late penalties were not looked at again: {refused}"), 409
    return redirect(url_for("pages.assignment", launch_id=launch.id, accommodated=len(users)) + "#accommodations", 303)


def _reassess(launch: Launch, users: list[str]) -> None:
    """Late penalties and late days of these students again, and their scores sent again."""
    key = link_key(launch)
    for user_id in users:
        accommodations.reassess(services(), key, user_id)
    _send_again(key, users)


def _send_again(key: dict, users: list[str]) -> None:
    for passback_id in requeue(services(), key, users):
        queue().submit(queue().send_score, passback_id)


@bp.post("/late-days")
def late_days(launch_id: str):
    """The course's late days per student (every link of the course shares the budget); the late uploads it now
    covers lose their penalty, and those scores are sent again."""
    launch = staff_launch(launch_id)
    check_csrf(launch)
    days = request.form.get("late_days", "").strip()
    try:
        if not (days.isdigit() and len(days) <= 4):
            raise accommodations.Refused("Late days must be a whole number of days, 0 for none.")
        accommodations.set_budget(services(), link_key(launch), int(days))
    except accommodations.Refused as refused:
        return dashboard_page(launch, f"Nothing was changed: {refused}"), 400
    try:
        students = _send_covered(accommodations.cover_penalised(services(), link_key(launch)))
    except accommodations.Refused as refused:
        return dashboard_page(launch, f"Late days saved, but earlier late uploads were not looked at: {refused}"), 409
    return redirect(url_for("pages.assignment", launch_id=launch.id, budget=1, covered=students) + "#late-days", 303)


def _send_covered(covered: list[tuple[dict, str]]) -> int:
    """The scores a new budget changed sent again, once per link and student; how many students."""
    by_link: dict[str, tuple[dict, list[str]]] = {}
    for key, user_id in covered:
        by_link.setdefault(key["resource_link_id"], (key, []))[1].append(user_id)
    for key, users in by_link.values():
        _send_again(key, users)
    return len({user_id for _, user_id in covered})


@bp.post("/late-days/refund")
def refund_late_days(launch_id: str):
    """Give a student back the late days this link took: that much lateness on it is forgiven (no score changes:
    the uploads those days covered stay without penalty)."""
    launch = staff_launch(launch_id)
    check_csrf(launch)
    user_id = request.form.get("user", "")[:400]
    try:
        days = accommodations.refund(services(), link_key(launch), user_id, launch.user_name or launch.user_id)
    except accommodations.Refused as refused:
        return dashboard_page(launch, f"Nothing was changed: {refused}"), 409
    return redirect(url_for("pages.assignment", launch_id=launch.id, given_back=days) + "#late-days", 303)


@bp.post("/regrade")
def regrade(launch_id: str):
    """Grade every attempt of this link again, e.g. after staff changed a test and rebuilt the zip."""
    return _start_batch(launch_id, "regrade", queue().grade)


@bp.post("/resend")
def resend(launch_id: str):
    return _start_batch(launch_id, "resend", queue().send_score)


def _start_batch(launch_id: str, kind: str, task) -> Response:
    launch = staff_launch(launch_id)
    check_csrf(launch)
    job, row_ids = batches.start(services(), link_key(launch), kind)
    for row_id in row_ids:
        queue().submit(task, row_id)
    return redirect(url_for("pages.assignment", launch_id=launch.id) + f"#job-{job.id}", 303)


@bp.get("/jobs/<int:job_id>.json")
def job_progress(launch_id: str, job_id: int):
    job = batches.get(services(), link_key(staff_launch(launch_id)), job_id)
    if job is None:
        abort(404)
    return batches.progress(job)


@bp.post("/scores.csv")
def scores_csv(launch_id: str):
    launch = staff_launch(launch_id)
    check_csrf(launch)
    rows = dashboard.score_rows(dashboard.build(services(), launch))
    return csv_download(f"scores-{launch.resource_link_id[:40]}.csv", dashboard.SCORE_COLUMNS, rows)


def link_attempt(launch: Launch, attempt_id: int) -> Attempt:
    """An attempt of this launch's link (404 for any other link's, context's or platform's)."""
    with services().db.session() as session:
        attempt = session.scalars(select(Attempt).filter_by(**link_key(launch), id=attempt_id)).first()
    if attempt is None:
        abort(404)
    return attempt


@bp.get("/attempts/<int:attempt_id>")
def attempt_detail(launch_id: str, attempt_id: int):
    """The staff view of one attempt: every test, hidden ones with their messages, and cell errors."""
    launch = staff_launch(launch_id)
    attempt = link_attempt(launch, attempt_id)
    with services().db.session() as session:
        passback = session.scalars(select(Passback).filter_by(**link_key(launch), user_id=attempt.user_id)).first()
    return render_template("attempt_detail.html", launch=launch, attempt=attempt, csrf_token=csrf_token(launch),
                           gradebook=dashboard.gradebook_text(passback) if passback else None,
                           title=versions.version_for(services(), launch).title)  # fmt: skip


@bp.post("/attempts/<int:attempt_id>/notebook")
def attempt_notebook(launch_id: str, attempt_id: int):
    launch = staff_launch(launch_id)
    check_csrf(launch)
    attempt = link_attempt(launch, attempt_id)
    return file_download(attempt.notebook, f"attempt-{attempt.id}-{attempt.user_id[:40]}.ipynb", NOTEBOOK_TYPE)
