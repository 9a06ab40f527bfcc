"""Assignments course staff upload in the browser.

The upload stores its files with a build row (AssignmentBuild) and queues a job; the job builds and checks
them (building.py) on a worker and stores the new assignment or version for the course; the page follows
the build's steps until it shows what it found, or why nothing was stored. The uploaded files are dropped
when the build ends. A worker's poll runs a build whose task was lost, and fails one whose worker vanished
(BUILD_DEADLINE after it started: an upload is built once).
"""

from __future__ import annotations

import datetime as dt
import io
import logging
import zipfile

from sqlalchemy import select, update

from autograder.assignment import check_sizes

from ..db import Assignment, AssignmentBuild, AssignmentVersion, utcnow
from ..services import Services
from . import catalog
from .building import BuildError, from_master, from_zip
from .catalog import CatalogError, Scope

log = logging.getLogger("lti_service.assignments")
BUILD_DEADLINE = dt.timedelta(minutes=30)  # otter assign, installing packages and grading the solution
SOURCES = {"master": "master notebook", "zip": "autograder zip"}


def pack(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()


def _unpack(data: bytes) -> dict[str, bytes]:
    """What `pack` stored: its members are not compressed, so together they unpack to no more than `data`."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        check_sizes(archive.infolist(), len(data), len(data))
        return {name: archive.read(name) for name in archive.namelist()}


def create(services: Services, scope: Scope, created_by: str, kind: str, files: dict[str, bytes], title: str = "",
           assignment_id: int | None = None) -> AssignmentBuild:  # fmt: skip
    """Store an upload for building. `files`: for "master", master/<name> and files/<path>; for "zip",
    autograder.zip and student/<name>."""
    with services.db.session() as session:
        build = AssignmentBuild(
            platform_id=scope.platform_id, context_id=scope.context_id, assignment_id=assignment_id, kind=kind,
            title=title[:300], inputs=pack(files), created_by=created_by[:400], step="waiting for a worker",
        )  # fmt: skip
        session.add(build)
    return build


def get(services: Services, scope: Scope, build_id: int) -> AssignmentBuild | None:
    """A build of this course (None for another course's)."""
    with services.db.session() as session:
        build = session.get(AssignmentBuild, build_id)
    return build if build is not None and Scope(build.platform_id, build.context_id) == scope else None


def run(services: Services, build_id: int) -> None:
    """The job: build, check and store the upload, recording each step (once, whatever retries happen)."""
    now = utcnow()
    with services.db.session() as session:
        claimed = session.execute(
            update(AssignmentBuild)
            .filter_by(id=build_id, status="queued")
            .values(status="running", deadline=now + BUILD_DEADLINE, step="starting")
        )
        if claimed.rowcount != 1:
            return
        build = session.get(AssignmentBuild, build_id)
        inputs = _unpack(build.inputs)
    try:
        version = _store(services, build, _built(build, inputs, lambda step: _set(services, build_id, step=step)))
    except (BuildError, CatalogError) as error:
        _set(services, build_id, status="failed", error=str(error), inputs=None, step="")
        return
    except Exception:
        log.exception("assignment build %s failed", build_id)
        _set(services, build_id, status="failed", inputs=None, step="",
             error="the build failed unexpectedly (the tool's log says why); upload the files again")  # fmt: skip
        return
    _set(services, build_id, status="done", version_id=version.id, inputs=None, step="")


def _built(build: AssignmentBuild, inputs: dict[str, bytes], progress):
    if build.kind == "master":
        ((master_name, master),) = [
            (n.removeprefix("master/"), d) for n, d in inputs.items() if n.startswith("master/")
        ]
        files = {n.removeprefix("files/"): d for n, d in inputs.items() if n.startswith("files/")}
        return from_master(master_name, master, files, progress)
    ((student_name, student),) = [
        (n.removeprefix("student/"), d) for n, d in inputs.items() if n.startswith("student/")
    ]
    return from_zip(inputs["autograder.zip"], student, student_name, progress)


def _store(services: Services, build: AssignmentBuild, built) -> AssignmentVersion:
    scope, source = Scope(build.platform_id, build.context_id), SOURCES[build.kind]
    if build.assignment_id is None:
        return catalog.add(services.db, built, scope, build.title, source, build.created_by)
    with services.db.session() as session:
        assignment = session.get(Assignment, build.assignment_id)
    if assignment is None or assignment.scope != scope.key:
        raise CatalogError("only the course's own assignments can be updated from its pages")
    return catalog.add_version(services.db, assignment.id, built, build.title, source, build.created_by)


def _set(services: Services, build_id: int, **values) -> None:
    with services.db.session() as session:
        session.execute(update(AssignmentBuild).filter_by(id=build_id).values(**values))


def unclaimed(services: Services, queued_for: dt.timedelta) -> int | None:
    """The oldest build waiting longer than `queued_for` (its task may be lost), for a worker's poll."""
    with services.db.session() as session:
        oldest = session.execute(
            select(AssignmentBuild.id, AssignmentBuild.created_at)
            .where(AssignmentBuild.status == "queued")
            .order_by(AssignmentBuild.id)
            .limit(1)
        ).first()
    return oldest.id if oldest is not None and oldest.created_at < utcnow() - queued_for else None


def fail_abandoned(services: Services) -> None:
    """Builds whose worker vanished (running past their deadline) end as failed (a worker's housekeeping)."""
    with services.db.session() as session:
        session.execute(
            update(AssignmentBuild)
            .where(AssignmentBuild.status == "running", AssignmentBuild.deadline < utcnow())
            .values(status="failed", inputs=None, step="",
                    error="the worker building it stopped before it finished: upload the files again")
        )  # fmt: skip


def recent(services: Services, scope: Scope, limit: int = 5) -> list[AssignmentBuild]:
    with services.db.session() as session:
        return list(
            session.scalars(
                select(AssignmentBuild)
                .filter_by(platform_id=scope.platform_id, context_id=scope.context_id)
                .order_by(AssignmentBuild.id.desc())
                .limit(limit)
            )
        )
