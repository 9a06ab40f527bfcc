"""Moving a link to another version of its assignment, after students submitted.

Staff see what the version changes (summary.differences), then start the move: every attempt of the link
is graded against the new version into a preview (PreviewGrade), while the link, its attempts, the student
pages and the gradebook stay on the old version. Staff compare each student's gradebook score before and
after, then apply the move: the previews become the attempts' results, the link is pinned to the new
version and every student's score is sent again. Or they cancel it and nothing changes.

Previews are jobs like gradings (grading.claim, lease_renewed, unclaimed): leased by one worker, taken
over by another when that worker dies, found by a worker's poll when their task was lost.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select, update

from ..assignments import catalog
from ..assignments.versions import pinned
from ..db import AssignmentLink, AssignmentVersion, Attempt, LinkMove, PreviewGrade, utcnow
from ..gradebook.passback import record_grade
from ..rules.settings import counting_attempt, load
from ..services import Services
from .grading import claim, grade_notebook, job_leases, lease_renewed, set_aside

OUTCOME = ("status", "score", "max_score", "result", "feedback", "error")
FINISHED = ("graded", "failed")


class MoveRefused(ValueError):
    """The move cannot start or be applied now; str() says why."""


@dataclass(frozen=True)
class Score:
    points: float
    possible: float

    @property
    def share(self) -> float:
        """What the gradebook gets: the share of the points (scaled to its column's maximum)."""
        return round(self.points / self.possible, 6)


@dataclass(frozen=True)
class Comparison:
    """One student's gradebook score under the link's version and under the version it is moving to."""

    user_id: str
    name: str
    attempts: int
    before: Score | None
    after: Score | None

    @property
    def changed(self) -> bool:
        return (self.before and self.before.share) != (self.after and self.after.share)


def current(services: Services, key: dict) -> LinkMove | None:
    """The link's move in progress (regrading, not yet applied or cancelled), if any."""
    with services.db.session() as session:
        return session.scalars(select(LinkMove).filter_by(**key, status="regrading")).first()


def get(services: Services, key: dict, move_id: int) -> LinkMove | None:
    with services.db.session() as session:
        return session.scalars(select(LinkMove).filter_by(**key, id=move_id)).first()


def newer(services: Services, version: AssignmentVersion) -> AssignmentVersion | None:
    """The assignment's newest version when it is newer than `version`."""
    newest = catalog.latest(services.db, version.assignment_id)
    return newest if newest.number > version.number else None


def start(services: Services, key: dict, to_version_id: int) -> tuple[LinkMove | None, list[int]]:
    """Start moving the link to another version of its assignment: the move and the previews to grade. A link
    nobody submitted to moves at once (None)."""
    source = pinned(services.db, key)
    target = catalog.version(services.db, to_version_id)
    if target is None or target.assignment_id != source.assignment_id or target.id == source.id:
        raise MoveRefused("choose another version of this link's assignment")
    if current(services, key) is not None:
        raise MoveRefused("this link is being moved already: apply or cancel that move first")
    with services.db.session() as session:
        attempt_ids = list(session.scalars(select(Attempt.id).filter_by(**key)))
        if not attempt_ids:
            _pin(session, key, target.id)
            return None, []
        move = LinkMove(**key, from_version_id=source.id, to_version_id=target.id)
        session.add(move)
        session.flush()
        previews = [PreviewGrade(move_id=move.id, attempt_id=attempt_id) for attempt_id in attempt_ids]
        session.add_all(previews)
        session.flush()
        return move, [p.id for p in previews]


def _pin(session, key: dict, version_id: int) -> None:
    session.execute(update(AssignmentLink).filter_by(**key).values(version_id=version_id, bound_at=utcnow()))


def grade_preview(services: Services, preview_id: int) -> None:
    """Grade one attempt against the version its link is moving to (unless another worker has it or it is done),
    under a lease as gradings are (grading.py)."""
    lease_id = claim(services, preview_id, PreviewGrade)
    if lease_id is None:
        set_aside(services, preview_id, PreviewGrade)
        return
    with services.db.session() as session:
        preview = session.get(PreviewGrade, preview_id)
        attempt = session.get(Attempt, preview.attempt_id)
        target = session.get(AssignmentVersion, session.get(LinkMove, preview.move_id).to_version_id)
        notebook, label = attempt.notebook, attempt.filename
    zip_path = catalog.zip_path(services, target)
    with lease_renewed(services, preview_id, lease_id, PreviewGrade):
        outcome = grade_notebook(services, zip_path, notebook, label)
    with services.db.session() as session:
        session.execute(
            job_leases(PreviewGrade)
            .held(preview_id, lease_id)
            .where(PreviewGrade.status == "grading")
            .values(**outcome, deadline=None, lease_id=None)
        )


def progress(services: Services, move: LinkMove) -> tuple[int, int]:
    """Previews finished, and in all."""
    with services.db.session() as session:
        counts = dict(
            session.execute(
                select(PreviewGrade.status, func.count()).filter_by(move_id=move.id).group_by(PreviewGrade.status)
            ).all()
        )
    return sum(counts.get(status, 0) for status in FINISHED), sum(counts.values())


def comparison(services: Services, key: dict, move: LinkMove) -> list[Comparison]:
    """Each student's gradebook score now and after the move (None where nothing is graded), by name."""
    policy = load(services, key).score_policy
    with services.db.session() as session:
        attempts = list(session.scalars(select(Attempt).filter_by(**key).order_by(Attempt.id)))
        previews = {p.attempt_id: p for p in session.scalars(select(PreviewGrade).filter_by(move_id=move.id))}
    by_user: dict[str, list[Attempt]] = {}
    for attempt in attempts:
        by_user.setdefault(attempt.user_id, []).append(attempt)
    rows = []
    for user_id, own in by_user.items():
        after = [_as_attempt(a, previews[a.id]) for a in own if a.id in previews]
        rows.append(Comparison(user_id, own[-1].user_name or user_id, len(own), _gradebook_score(own, policy),
                               _gradebook_score(after, policy)))  # fmt: skip
    return sorted(rows, key=lambda row: row.name.lower())


def _as_attempt(attempt: Attempt, preview: PreviewGrade) -> Attempt:
    """The attempt as it would be with the preview's result (not stored)."""
    return Attempt(
        id=attempt.id, late_penalty=attempt.late_penalty, **{name: getattr(preview, name) for name in OUTCOME}
    )


def _gradebook_score(attempts: list[Attempt], policy: str) -> Score | None:
    counted = counting_attempt(attempts, policy)
    return None if counted is None else Score(counted.final_score, counted.max_score)


def apply(services: Services, key: dict, move_id: int) -> tuple[list[int], list[int]]:
    """Make the previews the attempts' results and pin the link to the new version. Returns the attempts
    uploaded since the move started (to grade against the new version) and the passback rows to send."""
    with services.db.session() as session:
        move = session.scalars(select(LinkMove).filter_by(**key, id=move_id, status="regrading")).first()
        if move is None:
            raise MoveRefused("this move was applied or cancelled already")
        previews = {p.attempt_id: p for p in session.scalars(select(PreviewGrade).filter_by(move_id=move.id))}
        if unfinished := sum(p.status not in FINISHED for p in previews.values()):
            raise MoveRefused(f"{unfinished} submissions are still being graded against the new version: wait for them")
        attempts = list(session.scalars(select(Attempt).filter_by(**key)))
        if busy := sum(a.status in ("queued", "grading") for a in attempts):
            raise MoveRefused(f"{busy} new submissions are being graded: apply the move once they are done")
        regrade = []
        for attempt in attempts:
            attempt.assignment_version_id = move.to_version_id
            if attempt.id in previews:
                for name in OUTCOME:
                    setattr(attempt, name, getattr(previews[attempt.id], name))
                attempt.graded_at = utcnow()
            else:  # uploaded after the move started
                attempt.status, attempt.claims = "queued", 0
                regrade.append(attempt.id)
        _pin(session, key, move.to_version_id)
        move.status = "applied"
        session.flush()
        newest = {a.user_id: a for a in sorted(attempts, key=lambda a: a.id) if a.lineitem_url}
        return regrade, [record_grade(services, session, attempt) for attempt in newest.values()]


def cancel(services: Services, key: dict, move_id: int) -> None:
    """Leave the link on its version; the previews are dropped."""
    with services.db.session() as session:
        move = session.scalars(select(LinkMove).filter_by(**key, id=move_id, status="regrading")).first()
        if move is not None:
            move.status = "cancelled"
            session.execute(PreviewGrade.__table__.delete().where(PreviewGrade.move_id == move.id))
