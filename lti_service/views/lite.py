"""The notebook in the browser, per window. The student's page posts a form to /lite/open (the launch travels
in the form, never in a URL a browser keeps); the answer signs a new window in with a cookie scoped to
/lite/w/<window id>/ and leads there (windows.py). Under that path is the JupyterLite site as that launch
sees it: its configuration (which packages load; the browser keeps the work in memory only) and its files
(the handout, with the student's saved work over it, which the window's panel saves back: never over a newer
save of another window); the site's own files are the same for everyone, so they are redirected to
/lite/site/<build>/ and cached there. See browser/site.py.

The site runs in a window of its own (first party): inside the LMS's frame, browsers that block
third-party storage refuse JupyterLite its service worker and storage.
"""

from __future__ import annotations

import copy
import datetime as dt
import functools
import hashlib
import hmac
import re
import zipfile
from dataclasses import dataclass
from urllib.parse import unquote

from flask import Blueprint, Response, abort, current_app, redirect, render_template, request, send_file, url_for
from markupsafe import Markup

from ..assignments import catalog, versions
from ..browser import windows
from ..browser.site import BrowserFit, Handout, Site, cdn_lock, legacy_store, listing, notebook_path, open_handout
from ..db import AssignmentVersion, Launch
from ..rules.settings import link_key
from ..submissions.uploads import NotTaken, take_notebook
from . import grade_later, services, site
from .launches import check_csrf, current_launch
from .pages import attempts_json_for, offer

bp = Blueprint("lite", __name__, url_prefix="/lite")
APP_PAGES = ("lab/", "lab/index.html", "notebooks/", "notebooks/index.html")
"""the pages that get the grading panel"""
SCOPED = ("service-worker.js",)
"""served within the window's path: a service worker's script may not be redirected, and its path is its scope"""
KERNEL = "@jupyterlite/pyodide-kernel-extension:kernel"
PYODIDE = "static/pyodide/"
"""Pyodide's folder in the site: its core, its lock and every wheel"""
YEAR = 365 * 24 * 3600
NO_STORE = {"Cache-Control": "no-store"}
MEMORY_ONLY = ["memoryStorageDriver"]
"""JupyterLite keeps contents and settings in the page's memory: nothing of a student's in the browser's storage"""
COOKIE = "lite-"
SIGNED_OUT = (
    "This notebook window is signed out. On a shared computer a window signs out when it is closed, after "
    f"{windows.IDLE.seconds // 60} minutes without use, or when you leave the computer. Open the assignment "
    "again from your course and choose “Open in the browser”: your saved work is there."
)


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
    """A signed-in window whose assignment runs in the browser, with what its site is made of."""

    window_id: str
    launch: Launch
    version: AssignmentVersion
    site: Site
    fit: BrowserFit
    handout: Handout


def _browser(launch: Launch) -> tuple[AssignmentVersion, BrowserFit, Handout]:
    """The launch's assignment version, how it runs in the browser and its handout; 404 where it does not."""
    version = versions.version_for(services(), launch)
    fit = offer(launch, version.requirements)
    runs = fit is not None and fit.runs
    handout = _handout(services().config.sqlalchemy_url, version.id, version.handout_name) if runs else None
    if fit is None or handout is None:
        abort(404, "This assignment does not open in the browser: download the notebook from its page instead.")
    return version, fit, handout


def _signed_in(window_id: str) -> Launch:
    """The launch of the window behind a request, from its cookie; 401 for a window signed out."""
    token = request.cookies.get(COOKIE + window_id)
    launch = windows.signed_in(services().db, window_id, token)
    if launch is None:
        if request.accept_mimetypes.accept_html and request.method == "GET":
            abort(Response(render_template("message.html", heading="Signed out", message=SIGNED_OUT), 401))
        abort(Response(current_app.json.dumps({"error": SIGNED_OUT}), 401, mimetype="application/json"))
    return launch


def _window(window_id: str) -> InBrowser:
    launch = _signed_in(window_id)
    version, fit, handout = _browser(launch)
    return InBrowser(window_id, launch, version, site(), fit, handout)


def _window_csrf(window_id: str) -> str:
    key = current_app.config["SECRET_KEY"].encode()
    return hmac.new(key, f"lite:{window_id}".encode(), hashlib.sha256).hexdigest()


def _check_header(window_id: str) -> Launch:
    """A request of the window's own panel: signed in, and with the page's token in a header, which another
    site's page cannot set."""
    launch = _signed_in(window_id)
    if not hmac.compare_digest(request.headers.get("X-CSRF-Token", ""), _window_csrf(window_id)):
        abort(400, "The request was not sent from this page, or the page is too old. Reload it and try again.")
    return launch


@functools.lru_cache(maxsize=4)
def _handout(database: str, version_id: int, handout_name: str) -> Handout | None:
    """A version's handout, read once (versions never change; a handout is at most MAX_ASSIGNMENT_BYTES as
    stored, and its files are unpacked one at a time); None for one past the bounds (lite.open_handout)."""
    try:
        return open_handout(catalog.handout(services().db, version_id), handout_name)
    except (ValueError, zipfile.BadZipFile):
        return None


