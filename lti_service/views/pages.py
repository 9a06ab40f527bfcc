"""What people see after a launch. The launch id in the URL is the capability: every query is scoped
to that launch's platform, context, resource link and user."""

from __future__ import annotations

import json

from flask import Blueprint, abort, redirect, render_template, request, url_for
from sqlalchemy import select

from ..assignments import catalog, versions
from ..browser.site import BrowserFit, browser_fit
from ..db import Attempt, Launch, LinkSettings, Passback, Platform
from ..gradebook.columns import gradebook_problem
from ..gradebook.passback import refusal
from ..lti.deep_linking import presentation_target, resource_link_item, response_jwt
from ..lti.quirks import TEACHER_FIXES
from ..rules.settings import SubmissionRules, counting_attempt, link_key, rules_for
from ..submissions.uploads import NotTaken, take_notebook
from ..written import grades
from ..written.questions import link_questions, total_points, written_points
from . import grade_later, services, site
from .downloads import NOTEBOOK_TYPE, file_download
from .launches import (
    adding_note,
    check_csrf,
    csrf_token,
    current_launch,
    is_staff,
    may_add_assignments,
    open_staff_window,
)
from .staff import dashboard_page

bp = Blueprint("pages", __name__, url_prefix="/a")
DL = "https://purl.imsglobal.org/spec/lti-dl/claim/"
STATUS_WORDS = {"queued": "waiting to be graded", "grading": "being graded", "graded": "graded",
                "failed": "could not be graded"}  # fmt: skip
GRADEBOOK_WORDS = {
    "sending": "on its way to the gradebook",
    "retrying": "waiting: the course's gradebook does not answer now, and the tool keeps trying on its own",
    "held": "waiting: the course's gradebook does not take scores for this assignment yet; it is sent once it does",
    "sent": "sent to the gradebook",
    "failed": "not sent: the gradebook refused it (your teacher can see why)",
    "no_column": "not sent: this assignment has no gradebook column",
}
UNSETTLED = ("sending", "retrying", "held")  # the page keeps watching an attempt while its grade travels


@bp.get("/<launch_id>")
def assignment(launch_id: str):
    """Course staff get the dashboard of the link; everyone else the assignment."""
    launch = current_launch(launch_id)
    if is_staff(launch) and launch.message_type == "LtiResourceLinkRequest":
        return dashboard_page(launch)
    return assignment_page(launch, notice=_same_notice())


@bp.post("/<launch_id>/window")
def staff_window(launch_id: str):
    """Course staff whose frame keeps no cookie open their pages in a window of their own (views/launches.py)."""
    return open_staff_window(launch_id)


@bp.get("/<launch_id>/student")
def student_view(launch_id: str):
    """The assignment as students see it (for staff, a preview where their own uploads are graded too)."""
    return assignment_page(current_launch(launch_id), notice=_same_notice())


def _same_notice() -> str | None:
    """After an upload of a notebook identical to an earlier attempt (?same=N): what happened."""
    number = request.args.get("same", "")
    if not (number.isdigit() and len(number) <= 6):
        return None
    return (
        f"This notebook is the same as your attempt {int(number)}, so no new attempt was made. To submit your "
        "changes, save the notebook in Jupyter first (File, Save), then upload the saved file."
    )


def offer(launch: Launch, requirements: str) -> BrowserFit | None:
    """How the assignment runs in the browser for this launch, or None where the tool has no site to run it."""
    built = site()
    if built is None or launch.message_type != "LtiResourceLinkRequest":
        return None
    return browser_fit(built, requirements)


def assignment_page(launch: Launch, error: str | None = None, notice: str | None = None) -> str:
    rules = rules_for(services(), launch)
    version = versions.version_for(services(), launch)
    browser = offer(launch, version.requirements)
    return render_template(
        "assignment.html",
        launch=launch,
        title=version.title,
        points=total_points(version),
        written_points=written_points(version),
        handout_name=version.handout_name,
        in_browser=browser is not None and browser.runs,
        rules=rules,
        attempts=attempt_rows(launch, rules),
        csrf_token=csrf_token(launch),
        max_mb=services().config.max_upload_bytes / 1024 / 1024,
        staff=is_staff(launch),
        gradebook_problem=gradebook_problem(services(), launch),
        error=error,
        notice=notice,
    )


