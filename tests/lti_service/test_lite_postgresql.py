"""The drafts' quotas of the notebook in the browser hold when saves race on PostgreSQL (READ COMMITTED, its
default), as on SQLite (tests/lti_service/test_lite.py), and a stale window is refused there too."""

from __future__ import annotations

from testbed.lms import start_lms
from tests.lti_service.lite_windows import check_races, open_window


def test_parallel_saves_never_pass_the_drafts_quotas_on_postgresql(tmp_path, database, built_assignment):  # noqa: F811
    lms = start_lms(tmp_path, "--no-worker", DATABASE_URL=database)
    try:
        check_races(lms)
        page = lms.open("student-ada", "lite-stale-pg")
        older, newer = open_window(page), open_window(page)
        assert newer.send("PUT", "drafts/decode.ipynb", b"newer work").status_code == 200
        assert older.send("PUT", "drafts/decode.ipynb", b"older work").status_code == 409
        assert newer.get("files/decode.ipynb").content == b"newer work"
    finally:
        lms.tool.stop()
        lms.platform.stop()
