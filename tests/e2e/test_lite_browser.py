"""The notebook in the browser (JupyterLite), in real Chromium with its default cookie policy, from the local
LMS: a student opens Decode from the course page, answers by typing into cells, checks a public test, reloads
without losing the work (the tool keeps it), submits from the notebook's page and gets 16 of its 18 points in
the gradebook (staff grade the written answer); a second student on the same browser starts from a blank
notebook; the hidden tests are nowhere on the site. A shared lab computer: what one student's code in the
browser can reach of another's, and of their other windows; what an earlier version left in the browser never
replaces the work the tool keeps, and neither does a stale tab.

What the student waits for (a ready kernel, submit to score) goes to test-artifacts/e2e/lite-timings.json;
`make bench` measures it on a quiet machine (bench/bench_lite.py)."""

from __future__ import annotations

import json
import re
import time

import pytest
import sqlalchemy
from playwright.sync_api import Page, expect

from lti_service.browser.site import legacy_store
from testbed.browser import KERNEL_STATUS, course_launch, tool_frame
from testbed.submissions import ROOT, reference_answers
from testbed.tool import wait_for

COURSE, LINK = "course-lite", "lite-e2e"
KERNEL_TIMEOUT_MS = 120_000  # Pyodide and numpy, pandas, matplotlib, otter from the tool, on a cold cache
GRADING_TIMEOUT_MS = 90_000
STUDENT = json.loads((ROOT / "dist/student/decode.ipynb").read_text())
ANSWERS = dict(  # each code answer cell of the student notebook, with its solution (the two pair in order)
    zip(
        (
            index
            for index, cell in enumerate(STUDENT["cells"])
            if cell["cell_type"] == "code" and re.search(r"(=|^ +)\s*\.\.\.\s*$", "".join(cell["source"]), re.M)
        ),
        reference_answers(),
        strict=True,
    )
)
FIRST = min(ANSWERS)  # gb_read_per_step = ...; the next cell checks it
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


def open_in_browser(page: Page, lms, user: str, link: str = LINK) -> Page:
    """The student's launch from the course, then "Open in the browser": the notebook's window, once the
    notebook is open in it (its kernel may still be starting)."""
    page.goto(course_launch(lms, user, context_id=COURSE, resource_link=link))
    with page.expect_popup() as opened:
        tool_frame(page).get_by_role("button", name="Open in the browser").click()
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

    lite.wait_for_function(SAVED, timeout=30_000)  # autosaved, no click needed...
    expect(lite.locator("#grader-saved")).to_contain_text("Saved with the tool", timeout=30_000)  # ...by the tool
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
    expect(row.get_by_role("cell")).to_contain_text(
        [COURSE, "Ada Lovelace", "88.8889/100", "needs grading", "16/18 points"]
    )

    # Another student on the same browser opens the same assignment: a blank notebook, none of Ada's work.
    other = open_in_browser(page, lms, "student-grace")
    assert cell_text(other, FIRST) == "".join(STUDENT["cells"][FIRST]["source"])
    screenshot(other, "lite-second-student")
    other.close()
    away = [url for url in seen if not re.match(r"(https?://127\.0\.0\.[12]:\d+/|data:|blob:)", url)]
    assert not away, f"requests left the tool and the LMS: {away[:5]}"


RUN_IN_KERNEL = """async (code) => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const out = [];
  const future = kernel.requestExecute({ code });
  future.onIOPub = (msg) => {
    if (msg.header.msg_type === "stream") out.push(msg.content.text);
    if (msg.header.msg_type === "error") out.push(`${msg.content.ename}: ${msg.content.evalue}`);
  };
  await future.done;
  return out.join("");
}"""
EVERYTHING_STORED = """async () => {
  // What any code of the tool's origin can read in this browser: every IndexedDB database with every record,
  // localStorage, and the Cache Storage's URLs.
  const found = [JSON.stringify(Object.entries(localStorage))];
  for (const { name } of await indexedDB.databases()) {
    const db = await new Promise((ok, fail) => {
      const r = indexedDB.open(name);
      r.onsuccess = () => ok(r.result);
      r.onerror = fail;
    });
    for (const store of db.objectStoreNames) {
      const all = await new Promise((ok) => {
        const r = db.transaction(store).objectStore(store).getAll();
        r.onsuccess = () => ok(r.result);
      });
      found.push(name, store, JSON.stringify(all));
    }
    db.close();
  }
  for (const cache of await caches.keys()) found.push(...(await (await caches.open(cache)).keys()).map((r) => r.url));
  return found.join("\\n");
}"""
MARKER = "# Ada's own words, 7f3e"


def run_python(lite: Page, code: str) -> str:
    """Run code in the window's kernel (Pyodide), as a student's cell would; what it printed or raised."""
    lite.wait_for_function(KERNEL_STATUS, timeout=KERNEL_TIMEOUT_MS)
    return lite.evaluate(RUN_IN_KERNEL, code)


