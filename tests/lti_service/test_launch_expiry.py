"""A launch past its `expires_at` opens nothing: every page and action of it answers 404 (views/launches.py),
and a notebook window opened from it is signed out (browser/windows.py), for students and course staff alike.
A new launch from the course opens everything again."""

from __future__ import annotations

import datetime as dt
import re
from urllib.parse import urljoin

from sqlalchemy import update

from lti_service.db import Launch, utcnow
from testbed.lms import Lms, StudentPage
from testbed.submissions import notebook_bytes
from tests.lti_service.lite_windows import open_window


def expire(lms: Lms, page: StudentPage) -> None:
    """The launch behind the page, past its lifetime by a second."""
    services = lms.tool.services()
    try:
        with services.db.session() as session:
            session.execute(
                update(Launch)
                .where(Launch.id == page.url.rsplit("/", 1)[1])
                .values(expires_at=utcnow() - dt.timedelta(seconds=1))
            )
    finally:
        services.db.engine.dispose()


def open_form(page: StudentPage) -> tuple[str, dict[str, str]]:
    """Where the page's "Open in the browser" form posts, and its fields."""
    form = re.search(r'<form method="post" action="([^"]+)" target="_blank" [^>]*id="open-in-browser-form"', page.html)
    fields = dict(re.findall(r'name="(launch|csrf_token)" value="([^"]+)"', page.html[form.start() :]))
    return urljoin(page.url, form.group(1)), fields


def test_an_expired_student_launch_opens_no_page_takes_no_upload_and_opens_no_window(lms):
    link = "expiry-student"
    ada = lms.open("student-ada", link)
    window = open_window(ada)  # opened while the launch lives
    action, fields = open_form(ada)
    assert ada.session.get(ada.url, timeout=10).status_code == 200
    assert window.get("jupyter-lite.json").status_code == 200

    expire(lms, ada)
    for path in ("", "/attempts.json"):
        assert ada.session.get(ada.url + path, timeout=10).status_code == 404, path
    assert ada.upload(notebook_bytes()).status_code == 404
    assert ada.session.post(action, data=fields, timeout=10).status_code == 404, "no new window"
    assert window.get("jupyter-lite.json").status_code == 401, "the window opened before is signed out"
    assert window.send("PUT", "drafts/decode.ipynb", b"after expiry").status_code == 401
    assert window.send("POST", "submit", notebook_bytes()).status_code == 401

    again = lms.open("student-ada", link)  # a new launch from the course
    assert again.attempts() == [], "nothing was uploaded or submitted through the expired launch"
    assert open_window(again).get("files/decode.ipynb").content != b"after expiry"


def test_an_expired_staff_launch_opens_no_staff_page_and_takes_no_change(lms):
    link = "expiry-staff"
    staff = lms.open("instructor-turing", link)
    pages = ("", "/staff/written", "/staff/scores.csv")
    assert [staff.session.get(staff.url + p, timeout=10).status_code for p in pages[:2]] == [200, 200]

    expire(lms, staff)
    for path in pages[:2]:
        assert staff.session.get(staff.url + path, timeout=10).status_code == 404, path
    form = {"csrf_token": staff.csrf}
    assert staff.session.post(staff.url + pages[2], data=form, timeout=10).status_code == 404
    changed = {**form, "score_policy": "latest", "attempt_limit": "1", "late_policy": "accept", "late_penalty": "0"}
    assert staff.session.post(f"{staff.url}/staff/settings", data=changed, timeout=10).status_code == 404
    assert staff.session.post(f"{staff.url}/staff/written/settings", data={**form, "released": "on"}).status_code == 404

    again = lms.open("instructor-turing", link)
    assert again.session.get(again.url, timeout=10).status_code == 200
    written = again.session.get(f"{again.url}/staff/written", timeout=10).text
    assert 'id="released" name="released" type="checkbox" checked' not in written, "no change was taken"
    assert '<option value="best" selected>' in again.html
    assert 'name="attempt_limit" type="number" min="1" value=""' in again.html
