"""Who a notebook window in the browser belongs to, and the work the tool keeps for it.

A teaching lab's computers are shared, and everything on the tool's one origin is readable by any code that
runs there, a student's Python in the browser included. So a window is signed in the way an LTI launch is: the
student's page posts a form (its launch never travels in a URL), and the window gets an HttpOnly cookie scoped
to its own path, whose token the tool keeps only as a hash. The window's id is in its URLs and alone grants
nothing. The window is signed out when it closes (a reload comes back in time), when it has not been used for
IDLE, when the student leaves the computer, and when its launch expires. The student's work is kept by the tool
(drafts), not in the browser's storage, so nothing of it stays on the computer.
"""

from __future__ import annotations

import datetime as dt
import hmac
import secrets
from dataclasses import dataclass

from sqlalchemy import delete, func, select

from autograder.paths import safe_relative

from .db import Database, Launch, LiteDraft, LiteWindow, token_digest, utcnow

IDLE = dt.timedelta(minutes=10)
"""signed out after this long unused (an open window says it is alive every HEARTBEAT)"""
HEARTBEAT = dt.timedelta(minutes=1)
CLOSING = dt.timedelta(seconds=30)
"""how long a closed window stays signed in: a reload of it comes back well within this"""
MAX_DRAFT_FILES = 50
MAX_PATH = 300
MAX_DRAFTS_TIMES_UPLOAD = 4
"""a student's drafts on one link together: at most this many times the largest notebook the grader takes"""


class DraftRefused(ValueError):
    """A draft the tool does not keep; str() says why, in the student's words."""


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


def _mine(launch: Launch):
    return (
        (LiteDraft.platform_id == launch.platform_id)
        & (LiteDraft.context_id == launch.context_id)
        & (LiteDraft.resource_link_id == launch.resource_link_id)
        & (LiteDraft.user_id == launch.user_id)
    )


def draft_sizes(db: Database, launch: Launch) -> dict[str, int]:
    """The files of the student's saved work on the launch's link: path and size."""
    with db.session() as session:
        query = select(LiteDraft.path, func.length(LiteDraft.content)).where(_mine(launch))
        return dict(session.execute(query).all())


def draft(db: Database, launch: Launch, path: str) -> bytes | None:
    """One file of the student's saved work, or None."""
    with db.session() as session:
        return session.scalar(select(LiteDraft.content).where(_mine(launch) & (LiteDraft.path == path)))


def save_draft(db: Database, launch: Launch, path: str, content: bytes, max_file: int) -> dt.datetime:
    """Keep one file of the student's work (DraftRefused past the bounds); when it was saved."""
    try:
        safe_relative(path)
    except ValueError:
        raise DraftRefused("This file's name cannot be saved by the tool. Rename it and save again.") from None
    if len(path) > MAX_PATH:
        raise DraftRefused("This file's name is too long to be saved by the tool. Rename it and save again.")
    if len(content) > max_file:
        raise DraftRefused(f"This file is larger than the {max_file / 2**20:.1f} MB the tool keeps. Nothing was saved.")
    now = utcnow()
    with db.session() as session:
        others = session.execute(
            select(func.count(), func.coalesce(func.sum(func.length(LiteDraft.content)), 0)).where(
                _mine(launch) & (LiteDraft.path != path)
            )
        ).one()
        if others[0] >= MAX_DRAFT_FILES or others[1] + len(content) > MAX_DRAFTS_TIMES_UPLOAD * max_file:
            raise DraftRefused(
                "The tool keeps no more of your files for this assignment: delete files you no longer need "
                "(or download them), then save again."
            )
        session.execute(
            db.insert(LiteDraft)
            .values(
                platform_id=launch.platform_id,
                context_id=launch.context_id,
                resource_link_id=launch.resource_link_id,
                user_id=launch.user_id,
                path=path,
                content=content,
                saved_at=now,
            )
            .on_conflict_do_update(
                index_elements=["platform_id", "context_id", "resource_link_id", "user_id", "path"],
                set_={"content": content, "saved_at": now},
            )
        )
    return now


def delete_draft(db: Database, launch: Launch, path: str) -> None:
    with db.session() as session:
        session.execute(delete(LiteDraft).where(_mine(launch) & (LiteDraft.path == path)))
