"""The notebook in the browser, as the tool serves it per window (views/lite.py, windows.py): opened by a
form (no credential in any URL), signed in by a cookie of the window's own path and signed out when it closes,
idles or leaves; the student's work kept by the tool and never in the browser's storage; the launch's files and
nothing of the hidden tests; the shared site cached; "Submit for grading" an attempt exactly like an upload.
The browser itself: tests/e2e/test_lite_browser.py."""

from __future__ import annotations

import datetime as dt
import re
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urljoin, urlparse

import pytest
import requests
import sqlalchemy

from lti_service.browser import windows
from lti_service.browser.site import browser_fit, load_site
from lti_service.config import ROOT
from lti_service.db import utcnow
from testbed.lms import in_gradebook
from testbed.submissions import notebook_bytes
from testbed.tool import wait_for
from tests.lti_service.lite_windows import SITE, Window, check_races, open_window

AUTOGRADER_ZIP = ROOT / "dist/autograder/decode-autograder.zip"


def hidden_test_names() -> set[str]:
    """The names of Decode's hidden test functions: no response to the browser may carry one."""
    names = set()
    with zipfile.ZipFile(AUTOGRADER_ZIP) as archive:
        for name in archive.namelist():
            if name.startswith("tests/"):
                source = archive.read(name).decode()
                names |= set(re.findall(r"hidden=True\)\s*\ndef (\w+)", source))
    assert len(names) >= 5
    return names


def submit(window: Window, body: bytes, csrf: str | bool | None = None) -> requests.Response:
    headers = {"Content-Type": "application/x-ipynb+json", "X-Notebook-Name": "decode.ipynb"}
    if csrf is not False:
        headers["X-CSRF-Token"] = csrf or window.csrf
    return window.session.post(f"{window.base}submit", data=body, headers=headers, timeout=30)


@contextmanager
def tool_db(lms) -> Iterator[sqlalchemy.Connection]:
    engine = sqlalchemy.create_engine(f"sqlite:///{lms.tool.data_dir / 'decode-grader.db'}")
    try:
        with engine.begin() as connection:
            yield connection
    finally:
        engine.dispose()


def window_id(window: Window) -> str:
    return urlparse(window.base).path.split("/")[3]


def expiry(lms, window: Window) -> dt.datetime:
    with tool_db(lms) as connection:
        query = sqlalchemy.text("SELECT expires_at FROM lite_windows WHERE id = :id")
        return dt.datetime.fromisoformat(str(connection.execute(query, {"id": window_id(window)}).scalar_one()))


def test_the_site_is_built():
    assert load_site(SITE) is not None, "run `make lite` (make test does)"


def test_open_in_the_browser_leads_to_the_notebook_page_with_the_grading_panel(lms):
    window = open_window(lms.open("student-ada", "lite-open"))
    opened = window.get("notebooks/index.html?path=decode.ipynb")
    assert opened.status_code == 200
    assert 'id="grader-data"' in opened.text and "/static/lite.js" in opened.text
    policy = opened.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in policy and "'wasm-unsafe-eval'" in policy
    assert opened.headers["Cache-Control"] == "no-store"
    assert opened.headers["Referrer-Policy"] == "no-referrer"
    assert window.get().url.endswith("/notebooks/index.html?path=decode.ipynb"), "the window's own address"


