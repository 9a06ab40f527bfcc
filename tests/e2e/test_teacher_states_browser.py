"""States a teacher or a student meets in the LMS, named in their words (issue 21), in a real browser.

Each test is one case that confused people in a real Moodle or Canvas: a choice made for the teacher, an
action that silently did nothing, a page that went stale after background work, a status on the wrong
attempt. Every page visited passes the accessibility helper.
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from testbed.browser import course_launch, tool_frame, upload
from testbed.submissions import notebook_bytes, slow_notebook
from tests.e2e.a11y import assert_accessible, check_instructor_dashboard_accessibility
from tests.e2e.conftest import GRADING_TIMEOUT_MS, TITLE

TOOL_ENV = {
    "PASSBACK_BACKOFF": "0.05",
    "PASSBACK_MAX_BACKOFF": "0.2",
    "WORKER_POLL": "0.25",
    "MAX_UPLOAD_BYTES": "400000",
}


def test_deep_linking_chooses_nothing_for_the_teacher(lms, page, screenshot):
    """No assignment is pre-selected (the first of the list is often another one); adding without a choice
    says what to do, on the page, focused."""
    page.goto(course_launch(lms, "instructor-turing", context_id="course-choose", kind="deeplink"))
    frame = tool_frame(page)
    radios = frame.get_by_role("radio")
    expect(radios).not_to_have_count(0)
    assert not [radio for radio in radios.all() if radio.is_checked()]
    expect(frame.locator(".choice .meta").first).not_to_contain_text(re.compile(r"\b1 questions"))
    frame.evaluate("() => { document.querySelector('form').noValidate = true; }")  # as a browser without checks
    frame.get_by_role("button", name="Add to the course").click()
    expect(frame.locator("#choice-error")).to_have_text(re.compile("Choose the assignment to add"))
    expect(frame.locator("#choice-error")).to_be_focused()
    screenshot(page, "nothing-chosen")
    assert_accessible(frame)
    frame.get_by_label(re.compile(re.escape(TITLE))).check()
    frame.get_by_role("button", name="Add to the course").click()
    expect(frame.locator("h1")).to_have_text("Activities added")


def test_the_same_notebook_uploaded_again_says_that_no_attempt_was_made(lms, page, screenshot, tmp_path):
    lms.hook("resource-link", resource_link_id="states-same", line_item=True)
    page.goto(course_launch(lms, "student-grace", resource_link="states-same"))
    frame = tool_frame(page)
    solved = tmp_path / "decode.ipynb"
    solved.write_bytes(notebook_bytes())
    upload(frame, solved)
    frame.locator(".attempt[data-status=graded]").wait_for(timeout=GRADING_TIMEOUT_MS)
    upload(frame, solved)
    expect(frame.locator("#upload-notice")).to_contain_text("same as your attempt 1, so no new attempt was made")
    expect(frame.locator(".attempt")).to_have_count(1)
    screenshot(page, "same-notebook")
    assert_accessible(frame)


def test_after_regrade_all_the_roster_shows_the_new_scores_without_a_reload(lms, page, screenshot):
    lms.hook("resource-link", resource_link_id="states-regrade", line_item=True)
    student = lms.open("student-ada", "states-regrade")
    student.upload(slow_notebook(2))  # its regrade lasts long enough for the page to show it under way
    student.wait_graded(1)
    page.goto(course_launch(lms, "instructor-turing", resource_link="states-regrade"))
    frame = tool_frame(page)
    ada = frame.locator('#roster tr[data-user="student-ada"]')
    expect(ada.get_by_role("cell")).to_contain_text(["1", "16", "16"])
    with frame.expect_navigation():
        frame.get_by_role("button", name="Regrade all submissions").click()
    frame.evaluate("() => { window.e2eSameDocument = true; }")  # gone if the page reloads
    expect(ada.get_by_role("cell")).to_contain_text(["1", "being graded", "being graded"])
    screenshot(page, "regrading")
    expect(frame.locator(".job").first).to_contain_text("finished", timeout=GRADING_TIMEOUT_MS)
    expect(ada.get_by_role("cell")).to_contain_text(["1", "16", "16"])
    expect(ada.locator(".gradebook")).to_contain_text("sent 16")
    expect(frame.locator("figure#pass-rates title")).to_contain_text("generate 100%")  # the charts too
    assert frame.evaluate("() => window.e2eSameDocument === true"), "the page reloaded instead of updating"
    screenshot(page, "regraded")
    check_instructor_dashboard_accessibility(frame)


def test_while_the_gradebook_is_unreachable_each_attempt_says_where_its_score_stands(lms, page, screenshot, tmp_path):
    """The attempt that counts says its score waits for the gradebook; a newer, lower attempt says why it is
    not the one sent (it used to say nothing while the older one said "failed, will retry")."""
    lms.hook("resource-link", resource_link_id="states-outage", line_item=True)
    page.goto(course_launch(lms, "student-ada", resource_link="states-outage"))
    frame = tool_frame(page)
    solved, partial = tmp_path / "decode.ipynb", tmp_path / "partial.ipynb"
    solved.write_bytes(notebook_bytes())
    partial.write_bytes(notebook_bytes("decode_time_one_step_short"))
    upload(frame, solved)
    expect(frame.locator(".attempt .gradebook")).to_have_text("sent to the gradebook", timeout=GRADING_TIMEOUT_MS)
    lms.hook("outage", status=503)
    try:
        upload(frame, partial)
        newest, counting = frame.locator(".attempt").nth(0), frame.locator(".attempt").nth(1)
        newest.locator(".score").wait_for(timeout=GRADING_TIMEOUT_MS)
        expect(counting.locator(".gradebook")).to_contain_text("the tool keeps trying", timeout=30_000)
        expect(newest.locator(".gradebook")).to_have_text(
            "not sent: attempt 1 has your best score, and the gradebook keeps it"
        )
        expect(newest.locator(".status")).to_have_text("graded")
        screenshot(page, "gradebook-unreachable")
        assert_accessible(frame)
    finally:
        lms.hook("outage", status=None)
    expect(counting.locator(".gradebook")).to_have_text("sent to the gradebook", timeout=30_000)


def test_actions_with_nothing_to_do_and_saved_settings_say_so(lms, page, screenshot):
    lms.hook("resource-link", resource_link_id="states-noop", line_item=True)
    page.goto(course_launch(lms, "instructor-turing", resource_link="states-noop"))
    frame = tool_frame(page)
    with frame.expect_navigation():
        frame.get_by_role("button", name="Re-send pending and failed grades").click()
    expect(frame.locator(".job").first).to_have_text(re.compile("^Nothing to re-send: every grade"))
    with frame.expect_navigation():
        frame.get_by_role("button", name="Regrade all submissions").click()
    expect(frame.locator(".job").first).to_have_text(re.compile("^Nothing to regrade: no student has submitted"))
    frame.get_by_label("Gradebook score").select_option("latest")
    with frame.expect_navigation():
        frame.get_by_role("button", name="Save settings").click()
    expect(frame.locator("#settings-saved")).to_contain_text("Settings saved.")
    expect(frame.get_by_label("Gradebook score")).to_have_value("latest")
    screenshot(page, "nothing-to-do")
    check_instructor_dashboard_accessibility(frame)


def test_pages_met_when_something_is_refused_say_what_to_do_and_are_accessible(lms, page, screenshot, tmp_path):
    """The rest of the pages a student or teacher can meet: a notebook over the size limit, a staff page
    opened by a student."""
    lms.hook("resource-link", resource_link_id="states-refused", line_item=True)
    page.goto(course_launch(lms, "student-grace", resource_link="states-refused"))
    frame = tool_frame(page)
    huge = tmp_path / "huge.ipynb"
    huge.write_bytes(b" " * (2 * int(TOOL_ENV["MAX_UPLOAD_BYTES"])))
    upload(frame, huge)
    expect(frame.locator("h1")).to_have_text("That file is too large")
    expect(frame.get_by_role("alert")).to_contain_text("Nothing was saved.")
    screenshot(page, "too-large")
    assert_accessible(frame)
    page.goto(course_launch(lms, "student-grace", resource_link="states-refused"))
    frame = tool_frame(page)
    frame.goto(frame.url.split("#")[0] + "/staff/written")
    expect(frame.get_by_role("alert")).to_have_text(
        "This page is for the course's instructors and teaching assistants."
    )
    screenshot(page, "staff-only")
    assert_accessible(frame)
