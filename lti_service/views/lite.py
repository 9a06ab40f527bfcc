"""The notebook in the browser, per launch. /lite/<launch_id>/ is the JupyterLite site as that launch
sees it: its configuration (where the work is kept, which packages load) and its files (the handout) are
the launch's; the site's own files are the same for everyone, so they are redirected to /lite/site/<build>/
and cached there. The launch id in the URL is the capability, as on the assignment pages. See lite.py.

The site runs in a window of its own (first party): inside the LMS's frame, browsers that block
third-party storage refuse JupyterLite its service worker and storage.
"""

from __future__ import annotations

import copy
import functools
import hmac
from dataclasses import dataclass
from urllib.parse import unquote

from flask import Blueprint, Response, abort, current_app, redirect, request, send_file, url_for
from markupsafe import Markup

from ..assignments import catalog
from ..db import AssignmentVersion, Launch
from ..links import versions
from ..lite import BrowserFit, Site, cdn_lock, handout_files, listing, notebook_path, storage_name
from . import services, site
from .launches import csrf_token, current_launch
from .pages import NotTaken, offer, take_notebook

bp = Blueprint("lite", __name__, url_prefix="/lite")
APP_PAGES = ("lab/", "lab/index.html", "notebooks/", "notebooks/index.html")
"""the pages that get the grading panel"""
SCOPED = ("service-worker.js",)
"""served within the launch's path: a service worker's script may not be redirected, and its path is its scope"""
KERNEL = "@jupyterlite/pyodide-kernel-extension:kernel"
PYODIDE = "static/pyodide/"
"""Pyodide's folder in the site: its core, its lock and every wheel"""
YEAR = 365 * 24 * 3600
NO_STORE = {"Cache-Control": "no-store"}


def _policy(cdn: str) -> str:
    """JupyterLite compiles WebAssembly, evaluates bundles and injects styles; it is never framed."""
    return (
        f"default-src 'self'; script-src 'self' 'unsafe-inline' 'unsafe-eval' 'wasm-unsafe-eval' {cdn}; "
        f"style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; "
        f"worker-src 'self' blob:; connect-src 'self' {cdn}; frame-ancestors 'none'; base-uri 'self'; "
        "object-src 'none'; form-action 'self'"
    )


@bp.after_request
def _security_headers(response: Response) -> Response:
    cdn = services().config.lite_pyodide_url
    response.headers["Content-Security-Policy"] = _policy(_origin(cdn) if cdn else "")
    return response


def _origin(url: str) -> str:
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{rest.split('/')[0]}"


@dataclass(frozen=True)
class InBrowser:
    """A launch whose assignment runs in the browser, with what its site is made of."""

    launch: Launch
    version: AssignmentVersion
    site: Site
    fit: BrowserFit
    files: dict[str, bytes]
    """the handout's files by path"""


def _launch(launch_id: str) -> InBrowser:
    """The launch behind a request; 404 where its assignment does not run in the browser."""
    launch = current_launch(launch_id)
    version = versions.version_for(services(), launch)
    fit = offer(launch, version.requirements)
    if fit is None or not fit.runs:
        abort(404, "This assignment does not open in the browser: download the notebook from its page instead.")
    files = _files(services().config.sqlalchemy_url, version.id, version.handout_name)
    return InBrowser(launch, version, site(), fit, files)


@functools.lru_cache(maxsize=16)
def _files(database: str, version_id: int, handout_name: str) -> dict[str, bytes]:
    """A version's handout, unpacked once (versions never change)."""
    return handout_files(catalog.handout(services().db, version_id), handout_name)


@bp.get("/<launch_id>/")
def open_notebook(launch_id: str):
    """Where "Open in the browser" leads: the handout's notebook in JupyterLite's notebook page."""
    files = _launch(launch_id).files
    page = url_for("lite.site_file", launch_id=launch_id, name="notebooks/index.html", path=notebook_path(files))
    return redirect(page, 303)


@bp.get("/<launch_id>/jupyter-lite.json")
def config(launch_id: str):
    """The site's configuration with this launch's: the browser store of this student's work on this link,
    the app on `window` (for the grading panel), and the packages the kernel loads."""
    opened = _launch(launch_id)
    launch = opened.launch
    data = copy.deepcopy(opened.site.config)
    page = data["jupyter-config-data"]
    link = (launch.platform_id, launch.context_id, launch.resource_link_id)
    store = storage_name(current_app.config["SECRET_KEY"], launch.user_id, link)
    page.update(contentsStorageName=store, settingsStorageName=f"{store}-settings", exposeAppInBrowser="true")
    page["appName"] = opened.version.title
    kernel = page.setdefault("litePluginSettings", {}).setdefault(KERNEL, {})
    kernel["disablePyPIFallback"] = True
    options = {**kernel.get("loadPyodideOptions", {}), "packages": list(opened.fit.packages)}
    cdn = services().config.lite_pyodide_url
    if cdn:  # Pyodide and its own packages from the CDN; the lock, with Otter's wheels, from here
        kernel["pyodideUrl"] = cdn.rstrip("/") + "/pyodide.js"
        options["lockFileURL"] = url_for("lite.lock_for_cdn", build_id=opened.site.build_id)
    else:
        kernel["pyodideUrl"] = url_for("lite.shared", build_id=opened.site.build_id, name=PYODIDE + "pyodide.js")
    kernel["loadPyodideOptions"] = options
    return data, NO_STORE