def test_no_url_of_the_window_carries_a_credential_and_its_address_alone_opens_nothing(lms):
    page = lms.open("student-ada", "lite-urls")
    launch_id = page.url.rsplit("/", 1)[1]
    seen: list[requests.Response] = []
    page.session.hooks["response"].append(lambda response, **_: seen.append(response))
    window = open_window(page)
    window.get("jupyter-lite.json")
    window.get("api/contents/all.json")
    urls = [url for response in seen for url in (response.url, response.headers.get("Location", ""))]
    assert urls and not [url for url in urls if launch_id in url or page.csrf in url], urls
    app_page = window.get("notebooks/index.html").text
    assert launch_id not in app_page and page.csrf not in app_page, "the window never holds the launch"
    (cookie,) = [c for c in page.session.cookies if c.name.startswith("lite-")]
    assert cookie.path == urlparse(window.base).path and cookie.has_nonstandard_attr("HttpOnly")

    next_user = requests.Session()  # the next person at the computer, with the address from the history
    for path in ("", "notebooks/index.html", "jupyter-lite.json", "api/contents/all.json", "files/decode.ipynb"):
        refused = next_user.get(window.base + path, timeout=10, headers={"Accept": "text/html"})
        assert refused.status_code == 401 and "signed out" in refused.text, path
    assert submit(Window(window.base, window.csrf, next_user), notebook_bytes()).status_code == 401
    guessed = requests.Session()
    guessed.cookies.set(cookie.name, "x" * 43, path=cookie.path)
    assert guessed.get(window.base + "jupyter-lite.json", timeout=10).status_code == 401
    assert page.session.get(urljoin(window.base, f"/lite/{launch_id}/"), timeout=10).status_code == 404
    assert page.attempts() == []


def test_a_window_is_signed_out_when_it_closes_when_idle_and_when_the_student_leaves(lms):
    page = lms.open("student-ada", "lite-sign-out")
    window, other = open_window(page), open_window(page)
    assert window.send("POST", "alive").status_code == 200
    assert window.send("POST", "closing").status_code == 204
    assert expiry(lms, window) - utcnow() <= windows.CLOSING, "a closed window is signed in only for a reload"
    assert window.get("jupyter-lite.json").status_code == 200, "a reload within that time brings it back"
    assert expiry(lms, window) - utcnow() > windows.IDLE - windows.HEARTBEAT

    with tool_db(lms) as connection:  # then idle for longer than IDLE
        idle = sqlalchemy.text("UPDATE lite_windows SET expires_at = :when WHERE id = :id")
        connection.execute(idle, {"when": utcnow() - dt.timedelta(seconds=1), "id": window_id(window)})
    assert window.get("jupyter-lite.json").status_code == 401
    assert window.send("POST", "alive").status_code == 401

    assert other.send("POST", "leave", csrf="0" * 64).status_code == 400, "only the window's own page leaves"
    leaving = other.send("POST", "leave")
    assert leaving.status_code == 200 and leaving.headers["Clear-Site-Data"] == '"storage", "cookies"'
    assert other.get("jupyter-lite.json").status_code == 401
    goodbye = requests.get(urljoin(other.base, leaving.json()["left"]), timeout=10).text
    assert "nothing of your work is kept on this computer" in goodbye
    assert open_window(page).get("jupyter-lite.json").status_code == 200, "opening it again signs in anew"


def test_the_work_is_kept_by_the_tool_never_in_the_browsers_storage(lms):
    ada = open_window(lms.open("student-ada", "lite-store"))
    config = ada.get("jupyter-lite.json").json()["jupyter-config-data"]
    assert config["enableMemoryStorage"] is True
    assert config["contentsStorageDrivers"] == config["settingsStorageDrivers"] == ["memoryStorageDriver"]
    kernel = config["litePluginSettings"]["@jupyterlite/pyodide-kernel-extension:kernel"]
    assert kernel["disablePyPIFallback"] is True
    assert kernel["loadPyodideOptions"]["packages"] == ["numpy", "pandas", "matplotlib", "ipywidgets", "otter-grader"]
    assert "lockFileURL" not in kernel["loadPyodideOptions"], "Pyodide's own lock, beside it on this tool"
    assert re.fullmatch(r"/lite/site/\w+/static/pyodide/pyodide\.js", kernel["pyodideUrl"])
    assert config["exposeAppInBrowser"] == "true"
    assert config["enableServiceWorkerCache"] == "false", "Cache Storage is the origin's: anyone's code writes it"
    assert config["appName"] == "Decode: one token at a time", "the window is named after the assignment"

    work = notebook_bytes()
    saved = ada.send("PUT", "drafts/decode.ipynb", work)
    assert saved.status_code == 200 and "saved" in saved.json()
    assert ada.send("PUT", "drafts/notes/plan.txt", b"prefill, then decode").status_code == 200
    again = open_window(lms.open("student-ada", "lite-store"))  # a reload or a new launch: from the tool
    assert again.get("files/decode.ipynb").content == work
    assert [e["path"] for e in again.get("api/contents/notes/all.json").json()["content"]] == ["notes/plan.txt"]
    for other in (open_window(lms.open("student-grace", "lite-store")), open_window(lms.open("student-ada", "x"))):
        assert other.get("files/decode.ipynb").content == (ROOT / "dist/student/decode.ipynb").read_bytes()
        assert other.get("files/notes/plan.txt").status_code == 404
    assert again.send("DELETE", "drafts/notes/plan.txt").status_code == 200
    assert again.get("files/notes/plan.txt").status_code == 404


