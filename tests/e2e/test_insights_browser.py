"""A teacher reads what the class got wrong and a pair of similar submissions side by side, in the LMS's frame."""

from __future__ import annotations

from playwright.sync_api import expect

from testbed.browser import course_launch, tool_frame
from testbed.students_code import COPIED, notebook, renamed_and_reordered
from testbed.tool import wait_for
from tests.e2e.a11y import assert_accessible

TOOL_ENV = {"WORKER_POLL": "0.25"}
LINK = "insights-e2e"
CLASS = {
    "student-ada": notebook("loops", "decode_time_one_step_short"),
    "student-grace": notebook("recursion", "decode_time_one_step_short"),
    "student-copy-one": notebook(None, code=COPIED),
    "student-copy-two": notebook(None, code=renamed_and_reordered(COPIED)),
}


def test_a_teacher_reads_the_common_mistakes_and_a_similar_pair(lms, page, screenshot):
    lms.hook("resource-link", resource_link_id=LINK, line_item=True)
    lms.hook("enrol", users=list(CLASS))
    for user, data in CLASS.items():
        student = lms.open(user, LINK)
        student.upload(data)
        student.wait_graded(1)
    staff = lms.open("instructor-turing", LINK)  # computed in the background once the gradings settle
    wait_for(lambda: "of 4 students" in staff.session.get(f"{staff.url}/staff/insights", timeout=10).text)
    page.goto(course_launch(lms, "instructor-turing", resource_link=LINK))
    frame = tool_frame(page)
    with frame.expect_navigation():
        frame.get_by_role("link", name="What the class got wrong, and similar submissions").click()
    expect(frame.locator("#insights-status")).to_contain_text("of 4 students")
    decode_time = frame.locator('table.mistakes[data-question="decode_time"] tbody tr').first
    expect(decode_time.locator(".students")).to_have_text("2 (50%)")
    decode_time.locator("summary").first.click()
    expect(decode_time.locator("details pre").first).to_contain_text("def decode_time")
    expect(frame.locator("#similar-hint")).to_contain_text("never a penalty")
    screenshot(page, "insights")
    assert_accessible(frame)
    with frame.expect_navigation():
        frame.get_by_role("link", name="Side by side").click()
    expect(frame.locator("h1")).to_contain_text("student-copy-")
    expect(frame.locator(".side-by-side section")).to_have_count(2)
    expect(frame.locator(".side-by-side section").nth(0).locator("mark").first).to_be_visible()
    expect(frame.locator(".side-by-side section").nth(1).locator("mark").first).to_be_visible()
    screenshot(page, "side-by-side")
    assert_accessible(frame)