def test_a_shared_lab_computer_keeps_nothing_of_one_student_for_the_next(lms, page, browser, screenshot):
    """Ada works in the browser and leaves the computer; Grace, next on the same browser profile, finds none of
    Ada's work in its storage, cannot open Ada's window from its address (the history) nor Ada's course page from
    the downloads list, and her Python cannot fetch Ada's files either. Under the old tool, Ada's launch id was
    the address and her store was readable."""
    seen: list[str] = []
    browser.on("request", lambda request: seen.append(request.url))
    ada = open_in_browser(page, lms, "student-ada")
    launch_id = tool_frame(page).locator("input[name=launch]").get_attribute("value")
    with page.expect_download() as downloaded:  # its URL stays in the browser's list of downloads
        tool_frame(page).get_by_role("link", name="Download the notebook").click()
    course_page_url = downloaded.value.url.removesuffix("/notebook")
    type_answers(ada, {FIRST: f"{ANSWERS[FIRST]}\n{MARKER}"})
    expect(ada.locator("#grader-saved")).to_contain_text("Saved with the tool", timeout=30_000)
    ada_urls = sorted({url for url in seen if "/lite/w/" in url})
    assert ada_urls and not [url for url in seen if launch_id in url and "/lite/" in url], "a launch id in a URL"
    ada_window = ada.url
    ada.get_by_role("button", name="Leave this computer").click()
    ada.wait_for_url("**/lite/left")
    expect(ada.get_by_role("heading")).to_have_text("You have left this notebook")
    screenshot(ada, "lite-left")
    ada.close()

    grace = open_in_browser(page, lms, "student-grace")
    stored = grace.evaluate(EVERYTHING_STORED)
    assert MARKER not in stored and "7f3e" not in stored, "Ada's work is readable in the browser's storage"
    probe = (  # api/drive is JupyterLite's service worker's, not the tool's: it may answer with a network error
        "import js\nfor url in %s:\n    try:\n        r = await js.fetch(url)\n"
        "        print(r.status, r.url, %r in await r.text())\n"
        "    except Exception:\n        print('failed', url, False)"
    )
    fetched = run_python(grace, probe % (ada_urls, MARKER)).splitlines()
    assert len(fetched) == len(ada_urls), fetched
    for line in fetched:  # the site's own files, the same for everyone, come from the cache; nothing of Ada's
        status, url, leaked = line.split()
        assert leaked == "False" and (status in ("401", "404", "failed") or "/lite/site/" in url), line
    assert any(line.startswith("401") for line in fetched)
    from_history = grace.context.new_page()
    from_history.goto(ada_window)
    expect(from_history.get_by_role("heading")).to_have_text("Signed out")
    assert MARKER not in from_history.content()
    screenshot(from_history, "lite-history-signed-out")
    for url in (course_page_url, f"{course_page_url}/notebook"):  # from the downloads list: Ada's course page
        assert from_history.goto(url).status == 404, url
    from_history.close()
    grace.close()


def test_two_windows_of_one_student_never_answer_each_others_file_reads_nor_overwrite_newer_work(lms, page, browser):
    """Ada has two assignments open at once. Her kernel in one window reads its own files, and never a file
    that only the other window has (JupyterLite's file channel was one per origin, answered by every window).
    Then she opens the first assignment in a third tab and works there: a save from the older tab is refused,
    in her words, and the tool keeps her newer work (one Pyodide start fewer than a test of its own)."""
    first = settled(open_in_browser(page, lms, "student-ada", link=f"{LINK}-tabs"))
    second_page = browser.new_page()
    second = open_in_browser(second_page, lms, "student-ada", link=f"{LINK}-other")
    second.evaluate(
        "() => window.jupyterapp.serviceManager.contents.save('only-here.txt', "
        "{type: 'file', format: 'text', content: 'the other window'})"
    )
    assert "the other window" in run_python(second, "print(open('only-here.txt').read())"), "its own files"
    assert "kernelspec" in run_python(first, "print(open('decode.ipynb').read()[:200])"), "its own files"
    other = run_python(first, "print(open('only-here.txt').read())")
    assert "FileNotFoundError" in other and "the other window" not in other, other
    second_page.close()

    newer_tab = browser.new_page()
    newer = settled(open_in_browser(newer_tab, lms, "student-ada", link=f"{LINK}-tabs"))
    newer.evaluate(SAVE_CELL, [FIRST, f"{ANSWERS[FIRST]}\n{NEWER}"])
    tool_has(newer, "decode.ipynb", NEWER)
    first.evaluate(SAVE_CELL, [FIRST, f"{ANSWERS[FIRST]}\n# typed in the older tab"])
    expect(first.locator("#grader-status")).to_contain_text("changed in another window", timeout=30_000)
    expect(first.locator("#grader-status")).to_contain_text("reload the page")
    kept = tool_query(lms, "SELECT content FROM lite_drafts WHERE resource_link_id = :link", link=f"{LINK}-tabs")
    assert NEWER in kept.decode() and "older tab" not in kept.decode()
    newer.evaluate(SAVE_CELL, [FIRST, f"{ANSWERS[FIRST]}\n{NEWER} again"])  # the newer tab saves on
    tool_has(newer, "decode.ipynb", f"{NEWER} again")
    assert "changed in another window" not in newer.locator("#grader-status").text_content()
    first.reload()
    first.wait_for_function(NOTEBOOK_OPEN)
    assert f"{NEWER} again" in cell_text(first, FIRST), "a reload brings the newer work"
    for window in (first, second, newer, newer_tab):
        window.close()


