"""For operators and their load balancers: /healthz (the process answers), /readyz (database, queue and
sandbox usable: 503 otherwise, the reasons in the log) and /metrics (Prometheus's text format, only with
METRICS_TOKEN as a bearer token; absent without one)."""

from __future__ import annotations

import hmac
import logging

from flask import Blueprint, Response, abort, current_app, jsonify, request

from ..monitoring import metrics, readiness

bp = Blueprint("health", __name__)
log = logging.getLogger("lti_service.health")


@bp.get("/healthz")
def healthz():
    return jsonify(status="ok")


@bp.get("/readyz")
def readyz():
    """Which parts are usable; what is wrong with the others goes to the log (and `status`), not to whoever
    can reach this URL."""
    checks = readiness(current_app.extensions["services"], current_app.extensions["queue"])
    failing = {part: state for part, state in checks.items() if state != "ok"}
    if failing:
        log.warning("not ready", extra={"event": "not_ready", "detail": failing})
    parts = {part: "ok" if state == "ok" else "unavailable" for part, state in checks.items()}
    return jsonify(ready=not failing, **parts), 503 if failing else 200


@bp.get("/metrics")
def prometheus_metrics():
    token = current_app.extensions["services"].config.metrics_token
    given = request.headers.get("Authorization", "").removeprefix("Bearer ")
    if not token or not hmac.compare_digest(given.encode(), token.encode()):
        abort(404)
    body = metrics(current_app.extensions["services"], current_app.extensions["queue"])
    return Response(body, mimetype="text/plain; version=0.0.4; charset=utf-8")
