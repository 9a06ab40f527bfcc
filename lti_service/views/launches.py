"""The launch behind a request to the tool's pages: the launch id in the URL with, where the browser keeps
the tool's cookies, the launch cookie (so that a URL a browser keeps, in its history or its downloads, opens
nothing for the next person at the computer); expired, unknown or without its cookie: 404. Forms carry a
token derived from the launch (CSRF), and the launch's role says what it may do."""

from __future__ import annotations

import hashlib
import hmac

from flask import abort, current_app, request

from ..db import Launch, token_digest, utcnow
from ..lti.cookies import launch_cookie
from ..lti.roles import is_course_staff
from . import services


def current_launch(launch_id: str, cookie_path: bool = True) -> Launch:
    """The launch of a request to its pages. `cookie_path=False` for a form the launch's page posts elsewhere
    (its cookie stays under the page's path; the form's CSRF token shows the page was seen)."""
    with services().db.session() as session:
        launch = session.get(Launch, launch_id)
    if launch is None or launch.expires_at < utcnow() or (cookie_path and not _bound_here(launch)):
        abort(404, "This page has expired or does not exist.")
    return launch


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
