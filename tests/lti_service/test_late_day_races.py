"""Staff's changes of late days (give back, look again after an extension) racing each other and students'
uploads, in real threads on SQLite and on PostgreSQL (READ COMMITTED): the counts stay those of one order or
the other, a student's account always holds what their links use, and no day is given back twice."""

from __future__ import annotations

import datetime as dt
import threading
import uuid
from collections.abc import Callable, Iterator
from functools import partial

import psycopg
import pytest

from lti_service.config import Config
from lti_service.db import Accommodation, AccommodationChange, AssignmentVersion, Attempt, utcnow
from lti_service.platforms import add_platform
from lti_service.rules import accommodations
from lti_service.services import Services

POSTGRES = "postgresql://postgres@127.0.0.1:5432"
ROUNDS = 12


@pytest.fixture(params=["sqlite", "postgresql"])
def services(request, tmp_path) -> Iterator[Services]:
    """The tool's database as SQLite (the default) or a fresh PostgreSQL database, dropped afterwards."""
    if request.param == "sqlite":
        services = Services.from_config(Config(data_dir=tmp_path))
        yield services
        services.db.engine.dispose()
        return
    name = f"decode_grader_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        services = Services.from_config(Config(data_dir=tmp_path, database_url=f"{POSTGRES}/{name}"))
        yield services
        services.db.engine.dispose()
    finally:
        with psycopg.connect(f"{POSTGRES}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def course(services: Services, budget: int) -> dict:
    platform = add_platform(services.db, "https://lms.example", "c1", ["d"], "a", "t", "j")
    key = dict(platform_id=platform.id, context_id="course", resource_link_id="link")
    accommodations.set_budget(services, key, budget)
    return key


def at_once(*calls: Callable[[], object]) -> list[object]:
    """Every call in a thread of its own, all released at the same moment; their results (or exceptions)."""
    start, results = threading.Barrier(len(calls)), [None] * len(calls)

    def run(index: int, call: Callable[[], object]) -> None:
        start.wait()
        try:
            results[index] = call()
        except Exception as error:  # noqa: BLE001 - the test reports it
            results[index] = error

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)
    return results


def upload_late(services: Services, key: dict, user_id: str, needed: int) -> bool:
    """What an upload `needed` days late does with late days (grading.py): read them and spend in one
    transaction, taken again when another change raced it; whether the days covered it."""
    for _ in range(20):
        try:
            with services.db.session() as session:
                seen = accommodations.late_days(session, key, user_id)
                if not seen.covers(needed):
                    return False
                accommodations.spend(services, session, key, user_id, seen, needed)
                return True
        except accommodations.SpendRaced:
            continue
    raise AssertionError("the upload never got through")


def counts(services: Services, key: dict, user_id: str) -> accommodations.LateDays:
    with services.db.session() as session:
        return accommodations.late_days(session, key, user_id)


def given_back_lines(services: Services, key: dict, user_id: str) -> int:
    with services.db.session() as session:
        changes = session.query(AccommodationChange).filter_by(**key, user_id=user_id).all()
    return sum("given back" in change.change for change in changes)


def test_ten_give_backs_at_once_give_the_days_back_once(services: Services):
    key = course(services, budget=3)
    assert upload_late(services, key, "ada", 2)
    given = at_once(*[partial(accommodations.refund, services, key, "ada", "Grader")] * 10)
    assert sorted(given) == [0] * 9 + [2], given
    late = counts(services, key, "ada")
    assert (late.used, late.on_link) == (0, 0) and given_back_lines(services, key, "ada") == 1
    assert late.forgiven == 2


def test_a_give_back_racing_an_upload_leaves_the_counts_of_one_order_or_the_other(services: Services):
    """Refund first: 1 day given back, the 2-days-late upload then spends 1 beyond the day forgiven. Upload
    first: it spends a second day, and both are given back."""
    key = course(services, budget=3)
    for round in range(ROUNDS):
        student = f"student-{round}"
        assert upload_late(services, key, student, 1)
        given, spent = at_once(
            partial(accommodations.refund, services, key, student, "Grader"),
            partial(upload_late, services, key, student, 2),
        )
        late = counts(services, key, student)
        assert late.used == late.on_link and 0 <= late.used <= 3, (round, late, given)  # the account holds the link's
        assert spent is True and (given, late.used, late.on_link, late.forgiven) in ((1, 1, 1, 1), (2, 0, 0, 2))
        assert given_back_lines(services, key, student) == 1


def test_an_extension_racing_an_upload_never_frees_days_the_upload_spent(services: Services):
    """Staff give an extension (the attempt is on time now: its 2 days come back) while the student uploads
    again, 3 days late by the date the upload read: whichever commits first, the account holds the link's days."""
    key = course(services, budget=5)
    with services.db.session() as session:
        version = session.query(AssignmentVersion.id).first()[0]
    for round in range(ROUNDS):
        student = f"student-{round}"
        late_attempt(services, key, student, version, days=1.5)
        assert upload_late(services, key, student, 2)
        extend(services, key, student)
        _, spent = at_once(
            partial(accommodations.reassess, services, key, student),
            partial(upload_late, services, key, student, 3),
        )
        late = counts(services, key, student)
        assert late.used == late.on_link and 0 <= late.used <= 5, (round, late, spent)
        assert late.on_link in (0, 3)  # freed after the upload, or the upload spent after the days were freed


def late_attempt(services: Services, key: dict, user_id: str, version: int, days: float) -> None:
    """An upload stored `days` after the due date the LMS sent with it."""
    now = utcnow()
    with services.db.session() as session:
        session.add(Attempt(**key, user_id=user_id, number=1, assignment_version_id=version, filename="a.ipynb",
                            notebook=b"{}", sha256="0" * 64, created_at=now,
                            lms_due_at=now - dt.timedelta(days=days)))  # fmt: skip


def extend(services: Services, key: dict, user_id: str) -> None:
    with services.db.session() as session:
        session.add(Accommodation(**key, user_id=user_id, extra_attempts=0, excused=False,
                                  due_at=utcnow() + dt.timedelta(days=3)))  # fmt: skip
