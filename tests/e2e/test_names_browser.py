"""What LMS users see the tool called, in a real browser: the gradebook columns of plain links (named after
each link, not after their shared assignment), and the tool in the LMS's registration dialog (its name as
the operator set it; a refused or failed registration that says what next and closes the dialog)."""

from __future__ import annotations

import re
from urllib.parse import quote

import requests
from playwright.sync_api import Page, expect

from lti_dev_platform.client import parse_page
from lti_dev_platform.serving import start_platform
from testbed.browser import tool_frame
from testbed.tool import free_port
from tests.e2e.a11y import assert_accessible

TOOL_ENV = {"TOOL_NAME": "Physics notebooks"}
TITLE = "Decode: one token at a time"
NEXT_STEP = "ask the tool's operator for a new registration URL"


def invite(lms) -> str:
    return lms.tool.cli("platform", "invite", "--url", lms.tool.url).splitlines()[0]


def registration_dialog(page: Page, platform_url: str, registration_url: str) -> None:
    """The LMS administrator pastes the tool's registration URL; the LMS opens it in its dialog (an iframe)."""
    page.goto(f"{platform_url}/register/start?url={quote(registration_url, safe='')}")


def test_two_plain_links_of_one_assignment_get_a_column_each_named_after_the_link(lms, page, screenshot):
    titles = {"week-1": "Decode, week 1", "week-2": "Decode, week 2 (retake)"}
    for link, title in titles.items():
        lms.hook("resource-link", context_id="names-101", resource_link_id=link, title=title, line_item=False)
    course = f"{lms.platform.url}/course/names-101"
    for title in titles.values():
        page.goto(course)
        row = page.get_by_role("row").filter(has_text=title)
        expect(row.locator("td.column")).to_have_text("none")
        row.get_by_role("link", name="Ada Lovelace").click()
        expect(tool_frame(page).locator("h1")).to_have_text(TITLE)  # one assignment behind both links

    page.goto(course)
    for title in titles.values():
        column = page.get_by_role("row").filter(has_text=title).locator("td.column")
        expect(column).to_have_text(re.compile(rf"^{re.escape(title)} \(\d+\)$"))
    screenshot(page, "course-columns")
    labels = {i["resource_link_id"]: i["label"] for i in lms.state()["line_items"] if i["context_id"] == "names-101"}
    assert labels == titles


def test_a_refused_registration_says_what_next_and_its_close_button_closes_the_dialog(lms, page, screenshot):
    url = invite(lms)
    # First use, opened directly: the LMS's configuration cannot be read, the registration fails (and the URL
    # is used up even so).
    page.goto(f"{url}?openid_configuration=http://127.0.0.2:{free_port('127.0.0.2')}/nothing")
    expect(page.locator("h1")).to_have_text("Registration failed")
    expect(page.locator("#registration-next")).to_contain_text(NEXT_STEP)
    expect(page.get_by_role("button", name="Close")).to_be_hidden()  # no LMS dialog around it to close
    screenshot(page, "failed")
    assert_accessible(page)

    # The administrator tries the used URL in the LMS: refused, in the LMS's dialog.
    registration_dialog(page, lms.platform.url, url)
    frame = tool_frame(page)
    expect(frame.locator("h1")).to_have_text("Registration refused")
    expect(frame.get_by_role("alert")).to_have_text(
        "This registration URL was used already: each one works only once. Nothing was registered."
    )
    expect(frame.locator("#registration-next")).to_contain_text(NEXT_STEP)
    expect(frame.locator("#registration-next")).to_contain_text("Manage tools")
    expect(frame.locator("#registration-operator")).to_contain_text("python -m lti_service platform invite")
    screenshot(page, "refused")
    assert_accessible(frame)
    with page.expect_navigation():  # the platform got the close message: it closes the dialog
        frame.get_by_role("button", name="Close").click()
    expect(page).to_have_url(f"{lms.platform.url}/")
    expect(page.locator("iframe")).to_have_count(0)
    assert lms.state()["tool"]["client_id"] == lms.platform.settings.client_id  # nothing registered


def test_a_registration_names_the_tool_as_its_operator_set_it(lms, page, screenshot):
    with start_platform(lms.tool.url, preregistered=False, test_hooks=True) as platform:
        registration_dialog(page, platform.url, invite(lms))  # registered: the tool's page closes the dialog
        expect(page).to_have_url(f"{platform.url}/")
        expect(page.locator("#tool-name")).to_have_text(TOOL_ENV["TOOL_NAME"])
        screenshot(page, "tool-registered")

        # The page the dialog showed, opened at the top to look at it (it registers the tool once more).
        start = requests.get(f"{platform.url}/register/start", params={"url": invite(lms)}, timeout=10)
        page.goto(parse_page(start).iframes[0])
        expect(page.locator("h1")).to_have_text("Registration complete")
        expect(page.locator("#registration-done")).to_contain_text(f"{TOOL_ENV['TOOL_NAME']} is registered")
        screenshot(page, "done")
        assert_accessible(page)
