"""Who a notebook window in the browser belongs to, and the work the tool keeps for it.

A teaching lab's computers are shared, and everything on the tool's one origin is readable by any code that
runs there, a student's Python in the browser included. So a window is signed in the way an LTI launch is: the
student's page posts a form (its launch never travels in a URL), and the window gets an HttpOnly cookie scoped
to its own path, whose token the tool keeps only as a hash. The window's id is in its URLs and alone grants
nothing. The window is signed out when it closes (a reload comes back in time), when it has not been used for
IDLE, when the student leaves the computer, and when its launch expires. The student's work is kept by the tool
(drafts), not in the browser's storage, so nothing of it stays on the computer.

Nothing in the browser's storage is taken as the student's work, and no window overwrites newer work: each change
says which revision of the student's drafts the window last saw, and is refused when another window has saved
the file since. The changes of one student on one link happen one at a time, on a row that counts their drafts
(LiteDraftUsage), where the quotas are compared and set in the change's own transaction, as late days are spent.
"""

from __future__ import annotations

import datetime as dt
import hmac
import secrets
from dataclasses import dataclass

from sqlalchemy import and_, delete, func, select, update
from sqlalchemy.orm import Session

from autograder.paths import safe_relative

from ..db import Database, Launch, LiteDraft, LiteDraftUsage, LiteWindow, token_digest, utcnow
from ..rules.settings import link_key

IDLE = dt.timedelta(minutes=10)
"""signed out after this long unused (an open window says it is alive every HEARTBEAT)"""
HEARTBEAT = dt.timedelta(minutes=1)
CLOSING = dt.timedelta(seconds=30)
"""how long a closed window stays signed in: a reload of it comes back well within this"""
MAX_DRAFT_FILES = 50
MAX_PATH = 300
MAX_DRAFTS_TIMES_UPLOAD = 4
"""a student's drafts on one link together: at most this many times the largest notebook the grader takes"""
RECOVERED = "recovered from this computer"
"""the folder where files found in the browser's storage are kept, beside the student's work and never over it"""
RECOVERED_FILES = 10
FULL = (
    "The tool keeps no more of your files for this assignment: delete files you no longer need "
    "(or download them), then save again."
)


class DraftRefused(ValueError):
    """A draft the tool does not keep; str() says why, in the student's words."""


class DraftStale(DraftRefused):
    """A change from a window that has not seen the file's newest version, which another window saved then."""

    def __init__(self, saved_at: dt.datetime) -> None:
        super().__init__(
            f"This file was changed in another window at {saved_at:%H:%M} UTC, and the tool keeps that newer "
            "version: nothing from this window was saved. Download a copy of this window's version if you need "
            "it, then reload the page to get the newer one."
        )


@dataclass(frozen=True)
class Opened:
    window_id: str
    token: str
    """the cookie's value: given to the browser once, kept here only as its hash"""


def open_window(db: Database, launch: Launch) -> Opened:
    """A new window for this launch, signed in until IDLE from now (expired windows are forgotten here)."""
    opened = Opened(secrets.token_urlsafe(12), secrets.token_urlsafe(32))
    now = utcnow()
    with db.session() as session:
        session.execute(delete(LiteWindow).where(LiteWindow.expires_at < now))
        session.add(
            LiteWindow(
                id=opened.window_id, token_hash=token_digest(opened.token), launch_id=launch.id, expires_at=now + IDLE
            )
        )
    return opened


def signed_in(db: Database, window_id: str, token: str | None) -> Launch | None:
    """The launch of a window whose cookie carries `token`, or None (unknown, wrong token, signed out, idle,
    launch expired). Each use moves the window's expiry on, written at most once per HEARTBEAT."""
    if not token:
        return None
    now = utcnow()
    with db.session() as session:
        window = session.get(LiteWindow, window_id)
        if (
            window is None
            or window.expires_at <= now
            or not hmac.compare_digest(window.token_hash, token_digest(token))
        ):
            return None
        launch = session.get(Launch, window.launch_id)
        if launch is None or launch.expires_at <= now:
            return None
        if window.expires_at < now + IDLE - HEARTBEAT:
            window.expires_at = now + IDLE
        return launch