def test_drafts_past_their_bounds_are_refused_in_the_students_words_and_keep_what_was_saved(lms):
    window = open_window(lms.open("student-grace", "lite-draft-bounds"))
    assert window.send("PUT", "drafts/decode.ipynb", b"kept").status_code == 200
    big = window.send("PUT", "drafts/decode.ipynb", b"x" * (2 * 1024 * 1024))
    assert big.status_code == 413 and "Nothing was saved" in big.json()["error"]
    assert window.send("PUT", "drafts/decode.ipynb", b"x", csrf="").status_code == 400
    for name in ("a/%2e%2e/b.txt", "a//b.txt", "%00.txt", "x" * 400):
        assert window.send("PUT", f"drafts/{name}", b"x").status_code in (400, 404), name
    for number in range(windows.MAX_DRAFT_FILES - 1):
        assert window.send("PUT", f"drafts/scratch/{number}.txt", b"x").status_code == 200
    full = window.send("PUT", "drafts/one-too-many.txt", b"x")
    assert full.status_code == 400 and "delete files you no longer need" in full.json()["error"]
    assert window.get("files/decode.ipynb").content == b"kept"


def test_a_window_that_has_not_seen_the_newest_save_never_overwrites_it(lms):
    """Two tabs of one assignment: the one that saved last keeps its work; the other's saves and deletions of
    that file are refused until it reloads, in the student's words. JupyterLite's listing dates each saved file
    by its save, so its own "file changed" check compares true times."""
    page = lms.open("student-ada", "lite-stale")
    older, newer = open_window(page), open_window(page)  # both loaded before either saved
    assert newer.send("PUT", "drafts/decode.ipynb", b"newer work").status_code == 200
    for method, data in (("PUT", b"older work"), ("DELETE", b"")):
        stale = older.send(method, "drafts/decode.ipynb", data)
        assert stale.status_code == 409, (method, stale.text)
        assert re.fullmatch(r"This file was changed in another window at \d\d:\d\d UTC, .* reload the page .*",
                            stale.json()["error"]), stale.json()  # fmt: skip
    unsaid = older.session.put(f"{older.base}drafts/decode.ipynb", data=b"x", headers={"X-CSRF-Token": older.csrf})
    assert unsaid.status_code == 409, "a save that does not say what it saw is stale"
    assert newer.get("files/decode.ipynb").content == b"newer work"
    same = older.send("PUT", "drafts/decode.ipynb", b"newer work")  # as when both tabs add the same metadata
    assert same.status_code == 200 and older.seen["drafts/decode.ipynb"] > older.revision, "no conflict"
    first = {e["name"]: e["last_modified"] for e in newer.get("api/contents/all.json").json()["content"]}

    assert newer.send("PUT", "drafts/decode.ipynb", b"newer still").status_code == 200, "it saves on"
    assert older.send("PUT", "drafts/notes.txt", b"a file of its own").status_code == 200, "its other files save"
    reloaded = open_window(page)
    assert reloaded.get("files/decode.ipynb").content == b"newer still"
    assert reloaded.send("PUT", "drafts/decode.ipynb", b"after a reload").status_code == 200
    dates = {e["name"]: e["last_modified"] for e in reloaded.get("api/contents/all.json").json()["content"]}
    assert dt.datetime.fromisoformat(dates["decode.ipynb"]) > dt.datetime.fromisoformat(first["decode.ipynb"])
    assert dt.datetime.fromisoformat(dates["notes.txt"]) > dt.datetime.fromisoformat(first["decode.ipynb"])