@bp.post("/open")
def open_window():
    """Where "Open in the browser" posts: a new window signed in for the launch in the form, led to the
    handout's notebook. Nothing of the launch is in any URL of the window."""
    launch = current_launch(request.form.get("launch", ""), cookie_path=False)
    check_csrf(launch)
    notebook = notebook_path(_browser(launch)[2].sizes)
    opened = windows.open_window(services().db, launch)
    page = url_for("lite.site_file", window_id=opened.window_id, name="notebooks/index.html", path=notebook)
    response = redirect(page, 303)
    response.set_cookie(
        COOKIE + opened.window_id,
        opened.token,
        path=f"/lite/w/{opened.window_id}/",
        httponly=True,
        secure=request.is_secure,
        samesite="Lax",
    )
    response.headers.update(NO_STORE)
    return response


@bp.get("/w/<window_id>/")
def window_root(window_id: str):
    """The window's own address: its notebook."""
    path = notebook_path(_window(window_id).handout.sizes)
    return redirect(url_for("lite.site_file", window_id=window_id, name="notebooks/index.html", path=path), 303)


@bp.get("/w/<window_id>/jupyter-lite.json")
def config(window_id: str):
    """The site's configuration with this window's: contents and settings kept in the page's memory only (the
    tool keeps the work: drafts) and no service worker cache (Cache Storage is the origin's, not the student's),
    the app on `window` (for the grading panel), the packages the kernel loads."""
    opened = _window(window_id)
    data = copy.deepcopy(opened.site.config)
    page = data["jupyter-config-data"]
    page.update(
        enableMemoryStorage=True,
        contentsStorageDrivers=MEMORY_ONLY,
        settingsStorageDrivers=MEMORY_ONLY,
        contentsStorageName=f"window-{window_id}",
        settingsStorageName=f"window-{window_id}-settings",
        exposeAppInBrowser="true",
        appName=opened.version.title,
        enableServiceWorkerCache="false",  # its cache would answer the window's files from any origin's writes
    )
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


def _work(opened: InBrowser) -> dict[str, tuple[int, dt.datetime]]:
    """The files the window starts from, with their sizes and when they last changed: the handout, with the
    student's saved work over it."""
    added = opened.version.created_at
    drafts = windows.drafts(services().db, opened.launch)
    return {
        **{path: (size, added) for path, size in opened.handout.sizes.items()},
        **{path: (saved.size, saved.saved_at) for path, saved in drafts.items()},
    }


@bp.get("/w/<window_id>/api/contents/all.json", defaults={"directory": ""})
@bp.get("/w/<window_id>/api/contents/<path:directory>/all.json")
def contents(window_id: str, directory: str):
    """The files as JupyterLite lists them (what the window starts from)."""
    opened = _window(window_id)
    model = listing(_work(opened), directory)
    if model is None:
        abort(404)
    return model, NO_STORE


@bp.get("/w/<window_id>/files/<path:name>")
def handout_file(window_id: str, name: str):
    opened = _window(window_id)
    data = windows.draft(services().db, opened.launch, name)
    data = opened.handout.read(name) if data is None else data
    if data is None:
        abort(404)
    return Response(data, mimetype="application/octet-stream", headers=NO_STORE)


@bp.put("/w/<window_id>/drafts/<path:name>")
def save_draft(window_id: str, name: str):
    """The panel saves a file of the student's work here each time JupyterLite saves it (every few seconds),
    with the revision the window last saw of it (X-Draft-Base): 409 when another window saved it since."""
    launch = _check_header(window_id)
    limit = services().config.max_upload_bytes
    if (request.content_length or 0) > limit:
        return {"error": f"This file is larger than the {limit / 2**20:.1f} MB the tool keeps. Nothing was saved."}, 413
    try:
        saved = windows.save_draft(services().db, launch, name, request.get_data(cache=False), limit, _base())
    except windows.DraftRefused as refused:
        return _refused(refused)
    return {"saved": saved.at.strftime("%H:%M:%S UTC"), "revision": saved.revision}, NO_STORE


@bp.delete("/w/<window_id>/drafts/<path:name>")
def delete_draft(window_id: str, name: str):
    try:
        saved = windows.delete_draft(services().db, _check_header(window_id), name, _base())
    except windows.DraftRefused as refused:
        return _refused(refused)
    return {"deleted": name, "revision": saved.revision}, NO_STORE


