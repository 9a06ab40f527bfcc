"""The assignments a deployment grades, in versions: storing them, finding them, and who may use them.

An assignment is offered to every course (added by an operator with the CLI) or to one course of one
platform (added by its staff); names are unique among what one course can see. A version is never changed
once stored: an update adds the next one, and old versions stay (links pinned to them, attempts graded
against them). The files live in the database, so any worker on any machine can grade; a worker writes an
autograder zip to DATA_DIR/assignments/<sha256>.zip the first time it needs a path.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from ..db import Assignment, AssignmentLink, AssignmentVersion, Attempt, Database, utcnow
from ..services import Services
from .building import Built

OPERATOR = "an operator (command line)"


class CatalogError(ValueError):
    """A refused change (a duplicate name, another assignment's files, an unknown assignment); str() says why."""


@dataclass(frozen=True)
class Scope:
    """Who may use an assignment: every course (no platform), or one course of one platform."""

    platform_id: int | None = None
    context_id: str | None = None

    @property
    def key(self) -> str:
        return "" if self.platform_id is None else f"{self.platform_id}:{self.context_id}"

    def describe(self) -> str:
        return (
            "every course" if self.platform_id is None else f"course {self.context_id} of platform {self.platform_id}"
        )


EVERY_COURSE = Scope()


def course_scope(launch) -> Scope:
    return Scope(launch.platform_id, launch.context_id)


def visible_to(scope: Scope):
    """The SQL condition for the assignments a course may see and link: every course's and its own."""
    return Assignment.scope.in_(["", scope.key])


def version_values(built: Built, title: str, source: str, created_by: str) -> dict:
    """The columns of a new version (assignment_versions) holding what was built."""
    return dict(
        title=title[:300], points=built.summary.points, questions=built.summary.question_dicts(),
        requirements=built.summary.requirements, environment=built.environment,
        autograder_zip=built.autograder_zip, zip_sha256=hashlib.sha256(built.autograder_zip).hexdigest(),
        handout=built.handout, handout_name=built.handout_name[:300], source=source, created_by=created_by[:400],
        created_at=utcnow(), written_questions=[question.to_dict() for question in built.written],
    )  # fmt: skip


def refuse_taken(db: Database, name: str, scope: Scope) -> None:
    """CatalogError when a new assignment of the scope cannot have this name (a course would see two)."""
    with db.session() as session:
        taken = session.scalars(
            select(Assignment).where(Assignment.name == name, Assignment.scope.in_(["", scope.key]))
        ).first()
    if taken is not None:
        raise CatalogError(_taken(taken))


def add(db: Database, built: Built, scope: Scope, title: str, source: str, created_by: str) -> AssignmentVersion:
    """A new assignment, as its version 1; CatalogError when its name is taken where the course would see it."""
    name = built.summary.name
    refuse_taken(db, name, scope)
    try:
        with db.session() as session:
            assignment = Assignment(name=name, scope=scope.key, platform_id=scope.platform_id,
                                    context_id=scope.context_id)  # fmt: skip
            session.add(assignment)
            session.flush()
            version = AssignmentVersion(assignment_id=assignment.id, number=1, **version_values(
                built, title or built.title, source, created_by))  # fmt: skip
            session.add(version)
    except IntegrityError:  # added by someone else at the same moment
        raise CatalogError(f"an assignment named {name!r} was just added; update it instead") from None
    return version


def _taken(assignment: Assignment) -> str:
    where = "is offered to every course" if not assignment.scope else "exists in this course"
    return (
        f"an assignment named {assignment.name!r} {where} already (id {assignment.id}): upload a new version of it "
        f"(`assignment update {assignment.name}`), or give this one another name in its ASSIGNMENT CONFIG"
    )


def add_version(db: Database, assignment_id: int, built: Built, title: str, source: str, created_by: str):
    """The next version of an assignment; CatalogError if the files are another assignment's."""
    for _ in range(5):  # concurrent updates each take the next number (unique per assignment)
        with db.session() as session:
            assignment = session.get(Assignment, assignment_id)
            if built.summary.name != assignment.name:
                raise CatalogError(
                    f"these files are for assignment {built.summary.name!r}, not {assignment.name!r}: a new version "
                    "keeps the assignment's name"
                )
            current = latest(db, assignment_id)
        try:
            with db.session() as session:
                version = AssignmentVersion(assignment_id=assignment_id, number=current.number + 1, **version_values(
                    built, title or current.title, source, created_by))  # fmt: skip
                session.add(version)
            return version
        except IntegrityError:
            continue
    raise CatalogError("several versions were added at the same moment; try again")


def latest(db: Database, assignment_id: int) -> AssignmentVersion:
    with db.session() as session:
        return session.scalars(
            select(AssignmentVersion)
            .filter_by(assignment_id=assignment_id)
            .order_by(AssignmentVersion.number.desc())
            .limit(1)
        ).one()


def versions(db: Database, assignment_id: int) -> list[AssignmentVersion]:
    with db.session() as session:
        return list(
            session.scalars(
                select(AssignmentVersion).filter_by(assignment_id=assignment_id).order_by(AssignmentVersion.number)
            )
        )


def version(db: Database, version_id: int) -> AssignmentVersion | None:
    with db.session() as session:
        return session.get(AssignmentVersion, version_id)


def assignment_of(db: Database, version: AssignmentVersion) -> Assignment:
    with db.session() as session:
        return session.get(Assignment, version.assignment_id)


def listing(db: Database, scope: Scope | None = None) -> list[tuple[Assignment, AssignmentVersion]]:
    """Assignments with their latest version: every one (scope None), or those a course may use."""
    newest = (
        select(AssignmentVersion.assignment_id, func.max(AssignmentVersion.number).label("number"))
        .group_by(AssignmentVersion.assignment_id)
        .subquery()
    )
    query = (
        select(Assignment, AssignmentVersion)
        .join(AssignmentVersion, AssignmentVersion.assignment_id == Assignment.id)
        .join(newest, (newest.c.assignment_id == Assignment.id) & (newest.c.number == AssignmentVersion.number))
        .order_by(Assignment.scope, Assignment.name)
    )
    if scope is not None:
        query = query.where(visible_to(scope), Assignment.retired_at.is_(None))
    with db.session() as session:
        return [(a, v) for a, v in session.execute(query)]


def usable(assignment: Assignment, scope: Scope) -> bool:
    """May a link of this course use (or keep using) this assignment?"""
    return assignment.scope in ("", scope.key)


def find(db: Database, reference: str) -> Assignment:
    """An assignment by id, or by name (every course's first); CatalogError when none or several match."""
    with db.session() as session:
        if reference.isdigit():
            found = [a for a in [session.get(Assignment, int(reference))] if a is not None]
        else:
            found = list(session.scalars(select(Assignment).filter_by(name=reference).order_by(Assignment.scope)))
            found = [a for a in found if not a.scope][:1] or found
    if not found:
        raise CatalogError(f"no assignment {reference!r} (see `assignment list`)")
    if len(found) > 1:
        ids = ", ".join(f"{a.id} ({Scope(a.platform_id, a.context_id).describe()})" for a in found)
        raise CatalogError(f"several courses have an assignment named {reference!r}: give its id ({ids})")
    return found[0]


def remove(db: Database, assignment_id: int) -> str:
    """Delete an assignment no link or attempt uses; retire one that is used (links keep working, it is no
    longer offered). What was done, in a sentence."""
    with db.session() as session:
        assignment = session.get(Assignment, assignment_id)
        ids = select(AssignmentVersion.id).filter_by(assignment_id=assignment_id)
        links = session.scalar(select(func.count(AssignmentLink.id)).where(AssignmentLink.version_id.in_(ids)))
        used = links or session.scalar(select(func.count(Attempt.id)).where(Attempt.assignment_version_id.in_(ids)))
        if not used:
            session.delete(assignment)
            return f"assignment {assignment.name!r} removed"
        assignment.retired_at = assignment.retired_at or utcnow()
        return (
            f"assignment {assignment.name!r} retired: {links} links still use it and keep working (with their "
            "submissions), but it is no longer offered for new links"
        )


def zip_path(services: Services, version: AssignmentVersion) -> Path:
    """The version's autograder zip as a file (written once per machine, named by its content)."""
    path = services.config.data_dir / "assignments" / f"{version.zip_sha256}.zip"
    if not path.exists():
        with services.db.session() as session:
            data = session.scalar(select(AssignmentVersion.autograder_zip).filter_by(id=version.id))
        if hashlib.sha256(data).hexdigest() != version.zip_sha256:
            raise RuntimeError(f"assignment version {version.id}: its zip does not match its checksum")
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, partial = tempfile.mkstemp(dir=path.parent, suffix=".partial")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(partial, path)  # other threads and processes see the whole file or none
    return path


def handout(db: Database, version_id: int) -> bytes:
    with db.session() as session:
        return session.scalar(select(AssignmentVersion.handout).filter_by(id=version_id))


def course_assignments(db: Database, scope: Scope) -> list[Assignment]:
    """The assignments of one course (its own, which its staff may update)."""
    with db.session() as session:
        return list(session.scalars(select(Assignment).filter_by(scope=scope.key).order_by(Assignment.name)))


def link_count(db: Database, assignment_id: int) -> int:
    with db.session() as session:
        ids = select(AssignmentVersion.id).filter_by(assignment_id=assignment_id)
        return session.scalar(select(func.count(AssignmentLink.id)).where(AssignmentLink.version_id.in_(ids)))
