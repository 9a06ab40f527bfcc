"""The local LMS: the dev platform (in a thread on 127.0.0.2, or its own process) and the real tool (a
subprocess) registered with each other; a user's page in the tool as the LMS opens it, and what course staff do
there."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import requests

from lti_dev_platform.client import deep_link, parse_page, submit
from lti_dev_platform.client import launch as platform_launch
from lti_dev_platform.serving import PlatformServer, start_platform
from testbed.submissions import notebook_bytes
from testbed.tool import PlatformProcess, ToolProcess, browser_session, free_port, wait_for

TEST_ENV = {"PASSBACK_BACKOFF": "0.2", "MAX_UPLOAD_BYTES": str(1024 * 1024)}
"""the tool's settings under start_lms: passback retried quickly, small uploads (bench/soak.py restores the defaults)"""
DECODE_POINTS = 18.0
"""Decode's points: 16 graded by its tests and 2 for the written answer course staff grade (`two_rates`)"""


def in_gradebook(points: float, maximum: float = 100.0) -> float:
    """What a gradebook column of `maximum` receives for `points` of Decode's: the autograded part, until staff
    grade the written answer."""
    return round(points / DECODE_POINTS * maximum, 4)


@dataclass
class Lms:
    """The platform and the tool registered with each other; the platform's test hooks and what it received."""

    platform: PlatformServer | PlatformProcess
    tool: ToolProcess

    def state(self) -> dict:
        return requests.get(f"{self.platform.url}/_test/state", timeout=10).json()

    def hook(self, name: str, **body) -> dict:
        response = requests.post(f"{self.platform.url}/_test/{name}", json=body, timeout=10)
        assert response.status_code == 200, response.text
        return response.json()

    def open(self, user: str, resource_link: str, context_id: str = "decode-101") -> StudentPage:
        session = browser_session()
        response = platform_launch(
            self.platform.url, session, user=user, context_id=context_id, resource_link=resource_link
        )
        assert response.status_code == 200, response.text[:2000]
        return StudentPage(self, session, response.url, response.text)

    def gradebook(self, resource_link: str) -> dict[str, float]:
        """user -> the score the gradebook holds on that activity's line item."""
        response = requests.get(f"{self.platform.url}/_test/gradebook/{resource_link}", timeout=10)
        assert response.status_code == 200, response.text
        return response.json()

    def scores(self, user: str) -> list[dict]:
        return [s for s in self.state()["scores"] if s["user_id"] == user]

    def score_posts(self, user: str, resource_link: str) -> list[dict]:
        """Every score POST the platform received for the user on that activity's line item (with status)."""
        state = self.state()
        items = {i["id"] for i in state["line_items"] if i["resource_link_id"] == resource_link}
        return [
            {**entry["body"], "status": entry.get("status")}
            for entry in state["score_log"]
            if entry["line_item_id"] in items and (entry.get("body") or {}).get("userId") == user
        ]


@dataclass
class StudentPage:
    """A user's page in the tool as the LMS opened it (a student's or course staff's), in that user's browser."""

    lms: Lms
    session: requests.Session
    url: str
    html: str

    @property
    def csrf(self) -> str:
        """The page's CSRF token; derived like the tool does when the page shows no form (to craft posts)."""
        found = re.search(r'name="csrf_token" value="([^"]+)"', self.html)
        if found:
            return found.group(1)
        secret = (Path(self.lms.tool.env["DATA_DIR"]) / "secret_key").read_text().strip()
        return hmac.new(secret.encode(), self.url.rsplit("/", 1)[1].encode(), hashlib.sha256).hexdigest()

    def upload(self, data: bytes, filename: str = "decode.ipynb", csrf: str | None = None) -> requests.Response:
        files = {"notebook": (filename, data, "application/x-ipynb+json")}
        return self.session.post(f"{self.url}/upload", data={"csrf_token": csrf or self.csrf}, files=files)

    def attempts(self) -> list[dict]:
        return self.session.get(f"{self.url}/attempts.json", timeout=10).json()["attempts"]

    def download(self, path: str) -> requests.Response:
        """A staff download, as its button fetches it: a POST with the page's token (200 expected)."""
        response = self.session.post(f"{self.url}{path}", data={"csrf_token": self.csrf}, timeout=30)
        assert response.status_code == 200, response.text[:500]
        return response

    def wait_graded(self, count: int) -> list[dict]:
        """Attempts once `count` of them are done (graded or failed)."""

        def done():
            attempts = self.attempts()
            finished = [a for a in attempts if a["status"] in ("graded", "failed")]
            return attempts if len(finished) >= count else None

        return wait_for(done, timeout=60)


