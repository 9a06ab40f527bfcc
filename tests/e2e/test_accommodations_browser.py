"""A teacher gives two students an extension from the dashboard in the LMS's frame, and a student sees it."""

from __future__ import annotations

import datetime as dt

from playwright.sync_api import expect

from testbed.browser import course_launch, tool_frame
from testbed.submissions import notebook_bytes
from tests.e2e.a11y import check_instructor_dashboard_accessibility

TOOL_ENV = {"PASSBACK_BACKOFF": "0.05", "PASSBACK_MAX_BACKOFF": "0.2", "WORKER_POLL": "0.25"}
LINK = "accommodations-e2e"


def test_a_teacher_extends_the_due_date_of_two_students_and_they_see_it(lms, page, screenshot):
    lms.hook("resource-link", resource_link_id=LINK, line_item=True)
    lms.hook("due-date", resource_link_id=LINK, due_at="2020-01-01T00:00:00Z")
    for user in ("student-ada", "student-grace"):
        lms.open(user, LINK)  # they have opened it: the tool knows them even without the course's roster
    page.goto(course_launch(lms, "instructor-turing", resource_link=LINK))
    frame = tool_frame(page)
    new_due = (dt.datetime.now(dt.UTC) + dt.timedelta(days=5)).replace(hour=17, minute=0)
    frame.get_by_label("Ada Lovelace").check()
    frame.get_by_label("Grace Hopper").check()
    frame.get_by_label("New due date (UTC)").fill(new_due.strftime("%Y-%m-%dT%H:%M"))
    with frame.expect_navigation():
        frame.get_by_role("button", name="Save for the students picked").click()
    expect(frame.locator("#accommodations-saved")).to_contain_text("Saved for 2 students.")
    rows = frame.locator("#accommodation-list tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.first).to_contain_text(new_due.strftime("%Y-%m-%d 17:00 UTC"))
    expect(rows.first.locator(".history")).to_contain_text("Alan Turing: due")
    screenshot(page, "extensions-set")
    check_instructor_dashboard_accessibility(frame)

    page.goto(course_launch(lms, "student-grace", resource_link=LINK))
    frame = tool_frame(page)
    expect(frame.locator("#extension")).to_have_text(
        f"Your due date is {new_due:%Y-%m-%d} 17:00 UTC: an extension from your course staff."
    )
    expect(frame.locator("#rules")).not_to_contain_text("The due date has passed.")
    expect(frame.locator("#upload-form")).to_be_visible()
    screenshot(page, "student-sees-extension")


def test_a_teacher_gives_back_a_late_day_and_is_told_what_it_forgives(lms, page, screenshot):
    link = "late-days-e2e"
    lms.hook("resource-link", resource_link_id=link, context_id=link, line_item=True)
    due = (dt.datetime.now(dt.UTC) - dt.timedelta(hours=12)).strftime("%Y-%m-%dT%H:%M:%SZ")
    lms.hook("due-date", resource_link_id=link, context_id=link, due_at=due)
    page.goto(course_launch(lms, "instructor-turing", context_id=link, resource_link=link))
    frame = tool_frame(page)
    frame.get_by_label("Late days each student may spend in this course").fill("2")
    with frame.expect_navigation():
        frame.get_by_role("button", name="Save late days").click()
    expect(frame.locator("#late-days-saved")).to_have_text("Late days saved.")

    ada = lms.open("student-ada", link, context_id=link)
    assert ada.upload(notebook_bytes()).status_code == 200  # half a day late: one late day spent
    page.goto(course_launch(lms, "instructor-turing", context_id=link, resource_link=link))
    frame = tool_frame(page)
    row = frame.locator('#accommodation-list tr[data-user="student-ada"]')
    with frame.expect_navigation():
        row.get_by_role("button", name="Give back (forgive that much lateness)").click()
    expect(frame.locator("#late-days-given-back")).to_have_text(
        "Gave back 1 late day: lateness of up to that much is forgiven on this assignment; later lateness spends "
        "days again."
    )
    expect(row).to_contain_text("0 (lateness of up to 1 day forgiven)")
    expect(row.locator(".history")).to_contain_text("1 late day given back: lateness of up to 1 late day forgiven")
    screenshot(page, "late-day-given-back")
    check_instructor_dashboard_accessibility(frame)
