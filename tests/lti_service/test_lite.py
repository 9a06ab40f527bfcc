"""The notebook in the browser, as the tool serves it per launch (views/lite.py): the launch's configuration
and files, nothing of the hidden tests, the shared site cached, and "Submit for grading" an attempt exactly
like an upload (authorised by the launch, CSRF-safe). The browser itself: tests/e2e/test_lite_browser.py."""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import parse_qs, urljoin, urlparse

import pytest
import requests
import sqlalchemy

from lti_service.config import ROOT
from lti_service.lite import browser_fit, load_site
from tests.lti_service.conftest import notebook_bytes
from tests.lti_service.tool import wait_for

SITE = ROOT / "build/lite/site"
AUTOGRADER_ZIP = ROOT / "dist/autograder/decode-autograder.zip"


def lite_url(page) -> str:
    """Where the student page's "Open in the browser" leads."""
    found = re.search(r'id="open-in-browser" href="([^"]+)"', page.html)
    assert found, "the student page offers no “Open in the browser”"
    return urljoin(page.url, found.group(1))


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


def submit(page, body: bytes, csrf: str | None = None, url: str | None = None) -> requests.Response:
    headers = {"Content-Type": "application/x-ipynb+json", "X-Notebook-Name": "decode.ipynb"}
    if csrf is not False:
        headers["X-CSRF-Token"] = csrf or page.csrf
    return page.session.post(url or f"{lite_url(page)}submit", data=body, headers=headers, timeout=30)


def test_the_site_is_built():
    assert load_site(SITE) is not None, "run `make lite` (make test does)"


def test_open_in_the_browser_leads_to_the_notebook_page_with_the_grading_panel(lms):
    page = lms.open("student-ada", "lite-open")
    opened = page.session.get(lite_url(page), timeout=10)
    assert opened.status_code == 200
    assert urlparse(opened.url).path.endswith("/notebooks/index.html")
    assert parse_qs(urlparse(opened.url).query)["path"] == ["decode.ipynb"]
    assert 'id="grader-data"' in opened.text and "/static/lite.js" in opened.text
    policy = opened.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in policy and "'wasm-unsafe-eval'" in policy
    assert opened.headers["Cache-Control"] == "no-store"


def test_each_student_and_each_link_keeps_its_work_in_a_store_of_its_own(lms):
    def config(user: str, link: str) -> dict:
        page = lms.open(user, link)
        return page.session.get(f"{lite_url(page)}jupyter-lite.json", timeout=10).json()["jupyter-config-data"]

    first, again, other, other_link = (
        config("student-ada", "lite-store"),
        config("student-ada", "lite-store"),
        config("student-grace", "lite-store"),
        config("student-ada", "lite-store-2"),
    )
    stores = [c["contentsStorageName"] for c in (first, again, other, other_link)]
    assert stores[0] == stores[1], "a new launch of the same student and link must find the work again"
    assert len({stores[0], stores[2], stores[3]}) == 3
    kernel = first["litePluginSettings"]["@jupyterlite/pyodide-kernel-extension:kernel"]
    assert kernel["disablePyPIFallback"] is True
    assert kernel["loadPyodideOptions"]["packages"] == ["numpy", "pandas", "matplotlib", "ipywidgets", "otter-grader"]
    assert "lockFileURL" not in kernel["loadPyodideOptions"], "Pyodide's own lock, beside it on this tool"
    assert re.fullmatch(r"/lite/site/\w+/static/pyodide/pyodide\.js", kernel["pyodideUrl"])
    assert first["exposeAppInBrowser"] == "true"
    assert first["appName"] == "Decode: one token at a time", "the window is named after the assignment"