def test_files_found_in_the_browser_are_kept_beside_the_work_never_over_it(lms):
    """What an earlier version left in the browser (which any code of the origin can write) is handed to the
    tool once: kept in a folder of its own, never over a draft or the handout, within bounds of its own."""
    window = open_window(lms.open("student-grace", "lite-recover"))
    assert window.send("PUT", "drafts/decode.ipynb", b"the newer work").status_code == 200
    found = window.send("PUT", "recovered/decode.ipynb", b"an older copy")
    assert found.status_code == 200 and found.json()["kept"] == f"{windows.RECOVERED}/decode.ipynb"
    planted = window.send("PUT", "recovered/decode.ipynb", b"written later by someone else")
    assert planted.status_code == 200 and planted.json()["kept"] is None
    assert window.get("files/decode.ipynb").content == b"the newer work"
    assert window.get(f"files/{windows.RECOVERED}/decode.ipynb").content == b"an older copy"
    top = window.get("api/contents/all.json").json()["content"]
    assert [(e["name"], e["type"]) for e in top] == [
        ("decode.ipynb", "notebook"),
        (windows.RECOVERED, "directory"),
    ]
    assert window.send("PUT", "drafts/decode.ipynb", b"saved on").status_code == 200, "the window's own work saves"

    for number in range(windows.RECOVERED_FILES - 1):
        assert window.send("PUT", f"recovered/more/{number}.txt", b"x").status_code == 200
    full = window.send("PUT", "recovered/one-too-many.txt", b"x")
    assert full.status_code == 400 and "delete files you no longer need" in full.json()["error"]
    for name in ("a/%2e%2e/b.txt", "%00.txt", "x" * 290):
        assert window.send("PUT", f"recovered/{name}", b"x").status_code in (400, 404), name

    other = open_window(lms.open("student-ada", "lite-recover"))
    handout = (ROOT / "dist/student/decode.ipynb").read_bytes()
    assert other.send("PUT", "recovered/decode.ipynb", handout).json()["kept"] is None, "nothing new: not kept"
    assert other.send("PUT", "recovered/big.bin", b"x" * 1_000_000).status_code == 200
    too_much = other.send("PUT", "recovered/big2.bin", b"x" * 100_000)
    assert too_much.status_code == 400, "what is found takes at most one notebook's room from the student's work"
    assert [e["path"] for e in other.get(f"api/contents/{windows.RECOVERED}/all.json").json()["content"]] == [
        f"{windows.RECOVERED}/big.bin"
    ]


def test_parallel_saves_never_pass_the_drafts_quotas(lms):
    check_races(lms)


def test_the_drafts_quota_counts_replacements_and_deletions_at_their_real_sizes(lms):
    window = open_window(lms.open("student-grace", "lite-quota-sizes"))
    megabyte = 1_000_000  # four fit in the 4 MiB the tests' drafts may hold, with 194,304 bytes to spare
    for number in range(4):
        assert window.send("PUT", f"drafts/data/{number}.bin", b"x" * megabyte).status_code == 200
    assert window.send("PUT", "drafts/more.bin", b"x" * 200_000).status_code == 400
    assert window.send("PUT", "drafts/data/0.bin", b"y" * megabyte).status_code == 200, "replaced, not added"
    assert window.send("PUT", "drafts/data/0.bin", b"y" * (megabyte + 40_000)).status_code == 200
    assert window.send("PUT", "drafts/more.bin", b"x" * 160_000).status_code == 400, "the larger file counts"
    assert window.send("PUT", "drafts/data/1.bin", b"small now").status_code == 200
    assert window.send("PUT", "drafts/more.bin", b"x" * 200_000).status_code == 200, "the smaller file counts"
    assert window.send("PUT", "drafts/data/4.bin", b"x" * megabyte).status_code == 400
    assert window.send("DELETE", "drafts/data/2.bin").status_code == 200
    assert window.send("PUT", "drafts/data/4.bin", b"x" * megabyte).status_code == 200, "a deletion frees its room"
    kept = [e["size"] for e in window.get("api/contents/data/all.json").json()["content"]]
    assert kept == [megabyte + 40_000, 9, megabyte, megabyte]


