"""Real-browser fixtures: one LMS (dev platform + tool) per module and headless Chromium.

Chromium comes from Debian (/usr/bin/chromium); Playwright only drives it (never `playwright install`).
The tool (127.0.0.1) in the platform's iframe (127.0.0.2) is a third party. `browser` is a default context,
which blocks third-party cookies (Chromium does in Playwright's contexts, as in incognito windows) but keeps
partitioned ones. `frame_cookies_blocked_browser` keeps no cookie at all for the tool inside the platform's
pages, partitioned or not, as Safari: a profile preference written before the browser starts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from testbed.browser import CHROMIUM, CHROMIUM_ARGS
from testbed.submissions import ROOT

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page, Playwright

# The tool's frame stays in the course page's process. Launches through platform storage move the frame across
# sites four times; a Playwright call racing one of Chromium's swaps to an out-of-process frame could wait
# forever whatever its timeout (puppeteer#10715; about one run in five lost a test here, always in this
# browser). Only for `frame_cookies_blocked_browser`: the other browser keeps real site isolation, which the
# accessibility checks' Tab walk through the iframe relies on (three failed with the flag).
ONE_PROCESS_FOR_FRAMES = ["--disable-site-isolation-trials"]
# Chromium's CookieControlsMode: 0 allows third-party cookies, 1 blocks them, 2 blocks them in incognito only
# (so 2 does not block in a persistent profile; measured with Chromium 156). The old boolean is kept too.
BLOCK_THIRD_PARTY_COOKIES = {"cookie_controls_mode": 1, "block_third_party_cookies": True}
ARTIFACTS = ROOT / "test-artifacts" / "e2e"
STRETCH = "(frame, height) => [frame.style.height, (frame.style.height = `${height + 4}px`)][0]"  # -> old height
TIMEOUT_MS = 15_000  # any single step (navigation, element); grading has its own, longer wait
GRADING_TIMEOUT_MS = 90_000  # a notebook graded in the sandbox, from upload to score
TITLE = "Decode: one token at a time"  # the assignment's title, as the pages show it


@pytest.fixture(scope="session")
def playwright() -> Iterator[Playwright]:
    # `make test` installs both; missing either is a broken set-up, not a reason to skip.
    from playwright.sync_api import sync_playwright

    assert CHROMIUM.exists(), f"{CHROMIUM} is missing: apt-get install chromium (never `playwright install`)"
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


CONTEXT_OPTIONS = {"accept_downloads": True, "viewport": {"width": 1280, "height": 900}}
TEST_TIMEOUT_S = 300  # a browser test that hangs (once, under load: a Playwright call that never answered) fails
# in five minutes rather than the suite's ten; the longest takes about a minute on a loaded machine


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e/" in item.nodeid:
            item.add_marker(pytest.mark.timeout(TEST_TIMEOUT_S))


@pytest.fixture(scope="session")
def chromium(playwright) -> Iterator[Browser]:
    """One Chromium for the session; each module gets a context of its own in it (`browser`)."""
    chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
    yield chromium
    chromium.close()


@pytest.fixture(scope="module")
def browser(chromium) -> Iterator[BrowserContext]:
    """A default browser context: third-party cookies blocked, partitioned ones kept. A new context per
    module shares no cookie, storage or cache with another module's (as an incognito window of its own)."""
    context = chromium.new_context(**CONTEXT_OPTIONS)
    context.set_default_timeout(TIMEOUT_MS)
    yield context
    context.close()


@pytest.fixture(scope="module")
def frame_cookies_blocked_browser(playwright, tmp_path_factory, lms) -> Iterator[BrowserContext]:
    """A browser that keeps no cookie for the tool inside the platform's pages, partitioned or not (as Safari):
    third-party cookies blocked, and a site exception that blocks the tool's cookies under the platform. The
    tool is still a first party in a window of its own."""
    frame_rule = f"{lms.tool.url},{lms.platform.url}"  # primary pattern (the cookie's site), top-level site
    cookies = {"exceptions": {"cookies": {frame_rule: {"setting": 2}}}}
    preferences = {"profile": {**BLOCK_THIRD_PARTY_COOKIES, "content_settings": cookies}}
    user_data_dir = tmp_path_factory.mktemp("chromium-frame-cookies-blocked")
    (user_data_dir / "Default").mkdir()
    (user_data_dir / "Default" / "Preferences").write_text(json.dumps(preferences))
    context = playwright.chromium.launch_persistent_context(
        str(user_data_dir), executable_path=str(CHROMIUM), args=[*CHROMIUM_ARGS, *ONE_PROCESS_FOR_FRAMES],
        headless=True, **CONTEXT_OPTIONS,
    )  # fmt: skip
    context.set_default_timeout(TIMEOUT_MS)
    yield context
    context.close()


@pytest.fixture
def page(browser) -> Iterator[Page]:
    page = browser.new_page()
    yield page
    page.close()


class Screenshots:
    """Full-page PNGs under test-artifacts/e2e/, named <test>-<nn>-<what>.png in the order taken."""

    def __init__(self, directory: Path, test_name: str) -> None:
        self.directory, self.prefix, self.count = directory, re.sub(r"\W+", "-", test_name).strip("-"), 0
        for old in directory.glob(f"{self.prefix}-*.png"):
            old.unlink()

    def __call__(self, page: Page, what: str) -> Path:
        """The whole page; an LMS iframe is stretched to its content's height for the shot, then restored."""
        self.count += 1
        path = self.directory / f"{self.prefix}-{self.count:02d}-{what}.png"
        iframe = page.locator("iframe").first
        if not page.locator("iframe").count():
            page.screenshot(path=str(path), full_page=True)
            return path
        height = iframe.content_frame.locator("html").evaluate("html => html.scrollHeight")
        before = iframe.evaluate(STRETCH, height)
        try:
            page.screenshot(path=str(path), full_page=True)
        finally:
            iframe.evaluate("(frame, height) => { frame.style.height = height; }", before)
        return path


@pytest.fixture
def screenshot(artifacts, request) -> Screenshots:
    return Screenshots(artifacts, request.node.name.removeprefix("test_"))
