"""Canvas refuses scores for an unpublished assignment: the instructor's dashboard, in the LMS's iframe, says
what happened and what to do; once the assignment is published the score lands, with nobody re-sending."""

from __future__ import annotations

from playwright.sync_api import expect

from testbed.browser import course_launch, tool_frame
from testbed.lms import in_gradebook
from testbed.submissions import notebook_bytes
from testbed.tool import wait_for
from tests.e2e.a11y import check_instructor_dashboard_accessibility

TOOL_ENV = {"PASSBACK_MAX_BACKOFF": "1"}  # a held score is tried again every second (every 5 minutes by default)
LINK = "decode-e2e-unpublished"
UNPUBLISHED = (
    "Canvas does not accept scores while this assignment is unpublished. Publish it in Canvas: the score waiting "
    "here is sent within a few minutes."
)


def test_the_dashboard_says_to_publish_and_the_score_lands_once_published(lms, page, screenshot):
    lms.hook("resource-link", resource_link_id=LINK, line_item=True)
    lms.hook("publish", resource_link_id=LINK, published=False)
    ada = lms.open("student-ada", LINK)
    try:
        ada.upload(notebook_bytes())
        wait_for(lambda: ada.attempts()[0]["gradebook_state"] == "held", timeout=90)

        page.goto(course_launch(lms, "instructor-turing", resource_link=LINK))
        frame = tool_frame(page)
        expect(frame.locator("h1")).to_contain_text("Instructor dashboard")
        expect(frame.locator("#grades-refused-unpublished")).to_have_text(UNPUBLISHED)
        expect(frame.get_by_role("alert").filter(has_text="Publish it in Canvas")).to_have_count(1)
        expect(frame.locator('tr[data-user="student-ada"] .gradebook')).to_contain_text("unpublished")
        expect(frame.locator("#grades-waiting")).to_have_count(0)  # not told to wait for the platform
        screenshot(page, "dashboard-unpublished")
        check_instructor_dashboard_accessibility(frame)
    finally:
        lms.hook("publish", resource_link_id=LINK, published=True)

    assert wait_for(lambda: lms.gradebook(LINK), timeout=30) == {"student-ada": in_gradebook(16)}
    assert {post["status"] for post in lms.state()["score_log"]} == {422, 200}
    page.goto(course_launch(lms, "instructor-turing", resource_link=LINK))
    frame = tool_frame(page)
    expect(frame.locator('tr[data-user="student-ada"] .gradebook')).to_contain_text("sent 16 at")
    expect(frame.locator("#grades-refused-unpublished")).to_have_count(0)
    expect(frame.locator(".job")).to_have_count(0)  # no "Re-send" was started
    screenshot(page, "dashboard-published")