def test_the_browser_gets_the_handout_and_nothing_of_the_hidden_tests(lms):
    page = lms.open("student-ada", "lite-files")
    base = lite_url(page)
    listing = page.session.get(f"{base}api/contents/all.json", timeout=10).json()
    assert [entry["path"] for entry in listing["content"]] == ["decode.ipynb"]
    handout = page.session.get(f"{base}files/decode.ipynb", timeout=10)
    assert handout.content == (ROOT / "dist/student/decode.ipynb").read_bytes()
    seen = [listing, handout.text, page.session.get(f"{base}jupyter-lite.json", timeout=10).text]
    seen.append(page.session.get(f"{base}notebooks/index.html", timeout=10).text)
    assert not any(name in str(text) for text in seen for name in hidden_test_names())
    for guess in ("files/tests/ms_per_token.py", "files/autograder.zip", "files/../../a", "api/contents/tests/all.json",
                  "files/%2e%2e/%2e%2e/etc/passwd"):  # fmt: skip
        response = page.session.get(base + guess, timeout=10, allow_redirects=True)
        assert response.status_code == 404, guess
        assert not any(name in response.text for name in hidden_test_names())


def test_the_sites_own_files_are_shared_and_cached_but_never_outside_the_site(lms):
    page = lms.open("student-ada", "lite-cache")
    response = page.session.get(f"{lite_url(page)}static/pyodide/pyodide-lock.json", timeout=10, allow_redirects=False)
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
    worker = page.session.get(f"{lite_url(page)}service-worker.js", timeout=10, allow_redirects=False)
    assert worker.status_code == 200, "a service worker's script must come from its scope, never redirected"


def test_submit_for_grading_makes_an_attempt_like_an_upload(lms):
    page = lms.open("student-ada", "lite-submit")
    answer = submit(page, notebook_bytes())
    assert answer.status_code == 200, answer.text
    assert answer.json()["new"] is True and answer.json()["number"] == 1
    attempts = page.wait_graded(1)
    assert (attempts[0]["status"], attempts[0]["score"]) == ("graded", 16)
    assert wait_for(lambda: page.attempts()[0]["gradebook"] == "sent to the gradebook", timeout=30)
    (score,) = lms.scores("student-ada")
    assert score["score_given"] == score["score_maximum"], score
    again = submit(page, notebook_bytes())
    assert (again.json()["new"], again.json()["number"]) == (False, 1), "the same notebook makes no new attempt"


def test_submit_is_refused_without_the_pages_token_or_with_what_is_not_the_notebook(lms):
    page = lms.open("student-grace", "lite-refused")
    assert submit(page, notebook_bytes(), csrf=False).status_code == 400
    assert submit(page, notebook_bytes(), csrf="0" * 64).status_code == 400
    wrong = submit(page, b'{"cells": "not a notebook"}')
    assert wrong.status_code == 400 and "Nothing was saved" in wrong.json()["error"]
    assert submit(page, b"x" * (2 * 1024 * 1024)).status_code == 413
    gone = submit(page, notebook_bytes(), url=lite_url(page).replace("/lite/", "/lite/expired") + "submit")
    assert gone.status_code == 404
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
    url = lite_url(lms.open("student-ada", "lite-no-browser"))
    with requirements(lms, "datascience"):
        page = lms.open("student-ada", "lite-no-browser")
        assert 'id="open-in-browser"' not in page.html
        assert 'id="upload-form"' in page.html and "Download the notebook" in page.html
        refused = page.session.get(url, timeout=10)
        assert refused.status_code == 404 and "download the notebook" in refused.text


def test_a_handout_with_data_files_is_listed_folder_by_folder():
    import datetime as dt
    import io

    from lti_service.lite import handout_files, listing, notebook_path

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in {"hw.ipynb": b"{}", "data/scores.csv": b"a,b\n", "data/raw/x.txt": b"x"}.items():
            archive.writestr(name, data)
    files = handout_files(out.getvalue(), "hw.zip")
    assert notebook_path(files) == "hw.ipynb"
    added = dt.datetime(2026, 9, 1, 12, 0)
    top = listing(files, "", added)
    assert [(e["name"], e["type"]) for e in top["content"]] == [("data", "directory"), ("hw.ipynb", "notebook")]
    data = listing(files, "data", added)
    assert [(e["path"], e["type"], e["size"]) for e in data["content"]] == [
        ("data/raw", "directory", None),
        ("data/scores.csv", "file", 4),
    ]
    assert data["content"][1]["last_modified"] == "2026-09-01T12:00:00+00:00"
    assert listing(files, "tests", added) is None and listing(files, "dat", added) is None
