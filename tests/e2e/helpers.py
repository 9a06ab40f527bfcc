"""Steps shared by the browser tests (and the instructor dashboard test to come)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Frame, Page

    from tests.lti_service.conftest import Lms


def course_launch(lms: Lms, user: str, context_id: str = "decode-101", **params: str) -> str:
    """The platform's course page framing the tool for `user` (params: kind, resource_link, window)."""
    query = "&".join(f"{k}={v}" for k, v in {"kind": "resource", **params}.items())
    return f"{lms.platform.url}/course/{context_id}/launch/{user}?{query}"


def tool_frame(page: Page) -> Frame:
    """The frame the LMS shows the tool in, once the launch has settled there. A launch moves the frame
    across sites (the tool's login, the platform's /auth, the tool's launch): Chromium gives it a new
    process at each move, and a Frame taken in the middle can be one that no longer answers (Playwright
    then waited forever, whatever its timeout)."""
    page.wait_for_load_state("networkidle")
    frame = page.wait_for_selector("iframe").content_frame()
    assert frame is not None
    return frame


def fraction(text: str) -> tuple[float, float]:
    """'2.0 / 2.0' -> (2.0, 2.0)"""
    given, possible = text.split("/")
    return float(given), float(possible)


def upload(frame: Frame | Page, path: Path) -> None:
    """Choose the file and submit it; returns once the answer (the page again, or its error) has loaded."""
    frame.locator("#notebook").set_input_files(path)
    with frame.expect_navigation():
        frame.get_by_role("button", name="Submit for grading").click()
