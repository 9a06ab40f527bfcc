"""The assignment version each resource link is pinned to, and what a course's deep linking offers.

A link made by deep linking carries the chosen version in a custom parameter of its content item
(`assignment_version`, which the platform sends back in every launch of the link); the link's first launch
pins it there, if the course may use that assignment (a copied course, or a hand-edited parameter naming
another course's assignment, is refused). A link made without deep linking (a plain Moodle activity) names
none and is pinned to the built-in assignment's newest version. From then on the pin is the tool's own
(assignment_links): only the link's staff move it (moves.py), whatever the parameter says later.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from ..db import Assignment, AssignmentLink, AssignmentVersion, Database
from ..lti.errors import LaunchError
from ..rules.settings import link_key
from ..services import Services
from . import catalog

CUSTOM_PARAMETER = "assignment_version"
LTI = "https://purl.imsglobal.org/spec/lti/claim/"


def pinned(db: Database, key: dict) -> AssignmentVersion | None:
    """The version a link (platform, context, resource link) is pinned to, if any."""
    with db.session() as session:
        return session.scalars(
            select(AssignmentVersion).join(AssignmentLink, AssignmentLink.version_id == AssignmentVersion.id)
            .filter(*(getattr(AssignmentLink, name) == value for name, value in key.items()))
        ).first()  # fmt: skip


def pin(services: Services, launch) -> AssignmentVersion:
    """The link's version, pinned now if this is its first launch (LaunchError when it names none it may use)."""
    key = link_key(launch)
    if (version := pinned(services.db, key)) is not None:
        return version
    version = _named_or_default(services.db, launch)
    try:
        with services.db.session() as session:
            session.add(AssignmentLink(**key, version_id=version.id))
    except IntegrityError:  # a launch of the same link pinned it at the same moment
        pass
    return pinned(services.db, key)


def version_for(services: Services, launch) -> AssignmentVersion:
    """The pinned version of a launch's link (every assignment launch pinned it when it opened)."""
    version = pinned(services.db, link_key(launch))
    if version is None:
        raise LaunchError("assignment_unavailable", "the link was never pinned")
    return version


def _named_or_default(db: Database, launch) -> AssignmentVersion:
    custom = launch.claims.get(LTI + "custom")
    named = custom.get(CUSTOM_PARAMETER) if isinstance(custom, dict) else None
    if named is None:
        return _default(db)
    version = catalog.version(db, int(named)) if str(named).isdigit() else None
    if version is None:
        raise LaunchError(
            "assignment_unavailable", f"it names assignment version {str(named)[:40]!r}, which does not exist"
        )
    assignment = catalog.assignment_of(db, version)
    if not catalog.usable(assignment, catalog.course_scope(launch)):
        raise LaunchError("assignment_unavailable", f"it names {assignment.name!r}, an assignment of another course")
    return version


def _default(db: Database) -> AssignmentVersion:
    """What a link without deep linking gets: the built-in assignment's newest version."""
    with db.session() as session:
        builtin = session.scalars(select(Assignment).filter_by(builtin=True, retired_at=None)).first()
    if builtin is None:
        raise LaunchError("assignment_unavailable", "the link names no assignment and the built-in one was removed")
    return catalog.latest(db, builtin.id)


def offered(db: Database, launch) -> list[tuple[Assignment, AssignmentVersion]]:
    """What the deep-linking page lists for this course: newest versions, every course's and its own."""
    return catalog.listing(db, catalog.course_scope(launch))


def chosen(db: Database, launch, version_id: str) -> tuple[Assignment, AssignmentVersion] | None:
    """The offered assignment whose newest version was chosen (None for anything else)."""
    return next(((a, v) for a, v in offered(db, launch) if str(v.id) == version_id), None)
