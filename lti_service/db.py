"""The database: every durable fact (platforms, launches, attempts, the passback outbox).

SQLite in the data directory by default, PostgreSQL with DATABASE_URL; the same models serve both.
The database owns job state, so any worker on any machine can pick up any job.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    create_engine,
    event,
)
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, sessionmaker


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def token_digest(token: str) -> str:
    """A bearer token as the database keeps it (invites, launch cookies, notebook windows): its SHA-256 only,
    so a copy of the database opens nothing."""
    return hashlib.sha256(token.encode()).hexdigest()


class Base(DeclarativeBase):
    pass


class LinkScoped:
    """Rows that belong to one resource link of one course on one platform (what a launch may see)."""

    platform_id: Mapped[int] = mapped_column(ForeignKey("platforms.id", ondelete="CASCADE"))
    context_id: Mapped[str] = mapped_column(String(400))
    resource_link_id: Mapped[str] = mapped_column(String(400))


class Platform(Base):
    """An LMS registration: one issuer and client id, with the deployments allowed to launch."""

    __tablename__ = "platforms"
    __table_args__ = (UniqueConstraint("issuer", "client_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    issuer: Mapped[str] = mapped_column(String(400))
    client_id: Mapped[str] = mapped_column(String(400))
    deployment_ids: Mapped[list] = mapped_column(JSON, default=list)
    auth_login_url: Mapped[str] = mapped_column(String(1000))
    auth_token_url: Mapped[str] = mapped_column(String(1000))
    key_set_url: Mapped[str] = mapped_column(String(1000))
    name: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    service_origins: Mapped[list] = mapped_column(JSON, default=list)
    """origins besides its own URLs' where the platform serves line items and rosters (Canvas: the school's
    domain), set by the operator with `platform update --service-origin`"""
    product_family: Mapped[str] = mapped_column(String(100), default="", server_default="")
    """the product its launches name (tool_platform's product_family_code: "moodle", "canvas", ...): what
    its gradebook does with a score is told apart by it (lti/quirks.py)"""


class RegistrationInvite(Base):
    """An admin-issued, single-use, expiring dynamic registration URL; only a hash of its token is kept."""

    __tablename__ = "registration_invites"
    id: Mapped[int] = mapped_column(primary_key=True)
    token_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(DateTime)
    used_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)


class KeyValue(Base):
    """Short-lived LTI state (OIDC state parameters, nonces) with an expiry, kept server-side."""

    __tablename__ = "lti_state"
    key: Mapped[str] = mapped_column(String(300), primary_key=True)
    value: Mapped[dict | list | str | bool | None] = mapped_column(JSON, nullable=True)
    expires_at: Mapped[dt.datetime] = mapped_column(DateTime, index=True)
    client: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    """the address of the anonymous client whose login stored the row (rows per client are bounded)"""


class Launch(Base):
    """A validated launch. Its random id is in its pages' URLs; with the launch cookie, the capability."""

    __tablename__ = "launches"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("platforms.id", ondelete="CASCADE"))
    deployment_id: Mapped[str] = mapped_column(String(400))
    message_type: Mapped[str] = mapped_column(String(100))
    context_id: Mapped[str] = mapped_column(String(400), default="")
    resource_link_id: Mapped[str] = mapped_column(String(400), default="")
    user_id: Mapped[str] = mapped_column(String(400))
    user_name: Mapped[str] = mapped_column(String(400), default="")
    roles: Mapped[list] = mapped_column(JSON, default=list)
    claims: Mapped[dict] = mapped_column(JSON)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(DateTime, index=True)
    binding_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    """SHA-256 of the launch cookie's token where the browser keeps the tool's cookies (views/launches.py):
    then the launch id in a URL opens nothing without it; None where only the platform's storage worked"""


