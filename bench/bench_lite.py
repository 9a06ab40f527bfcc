"""The notebook in the browser: what a student waits for, in headless Chromium against a real LMS on loopback.

Run with `make bench`. For each of ROUNDS fresh browser contexts (an empty cache, as a student's first visit):
- cold: from "Open in the browser" on the course page to a ready kernel (Pyodide started; numpy, pandas,
  matplotlib, ipywidgets and otter loaded from the tool), and the bytes that came over the network;
- warm: the same student opens it again from a new launch (the site's files from the browser's cache);
- reload: the notebook's window reloaded;
- submit to score: "Submit for grading" in the notebook's page until the panel says the score is in the
  gradebook.
Reported as medians (machines are noisy), with the site's size on disk.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

from lti_service.config import ROOT
from testbed.browser import CHROMIUM, CHROMIUM_ARGS, KERNEL_STATUS, course_launch, tool_frame
from testbed.lms import start_lms

ROUNDS = 3
KERNEL_TIMEOUT_MS = 180_000
GRADED_TIMEOUT_MS = 120_000
SITE = ROOT / "build/lite/site"


def open_notebook(page: Page, lms, link: str) -> tuple[Page, float, int]:
    """Launch, "Open in the browser", wait for the kernel: the window, seconds, bytes received."""
    page.goto(course_launch(lms, "student-ada", context_id="course-bench", resource_link=link))
    frame = tool_frame(page)
    received = []

    def count(response) -> None:  # the window's and its workers' (Pyodide fetches from a web worker)
        received.append(int(response.headers.get("content-length") or 0))

    page.context.on("response", count)
    started = time.monotonic()
    with page.expect_popup() as opened:
        frame.get_by_role("button", name="Open in the browser").click()
    lite = opened.value
    lite.wait_for_function(KERNEL_STATUS, timeout=KERNEL_TIMEOUT_MS)
    elapsed = time.monotonic() - started
    page.context.remove_listener("response", count)
    return lite, elapsed, sum(received)


def one_round(playwright, lms, number: int) -> dict[str, float]:
    browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
    try:
        context = browser.new_context()
        page = context.new_page()
        lite, cold, received = open_notebook(page, lms, f"bench-{number}")
        started = time.monotonic()
        lite.reload()
        lite.wait_for_function(KERNEL_STATUS, timeout=KERNEL_TIMEOUT_MS)
        reload = time.monotonic() - started
        started = time.monotonic()
        lite.get_by_role("button", name="Submit for grading").click()
        lite.locator("#grader-result .gradebook").get_by_text("sent to the gradebook").wait_for(
            timeout=GRADED_TIMEOUT_MS
        )
        submitted = time.monotonic() - started
        lite.close()
        warm_window, warm, _ = open_notebook(page, lms, f"bench-{number}")
        warm_window.close()
        return {"cold_s": cold, "warm_s": warm, "reload_s": reload, "submit_to_gradebook_s": submitted,
                "cold_mb": received / 1e6}  # fmt: skip
    finally:
        browser.close()


def main() -> None:
    size = sum(path.stat().st_size for path in SITE.rglob("*") if path.is_file())
    with tempfile.TemporaryDirectory(prefix="bench-lite-") as folder, sync_playwright() as playwright:
        lms = start_lms(Path(folder))
        try:
            rounds = [one_round(playwright, lms, number) for number in range(ROUNDS)]
        finally:
            lms.tool.stop()
            lms.platform.stop()
    print(f"\nThe notebook in the browser ({ROUNDS} rounds, medians; the site is {size / 1e6:.1f} MB on disk)")
    print("| step | median | all |")
    print("|---|---|---|")
    for key in rounds[0]:
        values = [r[key] for r in rounds]
        print(f"| {key} | {statistics.median(values):.2f} | {', '.join(f'{v:.2f}' for v in values)} |")


if __name__ == "__main__":
    main()