@bp.get("/site/<build_id>/cdn-lock.json")
def lock_for_cdn(build_id: str):
    """The site's lock for browsers that load Pyodide from LITE_PYODIDE_URL (see lite.cdn_lock)."""
    built = site()
    if built is None or build_id != built.build_id:
        abort(404)
    files = url_for("lite.shared", build_id=build_id, name=PYODIDE, _external=True)
    return cdn_lock(built, files), {"Cache-Control": f"public, max-age={YEAR}, immutable"}


@bp.get("/<launch_id>/api/contents/all.json", defaults={"directory": ""})
@bp.get("/<launch_id>/api/contents/<path:directory>/all.json")
def contents(launch_id: str, directory: str):
    """The handout's files as JupyterLite lists them (what the student starts from)."""
    opened = _launch(launch_id)
    model = listing(opened.files, directory, opened.version.created_at)
    if model is None:
        abort(404)
    return model, NO_STORE


@bp.get("/<launch_id>/files/<path:name>")
def handout_file(launch_id: str, name: str):
    data = _launch(launch_id).files.get(name)
    if data is None:
        abort(404)
    return Response(data, mimetype="application/octet-stream", headers=NO_STORE)


@bp.get("/<launch_id>/<path:name>")
def site_file(launch_id: str, name: str):
    """The app's pages (with the grading panel) and its service worker from here; every other file of the
    site (a page open loads about a hundred) from its shared, cached address, with only the launch checked."""
    if name in APP_PAGES:
        opened = _launch(launch_id)
        return _app_page(opened.launch, opened.site, name.removesuffix("index.html") + "index.html")
    current_launch(launch_id)
    built = site()
    if built is None:
        abort(404)
    if name in SCOPED and (path := built.file(name)):
        return send_file(path, max_age=0)
    response = redirect(url_for("lite.shared", build_id=built.build_id, name=name), 308)
    response.headers["Cache-Control"] = "private, max-age=86400"
    return response


def _app_page(launch: Launch, built: Site, name: str) -> Response:
    page = (built.root / name).read_text()
    data = {
        "submit": url_for("lite.submit", launch_id=launch.id),
        "attempts": url_for("pages.attempts_json", launch_id=launch.id),
        "csrf": csrf_token(launch),
        "maxBytes": services().config.max_upload_bytes,
    }
    panel = Markup(
        '<script id="grader-data" type="application/json">{}</script>'
        '<link rel="stylesheet" href="{}"><script src="{}" defer></script>'
    ).format(
        Markup(current_app.json.dumps(data).replace("<", "\\u003c")),
        url_for("static", filename="lite.css"),
        url_for("static", filename="lite.js"),
    )
    return Response(page.replace("</head>", f"{panel}</head>", 1), mimetype="text/html", headers=NO_STORE)


@bp.get("/site/<build_id>/<path:name>")
def shared(build_id: str, name: str):
    """The site's files, the same for every launch: cached for a year (the build id changes with them)."""
    built = site()
    path = built.file(name) if built is not None and build_id == built.build_id else None
    if path is None:
        abort(404)
    response = send_file(path, max_age=YEAR, conditional=True)
    response.headers["Cache-Control"] = f"public, max-age={YEAR}, immutable"
    return response


@bp.post("/<launch_id>/submit")
def submit(launch_id: str):
    """The grading panel sends the open notebook here; it becomes an attempt exactly as an upload does. The
    CSRF token comes in a header, which another site's page cannot set."""
    launch = current_launch(launch_id)
    if not hmac.compare_digest(request.headers.get("X-CSRF-Token", ""), csrf_token(launch)):
        abort(400, "The notebook was not sent from this page, or the page is too old. Reload it and try again.")
    name = unquote(request.headers.get("X-Notebook-Name", ""))[:300] or "notebook.ipynb"
    try:
        attempt, new = take_notebook(launch, name, request.get_data(cache=False))
    except NotTaken as refused:
        return {"error": str(refused)}, 400
    return {"attempt": attempt.id, "number": attempt.number, "new": new}
