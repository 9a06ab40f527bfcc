"""A class at a deadline: distinct students launched through the dev platform, each uploading one notebook
at the same moment, and what the platform's gradebook received (for the fault tests and `make soak`)."""

from __future__ import annotations

import datetime as dt
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import requests
from sqlalchemy import create_engine, text

from lti_service.config import Config
from testbed.lms import Lms, StudentPage, in_gradebook
from testbed.submissions import notebook_bytes

RETRY_PAUSE = 0.5  # seconds a student waits before uploading again after an error (pacing, not a wait for state)


def notebook_kinds() -> list[tuple[str, bytes, float]]:
    """Notebooks with known scores: (kind, bytes, score the gradebook must show out of its 100 points)."""
    return [
        ("full marks", notebook_bytes(), in_gradebook(16)),  # of 18: the written answer is graded by staff
        ("unanswered", notebook_bytes(answered=False), 0.0),
        ("partial", notebook_bytes("decode_time_one_step_short"), in_gradebook(14)),
    ]


@dataclass
class Student:
    user: str
    notebook: bytes
    expected: float
    page: StudentPage | None = None
    first_try: float | None = None
    """epoch seconds when the student first tried to upload"""
    saved_at: float | None = None
    """when an upload was answered with the redirect to the page (the tool saved it)"""
    errors: list[tuple[float, str]] = field(default_factory=list)
    """(epoch seconds, what happened) for every upload try that did not save"""


@dataclass
class Tally:
    expected: int
    recorded: int
    wrong: int
    duplicates: int
    lost: int
    server_errors_after_save: int
    """5xx answers to an upload the tool had already saved"""
    drain_s: float | None
    upload_to_score_s: list[float]
    graded_to_score_s: list[float]
    first_score_at: dict[str, float]
    """user -> epoch seconds when the platform accepted the student's first score"""

    @property
    def last_score_at(self) -> float | None:
        return max(self.first_score_at.values(), default=None)


class Classroom:
    """`size` students enrolled on the platform, all on one resource link with a gradebook column."""

    def __init__(self, lms: Lms, size: int, resource_link: str, prefix: str = "student") -> None:
        self.lms, self.resource_link = lms, resource_link
        users = [f"{prefix}-{i:04d}" for i in range(size)]
        lms.hook("enrol", users=users)
        self.line_item_id = lms.hook("resource-link", resource_link_id=resource_link, line_item=True)["line_item_id"]
        kinds = notebook_kinds()
        self.students = [Student(user, *kinds[i % len(kinds)][1:]) for i, user in enumerate(users)]
        self.started_at: float | None = None

    def launch(self, threads: int = 8) -> None:
        """Every student opens the assignment in the course (the tool's page with its upload form)."""

        def launch_one(student: Student) -> None:
            student.page = self.lms.open(student.user, self.resource_link)

        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(launch_one, self.students))

    def upload(self, threads: int = 32, give_up_after: float = 300) -> None:
        """Every student uploads at once; one whose upload is not saved (no answer, a 5xx) tries again."""
        self.started_at = time.time()
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda s: self._upload_until_saved(s, self.started_at + give_up_after), self.students))

    def upload_in_background(self, threads: int = 32, give_up_after: float = 300) -> threading.Thread:
        thread = threading.Thread(target=self.upload, args=(threads, give_up_after), daemon=True)
        thread.start()
        return thread

    def _upload_until_saved(self, student: Student, give_up_at: float) -> None:
        page = student.page
        files = {"notebook": ("decode.ipynb", student.notebook, "application/x-ipynb+json")}
        student.first_try = time.time()
        while time.time() < give_up_at:
            try:
                response = page.session.post(
                    f"{page.url}/upload", data={"csrf_token": page.csrf}, files=files, allow_redirects=False, timeout=30
                )
            except requests.RequestException as error:
                student.errors.append((time.time(), type(error).__name__))
            else:
                if response.status_code == 303:
                    student.saved_at = time.time()
                    return
                student.errors.append((time.time(), f"HTTP {response.status_code}"))
            time.sleep(RETRY_PAUSE)

    def all_scores_in(self) -> bool:
        return len(self.lms.gradebook(self.resource_link)) >= len(self.students)

    def tally(self, tool_env: dict[str, str]) -> Tally:
        """Compare the gradebook with what every student should have, using the tool's database for when
        each attempt was saved and graded."""
        state = self.lms.state()
        accepted: dict[str, list[float]] = {}
        for entry in state["score_log"]:
            body = entry.get("body") or {}
            if entry["line_item_id"] == self.line_item_id and entry.get("status") == 200:
                accepted.setdefault(body.get("userId"), []).append(entry["received_at"])
        book = {s["user_id"]: s["score_given"] for s in state["scores"] if s["line_item_id"] == self.line_item_id}
        first_score_at = {user: min(times) for user, times in accepted.items()}
        attempts = self.attempt_times(tool_env)
        upload_to_score, graded_to_score, server_errors_after_save = [], [], 0
        for student in self.students:
            saved, graded = attempts.get(student.user, (None, None))
            server_errors_after_save += sum(
                1 for at, what in student.errors if what.startswith("HTTP 5") and saved is not None and saved < at
            )
            if student.user in first_score_at:
                upload_to_score.append(first_score_at[student.user] - student.first_try)
                if graded is not None:
                    graded_to_score.append(first_score_at[student.user] - graded)
        last = max(first_score_at.values(), default=None)
        return Tally(
            expected=len(self.students),
            recorded=len(book),
            wrong=sum(1 for s in self.students if s.user in book and abs(book[s.user] - s.expected) > 1e-6),
            duplicates=sum(len(times) - 1 for times in accepted.values()),
            lost=sum(1 for s in self.students if s.user not in book),
            server_errors_after_save=server_errors_after_save,
            drain_s=None if last is None or self.started_at is None else last - self.started_at,
            upload_to_score_s=upload_to_score,
            graded_to_score_s=graded_to_score,
            first_score_at=first_score_at,
        )

    def attempt_times(self, tool_env: dict[str, str]) -> dict[str, tuple[float | None, float | None]]:
        """user -> (saved, graded) in epoch seconds, for this class's attempts."""
        url = Config(data_dir=Path(tool_env["DATA_DIR"]), database_url=tool_env.get("DATABASE_URL", "")).sqlalchemy_url
        engine = create_engine(url)
        try:
            with engine.connect() as connection:
                rows = connection.execute(
                    text("SELECT user_id, created_at, graded_at FROM attempts WHERE resource_link_id = :link"),
                    {"link": self.resource_link},
                ).all()
        finally:
            engine.dispose()
        return {user: (_epoch(created), _epoch(graded)) for user, created, graded in rows}


def _epoch(value: dt.datetime | str | None) -> float | None:
    """A naive UTC time from the database (SQLite gives strings) as epoch seconds."""
    if value is None:
        return None
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    return value.replace(tzinfo=dt.UTC).timestamp()


def percentile(values: list[float], fraction: float) -> float | None:
    """The value at `fraction` of the sorted values (nearest rank); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None
