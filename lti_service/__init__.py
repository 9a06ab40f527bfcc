"""Notebook assignments (Decode built in) as an LTI 1.3 tool: launches from Canvas or Moodle, uploads,
grading, passback."""

from __future__ import annotations

import logging

from flask import Flask, render_template
from sqlalchemy.exc import OperationalError
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge
from werkzeug.middleware.proxy_fix import ProxyFix

from .browser.site import load_site
from .config import MULTIPART_OVERHEAD, Config
from .jobs import Queue, build_queue
from .lti.errors import LaunchError
from .services import Services

log = logging.getLogger("lti_service")


def create_app(config: Config | None = None, services: Services | None = None, queue: Queue | None = None) -> Flask:
    """The Flask app; config from the environment by default (see Config)."""
    services = services or Services.from_config(config or Config())
    config = services.config
    app = Flask(__name__)
    app.config.update(
        SECRET_KEY=config.ensure_secret_key(),
        MAX_CONTENT_LENGTH=config.max_upload_bytes + MULTIPART_OVERHEAD,
    )
    app.extensions["services"] = services
    app.extensions["queue"] = queue or build_queue(services)
    app.extensions["lite"] = load_site(config.lite_site)
    if config.trust_proxy:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=1, x_proto=1, x_host=1, x_port=1, x_prefix=1)

    from .views import assignments, health, insights, lite, lti, moves, pages, staff, written

    for blueprint in (
        lti.bp,
        pages.bp,
        staff.bp,
        written.bp,
        insights.bp,
        assignments.bp,
        moves.bp,
        health.bp,
        lite.bp,
    ):
        app.register_blueprint(blueprint)
    app.add_template_filter(_number, "number")
    app.add_template_filter(_counted, "counted")
    app.add_template_filter(lambda status: pages.STATUS_WORDS.get(status, status), "status_words")
    app.register_error_handler(LaunchError, _launch_error)
    app.register_error_handler(RequestEntityTooLarge, _too_large)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(OperationalError, _database_unavailable)
    app.after_request(_security_headers)
    return app


def _number(value: float | None, digits: int = 2) -> str:
    """16.0 -> "16", 14.5 -> "14.5", 0.3333 -> "0.33"; None -> "–"."""
    return "–" if value is None else f"{round(value, digits):g}"


def _counted(count: int, noun: str) -> str:
    """(1, "question") -> "1 question", (3, "question") -> "3 questions"."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _launch_error(error: LaunchError):
    log.warning(
        "launch refused",
        extra={"event": "launch_refused", "code": error.code, "detail": error.detail[:300]},
    )
    return render_template("error.html", error=error), error.status


def _too_large(_error):
    from flask import request

    limit = request.max_content_length - MULTIPART_OVERHEAD
    return render_template(
        "too_large.html", limit_mb=limit / 1024 / 1024, assignment=request.blueprint == "assignments"
    ), 413


HTTP_HEADINGS = {400: "This request could not be used", 403: "This page is not available to you",
                 404: "Page not found", 405: "This page does not take that request",
                 429: "Too many requests at once"}  # fmt: skip
"""headings in the reader's words; the status code's own name ("Forbidden") for the others"""


def _http_error(error: HTTPException):
    """Other 4xx/5xx (an expired page, a staff page opened by a student...) in the tool's own page."""
    heading = HTTP_HEADINGS.get(error.code or 0, error.name)
    return render_template("message.html", heading=heading, message=error.description), error.code


def _database_unavailable(error: OperationalError):
    """The database is restarting or unreachable: say so (503, try again) rather than a bare 500."""
    log.warning("database unavailable", extra={"event": "database_unavailable", "detail": str(error)[:300]})
    message = (
        "The grader's database did not answer just now. Try again in a minute; if you were uploading your "
        "notebook, upload it again (a notebook sent twice counts once)."
    )
    return render_template("message.html", heading="Try again in a minute", message=message), 503, {"Retry-After": "30"}


def _security_headers(response):
    """Frameable only by registered platforms; scripts only from this tool (unless a view set its own policy:
    the notebook in the browser, views/lite.py); a launch's pages and files never kept in the browser's cache."""
    from flask import current_app, request

    origins = current_app.extensions["services"].platforms.frame_origins()
    response.headers.setdefault(
        "Content-Security-Policy",
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "form-action *; base-uri 'none'; object-src 'none'; "
        f"frame-ancestors 'self' {' '.join(origins)}".strip(),
    )
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    if request.path.startswith("/a/"):  # a student's pages and files: nothing left in a shared browser
        response.headers.setdefault("Cache-Control", "no-store")
    return response
