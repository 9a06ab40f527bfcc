"""The launch behind a request to the tool's pages: the launch id in the URL with, where the browser keeps
the tool's cookies, the launch cookie (so that a URL a browser keeps, in its history or its downloads, opens
nothing for the next person at the computer); expired, unknown or without its cookie: 404. Forms carry a
token derived from the launch (CSRF), and the launch's role says what it may do.

Course staff pages are always bound to a browser. A launch confirmed through the platform's storage (a frame
that keeps no cookie, as in Safari) is bound to none: for staff, its frame offers a window of their own
instead, which the launch is bound to by a first-party cookie, once and only soon after the launch."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import secrets

from flask import Response, abort, current_app, make_response, redirect, render_template, request, url_for
from sqlalchemy import update

from ..db import Launch, token_digest, utcnow
from ..lti.cookies import launch_cookie, set_launch_cookie
from ..lti.roles import is_course_staff
from . import services

STAFF_WINDOW = dt.timedelta(minutes=10)
"""how long after a launch without a cookie its staff can open their pages in a window of their own"""


def current_launch(launch_id: str, cookie_path: bool = True) -> Launch:
    """The launch of a request to its pages. `cookie_path=False` for a form the launch's page posts elsewhere
    (its cookie stays under the page's path; the form's CSRF token shows the page was seen). A staff launch
    bound to no browser opens no page but the offer of a window of its own."""
    launch = _live_launch(launch_id)
    if launch is None or (cookie_path and not _bound_here(launch)):
        abort(404, "This page has expired or does not exist.")
    if launch.binding_hash is None and is_staff(launch):
        abort(_staff_window_offer(launch))
    return launch


def _live_launch(launch_id: str) -> Launch | None:
    with services().db.session() as session:
        launch = session.get(Launch, launch_id)
    return launch if launch is not None and launch.expires_at >= utcnow() else None


def _staff_window_offer(launch: Launch) -> Response:
    still_open = utcnow() < launch.created_at + STAFF_WINDOW
    page = render_template("staff_window.html", launch=launch, csrf_token=csrf_token(launch), still_open=still_open)
    return make_response(page, 403)


def open_staff_window(launch_id: str) -> Response:
    """Bind a staff launch that has no browser yet to this one (a first-party window: its cookie is kept), then
    open its first page. Only once, and only within STAFF_WINDOW of the launch: a URL of the launch found later
    in a browser's history binds nothing."""
    launch = _live_launch(launch_id)
    if launch is None or not is_staff(launch):
        abort(404, "This page has expired or does not exist.")
    check_csrf(launch)
    token = secrets.token_urlsafe(32)
    if utcnow() >= launch.created_at + STAFF_WINDOW or not _bind(launch.id, token_digest(token)):
        abort(404, "These course staff pages were opened in another window already, or too long ago. Open the "
                   "assignment again from your course.")  # fmt: skip
    first = "pages.deep_link" if launch.message_type == "LtiDeepLinkingRequest" else "pages.assignment"
    response = redirect(url_for(first, launch_id=launch.id), 303)
    set_launch_cookie(response, launch.id, token, url_for("pages.assignment", launch_id=launch.id))
    response.headers["Cache-Control"] = "no-store"
    return response


def _bind(launch_id: str, binding: str) -> bool:
    """Compare-and-set: only the first of two racing windows binds the launch."""
    with services().db.session() as session:
        bound = session.execute(
            update(Launch).where(Launch.id == launch_id, Launch.binding_hash.is_(None)).values(binding_hash=binding)
        )
    return bound.rowcount == 1


def _bound_here(launch: Launch) -> bool:
    """Whether the request comes from the browser that launched it (a launch without a cookie is bound to
    nothing: it was confirmed through the platform's storage, where the browser keeps no cookie of ours)."""
    if launch.binding_hash is None:
        return True
    token = launch_cookie(launch.id)
    return token is not None and hmac.compare_digest(token_digest(token), launch.binding_hash)


def csrf_token(launch: Launch) -> str:
    return hmac.new(current_app.config["SECRET_KEY"].encode(), launch.id.encode(), hashlib.sha256).hexdigest()


def check_csrf(launch: Launch) -> None:
    if not hmac.compare_digest(request.form.get("csrf_token", ""), csrf_token(launch)):
        abort(400, "The form was not sent from this page, or the page is too old. Reload the page and try again.")


def is_staff(launch: Launch) -> bool:
    """Course staff by their role in this course (see lti/roles.py)."""
    return is_course_staff(launch.roles)


ADDING_TURNED_OFF = (
    "On this server, only the people who run the grading tool add assignments; courses choose among those. "
    "To use an assignment of your own, send its master notebook to them (your school's LMS administrator "
    "knows who they are)."
)


def may_add_assignments(launch: Launch) -> bool:
    """Course staff of a course, where the operator lets course staff add assignments (COURSE_ASSIGNMENTS)."""
    return services().config.course_assignments and is_staff(launch) and bool(launch.context_id)


def adding_note(launch: Launch) -> str | None:
    """What course staff are told where the operator keeps adding assignments to themselves."""
    return ADDING_TURNED_OFF if is_staff(launch) and not services().config.course_assignments else None