@bp.post("/<launch_id>/upload")
def upload(launch_id: str):
    launch = current_launch(launch_id)
    check_csrf(launch)
    file = request.files.get("notebook")
    if file is None or not file.filename:
        return _back_with_error(launch, "Choose your .ipynb notebook file first.")
    try:
        data = file.read(services().config.max_upload_bytes + 1)
        attempt, new = take_notebook(services(), launch, file.filename, data, grade_later)
    except NotTaken as refused:
        return _back_with_error(launch, str(refused))
    page = "pages.student_view" if is_staff(launch) else "pages.assignment"
    if not new:  # the same file again: say so, rather than show the old attempt as if it were new
        return redirect(url_for(page, launch_id=launch.id, same=attempt.number) + "#upload-notice", 303)
    return redirect(url_for(page, launch_id=launch.id) + f"#attempt-{attempt.id}", 303)


def _back_with_error(launch: Launch, message: str):
    return assignment_page(launch, message), 400


@bp.get("/<launch_id>/attempts.json")
def attempts_json(launch_id: str):
    """The page polls this to show status changes live (the same HTML as the page, from one template)."""
    return attempts_json_for(current_launch(launch_id))


def attempts_json_for(launch: Launch) -> dict:
    """The launch's attempts as the page shows them, and whether any is still on its way."""
    attempts = attempt_rows(launch, rules_for(services(), launch))
    pending = any(a["pending"] for a in attempts)
    return {"attempts": attempts, "pending": pending, "html": render_template("attempts.html", attempts=attempts)}


def attempt_rows(launch: Launch, rules: SubmissionRules) -> list[dict]:
    """This user's attempts on this resource link, newest first, in the student view (hidden tests as
    counts, unless staff chose to show them once the due date has passed)."""
    with services().db.session() as session:
        attempts = session.scalars(
            select(Attempt).filter_by(**link_key(launch), user_id=launch.user_id).order_by(Attempt.id.desc())
        ).all()
        passbacks = {
            row.lineitem_url: row
            for row in session.scalars(
                select(Passback).filter_by(platform_id=launch.platform_id, user_id=launch.user_id)
            )
        }
    policy = rules.settings.score_policy
    counting = counting_attempt(list(attempts), policy)
    feedback = "result" if rules.hidden_results_visible else "feedback"
    numbers = dict(zip((a.id for a in attempts), range(len(attempts), 0, -1), strict=True))
    written = written_rows(launch, list(reversed(attempts)), rules.settings)
    rows = []
    for attempt in attempts:
        state = _gradebook_state(attempt, passbacks.get(attempt.lineitem_url), counting)
        rows.append(
            {
                "id": attempt.id,
                "number": numbers[attempt.id],
                "filename": attempt.filename,
                "submitted": attempt.created_at.strftime("%Y-%m-%d %H:%M UTC"),
                "status": attempt.status,
                "status_words": STATUS_WORDS.get(attempt.status, attempt.status),
                "score": attempt.final_score,
                "raw_score": attempt.score,
                "late_penalty": attempt.late_penalty,
                "max_score": attempt.max_score,
                "error": attempt.error,
                "questions": (getattr(attempt, feedback) or {}).get("questions", []),
                "notice": (getattr(attempt, feedback) or {}).get("notice", ""),
                "counts": attempt is counting,
                "gradebook_state": state,
                "gradebook": _gradebook_words(state, numbers[counting.id] if counting else None, policy),
                "pending": attempt.status in ("queued", "grading") or state in UNSETTLED,
                "written": written.get(attempt.id, []),
            }
        )
    return rows


