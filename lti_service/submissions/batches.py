"""Long work started from the dashboard: regrade every attempt of a link, re-send its grades.

A BatchJob row counts progress; each attempt or passback row carries the batch id until its job ends,
and the job that ends it clears the id and counts it (once, whatever retries happen), so progress
survives reloads and restarts and is the same on every web process.
"""

from __future__ import annotations

from sqlalchemy import select, update

from ..db import Attempt, BatchJob, Passback, utcnow
from ..services import Services

# What each kind of batch does to the rows it takes: which rows, and how they are reset to be done again.
KINDS = {
    "regrade": (Attempt, ("graded", "failed"), lambda: {"status": "queued", "error": None, "claims": 0}),
    "resend": (
        Passback,
        ("pending", "failed"),
        lambda: {"status": "pending", "tries": 0, "next_try_at": utcnow(), "failing_since": None, "lease_id": None},
    ),
}


def start(services: Services, key: dict, kind: str) -> tuple[BatchJob, list[int]]:
    """Reset every row of the link that the kind covers (regrade: finished attempts, e.g. after staff
    changed a test and rebuilt; resend: grades pending or failed) and tag them with a new batch."""
    model, statuses, reset = KINDS[kind]
    with services.db.session() as session:
        job = BatchJob(**key, kind=kind)
        session.add(job)
        session.flush()
        ids = list(session.scalars(select(model.id).filter_by(**key).where(model.status.in_(statuses))))
        session.execute(update(model).where(model.id.in_(ids)).values(**reset(), batch_id=job.id))
        job.total = len(ids)
    return job, ids


def finish(services: Services, model: type[Attempt] | type[Passback], row_id: int, failed: bool) -> None:
    """Count a finished attempt or passback in its batch, if it belongs to one (exactly once)."""
    with services.db.session() as session:
        batch_id = session.scalar(select(model.batch_id).where(model.id == row_id))
        if batch_id is None:
            return
        cleared = session.execute(
            update(model).where(model.id == row_id, model.batch_id == batch_id).values(batch_id=None)
        )
        if cleared.rowcount == 1:
            counter = BatchJob.failed if failed else BatchJob.done
            session.execute(update(BatchJob).where(BatchJob.id == batch_id).values({counter: counter + 1}))


NOTHING_TO_DO = {
    "regrade": "Nothing to regrade: no student has submitted to this assignment yet.",
    "resend": "Nothing to re-send: every grade of this assignment is in the gradebook, or on its way there.",
}


def progress(job: BatchJob) -> dict:
    verb = {"regrade": "Regrading", "resend": "Re-sending grades"}[job.kind]
    finished = job.done + job.failed >= job.total
    text = f"{verb}: {job.done + job.failed} of {job.total} done"
    text += f", {job.failed} failed" if job.failed else ""
    text += " (finished)." if finished else "…"
    text = NOTHING_TO_DO[job.kind] if job.total == 0 else text
    return {"id": job.id, "kind": job.kind, "total": job.total, "done": job.done, "failed": job.failed,
            "finished": finished, "text": text}  # fmt: skip


def recent(services: Services, key: dict, limit: int = 3) -> list[BatchJob]:
    with services.db.session() as session:
        return list(session.scalars(select(BatchJob).filter_by(**key).order_by(BatchJob.id.desc()).limit(limit)))


def get(services: Services, key: dict, job_id: int) -> BatchJob | None:
    with services.db.session() as session:
        return session.scalars(select(BatchJob).filter_by(**key, id=job_id)).first()
