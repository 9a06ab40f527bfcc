"""The tool in a real browser (headless Chromium), inside the LMS stand-in's iframe as an LMS shows it.

The same stories as tests/lti_service/test_flow.py, but through the pages: clicks, file inputs, the
auto-submitting forms, the live status updates of app.js and the browser's own cookie policy.
Screenshots of every page visited go to test-artifacts/e2e/.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urljoin

import pytest
import requests
from playwright.sync_api import Page, expect

from lti_dev_platform.client import parse_page
from testbed.browser import ToolFrame, course_launch, fraction, tool_frame, upload
from testbed.submissions import QUESTIONS, STUDENT_NOTEBOOK, notebook_bytes
from testbed.tool import wait_for
from tests.e2e.a11y import assert_accessible, check_instructor_dashboard_accessibility
from tests.e2e.conftest import GRADING_TIMEOUT_MS, TITLE

OFFERED = "16 points graded automatically, and written answers graded by course staff"  # how deep linking lists it
SIXTEEN_OF_SIXTEEN = re.compile(r"^16(\.0+)? / 16(\.0+)?$")
PLATFORM_SITE = "http://127.0.0.2"  # the partition of cookies set inside the platform's pages

# Records, in the page, every status an attempt shows (the server's render, then app.js's updates).
WATCH_STATUSES = """() => {
  const box = document.getElementById("attempts");
  const now = () => [...box.querySelectorAll(".attempt")].map((a) => a.dataset.status).join(",");
  window.e2eStatuses = [now()];
  window.e2eSameDocument = true;  // gone if the page reloads
  new MutationObserver(() => {
    if (window.e2eStatuses.at(-1) !== now()) window.e2eStatuses.push(now());
  }).observe(box, { childList: true, subtree: true, attributes: true });
}"""


def test_instructor_adds_the_assignment_then_a_student_is_graded_live(lms, page, screenshot, tmp_path):
    # The instructor picks the assignment with deep linking, in the iframe of a course that has no activity yet.
    page.goto(course_launch(lms, "instructor-turing", context_id="course-e2e", kind="deeplink"))
    frame = tool_frame(page)
    expect(frame.locator("h1")).to_have_text("Add an assignment to your course")
    frame.get_by_label(f"{TITLE} ({OFFERED})").check()
    screenshot(page, "deep-linking")
    assert_accessible(frame)
    frame.get_by_role("button", name="Add to the course").click()  # the tool's return form submits itself

    expect(frame.locator("h1")).to_have_text("Activities added")
    expect(frame.get_by_role("link", name=TITLE)).to_be_visible()
    screenshot(page, "deep-linking-done")
    (item,) = [i for i in lms.state()["line_items"] if i["context_id"] == "course-e2e"]
    assert (item["label"], item["score_maximum"]) == (TITLE, 18.0)

    # The course now lists it; Ada opens it from there (the LMS frames the tool).
    page.goto(f"{lms.platform.url}/course/course-e2e")
    row = page.get_by_role("row").filter(has_text=TITLE)
    expect(row).to_have_count(1)
    screenshot(page, "course-home")
    row.get_by_role("link", name="Ada Lovelace").click()
    frame = tool_frame(page)
    expect(frame.locator("h1")).to_have_text(TITLE)
    expect(frame.locator("p.meta").first).to_contain_text("signed in as Ada Lovelace")
    expect(frame.locator("#attempts")).to_contain_text("No attempts yet.")
    # This default context blocks third-party cookies: the login's state cookie was kept because it is
    # partitioned (kept for the tool inside the platform's pages only).
    state_cookies = [c for c in page.context.cookies(lms.tool.url) if c["name"].startswith("lti1p3-state-")]
    assert state_cookies and {c.get("partitionKey") for c in state_cookies} == {PLATFORM_SITE}, state_cookies
    screenshot(page, "student-before")
    assert_accessible(frame)

    with page.expect_download() as download_info:
        frame.get_by_role("link", name="Download the notebook").click()
    download = download_info.value
    assert download.suggested_filename == "decode.ipynb"
    assert Path(download.path()).read_bytes() == STUDENT_NOTEBOOK.read_bytes()

    solved = tmp_path / "decode.ipynb"
    solved.write_bytes(notebook_bytes())
    upload(frame, solved)
    expect(frame.locator(".attempt")).to_have_count(1)
    frame.evaluate(WATCH_STATUSES)
    screenshot(page, "student-submitted")

    graded = frame.locator(".attempt[data-status=graded]")
    graded.wait_for(timeout=GRADING_TIMEOUT_MS)
    assert frame.evaluate("() => window.e2eSameDocument === true"), "the page reloaded instead of updating"
    statuses = frame.evaluate("() => window.e2eStatuses")
    assert statuses[0] in ("queued", "grading") and statuses[-1] == "graded", statuses  # e.g. queued, grading, graded
    expect(graded.locator(".score")).to_have_text(SIXTEEN_OF_SIXTEEN)
    # Feedback per question: every question, full marks each, adding up to the 16 points.
    rows = graded.locator("table:not(.written) tbody tr")
    expect(rows).to_have_count(len(QUESTIONS))
    expect(graded.locator("table.written tr[data-question=two_rates]")).to_contain_text("2 points: not released yet")
    assert sorted(rows.locator("th code").all_inner_texts()) == sorted(QUESTIONS)
    scores = [fraction(text) for text in rows.locator("td:nth-of-type(1)").all_inner_texts()]
    assert all(given == possible > 0 for given, possible in scores) and sum(p for _, p in scores) == 16, scores
    assert all(text.strip() for text in rows.locator("td:last-of-type").all_inner_texts())
    expect(graded.locator("table:not(.written) caption")).to_have_text("Scores by question")
    screenshot(page, "student-graded")
    assert_accessible(frame)

    # The score reaches the LMS (the passback lands just after the page shows "graded"): the page says so
    # without a reload, and the platform's gradebook shows it.
    expect(frame.locator(".attempt .gradebook")).to_have_text("sent to the gradebook", timeout=30_000)
    assert [s for s in lms.scores("student-ada") if s["line_item_id"] == item["id"]]
    page.goto(f"{lms.platform.url}/gradebook")
    row = page.get_by_role("row").filter(has_text="course-e2e").filter(has_text="Ada Lovelace")
    expect(row).to_have_count(1)
    expect(row.get_by_role("cell")).to_contain_text(["course-e2e", "Ada Lovelace", TITLE, "16/18", "needs grading"])
    screenshot(page, "gradebook")

    # The instructor opens the same activity: the dashboard shows Ada's score, who has not submitted, charts.
    page.goto(course_launch(lms, "instructor-turing", context_id="course-e2e", resource_link=item["resource_link_id"]))
    frame = tool_frame(page)
    expect(frame.locator("h1")).to_have_text(f"Instructor dashboard: {TITLE}")
    ada_row = frame.locator('#roster tr[data-user="student-ada"]')
    expect(ada_row.get_by_role("cell")).to_contain_text(["1", "16", "16"])
    expect(frame.locator('#roster tr[data-user="student-grace"]')).to_contain_text("not submitted")
    expect(frame.locator("figure#score-histogram svg rect")).not_to_have_count(0)
    expect(frame.locator("figure#pass-rates title")).to_contain_text("generate 100%")
    screenshot(page, "dashboard")
    check_instructor_dashboard_accessibility(frame)

    # One attempt in the staff view: every test, hidden ones included, and the submitted notebook.
    frame.get_by_role("link", name="Attempt 1").click()
    expect(frame.locator("h1")).to_have_text("Attempt by Ada Lovelace")
    expect(frame.get_by_role("cell", name="hidden").first).to_be_visible()
    screenshot(page, "attempt-staff-view")
    assert_accessible(frame)


def test_wrong_uploads_show_an_error_and_save_nothing(lms, page, screenshot, tmp_path):
    page.goto(course_launch(lms, "student-grace", resource_link="decode-e2e-wrong"))
    frame = tool_frame(page)
    expect(frame.locator("h1")).to_have_text(TITLE)

    # Submitting without a file: the browser itself asks for one (the input is required); nothing is sent.
    frame.get_by_role("button", name="Submit for grading").click()
    assert frame.locator("#notebook").evaluate("input => input.validity.valueMissing")
    assert not frame.locator("p.error").count()

    other = notebook_bytes().replace(b'"assignment_name": "decode"', b'"assignment_name": "other"')
    cases = [
        ("notes.txt", b"my answers are in my head", "not JSON"),
        ("decode.ipynb", other, "for assignment"),
    ]
    for number, (name, data, reason) in enumerate(cases):
        wrong = tmp_path / name
        wrong.write_bytes(data)
        upload(frame, wrong)
        error = frame.locator("p.error[role=alert]")
        expect(error).to_contain_text("Your file was not accepted:")
        expect(error).to_contain_text(reason)
        expect(error).to_contain_text("Nothing was saved.")
        expect(frame.locator(".attempt")).to_have_count(0)
        expect(frame.locator("#attempts")).to_have_text("No attempts yet.")
        screenshot(page, f"error-{number + 1}")
        assert_accessible(frame)

    attempts_url = frame.locator("#attempts").get_attribute("data-url")
    assert page.request.get(frame.url.split("/a/")[0] + attempts_url).json()["attempts"] == []


@pytest.mark.parametrize("way", ["platform storage", "new window"])
def test_without_any_cookie_in_the_iframe_the_launch_still_completes(
    lms, frame_cookies_blocked_browser, screenshot, tmp_path, way
):
    """A browser that keeps no cookie for the tool inside the course page (as Safari): where the platform
    offers storage, the tool keeps its login state there and works in the iframe; otherwise the iframe
    offers a new window, which completes with the platform's single-use hint."""
    browser, context_id = frame_cookies_blocked_browser, f"course-{way.replace(' ', '-')}"
    lms.hook("config", storage_target="post_message_forwarding" if way == "platform storage" else None)
    page, windows = browser.new_page(), []
    try:
        page.goto(course_launch(lms, "instructor-turing", context_id=context_id, kind="deeplink"))
        tool = open_tool(page, way, windows, screenshot)
        if way == "platform storage":  # staff pages open only in a window bound to this browser
            expect(tool.locator("h1")).to_have_text("Open the course staff pages in their own window")
            with page.context.expect_page() as popup:
                tool.locator("#staff-window").click()
            windows.append(tool := popup.value)
        expect(tool.locator("h1")).to_have_text("Add an assignment to your course")
        tool.get_by_label(f"{TITLE} ({OFFERED})").check()
        tool.get_by_role("button", name="Add to the course").click()
        expect(tool.locator("h1")).to_have_text("Activities added")
        (item,) = [i for i in lms.state()["line_items"] if i["context_id"] == context_id]

        page.goto(course_launch(lms, "student-ada", context_id=context_id, resource_link=item["resource_link_id"]))
        tool = open_tool(page, way, windows, screenshot)
        expect(tool.locator("h1")).to_have_text(TITLE)
        expect(tool.locator("p.meta").first).to_contain_text("signed in as Ada Lovelace")
        assert not [c for c in browser.cookies() if c.get("partitionKey") == PLATFORM_SITE]  # none in the iframe
        screenshot(tool if way == "new window" else page, "assignment")
        solved = tmp_path / "decode.ipynb"
        solved.write_bytes(notebook_bytes())
        upload(tool, solved)
        graded = tool.locator(".attempt[data-status=graded]")
        graded.wait_for(timeout=GRADING_TIMEOUT_MS)
        expect(graded.locator(".score")).to_have_text(SIXTEEN_OF_SIXTEEN)
        expect(tool.locator(".attempt .gradebook")).to_have_text("sent to the gradebook", timeout=30_000)
        (score,) = [s for s in lms.scores("student-ada") if s["line_item_id"] == item["id"]]
        assert (score["score_given"], score["score_maximum"]) == (16.0, 18.0)  # the written answer's 2 to come
    finally:
        lms.hook("config", storage_target="post_message_forwarding")
        for window in [*windows, page]:
            window.close()