def closing(db: Database, window_id: str) -> None:
    """The window was closed or reloaded: signed out after CLOSING unless it is used again before."""
    with db.session() as session:
        window = session.get(LiteWindow, window_id)
        if window is not None:
            window.expires_at = min(window.expires_at, utcnow() + CLOSING)


def sign_out(db: Database, launch: Launch) -> None:
    """The student leaves the computer: every window of the launch is signed out at once."""
    with db.session() as session:
        session.execute(delete(LiteWindow).where(LiteWindow.launch_id == launch.id))


def _mine(model: type[LiteDraft | LiteDraftUsage], launch: Launch):
    return and_(*(getattr(model, name) == value for name, value in _key(launch).items()))


@dataclass(frozen=True)
class DraftFile:
    size: int
    saved_at: dt.datetime
    """what JupyterLite's listing dates it by (its own "file changed" check compares these)"""


def drafts(db: Database, launch: Launch) -> dict[str, DraftFile]:
    """The files of the student's saved work on the launch's link, by path."""
    with db.session() as session:
        query = select(LiteDraft.path, func.length(LiteDraft.content), LiteDraft.saved_at).where(
            _mine(LiteDraft, launch)
        )
        return {path: DraftFile(size, saved_at) for path, size, saved_at in session.execute(query)}


def draft(db: Database, launch: Launch, path: str) -> bytes | None:
    """One file of the student's saved work, or None."""
    with db.session() as session:
        return _content(session, launch, path)


def revision(db: Database, launch: Launch) -> int:
    """How far the student's drafts on the link have changed: a page that loads them now saw this revision."""
    with db.session() as session:
        return session.scalar(select(LiteDraftUsage.revision).where(_mine(LiteDraftUsage, launch))) or 0


@dataclass(frozen=True)
class Saved:
    at: dt.datetime
    revision: int
    """what the window saw of the file from now on (its next save's base)"""


def save_draft(db: Database, launch: Launch, path: str, content: bytes, max_file: int, base: int) -> Saved:
    """Keep one file of the student's work from a window that last saw revision `base` of it (DraftRefused past
    the bounds, DraftStale when another window has saved it since)."""
    _check_name(path)
    if len(content) > max_file:
        raise DraftRefused(f"This file is larger than the {max_file / 2**20:.1f} MB the tool keeps. Nothing was saved.")
    return _change(db, launch, path, content, max_file, base)


def delete_draft(db: Database, launch: Launch, path: str, base: int) -> Saved:
    """Forget one file of the student's work (DraftStale when another window has saved it since `base`)."""
    return _change(db, launch, path, None, 0, base)


def recover(db: Database, launch: Launch, path: str, content: bytes, max_file: int) -> str | None:
    """Keep a file found in this computer's browser (an earlier version's store, which any code of the origin
    could have written) beside the student's work, under RECOVERED: never over a file the tool has, and within
    RECOVERED_FILES and one largest notebook, so it cannot crowd out their work. Where it was kept, or None when
    it was kept before."""
    kept = f"{RECOVERED}/{path}"
    _check_name(path)
    _check_name(kept)
    if len(content) > max_file:
        raise DraftRefused(f"This file is larger than the {max_file / 2**20:.1f} MB the tool keeps.")
    return kept if _change(db, launch, kept, content, max_file, base=None) else None


def _check_name(path: str) -> None:
    try:
        safe_relative(path)
    except ValueError:
        raise DraftRefused("This file's name cannot be saved by the tool. Rename it and save again.") from None
    if len(path) > MAX_PATH:
        raise DraftRefused("This file's name is too long to be saved by the tool. Rename it and save again.")