class Attempt(LinkScoped, Base):
    """One submitted notebook and its grading job; status is queued, grading, graded or failed."""

    __tablename__ = "attempts"
    __table_args__ = (
        UniqueConstraint("platform_id", "context_id", "resource_link_id", "user_id", "sha256"),
        UniqueConstraint(
            "platform_id", "context_id", "resource_link_id", "user_id", "number", name="uq_attempt_number"
        ),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[str] = mapped_column(String(400), index=True)
    number: Mapped[int] = mapped_column(Integer)
    """1, 2, ... per user and link; unique, so concurrent uploads cannot both take the last allowed attempt"""
    assignment_version_id: Mapped[int] = mapped_column(
        ForeignKey("assignment_versions.id", name="fk_attempts_assignment_version")
    )
    """the assignment version it is graded against: its link's when it was uploaded, then when last graded"""
    lineitem_url: Mapped[str | None] = mapped_column(String(1000), nullable=True)
    batch_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    """the regrade batch this attempt is being graded again for, if any"""
    filename: Mapped[str] = mapped_column(String(300))
    notebook: Mapped[bytes] = mapped_column(LargeBinary)
    sha256: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(20), default="queued", index=True)
    deadline: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    """while grading: when the worker's lease ends unless it renews it (then another worker may take over)"""
    lease_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    """while grading: the lease of the worker grading it; only that worker may record the result"""
    claims: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """times a worker has taken it since it was queued (grading.MAX_CLAIMS: a notebook that stops its worker)"""
    score: Mapped[float | None] = mapped_column(Float, nullable=True)
    max_score: Mapped[float | None] = mapped_column(Float, nullable=True)
    result: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    """the grader's staff view (hidden tests included): never shown to a student"""
    feedback: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    """the grader's student view (hidden tests as counts only)"""
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    graded_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    user_name: Mapped[str] = mapped_column(String(400), default="")
    late_penalty: Mapped[float] = mapped_column(Float, default=0.0)
    """percent taken off because it came after the due date (0 when on time)"""
    lms_due_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    """the due date the LMS sent for the student with the launch it was uploaded from (None: it sent none)"""
    answer_digests: Mapped[dict | None] = mapped_column("written", JSON, nullable=True)
    """once graded, its answers to the questions staff grade: {question: digest of the answer's text}, so
    that a later attempt with the same text keeps the grade (written/grades.py); column `written`"""

    @property
    def final_score(self) -> float | None:
        """The score after any late penalty: what counts for the gradebook."""
        return None if self.score is None else self.score * (1 - self.late_penalty / 100)


