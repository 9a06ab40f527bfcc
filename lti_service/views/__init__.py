"""Blueprints: lti.py (the LTI endpoints a platform calls) and pages.py (what people see)."""

from __future__ import annotations

from flask import current_app

from ..jobs import Queue
from ..services import Services


def services() -> Services:
    return current_app.extensions["services"]


def queue() -> Queue:
    return current_app.extensions["queue"]
