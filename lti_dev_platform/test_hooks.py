"""Test hooks under /_test/ (only registered with settings.test_hooks): observe state and inject failures."""

from __future__ import annotations

import typing as t
from dataclasses import asdict

from flask import Blueprint, Response, jsonify, request

from lti_dev_platform.platform import platform
from lti_dev_platform.services import json_error

bp = Blueprint("test_hooks", __name__, url_prefix="/_test")


@bp.get("/state")
def state() -> Response:
    return jsonify(platform().state.snapshot())


@bp.get("/gradebook/<resource_link_id>")
def gradebook(resource_link_id: str) -> Response:
    return jsonify(platform().state.gradebook(resource_link_id))


@bp.post("/reset")
def reset() -> Response:
    """Forget courses, grades, counters and seen jtis; the registered tool stays."""
    platform().state.reset()
    return jsonify({"ok": True})


@bp.post("/fail-scores")
def fail_scores() -> Response:
    """The next ``count`` score POSTs answer ``status`` (default 500), to test the tool's retries, with
    ``message`` as the error's description (another LMS's wording, e.g. Moodle's "Incorrect score received")."""
    body: dict[str, t.Any] = request.get_json(force=True, silent=True) or {}
    p = platform()
    with p.state.lock:
        p.state.fail_scores = {
            "count": int(body.get("count", 1)),
            "status": int(body.get("status", 500)),
            "message": str(body.get("message", "injected failure (test hook)")),
        }
        return jsonify(p.state.fail_scores)


@bp.post("/outage")
def outage() -> Response:
    """Until called again with ``status`` null, the token, AGS and NRPS endpoints (or only those named in
    ``endpoints``, e.g. ``["lineitem"]``) answer ``status`` (default 503): an LMS in maintenance, or one
    failing in part."""
    body: dict[str, t.Any] = request.get_json(force=True, silent=True) or {}
    status = body.get("status", 503)
    p = platform()
    with p.state.lock:
        p.state.outage = None if status is None else {"status": int(status), "endpoints": body.get("endpoints")}
        return jsonify({"outage": p.state.outage})


@bp.before_app_request
def _answer_outage() -> Response | None:
    outage = platform().state.outage
    if request.blueprint != "services" or outage is None:
        return None
    if outage["endpoints"] is not None and request.endpoint.split(".", 1)[1] not in outage["endpoints"]:
        return None
    return json_error(outage["status"], "the platform is in maintenance (test hook)", error="server_error")


@bp.post("/enrol")
def enrol() -> Response:
    """Enrol learners by their sub (``{"users": ["student-0001", ...]}``): many distinct students for load tests."""
    body: dict[str, t.Any] = request.get_json(force=True, silent=True) or {}
    users = body.get("users")
    if not isinstance(users, list) or not all(isinstance(u, str) and u for u in users):
        return json_error(400, "users must be a list of user ids")
    platform().state.enrol(users)
    return jsonify({"enrolled": len(users)})


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
    """Create a resource link, optionally without a line item (as when grading is off in the LMS) and with
    less AGS ("ags": "sync" without column management, "none" without the AGS claim). Its "title" is the
    activity's name in launches (default "Activity <id>"; "": launches send none)."""
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
        if body.get("ags") in ("full", "sync", "none"):
            link.ags = body["ags"]
        if "due_at" in body:
            link.due_at = body["due_at"]
        if isinstance(body.get("custom"), dict):
            link.custom = dict(body["custom"])
        return jsonify({"context_id": link.context_id, "resource_link_id": link.id, "line_item_id": link.line_item_id})


@bp.post("/line-item")
def line_item() -> Response:
    """A line item for a resource link that its launches do not name (as when a tool created it earlier)."""
    body: dict[str, t.Any] = request.get_json(force=True, silent=True) or {}
    p = platform()
    with p.state.lock:
        item = p.state.add_line_item(
            body.get("context_id", "decode-101"),
            body.get("label", "Existing column"),
            float(body.get("score_maximum", 16)),
            attach=False,
            resource_link_id=body.get("resource_link_id"),
            tag=body.get("tag"),
        )
        return jsonify(asdict(item))


@bp.post("/publish")
def publish() -> Response:
    """Publish (``"published": true``, the default) or unpublish the line item of ``resource_link_id`` (or
    ``line_item_id``): while unpublished its scores are refused as Canvas refuses them, 422 "This
    assignment is still unpublished"."""
    body: dict[str, t.Any] = request.get_json(force=True, silent=True) or {}
    p = platform()
    with p.state.lock:
        items = [
            item
            for item in p.state.line_items.values()
            if item.id == body.get("line_item_id") or item.resource_link_id == body.get("resource_link_id")
        ]
        if not items:
            return json_error(404, "no line item of that resource link or id")
        for item in items:
            item.published = bool(body.get("published", True))
        return jsonify({"line_items": [item.id for item in items], "published": items[0].published})


@bp.post("/enrolment")
def enrolment() -> Response:
    """Conclude (``"status": "concluded"``) or reactivate (``"active"``) a user's enrolment: while concluded
    the roster leaves them out and their scores are refused as Canvas does, 422 "User not found in course
    or is not a student"."""
    body: dict[str, t.Any] = request.get_json(force=True, silent=True) or {}
    user, status = body.get("user"), body.get("status")
    if not isinstance(user, str) or status not in ("concluded", "active"):
        return json_error(400, 'user (a sub) and status ("concluded" or "active") are required')
    p = platform()
    with p.state.lock:
        if status == "concluded":
            p.state.concluded.add(user)
        else:
            p.state.concluded.discard(user)
        return jsonify({"user": user, "status": status})


@bp.post("/delete-line-item")
def delete_line_item() -> Response:
    """Delete the line item of ``resource_link_id`` (as a teacher deleting the gradebook column): its
    scores URL answers 404."""
    body: dict[str, t.Any] = request.get_json(force=True, silent=True) or {}
    p = platform()
    with p.state.lock:
        gone = [i.id for i in p.state.line_items.values() if i.resource_link_id == body.get("resource_link_id")]
        for item_id in gone:
            del p.state.line_items[item_id]
        return jsonify({"deleted": gone})


CONFIGURABLE = {
    "storage_target": (str, type(None)),
    "short_nrps_roles": (bool,),
    "lineitems_delay": (int, float),
    "nrps_delay": (int, float),
    "product_family_code": (str,),
}


@bp.post("/config")
def config() -> Response:
    """Change how the platform behaves (the PlatformSettings named in CONFIGURABLE); answers all of them."""
    body: dict[str, t.Any] = request.get_json(force=True, silent=True) or {}
    wrong = [name for name, value in body.items() if not isinstance(value, CONFIGURABLE.get(name, ()))]
    if wrong:
        return json_error(400, f"cannot set {wrong}; settable: {sorted(CONFIGURABLE)}")
    settings = platform().settings
    for name, value in body.items():
        setattr(settings, name, value)
    return jsonify({name: getattr(settings, name) for name in CONFIGURABLE})


@bp.post("/service-base")
def service_base() -> Response:
    """Send launches whose AGS and NRPS URLs point at another base URL (null: back to this platform)."""
    body: dict[str, t.Any] = request.get_json(force=True, silent=True) or {}
    p = platform()
    with p.state.lock:
        p.state.service_base_url = body.get("url") or None
        return jsonify({"url": p.state.service_base_url})