def written_rows(launch: Launch, attempts: list[Attempt], settings: LinkSettings) -> dict[int, list[dict]]:
    """For each graded attempt (oldest first given), its written answers as the student may see them: the
    points, rubric items and comment once staff released them, and whether the grade is kept from an earlier
    attempt with the same answer. Before release nothing says whether an answer was graded yet."""
    questions = link_questions(versions.version_for(services(), launch), settings)
    if not questions:
        return {}
    user_book = grades.book(services(), link_key(launch), questions, launch.user_id)
    first_with: dict[tuple[str, str], int] = {}
    rows: dict[int, list[dict]] = {}
    for number, attempt in enumerate(attempts, start=1):
        if attempt.status != "graded":
            continue
        attempt = grades.with_digests(services(), attempt, questions)
        rows[attempt.id] = []
        for question in questions:
            digest = (attempt.answer_digests or {}).get(question.name, "")
            first = first_with.setdefault((question.name, digest), number)
            grade = user_book.grade(launch.user_id, question, digest)
            shown = bool(settings.written_released and grade is not None)
            rows[attempt.id].append({
                "name": question.name, "max": question.points, "graded": shown, "released": shown,
                "awaiting_release": not settings.written_released,
                "points": user_book.score(grade, question) if shown else None,
                "rubric": [{"points": user_book.items[i].points, "text": user_book.items[i].text} for i in grade.items
                           if i in user_book.items and not user_book.items[i].removed] if shown else [],
                "comment": grade.comment if shown else "", "same_as": first if first != number else None,
            })  # fmt: skip
    return rows


def _gradebook_state(attempt: Attempt, passback: Passback | None, counting: Attempt | None) -> str:
    """Where this attempt's score stands with the gradebook: "" (not graded), "kept_other" (another attempt
    counts), or one of GRADEBOOK_WORDS."""
    if attempt.status != "graded":
        return ""
    if attempt is not counting:
        return "kept_other"
    if not attempt.lineitem_url:
        return "no_column"
    if passback is not None and passback.status == "pending" and refusal(passback) in TEACHER_FIXES:
        return "held"  # until the teacher fixes it in the LMS (e.g. publishes the assignment)
    if passback is None or passback.status == "pending":
        return "sending" if passback is None or passback.tries == 0 else "retrying"
    return passback.status


def _gradebook_words(state: str, counting_number: int | None, policy: str) -> str:
    if state != "kept_other":
        return GRADEBOOK_WORDS.get(state, "")
    if policy == "best":
        return f"not sent: attempt {counting_number} has your best score, and the gradebook keeps it"
    return f"not sent: the gradebook keeps your latest graded attempt ({counting_number})"


@bp.get("/<launch_id>/notebook")
def notebook(launch_id: str):
    """What students download: the notebook of the link's version (with the files it reads, as a zip)."""
    version = versions.version_for(services(), current_launch(launch_id))
    kind = "application/zip" if version.handout_name.endswith(".zip") else NOTEBOOK_TYPE
    return file_download(catalog.handout(services().db, version.id), version.handout_name, kind)


def deep_linking_launch(launch_id: str) -> Launch:
    launch = current_launch(launch_id)
    if launch.message_type != "LtiDeepLinkingRequest" or not is_staff(launch):
        abort(403, "Choosing an assignment is for instructors, from the course's deep-linking placement.")
    return launch


@bp.get("/<launch_id>/deep-link")
def deep_link(launch_id: str):
    """The assignments this course may link (every course's and its own), newest versions. None is chosen
    ahead: the teacher picks the one they mean."""
    return deep_link_page(deep_linking_launch(launch_id))


def deep_link_page(launch: Launch, error: str | None = None) -> str:
    return render_template(
        "deep_link.html", launch=launch, offered=versions.offered(services().db, launch), csrf_token=csrf_token(launch),
        may_add=may_add_assignments(launch), adding_note=adding_note(launch), error=error,
    )  # fmt: skip


@bp.post("/<launch_id>/deep-link")
def deep_link_choose(launch_id: str):
    """Send the chosen assignment back to the platform: a link pinned to its version, with its own column."""
    launch = deep_linking_launch(launch_id)
    check_csrf(launch)
    chosen = versions.chosen(services().db, launch, request.form.get("assignment", ""))
    if chosen is None:
        return deep_link_page(launch, "Choose the assignment to add, then select “Add to the course”."), 400
    assignment, version = chosen
    with services().db.session() as session:
        client_id = session.get(Platform, launch.platform_id).client_id
    item = resource_link_item(
        version.title,
        url_for("lti.launch", _external=True),
        total_points(version),
        assignment.name,
        presentation_target(launch.claims),
        custom={versions.CUSTOM_PARAMETER: str(version.id)},
    )
    token = response_jwt(launch.claims, client_id, [item], services().keys.signing_key())
    return_url = launch.claims[DL + "deep_linking_settings"]["deep_link_return_url"]
    return render_template("deep_link_return.html", return_url=return_url, jwt=token, item=json.dumps(item))
