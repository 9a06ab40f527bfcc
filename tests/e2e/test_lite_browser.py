"""The notebook in the browser (JupyterLite), in real Chromium with its default cookie policy, from the local
LMS: a student opens Decode from the course page, answers by typing into cells, checks a public test, reloads
without losing the work, submits from the notebook's page and gets 16/16 in the gradebook; a second student
on the same browser starts from a blank notebook; the hidden tests are nowhere on the site.

What the student waits for (a ready kernel, submit to score) goes to test-artifacts/e2e/lite-timings.json;
`make bench` measures it on a quiet machine (bench/bench_lite.py)."""

from __future__ import annotations

import json
import re
import time

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.helpers import course_launch, tool_frame
from tests.lti_service.tool import wait_for
from tests.submissions import ROOT

COURSE, LINK = "course-lite", "lite-e2e"
KERNEL_TIMEOUT_MS = 120_000  # Pyodide and numpy, pandas, matplotlib, otter from the tool, on a cold cache
GRADING_TIMEOUT_MS = 90_000
SOLUTION = json.loads((ROOT / "dist/autograder/decode.ipynb").read_text())
STUDENT = json.loads((ROOT / "dist/student/decode.ipynb").read_text())
ANSWERS = {
    index: "".join(SOLUTION["cells"][index]["source"])
    for index, cell in enumerate(STUDENT["cells"])
    if cell["cell_type"] == "code" and re.search(r"(=|^ +)\s*\.\.\.\s*$", "".join(cell["source"]), re.M)
}
FIRST = min(ANSWERS)  # gb_read_per_step = ...; the next cell checks it
KERNEL_STATUS = """() => {
  const widget = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const session = widget && widget.sessionContext && widget.sessionContext.session;
  return session && session.kernel ? session.kernel.status === "idle" && widget.context.isReady : false;
}"""
NOTEBOOK_OPEN = """() => {
  const widget = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  return Boolean(widget && widget.context && widget.context.isReady);
}"""
SAVED = "() => !window.jupyterapp.shell.currentWidget.context.model.dirty"
TO_THE_TOP = "() => window.jupyterapp.shell.currentWidget.content.scrollToItem(0, 'start')"
CELL = "window.jupyterapp.shell.currentWidget.content.model.cells"  # the model: the page renders only cells in view


def cell_text(lite: Page, index: int) -> str:
    """A cell's source, from the notebook's model (the page renders only the cells in view)."""
    return lite.evaluate(
        f"() => window.jupyterapp.shell.currentWidget.content.model.cells.get({index}).sharedModel.source"
    )


def kernel_ready(lite: Page) -> float:
    """Seconds until the notebook is open and its kernel idle (Pyodide started, packages loaded)."""
    started = time.monotonic()
    lite.wait_for_function(KERNEL_STATUS, timeout=KERNEL_TIMEOUT_MS)
    return time.monotonic() - started


def open_in_browser(page: Page, lms, user: str) -> Page:
    """The student's launch from the course, then "Open in the browser": the notebook's window, once the
    notebook is open in it (its kernel may still be starting)."""
    page.goto(course_launch(lms, user, context_id=COURSE, resource_link=LINK))
    with page.expect_popup() as opened:
        tool_frame(page).get_by_role("link", name="Open in the browser").click()
    opened.value.wait_for_function(NOTEBOOK_OPEN)
    return opened.value


def type_answers(lite: Page, answers: dict[int, str]) -> None:
    """Type each answer over its cell's placeholder with the keyboard, as a student does: arrow keys down to
    the cell (the notebook renders cells as they come into view), Enter to edit, select all, type."""
    lite.evaluate(TO_THE_TOP)  # as a student scrolls back up after running the notebook
    lite.locator(".jp-Notebook .jp-Cell").first.locator(".cm-content").click()
    lite.keyboard.press("Escape")
    current = 0
    for index, text in sorted(answers.items()):
        for _ in range(index - current):
            lite.keyboard.press("ArrowDown")
        lite.keyboard.press("Enter")
        lite.keyboard.press("Control+A")
        lite.keyboard.insert_text(text)
        lite.keyboard.press("Escape")
        current = index


