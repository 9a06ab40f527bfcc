"""For operators and their load balancers: /healthz (the process answers), /readyz (database, queue and
sandbox usable: 503 otherwise) and /metrics (Prometheus's text format, only with METRICS_TOKEN as a
bearer token; absent without one)."""

from __future__ import annotations

import hmac

from flask import Blueprint, Response, abort, current_app, jsonify, request

from ..monitoring import metrics, readiness

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz():
    return jsonify(status="ok")


@bp.get("/readyz")
def readyz():
    checks = readiness(current_app.extensions["services"], current_app.extensions["queue"])
    ready = all(state == "ok" for state in checks.values())
    return jsonify(ready=ready, **checks), 200 if ready else 503


@bp.get("/metrics")
def prometheus_metrics():
    token = current_app.extensions["services"].config.metrics_token
    given = request.headers.get("Authorization", "").removeprefix("Bearer ")
    if not token or not hmac.compare_digest(given.encode(), token.encode()):
        abort(404)
    body = metrics(current_app.extensions["services"], current_app.extensions["queue"])
    return Response(body, mimetype="text/plain; version=0.0.4; charset=utf-8")
