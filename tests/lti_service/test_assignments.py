"""Many assignments in one deployment, over real HTTP: deep linking offers a course what it may use and pins
the link to a version; students get their link's assignment; course staff add their own; a link moves to a
new version only after its staff compared the regraded scores."""

from __future__ import annotations

import io
import re
import zipfile
from html import unescape
from urllib.parse import urljoin

import nbformat
import pytest
import requests

from lti_dev_platform.client import launch
from lti_service.views.launches import ADDING_TURNED_OFF
from testbed import parity
from testbed.lms import Lms, StudentPage, add_link, finished_build, staff_page, start_lms, upload_zip
from testbed.parity import ASSIGNMENTS
from testbed.submissions import notebook_bytes
from testbed.tool import browser_session, wait_for
from tests.lti_service import gradebook
from tests.lti_service.gradebook import STUDENTS, TITLE

DECODE = "Decode: one token at a time"
RAINFALL = ASSIGNMENTS / "rainfall"
LAB_4 = "Lab 4: Rain over three cities"
TOOL_ENV = {"COURSE_ASSIGNMENTS": "1"}  # course staff add their own assignments (the default, said explicitly)


@pytest.fixture(scope="module")
def with_gradebook(lms: Lms) -> Lms:
    """The LMS, with gradebook added for every course by the operator."""
    lms.tool.cli("assignment", "add", "--master", str(gradebook.MASTER))
    return lms


def column(lms: Lms, link: dict) -> dict:
    (item,) = [i for i in lms.state()["line_items"] if i["id"] == link["line_item_id"]]
    return item


def offered(lms: Lms, context_id: str) -> list[str]:
    """The titles the course's deep-linking page offers."""
    return re.findall(r'<label for="assignment-\d+">(.+?) \(', deep_linking(lms, context_id))


def test_deep_linking_pins_each_link_to_the_chosen_assignment(with_gradebook, versions):
    lms = with_gradebook
    assert offered(lms, "many-1") == [DECODE, TITLE]
    link = add_link(lms, "many-1", TITLE)
    assert list(link["custom"]) == ["assignment_version"] and link["custom"]["assignment_version"].isdigit()
    assert (column(lms, link)["label"], column(lms, link)["score_maximum"], column(lms, link)["resource_id"]) == (
        TITLE, 11.0, "gradebook")  # fmt: skip
    decode_link = add_link(lms, "many-1", DECODE)
    assert column(lms, decode_link)["score_maximum"] == 18.0  # 16 autograded and 2 for a written answer

    page = lms.open("student-ada", link["resource_link_id"], context_id="many-1")
    assert TITLE in page.html and "11 points" in page.html and "gradebook.zip" in page.html
    download = page.session.get(f"{page.url}/notebook")
    handout = zipfile.ZipFile(io.BytesIO(download.content))
    assert sorted(handout.namelist()) == ["data/gradebook.csv", "gradebook.ipynb"]  # not the tests' own data
    refused = page.upload(notebook_bytes())
    assert refused.status_code == 400 and "for assignment 'decode', not 'gradebook'" in unescape(refused.text)
    assert f"(the assignment here is “{TITLE}”)" in refused.text and page.attempts() == []

    page.upload(versions.notebooks["student-ada"], filename="gradebook.ipynb")
    (attempt,) = page.wait_graded(1)
    assert (attempt["status"], attempt["score"], attempt["max_score"]) == ("graded", 11.0, 11.0)
    (score,) = wait_for(lambda: [s for s in lms.scores("student-ada") if s["line_item_id"] == link["line_item_id"]])
    assert (score["score_given"], score["score_maximum"]) == (11.0, 11.0)


def test_a_link_made_without_deep_linking_gets_the_built_in_assignment(with_gradebook):
    with_gradebook.hook("resource-link", context_id="many-1", resource_link_id="plain-many", line_item=True)
    page = with_gradebook.open("student-grace", "plain-many", context_id="many-1")
    assert f"<h1>{DECODE}</h1>" in page.html and "18 points" in page.html


def upload_assignment(page: StudentPage, master, files=(), **form) -> requests.Response:
    uploads = [("master", (master.name, master.read_bytes()))] + [("files", (f.name, f.read_bytes())) for f in files]
    data = {"csrf_token": page.csrf, "source": "master", "assignment_id": "", "title": "", **form}
    return page.session.post(f"{page.url}/assignments", data=data, files=uploads, timeout=30)