SEED_LEGACY_STORE = """async ([name, notebook]) => {
  const db = await new Promise((ok, fail) => {
    const opening = indexedDB.open(name, 1);
    opening.onupgradeneeded = () => opening.result.createObjectStore("files");
    opening.onsuccess = () => ok(opening.result);
    opening.onerror = fail;
  });
  const model = { name: "decode.ipynb", path: "decode.ipynb", type: "notebook", format: "json", content: notebook };
  await new Promise((ok) => {
    const tx = db.transaction("files", "readwrite");
    tx.objectStore("files").put(model, "decode.ipynb");
    tx.oncomplete = ok;
  });
  db.close();
}"""


SAVE_CELL = """async ([index, text]) => {
  const widget = window.jupyterapp.shell.currentWidget;
  widget.content.model.cells.get(index).sharedModel.source = text;
  await widget.context.save();
}"""
NEWER = "# saved with the tool later, 5c1d"
TOOL_HAS = """async ([url, words]) => (await (await fetch(url)).text()).includes(words)"""


STORE_GONE = "async (name) => !(await indexedDB.databases()).some((db) => db.name === name)"


def tool_query(lms, query: str, **params):
    """One value from the tool's database."""
    engine = sqlalchemy.create_engine(f"sqlite:///{lms.tool.data_dir / 'decode-grader.db'}")
    try:
        with engine.connect() as connection:
            return connection.execute(sqlalchemy.text(query), params).scalar_one()
    finally:
        engine.dispose()


def settled(lite: Page) -> Page:
    """The window once its kernel is ready and what that changed in the notebook (its metadata) is saved."""
    lite.wait_for_function(KERNEL_STATUS, timeout=KERNEL_TIMEOUT_MS)
    lite.wait_for_function(SAVED, timeout=30_000)
    return lite


def tool_has(lite: Page, path: str, words: str) -> None:
    """Wait until the tool's copy of the window's file `path` holds `words` (the panel saves in the background)."""
    url = lite.url.split("notebooks/")[0] + "files/" + path
    lite.wait_for_function(TOOL_HAS, arg=[url, words], polling=250, timeout=30_000)


def test_work_saved_with_the_tool_survives_an_older_store_an_earlier_version_left(lms, page, browser):
    """Before this version, the work was kept in the browser's IndexedDB, which any code of the origin can read
    and write. Ada's newer work, saved with the tool, stays; what the old store held is kept beside it, in a
    folder of its own, and she is told; the store leaves the browser."""
    link = f"{LINK}-legacy"
    first = open_in_browser(page, lms, "student-ada", link=link)
    first.evaluate(SAVE_CELL, [FIRST, f"{ANSWERS[FIRST]}\n{NEWER}"])
    tool_has(first, "decode.ipynb", NEWER)
    first.close()

    secret = (lms.tool.data_dir / "secret_key").read_text().strip()
    platform_id = tool_query(lms, "SELECT id FROM platforms")
    key = dict(platform_id=platform_id, context_id=COURSE, resource_link_id=link)
    name = legacy_store(secret, "student-ada", key)
    notebook = {**STUDENT, "cells": [dict(cell) for cell in STUDENT["cells"]]}
    notebook["cells"][FIRST] = {**notebook["cells"][FIRST], "source": f"{ANSWERS[FIRST]}\n{MARKER}"}
    seeder = browser.new_page()
    seeder.goto(f"{lms.tool.url}/lite/left")
    seeder.evaluate(SEED_LEGACY_STORE, [name, notebook])
    seeder.close()

    lite = open_in_browser(page, lms, "student-ada", link=link)
    lite.wait_for_function(STORE_GONE, arg=name, polling=250, timeout=30_000)
    kept = tool_query(lms, "SELECT content FROM lite_drafts WHERE resource_link_id = :link AND path = :path",
                      link=link, path="decode.ipynb")  # fmt: skip
    assert NEWER in kept.decode() and MARKER not in kept.decode(), "the older store replaced the newer work"
    expect(lite.locator("#grader-status")).to_contain_text("recovered from this computer", timeout=30_000)
    expect(lite.locator("#grader-status")).to_contain_text("Your work saved with the tool was kept as it is")
    assert NEWER in cell_text(lite, FIRST) and MARKER not in cell_text(lite, FIRST)
    tool_has(lite, "recovered%20from%20this%20computer/decode.ipynb", MARKER)
    lite.reload()  # told once
    lite.wait_for_function(NOTEBOOK_OPEN)
    assert NEWER in cell_text(lite, FIRST)
    expect(lite.locator("#grader-panel")).to_be_visible()
    assert "recovered" not in lite.locator("#grader-status").text_content()
    lite.close()
