"""Leases (lti_service/leases.py) as the jobs hold them: of claims that race for one row exactly one wins, a
lease that ended is taken over and its old holder's late write is dropped, and a renewed lease is not taken;
on SQLite and on PostgreSQL."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Iterator

import pytest

from lti_service.config import Config
from lti_service.db import Attempt, Launch, LinkInsights, Passback
from lti_service.gradebook import passback
from lti_service.insights import cache
from lti_service.platforms import add_platform
from lti_service.services import Services
from lti_service.submissions import grading
from lti_service.submissions.grading import create_attempt

RACERS = 8
LONG_AGO = dt.datetime(2000, 1, 1)


@pytest.fixture(params=["sqlite", "postgresql"])
def services(request, tmp_path) -> Iterator[Services]:
    """On the embedded database and on PostgreSQL, where claims really run side by side."""
    url = request.getfixturevalue("database") if request.param == "postgresql" else ""
    services = Services.from_config(Config(data_dir=tmp_path, database_url=url))
    yield services
    services.db.engine.dispose()  # PostgreSQL drops the test's database only once no connection is left


@pytest.fixture
def key(services) -> dict:
    platform = add_platform(services.db, "https://lms.example", "c1", ["d"], "a", "t", "j")
    return dict(platform_id=platform.id, context_id="c", resource_link_id="r")


def race(claim: Callable[[], object]) -> list[object]:
    """What `claim` gave in each of RACERS threads released together (an exception fails the test)."""
    start, results, errors = threading.Barrier(RACERS), [], []

    def run() -> None:
        start.wait()
        try:
            results.append(claim())
        except Exception as error:  # noqa: BLE001 - reported below, with the others
            errors.append(error)

    threads = [threading.Thread(target=run) for _ in range(RACERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    return results


def an_attempt(services: Services, key: dict) -> int:
    launch = Launch(**key, user_id="u", claims={})
    return create_attempt(services, launch, "decode.ipynb", b'{"cells": []}')[0].id


def expired_insights(services: Services, key: dict) -> int:
    """A link whose insights a worker was computing when it died (its lease ended long ago)."""
    with services.db.session() as session:
        row = LinkInsights(**key, status="computing", requested_at=LONG_AGO, lease_until=LONG_AGO)
        session.add(row)
        session.flush()
        return row.id


def test_of_gradings_racing_for_an_attempt_one_wins(services, key, built_assignment):
    attempt_id = an_attempt(services, key)
    won = [lease for lease in race(lambda: grading.claim(services, attempt_id)) if lease is not None]
    assert len(won) == 1
    with services.db.session() as session:
        assert session.get(Attempt, attempt_id).lease_id == won[0]


def test_of_workers_taking_over_a_dead_workers_insights_one_wins(services, key):
    """Two workers that find the same expired lease: the old scheme's compare (status and request time, both
    unchanged by a takeover) let both through, each thinking it held the link."""
    expired_insights(services, key)
    won = [claim for claim in race(lambda: cache.claim(services)) if claim is not None]
    assert len(won) == 1


def test_of_senders_racing_for_an_outbox_row_one_wins(services, key):
    with services.db.session() as session:
        row = Passback(**key, lineitem_url="https://lms.example/li", user_id="u", next_try_at=LONG_AGO)
        session.add(row)
        session.flush()
        row_id = row.id
    won = [row for row in race(lambda: passback.lease(services, row_id)) if row is not None]
    assert len(won) == 1 and won[0].lease_id


def test_an_ended_grading_lease_is_taken_over_and_its_holder_records_nothing(services, key, built_assignment):
    attempt_id = an_attempt(services, key)
    first = grading.claim(services, attempt_id)
    assert first is not None and grading.claim(services, attempt_id) is None  # live: nobody else takes it
    end_lease(services, attempt_id)
    second = grading.claim(services, attempt_id)
    assert second not in (None, first)
    assert grading._finish(services, attempt_id, first, {"status": "failed", "error": "late"}) is None
    finished = grading._finish(services, attempt_id, second, {"status": "failed", "error": "mine"})
    assert finished is not None and finished.attempt.error == "mine"


def test_a_renewed_grading_lease_is_not_taken_over(services, key, built_assignment):
    attempt_id = an_attempt(services, key)
    lease_id = grading.claim(services, attempt_id)
    end_lease(services, attempt_id)
    with services.db.session() as session:
        assert grading.job_leases(Attempt).renew(session, attempt_id, lease_id, 60)
    assert grading.claim(services, attempt_id) is None
    with services.db.session() as session:  # a lost lease is not renewed
        assert not grading.job_leases(Attempt).renew(session, attempt_id, "someone else's", 60)


def end_lease(services: Services, attempt_id: int) -> None:
    """The holder froze: its lease ran out."""
    with services.db.session() as session:
        session.get(Attempt, attempt_id).deadline = LONG_AGO


def test_an_ended_insights_lease_is_taken_over_and_its_holder_stores_nothing(services, key):
    row_id = expired_insights(services, key)
    first = cache.claim(services)
    with services.db.session() as session:
        session.get(LinkInsights, row_id).lease_until = LONG_AGO
    second = cache.claim(services)
    assert second is not None and second.lease_id != first.lease_id
    cache.store(services, first, {"late": True}, 1.0)
    cache.store(services, second, {"mine": True}, 1.0)
    with services.db.session() as session:
        row = session.get(LinkInsights, row_id)
        assert (row.status, row.data, row.lease_id) == ("fresh", {"mine": True}, None)