@bp.put("/w/<window_id>/recovered/<path:name>")
def recover(window_id: str, name: str):
    """The panel hands over here, once, each file an earlier version of the tool left in this browser (see
    lite.legacy_store). Anything of the origin could have written them, so they are kept beside the student's
    work, never over it; nothing is kept of a file the same as the student's."""
    launch = _check_header(window_id)
    handout = _browser(launch)[2]
    limit = services().config.max_upload_bytes
    if (request.content_length or 0) > limit:
        return {"error": f"This file is larger than the {limit / 2**20:.1f} MB the tool keeps."}, 413
    content = request.get_data(cache=False)
    mine = windows.draft(services().db, launch, name)
    if content == (handout.read(name) if mine is None else mine):
        return {"kept": None}, NO_STORE
    try:
        kept = windows.recover(services().db, launch, name, content, limit)
    except windows.DraftRefused as refused:
        return _refused(refused)
    return {"kept": kept}, NO_STORE


def _base() -> int:
    """The revision of the student's drafts the window last saw (0, which any saved draft is newer than, for a
    request that does not say)."""
    base = request.headers.get("X-Draft-Base", "")
    return int(base) if re.fullmatch(r"[0-9]{1,15}", base) else 0


def _refused(refused: windows.DraftRefused) -> tuple[dict, int]:
    return {"error": str(refused)}, 409 if isinstance(refused, windows.DraftStale) else 400


@bp.post("/w/<window_id>/alive")
def alive(window_id: str):
    """The open window's heartbeat: it stays signed in while it is open (see windows.IDLE)."""
    _check_header(window_id)
    return {"alive": True}, NO_STORE


@bp.post("/w/<window_id>/closing")
def closing(window_id: str):
    """Sent as the window closes or reloads (a beacon: no custom header): signed out soon unless it comes back.
    Only a signed-in window may ask, and the cookie is SameSite=Lax: another site's page cannot send it."""
    _signed_in(window_id)
    windows.closing(services().db, window_id)
    return "", 204


@bp.post("/w/<window_id>/leave")
def leave(window_id: str):
    """The student leaves the computer: every window of the launch signed out, and the browser told to clear
    what the tool's pages keep on this computer (storage, service workers, cookies)."""
    launch = _check_header(window_id)
    windows.sign_out(services().db, launch)
    response = Response(current_app.json.dumps({"left": url_for("lite.left")}), mimetype="application/json")
    response.headers["Clear-Site-Data"] = '"storage", "cookies"'
    response.delete_cookie(COOKIE + window_id, path=f"/lite/w/{window_id}/")
    response.headers.update(NO_STORE)
    return response


@bp.get("/left")
def left():
    return render_template(
        "message.html",
        heading="You have left this notebook",
        message=(
            "This window is signed out and nothing of your work is kept on this computer: the tool keeps it. "
            "Close this window, and sign out of your course's site too before you leave the computer."
        ),
        done=True,
    )


@bp.get("/w/<window_id>/attempts.json")
def attempts(window_id: str):
    """The panel follows an attempt here (as the assignment page does), without the launch in the window."""
    return attempts_json_for(_signed_in(window_id))


@bp.get("/w/<window_id>/<path:name>")
def site_file(window_id: str, name: str):
    """The app's pages (with the grading panel) and its service worker from here; every other file of the
    site (a page open loads about a hundred) from its shared, cached address, once the window is signed in."""
    if name in APP_PAGES:
        opened = _window(window_id)
        return _app_page(opened, name.removesuffix("index.html") + "index.html")
    _signed_in(window_id)
    built = site()
    if built is None:
        abort(404)
    if name in SCOPED and (path := built.file(name)):
        return send_file(path, max_age=0)
    response = redirect(url_for("lite.shared", build_id=built.build_id, name=name), 308)
    response.headers["Cache-Control"] = "private, max-age=86400"
    return response


def _app_page(opened: InBrowser, name: str) -> Response:
    page = (opened.site.root / name).read_text()
    window = opened.window_id
    launch = opened.launch
    data = {
        "legacyStore": legacy_store(current_app.config["SECRET_KEY"], launch.user_id, link_key(launch)),
        "recover": url_for("lite.window_root", window_id=window) + "recovered/",
        "maxRecovered": windows.RECOVERED_FILES,
        "revision": windows.revision(services().db, launch),
        "submit": url_for("lite.submit", window_id=window),
        "attempts": url_for("lite.attempts", window_id=window),
        "drafts": url_for("lite.window_root", window_id=window) + "drafts/",
        "alive": url_for("lite.alive", window_id=window),
        "closing": url_for("lite.closing", window_id=window),
        "leave": url_for("lite.leave", window_id=window),
        "csrf": _window_csrf(window),
        "maxBytes": services().config.max_upload_bytes,
        "heartbeatMs": int(windows.HEARTBEAT.total_seconds() * 1000),
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


@bp.post("/w/<window_id>/submit")
def submit(window_id: str):
    """The grading panel sends the open notebook here; it becomes an attempt exactly as an upload does."""
    launch = _check_header(window_id)
    name = unquote(request.headers.get("X-Notebook-Name", ""))[:300] or "notebook.ipynb"
    try:
        attempt, new = take_notebook(services(), launch, name, request.get_data(cache=False), grade_later)
    except NotTaken as refused:
        return {"error": str(refused)}, 400
    return {"attempt": attempt.id, "number": attempt.number, "new": new}