def test_platform_storage_in_the_course_page_itself_or_not_answering(lms, frame_cookies_blocked_browser):
    """lti_storage_target "_parent" (the course page answers, as Sakai's); when the platform offers storage
    but does not answer, the new window remains: the platform has not seen the login yet."""
    page = frame_cookies_blocked_browser.new_page()
    try:
        lms.hook("config", storage_target="_parent")
        page.goto(course_launch(lms, "student-grace", resource_link="decode-e2e-parent"))
        expect(tool_frame(page).locator("h1")).to_have_text(TITLE)
        silent = f"{lms.platform.url}/static/platform_storage.js"  # the course page will not answer
        page.route(silent, lambda route: route.abort())
        page.goto(course_launch(lms, "student-grace", resource_link="decode-e2e-parent"))
        expect(tool_frame(page).locator("#new-window")).to_be_visible(timeout=10_000)  # after the tool gives up
        expect(tool_frame(page).locator("#platform-storage")).to_contain_text("the course page did not answer")
    finally:
        lms.hook("config", storage_target="post_message_forwarding")
        page.close()


def test_a_launch_from_another_browsers_login_is_not_opened(lms, frame_cookies_blocked_browser, screenshot):
    """Login CSRF: an authentic id_token and state from someone else's login, posted into this browser's
    course page, are checked against this browser's platform storage, which does not hold that state."""
    attacker = requests.Session()  # keeps no cookie for the tool (plain HTTP), so the login uses storage
    course_page = attacker.get(course_launch(lms, "student-ada", resource_link="decode-e2e-csrf"), timeout=10)
    storage_page = attacker.get(parse_page(course_page).iframes[0], timeout=10).text
    next_url = storage_page.split('data-next="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    platform_answer = attacker.get(urljoin(lms.tool.url, next_url), timeout=10)
    (answer,) = [form for form in parse_page(platform_answer).forms if "id_token" in form.fields]

    page = frame_cookies_blocked_browser.new_page()
    try:
        page.goto(course_launch(lms, "student-grace", resource_link="decode-e2e-csrf"))
        frame = tool_frame(page)
        expect(frame.locator("h1")).to_have_text(TITLE)  # Grace's own launch
        frame.evaluate(POST_FORM, [answer.action, answer.fields])
        expect(frame.get_by_role("alert")).to_contain_text("did not confirm that this browser started this login")
        expect(frame.locator("#platform-storage")).to_contain_text("no value stored for this key")
        screenshot(page, "foreign-launch-refused")
        assert "signed in as Ada" not in frame.content()
    finally:
        page.close()


POST_FORM = """([action, fields]) => {
  const form = Object.assign(document.createElement("form"), { method: "post", action });
  for (const [name, value] of Object.entries(fields)) {
    form.append(Object.assign(document.createElement("input"), { type: "hidden", name, value }));
  }
  document.body.append(form);
  form.submit();
}"""


def open_tool(page: Page, way: str, windows: list, screenshot) -> ToolFrame | Page:
    """The tool as the course page shows it: in its iframe, or in the new window the iframe offers."""
    frame = tool_frame(page)
    if way == "platform storage":
        return frame
    link = frame.locator("#new-window")
    expect(link).to_be_visible()
    screenshot(page, "new-window-offer")
    assert_accessible(frame)
    with page.context.expect_page() as popup:
        link.click()
    windows.append(popup.value)
    return popup.value


def test_the_gradebook_status_updates_live_when_the_passback_is_retried(lms, page, screenshot, tmp_path):
    lms.hook("resource-link", resource_link_id="decode-e2e-retry", line_item=True)
    page.goto(course_launch(lms, "student-ada", resource_link="decode-e2e-retry"))
    frame = tool_frame(page)
    expect(frame.locator("h1")).to_have_text(TITLE)
    lms.hook("fail-scores", count=2, status=500)  # the first two score POSTs fail; the tool retries
    solved = tmp_path / "decode.ipynb"
    solved.write_bytes(notebook_bytes())
    upload(frame, solved)
    frame.locator(".attempt[data-status=graded]").wait_for(timeout=GRADING_TIMEOUT_MS)
    wait_for(lambda: [p for p in lms.score_posts("student-ada", "decode-e2e-retry") if p["status"] == 200], timeout=30)
    attempts_url = frame.url.split("/a/")[0] + frame.locator("#attempts").get_attribute("data-url")

    def gradebook_status() -> str:
        (attempt,) = page.request.get(attempts_url).json()["attempts"]
        return attempt["gradebook"]

    # the tool records the score as sent once the platform's 200 has reached it: a moment after the platform
    # logged it (under load, long enough for a read in between to see "waiting")
    wait_for(lambda: gradebook_status() == "sent to the gradebook", timeout=30)
    expect(frame.locator(".attempt .gradebook")).to_have_text("sent to the gradebook", timeout=5_000)  # no reload
    screenshot(page, "gradebook-status-after-retry")


def test_refusal_and_error_pages_are_accessible(lms, page, screenshot):
    """Pages people meet when something is wrong: a refused launch, an expired page, a staff-only page."""
    page.goto(f"{lms.tool.url}/lti/login?iss=https%3A%2F%2Funknown.example&login_hint=x&target_link_uri=y")
    expect(page.locator("h1")).to_have_text("This launch was refused")
    screenshot(page, "launch-refused")
    assert_accessible(page)
    page.goto(f"{lms.tool.url}/a/no-such-launch")
    expect(page.locator("h1")).to_have_text("Page not found")
    expect(page.get_by_role("alert")).to_have_text("This page has expired or does not exist.")
    expect(page.locator("main")).to_contain_text("Open the assignment again from your course")
    screenshot(page, "expired-page")
    assert_accessible(page)