def test_course_staff_add_an_assignment_that_only_their_course_sees(with_gradebook, tmp_path):
    lms = with_gradebook
    staff = staff_page(lms, "many-2")
    assert "This course's assignments" in unescape(staff.html)
    rainfall = [RAINFALL / "data" / "rainfall.csv", RAINFALL / "data" / "monthly_totals.csv"]
    built = upload_assignment(staff, RAINFALL / "rainfall.ipynb", rainfall)
    report = finished_build(staff, built)
    assert f"Added: {LAB_4}" in report and "Version 1 of <code>rainfall</code>" in report
    assert re.search(r'<th scope="row">Total</th><td>\d+</td><td>\d+</td><td>\d+</td>', report), report
    assert "nothing to install" in report
    assert LAB_4 in offered(lms, "many-2") and LAB_4 not in offered(lms, "many-3")

    other = staff_page(lms, "many-3")
    assert other.session.get(built.url.replace(staff.url, other.url), timeout=10).status_code == 404
    assert "rainfall" not in other.session.get(f"{other.url}/assignments", timeout=10).text
    student = lms.open("student-ada", "many-2-home", context_id="many-2")
    assert student.session.get(f"{student.url}/assignments", timeout=10).status_code == 403
    (version_id,) = re.findall(rf'id="assignment-(\d+)"[^>]*>\s*<label[^>]*>{LAB_4}', deep_linking(lms, "many-2"))
    lms.hook("resource-link", context_id="many-3", resource_link_id="copied", custom={"assignment_version": version_id})
    refused = launch(
        lms.platform.url, browser_session(), user="student-ada", context_id="many-3", resource_link="copied"
    )
    assert refused.status_code == 403 and "not available to this course" in refused.text


def test_uploads_that_cannot_become_an_assignment_store_nothing(with_gradebook, tmp_path):
    lms = with_gradebook
    staff = staff_page(lms, "many-4")
    rainfall = [RAINFALL / "data" / "rainfall.csv", RAINFALL / "data" / "monthly_totals.csv"]
    duplicate = upload_assignment(staff, gradebook.MASTER, gradebook.SUPPORT_FILES)
    assert duplicate.status_code == 400 and "offered to every course already" in duplicate.text
    missing = upload_assignment(staff, RAINFALL / "rainfall.ipynb")
    assert missing.status_code == 400 and "lists data/rainfall.csv, data/monthly_totals.csv: add them" in missing.text
    broken = tmp_path / "rainfall.ipynb"
    broken.write_text((RAINFALL / "rainfall.ipynb").read_text().replace("name: q1\\n", "nome: q1\\n", 1))
    failed = finished_build(staff, upload_assignment(staff, broken, rainfall))
    assert "The build failed: nothing was stored." in failed and "Question name not specified" in failed
    slides = upload_zip(staff, gradebook.not_otter_zip(), b"{}")
    assert "The build failed: nothing was stored." in finished_build(staff, slides)
    assert "the zip has no tests/*.py files: is it an Otter autograder zip?" in finished_build(staff, slides)
    library = staff.session.get(f"{staff.url}/assignments", timeout=10).text
    assert "None yet: add one below." in library and LAB_4 not in deep_linking(lms, "many-4")

    savings = parity.build("savings", tmp_path / "savings")
    student = nbformat.writes(savings.student).encode()
    report = finished_build(staff, upload_zip(staff, savings.zip.read_bytes(), student, "savings.ipynb"))
    assert "Version 1 of <code>savings</code>, from autograder zip" in report
    assert "students download savings.ipynb" in report


def deep_linking(lms: Lms, context_id: str) -> str:
    """The course's deep-linking page."""
    return launch(lms.platform.url, browser_session(), user="instructor-turing", context_id=context_id,
                  kind="deeplink").text  # fmt: skip


