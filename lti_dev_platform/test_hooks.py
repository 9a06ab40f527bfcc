"""Test hooks under /_test/ (only registered with settings.test_hooks): observe state and inject failures."""

from __future__ import annotations

import typing as t

from flask import Blueprint, Response, jsonify, request

from lti_dev_platform.platform import platform
from lti_dev_platform.services import json_error

bp = Blueprint("test_hooks", __name__, url_prefix="/_test")


@bp.get("/state")
def state() -> Response:
    return jsonify(platform().state.snapshot())


@bp.post("/reset")
def reset() -> Response:
    """Forget courses, grades, counters and seen jtis; the registered tool stays."""
    platform().state.reset()
    return jsonify({"ok": True})


@bp.post("/fail-scores")
def fail_scores() -> Response:
    """The next ``count`` score POSTs answer ``status`` (default 500), to test the tool's retries."""
    body: dict[str, t.Any] = request.get_json(force=True, silent=True) or {}
    p = platform()
    with p.state.lock:
        p.state.fail_scores = {"count": int(body.get("count", 1)), "status": int(body.get("status", 500))}
        return jsonify(p.state.fail_scores)


@bp.post("/due-date")
def due_date() -> Response:
    """Set (or clear with null) a resource link's due_at, sent as the custom claim on its launches."""
    body: dict[str, t.Any] = request.get_json(force=True, silent=True) or {}
    if "resource_link_id" not in body:
        return json_error(400, "resource_link_id is required")
    p = platform()
    with p.state.lock:
        link = p.state.resource_link(body.get("context_id", "decode-101"), str(body["resource_link_id"]))
        link.due_at = body.get("due_at")
        return jsonify({"context_id": link.context_id, "resource_link_id": link.id, "due_at": link.due_at})


@bp.post("/resource-link")
def resource_link() -> Response:
    """Create a resource link, optionally without a line item (as when grading is off in the LMS)."""
    body: dict[str, t.Any] = request.get_json(force=True, silent=True) or {}
    if "resource_link_id" not in body:
        return json_error(400, "resource_link_id is required")
    p = platform()
    with p.state.lock:
        link = p.state.resource_link(
            body.get("context_id", "decode-101"),
            str(body["resource_link_id"]),
            title=body.get("title"),
            with_line_item=bool(body.get("line_item", True)),
        )
        if "due_at" in body:
            link.due_at = body["due_at"]
        if isinstance(body.get("custom"), dict):
            link.custom = dict(body["custom"])
        return jsonify({"context_id": link.context_id, "resource_link_id": link.id, "line_item_id": link.line_item_id})


@bp.post("/service-base")
def service_base() -> Response:
    """Send launches whose AGS and NRPS URLs point at another base URL (null: back to this platform)."""
    body: dict[str, t.Any] = request.get_json(force=True, silent=True) or {}
    p = platform()
    with p.state.lock:
        p.state.service_base_url = body.get("url") or None
        return jsonify({"url": p.state.service_base_url})