def test_the_browser_gets_the_handout_and_nothing_of_the_hidden_tests(lms):
    window = open_window(lms.open("student-ada", "lite-files"))
    listing = window.get("api/contents/all.json").json()
    assert [entry["path"] for entry in listing["content"]] == ["decode.ipynb"]
    handout = window.get("files/decode.ipynb")
    assert handout.content == (ROOT / "dist/student/decode.ipynb").read_bytes()
    seen = [listing, handout.text, window.get("jupyter-lite.json").text, window.get("notebooks/index.html").text]
    assert not any(name in str(text) for text in seen for name in hidden_test_names())
    for guess in ("files/tests/ms_per_token.py", "files/autograder.zip", "files/../../a", "api/contents/tests/all.json",
                  "files/%2e%2e/%2e%2e/etc/passwd"):  # fmt: skip
        response = window.get(guess, allow_redirects=True)
        assert response.status_code in (401, 404), guess
        assert not any(name in response.text for name in hidden_test_names())


def test_the_sites_own_files_are_shared_and_cached_but_never_outside_the_site(lms):
    window = open_window(lms.open("student-ada", "lite-cache"))
    response = window.get("static/pyodide/pyodide-lock.json", allow_redirects=False)
    assert response.status_code == 308
    shared = urljoin(response.url, response.headers["Location"])
    assert re.search(r"/lite/site/\w+/static/pyodide/pyodide-lock\.json$", shared)
    cached = requests.get(shared, timeout=10)
    assert cached.status_code == 200 and "immutable" in cached.headers["Cache-Control"]
    assert cached.content == (SITE / "static/pyodide/pyodide-lock.json").read_bytes()
    root = shared.removesuffix("static/pyodide/pyodide-lock.json")
    assert requests.get(root.replace("/site/", "/site/x") + "jupyter-lite.json", timeout=10).status_code == 404
    for escape in ("../../../etc/passwd", "%2e%2e/%2e%2e/lti_service/config.py", "..%2f..%2fpyproject.toml"):
        assert requests.get(root + escape, timeout=10).status_code == 404, escape
    worker = window.get("service-worker.js", allow_redirects=False)
    assert worker.status_code == 200, "a service worker's script must come from its scope, never redirected"
    assert "self.registration.scope" in worker.text, "each window's service worker has a file channel of its own"


def test_submit_for_grading_makes_an_attempt_like_an_upload(lms):
    page = lms.open("student-ada", "lite-submit")
    window = open_window(page)
    answer = submit(window, notebook_bytes())
    assert answer.status_code == 200, answer.text
    assert answer.json()["new"] is True and answer.json()["number"] == 1
    attempts = page.wait_graded(1)
    assert (attempts[0]["status"], attempts[0]["score"]) == ("graded", 16)
    assert wait_for(lambda: page.attempts()[0]["gradebook"] == "sent to the gradebook", timeout=30)
    (score,) = lms.scores("student-ada")
    assert score["score_given"] == in_gradebook(16, score["score_maximum"]), score
    assert window.get("attempts.json").json()["attempts"][0]["score"] == 16, "the panel follows it in the window"
    again = submit(window, notebook_bytes())
    assert (again.json()["new"], again.json()["number"]) == (False, 1), "the same notebook makes no new attempt"


def test_submit_is_refused_without_the_pages_token_or_with_what_is_not_the_notebook(lms):
    page = lms.open("student-grace", "lite-refused")
    window = open_window(page)
    assert submit(window, notebook_bytes(), csrf=False).status_code == 400
    assert submit(window, notebook_bytes(), csrf="0" * 64).status_code == 400
    wrong = submit(window, b'{"cells": "not a notebook"}')
    assert wrong.status_code == 400 and "Nothing was saved" in wrong.json()["error"]
    assert submit(window, b"x" * (2 * 1024 * 1024)).status_code == 413
    elsewhere = Window(window.base.replace("/lite/w/", "/lite/w/x"), window.csrf, window.session)
    assert submit(elsewhere, notebook_bytes()).status_code == 401
    assert page.attempts() == []


