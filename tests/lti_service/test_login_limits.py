"""`/lti/login` is anonymous: a flood of logins and over-long parameters cannot grow the state table without
bound, state lives for minutes, and a legitimate launch still works (behind a proxy: TRUST_PROXY=1)."""

from __future__ import annotations

import datetime as dt
import sqlite3

import pytest
import requests

from lti_service import create_app
from lti_service.config import Config
from lti_service.db import KeyValue, utcnow
from lti_service.lti.errors import LaunchError
from testbed.lms import start_lms

PER_CLIENT, TOTAL = 10, 30


@pytest.fixture(scope="module")
def lms(tmp_path_factory, built_assignment):
    lms = start_lms(
        tmp_path_factory.mktemp("login-limits"), "--no-worker",
        TRUST_PROXY="1", LOGIN_LIMIT_PER_CLIENT=str(PER_CLIENT), LOGIN_LIMIT_TOTAL=str(TOTAL),
    )  # fmt: skip
    yield lms
    lms.tool.stop()
    lms.platform.stop()


def login(lms, client: str, method: str = "get", **overrides: str) -> requests.Response:
    """An OIDC login as it reaches the tool through its proxy from `client`."""
    params = {"iss": lms.platform.url, "login_hint": "student-ada", "client_id": lms.platform.settings.client_id}
    params |= {"target_link_uri": f"{lms.tool.url}/lti/launch", **overrides}
    send = {"params": params} if method == "get" else {"data": params}
    headers = {"X-Forwarded-For": client, "X-Forwarded-Proto": "https"}
    return requests.request(
        method, f"{lms.tool.url}/lti/login", headers=headers, allow_redirects=False, timeout=30, **send
    )


def state_rows(lms) -> tuple[int, dt.datetime | None]:
    with sqlite3.connect(lms.tool.data_dir / "decode-grader.db") as db:
        count, latest = db.execute("SELECT count(*), max(expires_at) FROM lti_state").fetchone()
    return count, latest and dt.datetime.fromisoformat(latest)


def refused_with(response: requests.Response, status: int, code: str) -> bool:
    return response.status_code == status and f"<code>{code}</code>" in response.text


def test_over_long_login_parameters_are_refused_before_anything_is_stored(lms):
    before = state_rows(lms)[0]
    assert refused_with(login(lms, "10.1.0.1", "post", login_hint="x" * 4 * 1024 * 1024), 413, "login_too_large")
    assert refused_with(login(lms, "10.1.0.1", lti_message_hint="x" * 3000), 413, "login_too_large")
    assert state_rows(lms)[0] == before
    assert login(lms, "10.1.0.1", lti_message_hint="x" * 1500).status_code == 302  # a Canvas-sized hint is fine


def test_state_is_kept_for_minutes_not_a_day(lms):
    assert login(lms, "10.2.0.1").status_code == 302
    assert state_rows(lms)[1] <= utcnow() + dt.timedelta(minutes=10, seconds=5)


def test_a_flood_of_logins_is_bounded_per_client_and_in_all_and_launches_still_work(lms):
    flood = [login(lms, "10.3.0.1") for _ in range(PER_CLIENT + 5)]
    assert [r.status_code for r in flood] == [302] * PER_CLIENT + [429] * 5
    assert refused_with(flood[-1], 429, "login_rate_limited")
    events = [e for e in lms.tool.log_events() if e.get("code") == "login_rate_limited"]
    assert events and events[-1]["detail"] == "10.3.0.1"

    page = lms.open("student-ada", "login-flood")  # another client (no proxy header): unaffected
    assert "Download the notebook" in page.html

    answers = [login(lms, f"10.4.0.{n}").status_code for n in range(1, 9) for _ in range(PER_CLIENT)]
    assert 429 in answers and state_rows(lms)[0] <= 2 * TOTAL
    assert refused_with(login(lms, "10.5.0.1"), 429, "login_busy")


def test_a_full_table_makes_room_by_purging_expired_logins(tmp_path):
    from lti_service.lti.login_limits import admit

    app = create_app(Config(data_dir=tmp_path, login_limit_per_client=5, login_limit_total=5))
    storage = app.extensions["services"].launches.storage
    with app.test_request_context(environ_base={"REMOTE_ADDR": "10.6.0.1"}):
        for n in range(10):
            storage.set_value(f"old-{n}", {"login_hint": "x"})
        with storage.db.session() as session:
            session.query(KeyValue).update({"expires_at": utcnow() - dt.timedelta(seconds=1)})
        admit(storage, per_client=5, total=5)  # room again: the expired rows are gone
        assert storage.all_rows() == 0
        for n in range(10):
            storage.set_value(f"new-{n}", {"login_hint": "x"})
        with pytest.raises(LaunchError, match="login_rate_limited"):
            admit(storage, per_client=5, total=5)