def staff_post(page: StudentPage, action: str, **form) -> requests.Response:
    return page.session.post(f"{page.url}/staff/{action}", data={"csrf_token": page.csrf, **form})


def settings(page: StudentPage, **overrides) -> None:
    """Save the link's settings from the instructor dashboard (defaults, changed by `overrides`)."""
    form = {"score_policy": "best", "attempt_limit": "", "late_policy": "accept", "late_penalty": "0", **overrides}
    response = staff_post(page, "settings", **form)
    assert response.status_code == 200 and "Instructor dashboard" in response.text, response.text[:500]


def race_uploads(page: StudentPage, count: int) -> list[requests.Response]:
    """`count` different notebooks uploaded at the same moment, each on its own connection."""
    notebooks = [json.dumps(json.loads(notebook_bytes()), indent=n).encode() for n in range(count)]
    start = threading.Barrier(count)

    def send(data: bytes) -> requests.Response:
        start.wait()
        files = {"notebook": ("decode.ipynb", data, "application/x-ipynb+json")}
        form = {"csrf_token": page.csrf}
        connection = browser_session()  # the same browser (its launch cookie), a connection of its own
        connection.cookies.update(page.session.cookies)
        return connection.post(f"{page.url}/upload", data=form, files=files, allow_redirects=False, timeout=60)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(send, notebooks))


def choose(title: str):
    """A deep-linking choice, as a teacher makes it: the offered assignment with this title."""

    def chooser(session: requests.Session, page: requests.Response) -> requests.Response:
        (version_id,) = re.findall(
            rf'id="assignment-(\d+)"[^>]*>\s*<label for="assignment-\d+">{re.escape(title)} \(', page.text
        )
        (form,) = parse_page(page).forms
        return submit(session, form, assignment=version_id)

    return chooser


def start_lms(
    tmp_path, *serve_args: str, platform_process: bool = False, platform_url: str | None = None, **env: str
) -> Lms:
    """The dev platform (in a thread, or its own process, then optionally known by `platform_url` as when a
    relay stands in front of it) and the tool registered with each other; the caller stops both."""
    port = free_port()
    tool_url = f"http://127.0.0.1:{port}"
    tool = ToolProcess(tmp_path / "tool", port=port, **{**TEST_ENV, **env})
    if platform_process:
        platform = PlatformProcess(tool_url, tmp_path / "tool" / "platform.log", base_url=platform_url)
    else:
        platform = start_platform(tool_url, test_hooks=True)
    try:
        tool.register_platform(platform.url, platform.settings.client_id, platform.settings.deployment_id)
        tool.start(*serve_args)
    except BaseException:
        tool.stop()
        platform.stop()
        raise
    return Lms(platform, tool)


def add_link(lms: Lms, context_id: str, title: str) -> dict:
    """Deep-link the assignment into the course; the platform's record of the new link (id, item, column)."""
    result = deep_link(lms.platform.url, browser_session(), context_id=context_id, choose=choose(title))
    assert result.platform_response.status_code == 200, result.platform_response.text[:1000]
    return [i for i in lms.state()["deep_link_items"] if i["context_id"] == context_id][-1]


def staff_page(lms: Lms, context_id: str) -> StudentPage:
    lms.hook("resource-link", context_id=context_id, resource_link_id=f"{context_id}-home", line_item=True)
    return lms.open("instructor-turing", f"{context_id}-home", context_id=context_id)


def finished_build(page: StudentPage, response: requests.Response) -> str:
    """The build's page once its job ended."""
    assert response.status_code == 200 and "/assignments/builds/" in response.url, response.text[:2000]
    wait_for(lambda: page.session.get(response.url + ".json", timeout=10).json()["finished"], timeout=90)
    return page.session.get(response.url, timeout=10).text


def upload_zip(page: StudentPage, autograder: bytes, student: bytes, name: str = "student.ipynb") -> requests.Response:
    uploads = [("autograder", ("autograder.zip", autograder)), ("student", (name, student))]
    data = {"csrf_token": page.csrf, "source": "zip", "assignment_id": "", "title": ""}
    return page.session.post(f"{page.url}/assignments", data=data, files=uploads, timeout=30)


def roster_rows(html: str) -> dict[str, str]:
    """The dashboard's roster: user -> the HTML of their row."""
    roster = html.split('id="roster"', 1)[1].split("</table>", 1)[0]
    return dict(re.findall(r'data-user="([^"]+)">(.*?)</tr>', roster, re.S))