@pytest.mark.parametrize(
    ("requirements", "runs"),
    [("", True), ("numpy>=1.20", True), ("pandas<2", False), ("datascience", False), ("numpy, no-such-package", False)],
)
def test_an_assignment_runs_in_the_browser_only_where_every_package_does(requirements, runs):
    fit = browser_fit(load_site(SITE), requirements)
    assert fit.runs is runs
    if runs:
        assert set(load_site(SITE).defaults) <= set(fit.packages)


@contextmanager
def requirements(lms, text: str) -> Iterator[None]:
    """Every assignment version of the tool needs `text` for a while (versions never change in the tool; the
    test makes the state a version with those packages would be in)."""
    engine = sqlalchemy.create_engine(f"sqlite:///{lms.tool.data_dir / 'decode-grader.db'}")
    change = sqlalchemy.text("UPDATE assignment_versions SET requirements = :text")
    try:
        with engine.begin() as connection:
            connection.execute(change, {"text": text})
        yield
    finally:
        with engine.begin() as connection:
            connection.execute(change, {"text": ""})
        engine.dispose()


def test_an_assignment_whose_packages_do_not_run_in_the_browser_keeps_download_and_upload_only(lms):
    window = open_window(lms.open("student-ada", "lite-no-browser"))
    with requirements(lms, "datascience"):
        page = lms.open("student-ada", "lite-no-browser")
        assert 'id="open-in-browser"' not in page.html
        assert 'id="upload-form"' in page.html and "Download the notebook" in page.html
        refused = window.get("jupyter-lite.json")
        assert refused.status_code == 404 and "download the notebook" in refused.text


def test_a_handout_with_data_files_is_listed_folder_by_folder():
    import datetime as dt
    import io

    from lti_service.browser.site import MAX_HANDOUT_BYTES, listing, notebook_path, open_handout

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in {"hw.ipynb": b"{}", "data/scores.csv": b"a,b\n", "data/raw/x.txt": b"x"}.items():
            archive.writestr(name, data)
    handout = open_handout(out.getvalue(), "hw.zip")
    files = handout.sizes
    assert notebook_path(files) == "hw.ipynb"
    assert handout.read("data/scores.csv") == b"a,b\n" and handout.read("tests/q1.py") is None
    added, saved = dt.datetime(2026, 9, 1, 12, 0), dt.datetime(2026, 9, 2, 8, 30, 15, 250)
    dated = {path: (size, added) for path, size in files.items()} | {"data/raw/x.txt": (2, saved)}  # a draft
    top = listing(dated, "")
    assert [(e["name"], e["type"]) for e in top["content"]] == [("data", "directory"), ("hw.ipynb", "notebook")]
    data = listing(dated, "data")
    assert [(e["path"], e["type"], e["size"]) for e in data["content"]] == [
        ("data/raw", "directory", None),
        ("data/scores.csv", "file", 4),
    ]
    assert data["content"][1]["last_modified"] == "2026-09-01T12:00:00+00:00", "a handout file: its version's"
    raw = listing(dated, "data/raw")["content"][0]
    assert raw["last_modified"] == "2026-09-02T08:30:15.000250+00:00", "a draft: when it was saved"
    assert data["content"][0]["last_modified"] == top["last_modified"] == raw["last_modified"], "its newest file"
    assert listing(dated, "tests") is None and listing(dated, "dat") is None

    bomb = io.BytesIO()  # a handout that would unpack past its bound is refused by its directory, unread
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("hw.ipynb", b"{}")
        archive.writestr("data/zeros.bin", bytes(MAX_HANDOUT_BYTES + 1))
    with pytest.raises(ValueError, match="more than"):
        open_handout(bomb.getvalue(), "hw.zip")
