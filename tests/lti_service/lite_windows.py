"""The notebook's windows, as a student's browser opens them from the tool's page and talks to them (the panel's
requests), and saves racing the drafts' quotas: shared by the tests of the notebook in the browser on SQLite and
on PostgreSQL, and with a CDN."""

from __future__ import annotations

import json
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from urllib.parse import urljoin

import requests

from lti_service.browser import windows
from lti_service.config import ROOT
from testbed.tool import browser_session

SITE = ROOT / "build/lite/site"


@dataclass
class Window:
    """A notebook window opened from a student's page: its address (no credential in it), its page's token,
    the browser (session) whose cookie signs it in, and the revision of the student's drafts its page saw."""

    base: str
    csrf: str
    session: requests.Session
    revision: int = 0
    seen: dict[str, int] = field(default_factory=dict)
    """path -> the revision this window last saved of it (as the panel keeps it)"""

    def get(self, path: str = "", **kwargs) -> requests.Response:
        return self.session.get(self.base + path, timeout=10, **kwargs)

    def send(
        self, method: str, path: str, data: bytes = b"", csrf: str | None = None, base: int | None = None
    ) -> requests.Response:
        """What the panel sends: its token and the revision it last saw of the file (`base` to say another)."""
        headers = {"X-CSRF-Token": self.csrf if csrf is None else csrf}
        headers["X-Draft-Base"] = str(self.seen.get(path, self.revision) if base is None else base)
        response = self.session.request(method, self.base + path, data=data, headers=headers, timeout=30)
        if response.status_code == 200 and "revision" in response.json():
            self.seen[path] = response.json()["revision"]
        return response

    def apart(self) -> Window:
        """The same window on a connection of its own (the same cookie), as a browser's parallel requests."""
        session = browser_session()
        session.cookies.update(self.session.cookies)
        return Window(self.base, self.csrf, session, self.revision, self.seen)


def open_window(page) -> Window:
    """What "Open in the browser" does: post the page's form; the window once its notebook page is open."""
    form = re.search(r'<form method="post" action="([^"]+)" target="_blank" [^>]*id="open-in-browser-form"', page.html)
    assert form, "the student page offers no “Open in the browser”"
    fields = dict(re.findall(r'name="(launch|csrf_token)" value="([^"]+)"', page.html[form.start() :]))
    opened = page.session.post(urljoin(page.url, form.group(1)), data=fields, timeout=10)
    assert opened.status_code == 200, opened.text[:500]
    data = json.loads(re.search(r'<script id="grader-data" type="application/json">(.*?)</script>', opened.text)[1])
    return Window(opened.url.split("notebooks/")[0], data["csrf"], page.session, data["revision"])


MIB = 1024 * 1024
"""the tests' MAX_UPLOAD_BYTES: the drafts together may hold MAX_DRAFTS_TIMES_UPLOAD of it"""


def race_saves(window: Window, folder: str, count: int, size: int) -> list[requests.Response]:
    """`count` different files of `size` bytes saved into `folder` at the same moment, each on a connection of
    its own."""
    start = threading.Barrier(count, timeout=60)

    def save(number: int) -> requests.Response:
        apart = window.apart()
        start.wait()
        return apart.send("PUT", f"drafts/{folder}/{number}.bin", bytes([number % 256]) * size)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(save, range(count)))


RACES = (("big", 16, 1_000_000, 4), ("many", windows.MAX_DRAFT_FILES + 14, 1, windows.MAX_DRAFT_FILES))
"""folder, files saved at once, each file's size, how many the quotas keep: by size (1 MB files in 4 MiB of
drafts) and by count"""


def check_races(lms) -> None:
    """Parallel saves keep exactly as many files as the quotas allow, and each refused one says why."""
    for folder, count, size, fits in RACES:
        window = open_window(lms.open("student-ada", f"lite-race-{folder}"))
        answers = race_saves(window, folder, count, size)
        assert sorted(r.status_code for r in answers) == [200] * fits + [400] * (count - fits), folder
        assert all("delete files you no longer need" in r.json()["error"] for r in answers if r.status_code == 400)
        kept = [e["size"] for e in window.get(f"api/contents/{folder}/all.json").json()["content"]]
        assert len(kept) == fits and sum(kept) == fits * size <= windows.MAX_DRAFTS_TIMES_UPLOAD * MIB, folder