def test_a_link_moves_to_a_new_version_only_after_staff_compare_the_regraded_scores(with_gradebook, versions):
    lms = with_gradebook
    link = add_link(lms, "many-move", TITLE)
    for user, notebook in versions.notebooks.items():
        page = lms.open(user, link["resource_link_id"], context_id="many-move")
        page.upload(notebook, filename="gradebook.ipynb")
        page.wait_graded(1)
    sent = {user: round(versions.fraction(versions.v1, user) * 11, 4) for user in STUDENTS}
    wait_for(lambda: gradebook_scores(lms, link) == sent)
    posts_before = len(lms.state()["score_log"])

    lms.tool.cli("assignment", "update", "gradebook", "--master", str(gradebook.version_2(lms.tool.data_dir / "v2")))
    staff = lms.open("instructor-turing", link["resource_link_id"], context_id="many-move")
    assert "Version 2 of this assignment is available" in staff.html
    review_url = urljoin(staff.url, re.search(r'href="([^"]+)">See what it changes', staff.html).group(1))
    review = staff.session.get(review_url, timeout=10).text
    assert "section_means: points 2 → 4" in review and "scores: hidden tests 1 → 2" in review
    assert "Every one of the 2 submissions is graded against version 2 first" in review
    moving = staff.session.post(f"{review_url}/move", data={"csrf_token": staff.csrf}, timeout=10)
    wait_for(lambda: staff.session.get(moving.url + ".json", timeout=10).json()["finished"], timeout=90)
    table = comparison(staff.session.get(moving.url, timeout=10).text)
    assert table == {
        user: (f"{versions.fraction(versions.v1, user) * 11:.2f}", f"{versions.fraction(versions.v2, user) * 13:.2f}")
        for user in STUDENTS
    }
    ada = lms.open("student-ada", link["resource_link_id"], context_id="many-move")
    assert "11 points" in ada.html and ada.attempts()[0]["max_score"] == 11.0  # nothing changed for students yet
    assert len(lms.state()["score_log"]) == posts_before  # nor in the gradebook

    applied = staff.session.post(f"{moving.url}/apply", data={"csrf_token": staff.csrf}, timeout=10)
    assert "This link uses version 2 of" in applied.text
    moved = {user: round(versions.fraction(versions.v2, user) * 11, 4) for user in STUDENTS}  # the column keeps 11
    assert moved["student-grace"] != sent["student-grace"]
    wait_for(lambda: gradebook_scores(lms, link) == moved)
    ada = lms.open("student-ada", link["resource_link_id"], context_id="many-move")
    assert "13 points" in ada.html and ada.attempts()[0]["max_score"] == 13.0

    retired = lms.tool.cli("assignment", "remove", "gradebook")
    assert "retired: 2 links still use it" in retired and TITLE not in offered(lms, "many-move")
    assert "13 points" in lms.open("student-grace", link["resource_link_id"], context_id="many-move").html


def gradebook_scores(lms: Lms, link: dict) -> dict[str, float]:
    return {s["user_id"]: s["score_given"] for s in lms.state()["scores"] if s["line_item_id"] == link["line_item_id"]}


def comparison(page: str) -> dict[str, tuple[str, str]]:
    """The move page's table: each student's gradebook score before and after."""
    rows = re.findall(r'<tr data-user="([^"]+)">.*?class="before"><span class="points">([^<]*)<.*?class="after">'
                      r'<span class="points">([^<]*)<', page, re.S)  # fmt: skip
    return {user: (f"{float(before):.2f}", f"{float(after):.2f}") for user, before, after in rows}


def test_course_staff_add_assignments_by_default(tmp_path):
    """Their tests run confined (issue 18), so no setting is needed for course staff to add their own."""
    lms = start_lms(tmp_path)
    try:
        staff = staff_page(lms, "many-default")
        assert "This course's assignments" in unescape(staff.html)
        assert ADDING_TURNED_OFF not in unescape(staff.html)
        assert staff.session.get(f"{staff.url}/assignments", timeout=10).status_code == 200
    finally:
        lms.tool.stop()
        lms.platform.stop()


def test_where_the_operator_turns_adding_off_course_staff_are_told_in_their_words(tmp_path):
    """COURSE_ASSIGNMENTS=0: only the operators add assignments; the pages say what a teacher can do,
    without commands or settings."""
    lms = start_lms(tmp_path, COURSE_ASSIGNMENTS="0")
    try:
        staff = staff_page(lms, "many-default")
        assert "This course's assignments" not in unescape(staff.html)
        assert ADDING_TURNED_OFF in unescape(staff.html) and ADDING_TURNED_OFF in unescape(
            deep_linking(lms, "many-default")
        )
        for page in (staff.html, deep_linking(lms, "many-default")):
            assert "python -m" not in page and "COURSE_ASSIGNMENTS" not in page  # no operator jargon
        refused = upload_assignment(staff, RAINFALL / "rainfall.ipynb")
        assert refused.status_code == 403 and ADDING_TURNED_OFF in unescape(refused.text)
        assert staff.session.get(f"{staff.url}/assignments", timeout=10).status_code == 403
        assert "rainfall" not in lms.tool.cli("assignment", "list")
        student = lms.open("student-ada", "many-default-home", context_id="many-default")
        assert ADDING_TURNED_OFF not in unescape(student.html)
    finally:
        lms.tool.stop()
        lms.platform.stop()