@pytest.fixture
def timings(artifacts):
    found: dict[str, float] = {}
    yield found
    (artifacts / "lite-timings.json").write_text(json.dumps(found, indent=2))


def check_output(lite: Page, says: str) -> None:
    """Run every cell; wait until the first answer's `grader.check` cell says `says`."""
    lite.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    output = f"JSON.stringify({CELL}.get({FIRST + 1}).outputs.toJSON())"
    lite.wait_for_function(f"() => {output}.includes({json.dumps(says)})", timeout=KERNEL_TIMEOUT_MS)


def test_a_student_works_and_submits_in_the_browser(lms, page, browser, screenshot, timings):
    assert len(ANSWERS) == 9, ANSWERS
    seen = []
    browser.on("request", lambda request: seen.append(request.url))
    lite = open_in_browser(page, lms, "student-ada")
    timings["open_to_ready_kernel_s"] = kernel_ready(lite)
    expect(lite.locator("#grader-panel")).to_be_visible()
    screenshot(lite, "lite-opened")

    check_output(lite, "failed")  # the public test of the unanswered question fails...
    type_answers(lite, ANSWERS)
    check_output(lite, "passed!")  # ...and passes once answered
    screenshot(lite, "lite-checked")

    lite.wait_for_function(SAVED, timeout=30_000)  # autosaved in the browser, no click needed
    lite.reload()
    lite.wait_for_function(NOTEBOOK_OPEN)
    assert cell_text(lite, FIRST) == ANSWERS[FIRST], "the work did not survive a reload"

    with lite.expect_download() as downloaded:
        lite.get_by_role("button", name="Download a copy").click()
    copy = json.loads(open(downloaded.value.path()).read())
    assert "".join(copy["cells"][FIRST]["source"]) == ANSWERS[FIRST]

    started = time.monotonic()
    lite.get_by_role("button", name="Submit for grading").click()
    result = lite.locator("#grader-result")
    expect(result).to_contain_text("16 / 16", timeout=GRADING_TIMEOUT_MS)
    expect(result.locator(".gradebook")).to_have_text("sent to the gradebook", timeout=30_000)
    timings["submit_to_score_in_gradebook_s"] = time.monotonic() - started
    screenshot(lite, "lite-graded")
    expect(tool_frame(page).locator("#attempts")).to_contain_text("16 / 16")  # the course's page heard of it
    assert wait_for(lambda: lms.gradebook(LINK).get("student-ada"), timeout=30)

    # Hidden tests are on no address of the site, even for the student's own browser.
    base = lite.url.split("notebooks/")[0]
    for guess in ("files/tests/ms_per_token.py", "api/contents/tests/all.json", "files/autograder.zip"):
        assert lite.evaluate(f"fetch({json.dumps(base + guess)}).then((r) => r.status)") == 404, guess
    lite.close()

    page.goto(f"{lms.platform.url}/gradebook")
    row = page.get_by_role("row").filter(has_text=COURSE).filter(has_text="Ada Lovelace")
    expect(row.get_by_role("cell")).to_contain_text([COURSE, "Ada Lovelace", "16/16"])

    # Another student on the same browser opens the same assignment: a blank notebook, none of Ada's work.
    other = open_in_browser(page, lms, "student-grace")
    assert cell_text(other, FIRST) == "".join(STUDENT["cells"][FIRST]["source"])
    screenshot(other, "lite-second-student")
    other.close()
    away = [url for url in seen if not re.match(r"(https?://127\.0\.0\.[12]:\d+/|data:|blob:)", url)]
    assert not away, f"requests left the tool and the LMS: {away[:5]}"
