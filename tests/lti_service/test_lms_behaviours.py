"""What real LMSs do that the tool must cope with, reproduced by the dev platform: Moodle's short roster role
names, links added without a gradebook column, platforms that grant no AGS, Canvas's due date variable; and
a platform added with the CLI, accepted at once."""

from __future__ import annotations

import datetime as dt
import threading

import requests

from lti_dev_platform.client import launch as platform_launch
from lti_dev_platform.serving import ServerThread, start_platform
from testbed.lms import in_gradebook, roster_rows
from testbed.submissions import notebook_bytes
from testbed.tool import browser_session, wait_for

TITLE = "Decode: one token at a time"


def test_the_roster_with_moodles_short_role_names_lists_who_has_not_submitted(lms):
    lms.hook("config", short_nrps_roles=True)
    try:
        ada = lms.open("student-ada", "moodle-roster")
        ada.upload(notebook_bytes())
        ada.wait_graded(1)
        page = lms.open("instructor-turing", "moodle-roster")
    finally:
        lms.hook("config", short_nrps_roles=False)
    rows = roster_rows(page.html)
    assert set(rows) == {"student-ada", "student-grace"}  # the instructor is not a student
    assert "not submitted" in rows["student-grace"] and "Grace Hopper" in rows["student-grace"]
    assert "1 of 2 students submitted" in page.html


