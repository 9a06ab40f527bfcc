"""Downloads built from what an LMS sends (names, user ids, link ids) stay inert: scores.csv holds no
formula a spreadsheet would run, and no file name breaks out of its Content-Disposition.

The test signs its own launches (SigningPlatform) so that a student can carry the name and user id an
attacker would choose; Moodle lets students edit their names.
"""

from __future__ import annotations

import csv
import io
import re

import pytest
import requests

from testbed.submissions import notebook_bytes
from tests.lti_service.signing_platform import LTI, SigningPlatform, login, post_launch, registered_tool

HOSTILE_NAME = '=HYPERLINK("https://attacker.example","Grades")'
HOSTILE_ID = 'ada"; filename="payload.exe'
LINK = "link-\u00e9t\u00e9\r\nX-Injected: 1"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"


@pytest.fixture(scope="module")
def setup(tmp_path_factory, built_assignment):
    """The tool, the signing platform, and a student with a hostile name and id who uploaded a notebook."""
    platform = SigningPlatform()
    tool = registered_tool(platform, tmp_path_factory.mktemp("downloads-tool"), "--no-worker")
    session, page = open_page(platform, tool, sub=HOSTILE_ID, name=HOSTILE_NAME)
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', session.get(page).text).group(1)
    files = {"notebook": ("decode.ipynb", notebook_bytes(), "application/x-ipynb+json")}
    assert session.post(f"{page}/upload", data={"csrf_token": csrf}, files=files).status_code == 200
    yield platform, tool, session, page
    tool.stop()
    platform.server.stop()


def open_page(platform, tool, **claims) -> tuple[requests.Session, str]:
    """A launch of the link LINK with the given claims; the browser session and the page's URL."""
    session, state, nonce = login(tool, platform)
    claims = {LTI + "resource_link": {"id": LINK}, **claims}
    response = post_launch(tool, session, state, platform.token(nonce, tool.url, **claims))
    assert response.status_code == 303, response.text[:500]
    return session, tool.url + response.headers["Location"]


def open_dashboard(platform, tool) -> tuple[requests.Session, str]:
    return open_page(platform, tool, sub="teacher", **{LTI + "roles": [INSTRUCTOR]})


def page_csrf(session: requests.Session, page: str) -> str:
    return re.search(r'name="csrf_token" value="([^"]+)"', session.get(page).text).group(1)


def test_a_staff_download_url_fetches_nothing_opened_again_or_elsewhere(setup):
    """A download's URL stays in the browser's downloads list: opened from there (a GET), with the page's
    token from another browser, or without the token, it gives nothing; only the page's button fetches it."""
    platform, tool, _, _ = setup
    staff, page = open_dashboard(platform, tool)
    csrf = page_csrf(staff, page)
    attempt_id = re.search(r"/staff/attempts/(\d+)", staff.get(page).text).group(1)
    for path in ("/staff/scores.csv", f"/staff/attempts/{attempt_id}/notebook", "/staff/written/grades.csv"):
        assert staff.post(f"{page}{path}", data={"csrf_token": csrf}).status_code == 200, path
        reopened = staff.get(f"{page}{path}")
        assert reopened.status_code in (404, 405) and "Content-Disposition" not in reopened.headers, path
        assert staff.post(f"{page}{path}", data={"csrf_token": "x"}).status_code == 400, path
        elsewhere = requests.post(f"{page}{path}", data={"csrf_token": csrf}, timeout=10)
        assert elsewhere.status_code == 404 and "Content-Disposition" not in elsewhere.headers, path
        assert HOSTILE_ID not in reopened.text + elsewhere.text


def filename_parameters(header: str) -> dict[str, str]:
    """The parameters of a Content-Disposition value, split as RFC 6266 reads them."""
    assert "\r" not in header and "\n" not in header
    return dict(re.findall(r';\s*([\w*]+)=("(?:[^"\\]|\\.)*"|[^;]*)', header))


def test_scores_csv_cells_cannot_run_as_formulas(setup):
    platform, tool, _, _ = setup
    staff, page = open_dashboard(platform, tool)
    download = staff.post(f"{page}/staff/scores.csv", data={"csrf_token": page_csrf(staff, page)})
    rows = list(csv.DictReader(io.StringIO(download.text)))
    (row,) = [r for r in rows if r["user_id"] == HOSTILE_ID]
    assert row["name"] == "'" + HOSTILE_NAME and row["attempts"] == "1"
    assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for r in rows for cell in r.values())

    params = filename_parameters(download.headers["Content-Disposition"])
    assert params["filename"] == '"scores-link-_t___X-Injected__1.csv"'
    assert params["filename*"] == "UTF-8''scores-link-%C3%A9t%C3%A9%0D%0AX-Injected%3A%201.csv"
    assert "X-Injected" not in download.headers


def test_notebook_downloads_keep_their_file_names_quoted(setup):
    platform, tool, student, page = setup
    staff, staff_page = open_dashboard(platform, tool)
    attempt_id = re.search(r"/staff/attempts/(\d+)", staff.get(staff_page).text).group(1)
    download = staff.post(
        f"{staff_page}/staff/attempts/{attempt_id}/notebook", data={"csrf_token": page_csrf(staff, staff_page)}
    )
    assert download.status_code == 200 and download.content == notebook_bytes()
    params = filename_parameters(download.headers["Content-Disposition"])
    assert params["filename"] == f'"attempt-{attempt_id}-ada___filename__payload.exe.ipynb"'
    assert params["filename*"] == f"UTF-8''attempt-{attempt_id}-ada%22%3B%20filename%3D%22payload.exe.ipynb"
    assert set(params) == {"filename", "filename*"}

    student_copy = student.get(f"{page}/notebook")
    assert filename_parameters(student_copy.headers["Content-Disposition"])["filename"] == '"decode.ipynb"'
