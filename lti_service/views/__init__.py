"""Blueprints: lti.py (the LTI endpoints a platform calls) and pages.py (what people see)."""

from __future__ import annotations

from flask import current_app

from ..browser.site import Site
from ..jobs import Queue
from ..services import Services


def services() -> Services:
    return current_app.extensions["services"]


def queue() -> Queue:
    return current_app.extensions["queue"]


def grade_later(attempt_id: int) -> None:
    """Queue an attempt's grading (a worker takes it; the database poll does if the queue loses it)."""
    queue().submit(queue().grade, attempt_id)


def site() -> Site | None:
    """The JupyterLite site for the notebook in the browser (None where none was built)."""
    return current_app.extensions["lite"]