def test_a_plain_link_gets_one_column_however_many_launch_at_once(lms):
    """Two students open a link added without deep linking at the same moment, on a slow platform."""
    lms.hook("resource-link", resource_link_id="plain-race", line_item=False)
    lms.hook("config", lineitems_delay=0.5)
    pages = {}
    try:
        threads = [
            threading.Thread(target=lambda user=user: pages.__setitem__(user, lms.open(user, "plain-race")))
            for user in ("student-ada", "student-grace")
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        lms.hook("config", lineitems_delay=0)
    (column,) = [i for i in lms.state()["line_items"] if i["resource_link_id"] == "plain-race"]
    assert (column["label"], column["score_maximum"], column["tag"]) == ("Activity plain-race", 18.0, "decode-grader")

    pages["student-ada"].upload(notebook_bytes())
    pages["student-ada"].wait_graded(1)
    posts = wait_for(lambda: [p for p in lms.score_posts("student-ada", "plain-race") if p["status"] == 200])
    assert posts[0]["scoreGiven"] == 16.0 and posts[0]["scoreMaximum"] == 18.0  # the written answer's 2 to come
    assert wait_for(lambda: pages["student-ada"].attempts()[0]["gradebook"] == "sent to the gradebook")


def test_a_plain_link_uses_the_column_the_platform_already_has(lms):
    lms.hook("resource-link", resource_link_id="plain-found", line_item=False)
    existing = lms.hook("line-item", resource_link_id="plain-found", label="Decode (made earlier)", score_maximum=16)
    grace = lms.open("student-grace", "plain-found")
    assert "gradebook-problem" not in grace.html
    grace.upload(notebook_bytes())
    grace.wait_graded(1)
    posts = wait_for(lambda: [p for p in lms.score_posts("student-grace", "plain-found") if p["status"] == 200])
    assert [i["id"] for i in lms.state()["line_items"] if i["resource_link_id"] == "plain-found"] == [existing["id"]]
    assert posts[0]["scoreGiven"] == in_gradebook(16, 16)  # the platform's column of 16 points


def test_a_plain_links_column_is_named_after_the_link(lms):
    """Two activities of one assignment added without deep linking: two columns the teacher tells apart in the
    gradebook. A link whose launches carry no title (the spec allows it) gets the assignment's title."""
    titles = {"named-1": "Decode, week 1", "named-2": "Decode, week 2 (retake)", "untitled": ""}
    for link, title in titles.items():
        lms.hook("resource-link", context_id="names-101", resource_link_id=link, title=title, line_item=False)
        lms.open("student-ada", link, context_id="names-101")
    labels = {i["resource_link_id"]: i["label"] for i in lms.state()["line_items"] if i["context_id"] == "names-101"}
    assert labels == {"named-1": "Decode, week 1", "named-2": "Decode, week 2 (retake)", "untitled": TITLE}


def test_the_pages_say_when_scores_cannot_reach_the_gradebook(lms):
    lms.hook("resource-link", resource_link_id="no-ags", line_item=False, ags="none")
    lms.hook("resource-link", resource_link_id="sync-only", line_item=False, ags="sync")
    for link, says in (("no-ags", "gives this tool no access to its gradebook"), ("sync-only", "no gradebook column")):
        student = lms.open("student-ada", link)
        note = student.html.split('id="gradebook-problem">', 1)[1].split("</p>", 1)[0]
        assert says in note and "stay here in the tool" in note
        staff = lms.open("instructor-turing", link).html.split('id="gradebook-problem">', 1)[1].split("</p>", 1)[0]
        assert says in staff and ("Assignment and Grade Services" in staff or "Select content" in staff)
    assert not [i for i in lms.state()["line_items"] if i["resource_link_id"] in ("no-ags", "sync-only")]
    student.upload(notebook_bytes())
    (attempt,) = student.wait_graded(1)
    assert attempt["gradebook_state"] == "no_column"


def test_canvas_sends_the_due_date_variable_unexpanded_when_there_is_none(lms):
    page = lms.open("student-grace", "canvas-no-due")
    assert "due <time" not in page.html and "The due date has passed" not in page.html
    lms.hook("due-date", resource_link_id="canvas-due", due_at="2030-06-01T12:00:00+02:00")
    assert '<time datetime="2030-06-01T10:00:00Z">' in lms.open("student-grace", "canvas-due").html


def test_a_platform_added_with_the_cli_is_accepted_at_once(lms):
    second = start_platform(lms.tool.url, client_id="added-later", test_hooks=True)
    try:
        requests.get(f"{lms.tool.url}/lti/jwks.json", timeout=10)  # the server has just read its platforms
        lms.tool.register_platform(second.url, "added-later", "1")
        response = platform_launch(second.url, browser_session(), user="student-ada")
        assert response.status_code == 200 and "Download the notebook" in response.text, response.text[:500]
    finally:
        second.stop()


def late_columns(platform_url: str, state: dict | None = None) -> list[dict]:
    state = state or requests.get(f"{platform_url}/_test/state", timeout=10).json()
    return [item for item in state["line_items"] if item["context_id"] == "late"]


TOOL_WAITS = 3.0
"""seconds the tool waits for the platform in the test below: its token and the link's columns must come within
them on a loaded machine (0.5 s did not, once: no column was ever asked for); only creating the column is slower"""


def test_scores_wait_for_a_column_the_platform_failed_to_create(tmp_path, built_assignment, monkeypatch):
    """The first try to create a plain link's column times out (the platform is too slow; it makes the column
    after the tool gave up): the page says so, the attempt is kept, and a later launch finds that column instead
    of making a second one, and sends the waiting score to it."""
    from lti_service import create_app
    from lti_service.config import Config
    from lti_service.db import Attempt, Launch
    from lti_service.gradebook import columns
    from lti_service.gradebook.passback import send
    from lti_service.lti.ags import LINEITEM_SCOPE, SCORE_SCOPE
    from lti_service.lti.lineitems import AGS_CLAIM
    from lti_service.platforms import add_platform
    from lti_service.services import Services
    from lti_service.submissions.grading import create_attempt

    monkeypatch.setattr(columns, "CLAIM", dt.timedelta(0))  # a later launch may try again at once
    services = Services.from_config(Config(data_dir=tmp_path, http_timeout=TOOL_WAITS))
    with ServerThread(create_app(services=services), "127.0.0.1") as tool:  # serves the JWKS the platform checks
        with start_platform(tool.url, test_hooks=True) as platform:
            registered = add_platform(services.db, platform.url, "decode-grader-dev", ["1"], f"{platform.url}/auth",
                                      f"{platform.url}/token", f"{platform.url}/.well-known/jwks.json")  # fmt: skip
            ags = {"scope": [LINEITEM_SCOPE, SCORE_SCOPE], "lineitems": f"{platform.url}/ags/late/lineitems?type_id=1"}
            launch = Launch(id="l", platform_id=registered.id, context_id="late", resource_link_id="plain-late",
                            user_id="student-ada", message_type="LtiResourceLinkRequest",
                            claims={AGS_CLAIM: ags})  # fmt: skip
            requests.post(f"{platform.url}/_test/config", json={"lineitems_delay": 2 * TOOL_WAITS}, timeout=10)
            assert columns.ensure_column(services, launch) == []  # timed out
            assert "could not be created yet" in columns.gradebook_problem(services, launch)
            assert "last try: " in columns.gradebook_problem(services, launch, for_staff=True)
            attempt, _ = create_attempt(services, launch, "decode.ipynb", notebook_bytes())
            with services.db.session() as session:
                row = session.get(Attempt, attempt.id)
                assert row.lineitem_url is None
                row.status, row.score, row.max_score = "graded", 12.0, 16.0

            requests.post(f"{platform.url}/_test/config", json={"lineitems_delay": 0}, timeout=10)
            wait_for(lambda: late_columns(platform.url))  # the slow platform made the column after the tool gave up
            (passback_id,) = columns.ensure_column(services, launch)
            assert columns.gradebook_problem(services, launch) is None
            send(services, passback_id)
            state = requests.get(f"{platform.url}/_test/state", timeout=10).json()
    (column,) = late_columns(platform.url, state)  # the later launch found it: no second column
    (score,) = state["scores"]
    assert column["resource_link_id"] == "plain-late" and score["line_item_id"] == column["id"]
    assert (score["user_id"], score["score_given"], score["score_maximum"]) == ("student-ada", 12.0, 18.0)