def _change(
    db: Database, launch: Launch, path: str, content: bytes | None, max_file: int, base: int | None
) -> Saved | None:
    """Write (or, content None, delete) one draft, one change at a time per student and link: the usage row is
    locked first, then the file's revision is checked against `base` (None: only where there is no such file),
    then the quotas are compared and set on the row, all in one transaction."""
    now = utcnow()
    with db.session() as session:
        number = _lock(db, session, launch)
        old = session.execute(
            select(LiteDraft.revision, LiteDraft.saved_at, func.length(LiteDraft.content).label("size")).where(
                _mine(LiteDraft, launch) & (LiteDraft.path == path)
            )
        ).first()
        if old is not None and base is None:
            return None
        if old is not None and old.revision > base:
            if content != _content(session, launch, path):
                raise DraftStale(old.saved_at)
            return Saved(old.saved_at, number)  # what the tool has: this window has seen the newest now
        files = (content is not None) - (old is not None)
        size = len(content or b"") - (old.size if old is not None else 0)
        if base is None:
            _check_recovered(session, launch, len(content or b""), max_file)
        if not _take(session, launch, files, size, MAX_DRAFTS_TIMES_UPLOAD * max_file):
            raise DraftRefused(FULL)
        if content is None:
            session.execute(delete(LiteDraft).where(_mine(LiteDraft, launch) & (LiteDraft.path == path)))
        else:
            _write(db, session, launch, path, content, now, number)
    return Saved(now, number)


def _content(session: Session, launch: Launch, path: str) -> bytes | None:
    return session.scalar(select(LiteDraft.content).where(_mine(LiteDraft, launch) & (LiteDraft.path == path)))


def _lock(db: Database, session: Session, launch: Launch) -> int:
    """The student's usage row on the link, created at nothing, its revision raised: the transaction's first
    statement is this write, so it holds the row (PostgreSQL) or the database (SQLite) until it ends."""
    key = _key(launch)
    upsert = (
        db.insert(LiteDraftUsage)
        .values(**key, files=0, size=0, revision=1)
        .on_conflict_do_update(index_elements=list(key), set_={"revision": LiteDraftUsage.revision + 1})
        .returning(LiteDraftUsage.revision)
    )
    return session.execute(upsert).scalar_one()


def _take(session: Session, launch: Launch, files: int, size: int, max_size: int) -> bool:
    """Add to the usage where it stays within the quotas (what shrinks is always allowed)."""
    change = update(LiteDraftUsage).where(_mine(LiteDraftUsage, launch))
    if files > 0:
        change = change.where(LiteDraftUsage.files + files <= MAX_DRAFT_FILES)
    if size > 0:
        change = change.where(LiteDraftUsage.size + size <= max_size)
    changed = session.execute(change.values(files=LiteDraftUsage.files + files, size=LiteDraftUsage.size + size))
    return changed.rowcount == 1


def _check_recovered(session: Session, launch: Launch, size: int, max_file: int) -> None:
    kept = session.execute(
        select(func.count(), func.coalesce(func.sum(func.length(LiteDraft.content)), 0)).where(
            _mine(LiteDraft, launch) & LiteDraft.path.startswith(f"{RECOVERED}/", autoescape=True)
        )
    ).one()
    if kept[0] >= RECOVERED_FILES or kept[1] + size > max_file:
        raise DraftRefused(FULL)


def _write(
    db: Database, session: Session, launch: Launch, path: str, content: bytes, now: dt.datetime, number: int
) -> None:
    values = {"content": content, "saved_at": now, "revision": number}
    session.execute(
        db.insert(LiteDraft)
        .values(**_key(launch), path=path, **values)
        .on_conflict_do_update(index_elements=[*_key(launch), "path"], set_=values)
    )


def _key(launch: Launch) -> dict:
    return dict(link_key(launch), user_id=launch.user_id)
