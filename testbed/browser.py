"""The browser the end-to-end tests and bench/bench_lite.py drive: Debian's Chromium and its settings, and the
steps they share in the LMS's pages."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

    from testbed.lms import Lms

CHROMIUM = Path("/usr/bin/chromium")  # Debian's: Playwright only drives it (never `playwright install`)
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# JupyterLite's notebook open with its kernel started and idle (Pyodide and the packages loaded)
KERNEL_STATUS = """() => {
  const widget = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const session = widget && widget.sessionContext && widget.sessionContext.session;
  return session && session.kernel ? session.kernel.status === "idle" && widget.context.isReady : false;
}"""


def course_launch(lms: Lms, user: str, context_id: str = "decode-101", **params: str) -> str:
    """The platform's course page framing the tool for `user` (params: kind, resource_link, window)."""
    query = "&".join(f"{k}={v}" for k, v in {"kind": "resource", **params}.items())
    return f"{lms.platform.url}/course/{context_id}/launch/{user}?{query}"


class ToolFrame:
    """The tool's frame inside the LMS page, looked up afresh at every use.

    A launch moves the frame across sites (the tool's login, the platform's /auth, the tool's launch, and with
    platform storage a postMessage exchange between them): Chromium gives it a new process at each move. A
    Frame object taken in the middle can be one whose page never comes (Playwright then waited forever,
    whatever its timeout: once in CI under load, in `expect(frame.locator("h1"))`). So locators go through
    a FrameLocator, which Playwright resolves again at each retry, and anything else a Frame does
    (evaluate, url, expect_navigation...) is asked of the iframe's current frame at the moment of the call.
    """

    def __init__(self, page: Page) -> None:
        self.page = page
        self._frames = page.locator("iframe").first.content_frame

    def locator(self, selector: str, **options) -> Locator:
        return self._frames.locator(selector, **options)

    def get_by_role(self, role: str, **options) -> Locator:
        return self._frames.get_by_role(role, **options)

    def get_by_label(self, text: str, **options) -> Locator:
        return self._frames.get_by_label(text, **options)

    def get_by_text(self, text: str, **options) -> Locator:
        return self._frames.get_by_text(text, **options)

    def __getattr__(self, name: str):
        frame = self.page.wait_for_selector("iframe").content_frame()
        assert frame is not None
        return getattr(frame, name)


def tool_frame(page: Page) -> ToolFrame:
    """The frame the LMS shows the tool in, once the launch has settled there (see ToolFrame)."""
    page.wait_for_load_state("networkidle")
    return ToolFrame(page)


def fraction(text: str) -> tuple[float, float]:
    """'2.0 / 2.0' -> (2.0, 2.0)"""
    given, possible = text.split("/")
    return float(given), float(possible)


def upload(frame: ToolFrame | Page, path: Path) -> None:
    """Choose the file and submit it; returns once the answer (the page again, or its error) has loaded."""
    frame.locator("#notebook").set_input_files(path)
    with frame.expect_navigation():
        frame.get_by_role("button", name="Submit for grading").click()