class Passback(LinkScoped, Base):
    """The outbox row for one user's grade on one line item; sent, retried for days, or failed."""

    __tablename__ = "passbacks"
    __table_args__ = (UniqueConstraint("platform_id", "lineitem_url", "user_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    lineitem_url: Mapped[str] = mapped_column(String(1000))
    user_id: Mapped[str] = mapped_column(String(400))
    status: Mapped[str] = mapped_column(String(20), default="pending", index=True)
    """pending (to send or retry), sent, or failed (the platform refused it, or retries ran out of time)"""
    tries: Mapped[int] = mapped_column(Integer, default=0)
    failing_since: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    """when the first of the current run of failed tries happened (None once sent); retries stop after
    PASSBACK_RETRY_FOR from here"""
    next_try_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow, index=True)
    """when the row is due (a worker sending it holds it until then)"""
    lease_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    """while a worker sends it: that worker's lease; only it may record the outcome"""
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    sent_score: Mapped[float | None] = mapped_column(Float, nullable=True)
    last_timestamp: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    """the timestamp of the last score sent; the next one must be later (Moodle answers 409 otherwise)"""
    sent_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    batch_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    """the re-send batch this row is being sent for, if any"""


class LinkSettings(LinkScoped, Base):
    """Course staff's choices for one resource link (the defaults apply until they save)."""

    __tablename__ = "link_settings"
    __table_args__ = (UniqueConstraint("platform_id", "context_id", "resource_link_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    score_policy: Mapped[str] = mapped_column(String(10), default="best")
    attempt_limit: Mapped[int | None] = mapped_column(Integer, nullable=True)
    late_policy: Mapped[str] = mapped_column(String(10), default="accept")
    """accept (no penalty), penalty (late_penalty percent off) or refuse"""
    late_penalty: Mapped[float] = mapped_column(Float, default=0.0)
    show_hidden_after_due: Mapped[bool] = mapped_column(default=False)
    written_released: Mapped[bool] = mapped_column(default=False, server_default="0")
    """students see the points and comments of their written answers (never before staff release them)"""
    anonymous_grading: Mapped[bool] = mapped_column(default=False, server_default="0")
    """graders see "Answer 3 of 40", not the student's name"""
    written_points: Mapped[dict | None] = mapped_column(JSON, nullable=True, default=dict)
    """{question: points} set by staff where the assignment does not say (an autograder zip names none)"""
    due_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    """the link's own due date, where the LMS sends none for the student (rules/accommodations.py)"""


class BatchJob(LinkScoped, Base):
    """Long work started from the dashboard (regrade all, re-send grades): progress lives here."""

    __tablename__ = "batch_jobs"
    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(20))
    """regrade or resend"""
    total: Mapped[int] = mapped_column(Integer, default=0)
    done: Mapped[int] = mapped_column(Integer, default=0)
    failed: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class LinkLineItem(LinkScoped, Base):
    """The gradebook column the tool found or created for a link whose launches name none (a link added
    without deep linking); the first launch claims the row until claimed_until while it asks the platform."""

    __tablename__ = "link_lineitems"
    __table_args__ = (UniqueConstraint("platform_id", "context_id", "resource_link_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    lineitem_url: Mapped[str | None] = mapped_column(String(1000), nullable=True)
    claimed_until: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    """why the last try to find or create the column failed"""


class Assignment(Base):
    """A notebook assignment the tool grades, in versions (assignments/). Offered to every course (added by
    operators with the CLI) or to one course (added by its staff)."""

    __tablename__ = "assignments"
    __table_args__ = (UniqueConstraint("scope", "name"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    """Otter's assignment name: a submitted notebook must carry it"""
    scope: Mapped[str] = mapped_column(String(450), default="")
    """"" for every course, else "<platform id>:<context id>" of the one course (names are unique per scope)"""
    platform_id: Mapped[int | None] = mapped_column(ForeignKey("platforms.id", ondelete="CASCADE"), nullable=True)
    context_id: Mapped[str | None] = mapped_column(String(400), nullable=True)
    builtin: Mapped[bool] = mapped_column(default=False)
    """Decode, seeded from the build's outputs"""
    retired_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    """removed while links used it: no longer offered for new links, still graded for those"""
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class AssignmentVersion(Base):
    """One version of an assignment, never changed once stored: its files and what they hold."""

    __tablename__ = "assignment_versions"
    __table_args__ = (UniqueConstraint("assignment_id", "number"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    title: Mapped[str] = mapped_column(String(300))
    """shown to students; the gradebook column's label"""
    points: Mapped[float] = mapped_column(Float)
    questions: Mapped[list] = mapped_column(JSON)
    """[{"name", "points", "public", "hidden"}]: each question's points and numbers of public and hidden tests"""
    written_questions: Mapped[list | None] = mapped_column("written", JSON, nullable=True, default=list)
    """the questions course staff grade by hand (Otter's `manual: true`): autograder.written.WrittenQuestion
    dicts, with the rubric the master notebook gives; column `written`"""
    requirements: Mapped[str] = mapped_column(Text, default="")
    """the packages it needs beyond the grader's ("" for none)"""
    environment: Mapped[str] = mapped_column(Text, default="")
    """what preparing those packages did when it was added"""
    autograder_zip: Mapped[bytes] = mapped_column(LargeBinary, deferred=True)
    """every test, hidden ones included: never served"""
    zip_sha256: Mapped[str] = mapped_column(String(64))
    handout: Mapped[bytes] = mapped_column(LargeBinary, deferred=True)
    """what students download: the student notebook, or a zip of it with the files it reads"""
    handout_name: Mapped[str] = mapped_column(String(300))
    source: Mapped[str] = mapped_column(String(40))
    """how it was made: a master notebook, an autograder zip, or built in"""
    created_by: Mapped[str] = mapped_column(String(400), default="")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class AssignmentLink(LinkScoped, Base):
    """The assignment version a resource link is pinned to (at its first launch; moved only by its staff)."""

    __tablename__ = "assignment_links"
    __table_args__ = (UniqueConstraint("platform_id", "context_id", "resource_link_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("assignment_versions.id"))
    bound_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class AssignmentBuild(Base):
    """Files course staff uploaded in the browser, on their way to becoming an assignment version (a
    background job builds and checks them); status queued, running, done or failed."""

    __tablename__ = "assignment_builds"
    id: Mapped[int] = mapped_column(primary_key=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("platforms.id", ondelete="CASCADE"))
    context_id: Mapped[str] = mapped_column(String(400))
    assignment_id: Mapped[int | None] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"), nullable=True)
    """the assignment this is a new version of (None: a new assignment)"""
    kind: Mapped[str] = mapped_column(String(20))
    """master (a master notebook and its files) or zip (an autograder zip and the student's files)"""
    title: Mapped[str] = mapped_column(String(300), default="")
    inputs: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True, deferred=True)
    """the uploaded files (a zip), until the build ends"""
    status: Mapped[str] = mapped_column(String(20), default="queued")
    step: Mapped[str] = mapped_column(Text, default="")
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    version_id: Mapped[int | None] = mapped_column(
        ForeignKey("assignment_versions.id", ondelete="SET NULL"), nullable=True
    )
    created_by: Mapped[str] = mapped_column(String(400), default="")
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    deadline: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)


class LinkMove(LinkScoped, Base):
    """Staff moving a link to another version of its assignment: every attempt is graded against it first
    (PreviewGrade), and the new scores replace the old ones only when staff confirm (status applied)."""

    __tablename__ = "link_moves"
    id: Mapped[int] = mapped_column(primary_key=True)
    from_version_id: Mapped[int] = mapped_column(ForeignKey("assignment_versions.id"))
    to_version_id: Mapped[int] = mapped_column(ForeignKey("assignment_versions.id"))
    status: Mapped[str] = mapped_column(String(20), default="regrading")
    """regrading (until staff apply or cancel it), applied or cancelled"""
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class PreviewGrade(Base):
    """One attempt graded against the version a link is moving to; status queued, grading, graded or failed."""

    __tablename__ = "preview_grades"
    __table_args__ = (UniqueConstraint("move_id", "attempt_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    move_id: Mapped[int] = mapped_column(ForeignKey("link_moves.id", ondelete="CASCADE"), index=True)
    attempt_id: Mapped[int] = mapped_column(ForeignKey("attempts.id", ondelete="CASCADE"))
    status: Mapped[str] = mapped_column(String(20), default="queued", index=True)
    deadline: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    """while grading: when the worker's lease ends unless it renews it (as for attempts)"""
    lease_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    claims: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """times a worker has taken it (as for attempts)"""
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    score: Mapped[float | None] = mapped_column(Float, nullable=True)
    max_score: Mapped[float | None] = mapped_column(Float, nullable=True)
    result: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    feedback: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)


class LiteWindow(Base):
    """A notebook window open in the browser. Its id is in the window's URLs and grants nothing: the window's
    cookie carries a token (kept here only as its hash) that is signed out when the window closes, when it is
    idle too long, when the student leaves the computer, and when its launch expires."""

    __tablename__ = "lite_windows"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64))
    launch_id: Mapped[str] = mapped_column(ForeignKey("launches.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(DateTime, index=True)
    """signed out from then on unless the window is used before (each use moves it on)"""


class LiteDraft(LinkScoped, Base):
    """A file of a student's work in the browser, as last saved from the window: kept by the tool, not by the
    browser, so nothing of it stays on a shared computer."""

    __tablename__ = "lite_drafts"
    __table_args__ = (UniqueConstraint("platform_id", "context_id", "resource_link_id", "user_id", "path"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[str] = mapped_column(String(400))
    path: Mapped[str] = mapped_column(String(300))
    content: Mapped[bytes] = mapped_column(LargeBinary)
    saved_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    revision: Mapped[int] = mapped_column(Integer, default=0)
    """the student's LiteDraftUsage.revision when this was saved: a window that saw an older one is stale"""


class LiteDraftUsage(LinkScoped, Base):
    """What a student's drafts on one link hold together. Every draft change updates this row first, in its own
    transaction (which locks the row): the quotas are compared and set here, and one student's saves on a link
    happen one after the other, so a stale window is found by its revision."""

    __tablename__ = "lite_draft_usage"
    __table_args__ = (UniqueConstraint("platform_id", "context_id", "resource_link_id", "user_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[str] = mapped_column(String(400))
    files: Mapped[int] = mapped_column(Integer, default=0)
    size: Mapped[int] = mapped_column(BigInteger, default=0)
    """bytes, of every file together"""
    revision: Mapped[int] = mapped_column(Integer, default=0)
    """raised by every change of the student's drafts on the link"""


class RubricItem(LinkScoped, Base):
    """One reusable item of a written question's rubric on one link: points and the comment the student
    reads. Grades refer to items, so changing an item's points changes every grade that applied it."""

    __tablename__ = "rubric_items"
    __table_args__ = (UniqueConstraint("platform_id", "context_id", "resource_link_id", "question", "position"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    question: Mapped[str] = mapped_column(String(200))
    position: Mapped[int] = mapped_column(Integer)
    """its place in the rubric (and its key when grading: 1 to 9)"""
    points: Mapped[float] = mapped_column(Float)
    text: Mapped[str] = mapped_column(Text)
    removed: Mapped[bool] = mapped_column(default=False)
    """taken out of the rubric: no longer offered, and no longer counted in the grades that applied it"""


class WrittenGrade(LinkScoped, Base):
    """Staff's grade of one student's answer to one written question, kept by the answer's text (digest):
    every attempt with the same answer has this grade. `revision` grows with each save, and a save names the
    revision it replaces, so two graders never overwrite each other unknowingly."""

    __tablename__ = "written_grades"
    __table_args__ = (
        UniqueConstraint("platform_id", "context_id", "resource_link_id", "user_id", "question", "digest"),
    )
    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[str] = mapped_column(String(400))
    question: Mapped[str] = mapped_column(String(200))
    digest: Mapped[str] = mapped_column(String(64))
    items: Mapped[list] = mapped_column(JSON, default=list)
    """ids of the rubric items applied"""
    adjustment: Mapped[float] = mapped_column(Float, default=0.0)
    """points added (or taken off, below zero) beyond the rubric"""
    comment: Mapped[str] = mapped_column(Text, default="")
    revision: Mapped[int] = mapped_column(Integer, default=1)
    graded_by: Mapped[str] = mapped_column(String(400), default="")
    graded_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class Accommodation(LinkScoped, Base):
    """What staff set for one student on one link: a due date of their own (an extension), attempts beyond the
    link's limit, or excused (no score is sent). The history of changes is in accommodation_changes."""

    __tablename__ = "accommodations"
    __table_args__ = (UniqueConstraint("platform_id", "context_id", "resource_link_id", "user_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[str] = mapped_column(String(400))
    due_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    extra_attempts: Mapped[int] = mapped_column(Integer, default=0)
    excused: Mapped[bool] = mapped_column(default=False)
    set_by: Mapped[str] = mapped_column(String(400), default="")
    set_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class AccommodationChange(LinkScoped, Base):
    """One change of a student's accommodation or late days, who made it and when (kept: it is the history)."""

    __tablename__ = "accommodation_changes"
    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[str] = mapped_column(String(400))
    change: Mapped[str] = mapped_column(Text)
    set_by: Mapped[str] = mapped_column(String(400), default="")
    set_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class CourseSettings(Base):
    """Course staff's choices for a whole course: the late days each student may spend."""

    __tablename__ = "course_settings"
    __table_args__ = (UniqueConstraint("platform_id", "context_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("platforms.id", ondelete="CASCADE"))
    context_id: Mapped[str] = mapped_column(String(400))
    late_days: Mapped[int] = mapped_column(Integer, default=0)


class LateDayAccount(Base):
    """The late days one student of a course has spent, over all its links."""

    __tablename__ = "late_day_accounts"
    __table_args__ = (UniqueConstraint("platform_id", "context_id", "user_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("platforms.id", ondelete="CASCADE"))
    context_id: Mapped[str] = mapped_column(String(400))
    user_id: Mapped[str] = mapped_column(String(400))
    used: Mapped[int] = mapped_column(Integer, default=0)


class LateDayUse(LinkScoped, Base):
    """The late days one link takes from a student: as many as its latest upload needed."""

    __tablename__ = "late_day_uses"
    __table_args__ = (UniqueConstraint("platform_id", "context_id", "resource_link_id", "user_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[str] = mapped_column(String(400))
    days: Mapped[int] = mapped_column(Integer, default=0)
    forgiven: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """days staff gave back: lateness of up to that many days costs nothing on this link (more spends days)"""


class LinkInsights(LinkScoped, Base):
    """What the class got wrong and who wrote alike, for one link: computed by a worker once gradings settle
    (insights/), kept here for the dashboard. `status` is stale (to compute), computing (under a lease) or
    fresh; a grading that finishes makes it stale again."""

    __tablename__ = "link_insights"
    __table_args__ = (UniqueConstraint("platform_id", "context_id", "resource_link_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    status: Mapped[str] = mapped_column(String(20), default="stale", index=True)
    requested_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    lease_until: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    lease_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    """while computing: the lease of the worker computing it (leases.py); only that worker may record the result"""
    computed_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    seconds: Mapped[float | None] = mapped_column(Float, nullable=True)
    data: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    """{"students", "days", "mistakes", "pairs"} (insights/cache.py SHAPE): plain values, never a student's code run"""
    failure: Mapped[str | None] = mapped_column(String(500), nullable=True)
    """why the last computation did not finish, in staff's words (None once one finished)"""
    failures: Mapped[int] = mapped_column(default=0, server_default="0")
    """computations that did not finish since the last that did: the next waits longer (insights/cache.py)"""


class LinkRoster(LinkScoped, Base):
    """The students of one link as the platform's roster (NRPS) last listed them, shared by every web process:
    the reader that claims the row (a compare-and-set on `tried_at`) asks the platform, the others use what is
    here (rules/roster.py)."""

    __tablename__ = "link_rosters"
    __table_args__ = (UniqueConstraint("platform_id", "context_id", "resource_link_id"),)
    id: Mapped[int] = mapped_column(primary_key=True)
    tried_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    """when a reader last claimed the row to ask the platform"""
    students: Mapped[list | None] = mapped_column(JSON, nullable=True)
    """[[user_id, name], ...] of the last roster read whole and within bounds (None before one was)"""
    read_at: Mapped[dt.datetime | None] = mapped_column(DateTime, nullable=True)
    """when that roster was asked for"""
    failure: Mapped[str | None] = mapped_column(String(500), nullable=True)
    """why the last read gave no roster, in staff's words (None once a read did)"""


class WorkerHeartbeat(Base):
    """A worker process that is polling the database, and when it last did (what operators count as alive)."""

    __tablename__ = "worker_heartbeats"
    worker: Mapped[str] = mapped_column(String(300), primary_key=True)
    """host name and process id"""
    seen_at: Mapped[dt.datetime] = mapped_column(DateTime, index=True)


class Database:
    """An engine and a session factory for one DATABASE_URL."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine: Engine = create_engine(url, pool_pre_ping=True)
        if url.startswith("sqlite"):
            event.listen(self.engine, "connect", _sqlite_pragmas)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    def insert(self, model: type[Base]):
        """An INSERT of this database's dialect, which offers `on_conflict_do_update` (an upsert)."""
        # The dialect's module: the engine has loaded it already (PostgreSQL's is ~30 ms, for nothing on SQLite).
        if self.engine.dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:
            from sqlalchemy.dialects.sqlite import insert
        return insert(model)

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A transaction: committed when the block ends normally, rolled back otherwise."""
        with self._sessions() as session, session.begin():
            yield session


def _sqlite_pragmas(connection, _record) -> None:
    """WAL lets the web process read while a worker writes (synchronous=NORMAL is WAL's usual setting:
    safe against application crashes); foreign keys as on PostgreSQL."""
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()
