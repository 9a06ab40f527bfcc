"""Course staff's own assignments: add one (a master notebook with its files, or an Otter autograder zip with
the student's notebook) or a new version of one, and follow its build to a report of what it found.

Scoped like the dashboard: staff of the launch's course (by their role in it), for that course only; what
they add is offered to that course's links only. COURSE_ASSIGNMENTS=0 leaves adding to operators (CLI).
"""

from __future__ import annotations

from flask import Blueprint, abort, jsonify, redirect, render_template, request, url_for

from ..assignments import builds, catalog
from ..assignments.building import BuildError, listed_files, master_config, match_uploads, notebook_filename
from ..assignments.summary import differences, questions_of
from ..browser.site import browser_fit
from ..config import MULTIPART_OVERHEAD
from ..db import AssignmentBuild, Launch
from . import queue, services, site
from .launches import adding_note, check_csrf, csrf_token, current_launch, may_add_assignments

bp = Blueprint("assignments", __name__, url_prefix="/a/<launch_id>/assignments")


def course_staff_launch(launch_id: str) -> Launch:
    launch = current_launch(launch_id)
    if not may_add_assignments(launch):
        abort(403, adding_note(launch) or "Adding assignments is for the course's staff.")
    return launch


def library_page(launch: Launch, error: str | None = None, status: int = 200):
    scope = catalog.course_scope(launch)
    own = [(a, catalog.versions(services().db, a.id)) for a in catalog.course_assignments(services().db, scope)]
    shared = [(a, v) for a, v in catalog.listing(services().db, scope) if not a.scope]
    page = render_template(
        "assignments.html", launch=launch, own=own, shared=shared, builds=builds.recent(services(), scope),
        csrf_token=csrf_token(launch), max_mb=services().config.max_assignment_bytes / 1024 / 1024, error=error,
    )  # fmt: skip
    return page, status


@bp.get("")
def library(launch_id: str):
    return library_page(course_staff_launch(launch_id))


@bp.post("")
def upload(launch_id: str):
    """Store the files for a background build; its page follows it. Missing or unlisted support files are
    refused at once (nothing stored)."""
    request.max_content_length = services().config.max_assignment_bytes + MULTIPART_OVERHEAD
    launch = course_staff_launch(launch_id)
    check_csrf(launch)
    scope = catalog.course_scope(launch)
    source = request.form.get("source", "")
    try:
        if source not in builds.SOURCES:
            raise BuildError("choose how to add the assignment: a master notebook, or an autograder zip")
        assignment_id = _own_assignment(scope, request.form.get("assignment_id", ""))
        files = _master_files(scope, new=assignment_id is None) if source == "master" else _zip_files()
    except (BuildError, catalog.CatalogError) as error:
        return _refused(launch, f"Nothing was stored: {error}.")
    created_by = f"{launch.user_name or launch.user_id} (course staff)"
    build = builds.create(services(), scope, created_by, source, files, request.form.get("title", "").strip(),
                          assignment_id)  # fmt: skip
    queue().submit(queue().build_assignment, build.id)
    page = url_for("assignments.build_page", launch_id=launch.id, build_id=build.id)
    return jsonify(url=page) if _wants_json() else redirect(page, 303)


def _own_assignment(scope: catalog.Scope, value: str) -> int | None:
    """The course's own assignment a new version is for (None: a new assignment)."""
    if not value:
        return None
    own = {str(a.id): a.id for a in catalog.course_assignments(services().db, scope)}
    if value not in own:
        raise BuildError("only this course's own assignments can get a new version here")
    return own[value]


def _master_files(scope: catalog.Scope, new: bool) -> dict[str, bytes]:
    """A master notebook and its support files, named as builds.create expects them; a new assignment's name
    must be free in the course."""
    (master, *_) = _uploads("master") or [None]
    if master is None:
        raise BuildError("choose the master notebook (.ipynb)")
    data = master.read()
    config = master_config(data)
    if new:
        catalog.refuse_taken(services().db, config["name"], scope)
    files = match_uploads(listed_files(config), {_basename(f.filename): f.read() for f in _uploads("files")})
    return {f"master/{notebook_filename(master.filename)}": data, **{f"files/{p}": d for p, d in files.items()}}


def _zip_files() -> dict[str, bytes]:
    """An autograder zip and the student's notebook (or a zip of their folder), named as builds.create expects."""
    (autograder, *_) = _uploads("autograder") or [None]
    (student, *_) = _uploads("student") or [None]
    if autograder is None or student is None:
        raise BuildError("choose both the autograder zip and the student notebook (or a zip of its folder)")
    name = _basename(student.filename)
    if not name.endswith((".ipynb", ".zip")):
        raise BuildError("the student's file must be a notebook (.ipynb) or a zip of the student's folder")
    return {"autograder.zip": autograder.read(), f"student/{name}": student.read()}


def _uploads(field: str) -> list:
    return [f for f in request.files.getlist(field) if f.filename]


def _basename(filename: str) -> str:
    return filename.replace("\\", "/").rsplit("/", 1)[-1]


def _wants_json() -> bool:
    """The page's script uploads with progress and asks for JSON; without scripts the form posts as usual."""
    return request.accept_mimetypes.best == "application/json"


def _refused(launch: Launch, message: str):
    if _wants_json():
        return jsonify(error=message), 400
    return library_page(launch, message, 400)


@bp.get("/builds/<int:build_id>")
def build_page(launch_id: str, build_id: int):
    launch = course_staff_launch(launch_id)
    build = _build(launch, build_id)
    return render_template("assignment_build.html", launch=launch, build=build, progress=_progress(build),
                           report=_report(build))  # fmt: skip


@bp.get("/builds/<int:build_id>.json")
def build_progress(launch_id: str, build_id: int):
    return _progress(_build(course_staff_launch(launch_id), build_id))


def _build(launch: Launch, build_id: int) -> AssignmentBuild:
    build = builds.get(services(), catalog.course_scope(launch), build_id)
    if build is None:
        abort(404)
    return build


def _progress(build: AssignmentBuild) -> dict:
    """What the page shows while it waits (app.js polls it, and reloads the page once the build ends)."""
    finished = build.status in ("done", "failed")
    text = {"done": "Done.", "failed": "The build failed: nothing was stored."}.get(
        build.status, f"Building: {build.step}…"
    )
    return {"id": build.id, "status": build.status, "finished": finished, "text": text}


def _report(build: AssignmentBuild) -> dict | None:
    """What the build found: the version stored, its questions and tests, and what changed from the previous."""
    if build.version_id is None:
        return None
    version = catalog.version(services().db, build.version_id)
    earlier = [v for v in catalog.versions(services().db, version.assignment_id) if v.number == version.number - 1]
    changes = differences(questions_of(earlier[0].questions), questions_of(version.questions)) if earlier else None
    built = site()
    browser = browser_fit(built, version.requirements) if built is not None else None
    return {
        "assignment": catalog.assignment_of(services().db, version),
        "version": version,
        "changes": changes,
        "browser": browser,
    }
