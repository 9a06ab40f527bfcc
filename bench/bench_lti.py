"""LTI benchmark: how fast the tool answers a launch, and how long from an upload to a score in the gradebook.

Run with `make bench`. One LMS (the dev platform on 127.0.0.2 and the real tool on 127.0.0.1, each in its own
process) is started in a temporary directory, and everything goes over real HTTP on loopback.

- Launch handling: the tool handles three requests in a launch, the OIDC login (GET /lti/login -> 302 to its
  cookie check, GET /lti/login/continue -> 302 to the platform) and the launch POST (id_token and state ->
  303 to the tool's page). Each is timed client-side
  around that one request on a keep-alive http.client connection (requests' cookie handling alone costs
  about 2 ms a response), over many launches driven step by step through the platform (course page, login,
  platform /auth, launch POST). We report p50/p99 of each and of
  their sum (the tool's whole part of a launch), plus whole launches per second with 1 and 4 client threads.
- Upload to score: each upload is by a fresh activity with a gradebook column, so every upload produces a
  score POST; the clock runs from just before the upload POST until the platform's /_test/state lists the
  score. The tool's attempts.json is polled too, which splits that into grading and passback.

Targets on the development machine: launch p50 (login + launch POST) under 10 ms; upload to score p50 under
1 s. Machines are noisy, so we report medians and percentiles rather than means. Whole launches per second
include the platform's work (it signs every id_token) and requests' overhead in this process.
"""

from __future__ import annotations

import http.client
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import requests

from lti_dev_platform.client import course_launch_url, parse_page
from testbed.classroom import percentile
from testbed.lms import Lms, start_lms
from testbed.submissions import notebook_bytes
from testbed.tool import browser_session

WARMUP_LAUNCHES = 20
TIMED_LAUNCHES = 300
THROUGHPUT_LAUNCHES = 200  # per run, split over the client threads
THREAD_COUNTS = (1, 4)
UPLOADS = 15
POLL_INTERVAL = 0.01
SCORE_TIMEOUT = 60
STUDENTS = ("student-ada", "student-grace")
RESOURCE_LINK = "decode-1"
TIMEOUT = 10
LAUNCH_TARGET_MS = 10.0
SCORE_TARGET_S = 1.0


@dataclass
class LaunchTimes:
    """Client-side milliseconds of the tool's launch requests (the login with its cookie check; the launch POST),
    one entry per launch."""

    login_ms: list[float] = field(default_factory=list)
    launch_ms: list[float] = field(default_factory=list)
    floor_ms: list[float] = field(default_factory=list)  # a trivial tool request: HTTP, waitress and Flask only

    @property
    def total_ms(self) -> list[float]:
        return [a + b for a, b in zip(self.login_ms, self.launch_ms, strict=True)]


def _expect(response: requests.Response, status: int, step: str) -> requests.Response:
    if response.status_code != status:
        raise AssertionError(f"{step}: expected {status}, got {response.status_code}: {response.text[:500]!r}")
    return response


class ToolConnection:
    """The tool's two launch requests, timed over one keep-alive http.client connection.

    requests' cookie handling (http.cookiejar) costs about 2 ms per response that sets a cookie (measured:
    a redirect with a Set-Cookie took 4.9 ms client-side for 0.12 ms in the app), more than the tool itself
    spends on a login; a lean client measures the tool rather than the client.
    """

    def __init__(self, tool_url: str) -> None:
        parts = urlsplit(tool_url)
        self.connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=TIMEOUT)

    def request(self, method: str, url: str, body: str | None = None, cookie: str = "") -> tuple[int, dict, float]:
        """Status, headers and client-side milliseconds of one request."""
        parts = urlsplit(url)
        headers = {"Cookie": cookie} if cookie else {}
        if body is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        started = time.perf_counter()
        self.connection.request(method, parts.path + (f"?{parts.query}" if parts.query else ""), body, headers)
        response = self.connection.getresponse()
        response.read()
        elapsed = (time.perf_counter() - started) * 1000
        return response.status, dict(response.getheaders()), elapsed


def timed_launch(session: requests.Session, tool: ToolConnection, platform_url: str, user: str, times: LaunchTimes):
    """One launch driven like one_launch, with the tool's requests sent and timed by the lean client."""
    course = _expect(
        session.get(course_launch_url(platform_url, user=user, resource_link=RESOURCE_LINK), timeout=TIMEOUT),
        200,
        "course",
    )
    status, headers, login_ms = tool.request("GET", parse_page(course).iframes[0])
    assert status == 302, f"tool login: {status}"
    cookie = headers["Set-Cookie"].split(";", 1)[0]  # the OIDC state cookie
    status, headers, check_ms = tool.request("GET", headers["Location"], cookie=cookie)
    assert status == 302, f"tool login's cookie check: {status}"
    auth = _expect(session.get(headers["Location"], timeout=TIMEOUT), 200, "platform /auth")
    (form,) = [f for f in parse_page(auth).forms if "id_token" in f.fields]
    status, _, launch_ms = tool.request("POST", form.action, urlencode(form.fields), cookie)
    assert status == 303, f"launch: {status}"
    times.login_ms.append(login_ms + check_ms)
    times.launch_ms.append(launch_ms)


def one_launch(session: requests.Session, platform_url: str, user: str) -> str:
    """A resource launch as a browser makes it, without following the tool's redirects; returns the page URL."""
    course = _expect(
        session.get(course_launch_url(platform_url, user=user, resource_link=RESOURCE_LINK), timeout=TIMEOUT),
        200,
        "course",
    )
    login = parse_page(course).iframes[0]
    auth = _expect(session.get(login, timeout=TIMEOUT), 200, "tool login, its cookie check, platform /auth")
    (form,) = [f for f in parse_page(auth).forms if "id_token" in f.fields]
    launch = _expect(session.post(form.action, data=form.fields, allow_redirects=False, timeout=TIMEOUT), 303, "launch")
    return launch.headers["Location"]


def timed_launches(platform_url: str, tool_url: str) -> LaunchTimes:
    session, tool = browser_session(), ToolConnection(tool_url)
    warmup = LaunchTimes()
    for i in range(WARMUP_LAUNCHES):
        timed_launch(session, tool, platform_url, STUDENTS[i % len(STUDENTS)], warmup)
    times = LaunchTimes()
    for i in range(TIMED_LAUNCHES):
        timed_launch(session, tool, platform_url, STUDENTS[i % len(STUDENTS)], times)
        status, _, floor_ms = tool.request("GET", f"{tool_url}/lti/canvas.json")
        assert status == 200
        times.floor_ms.append(floor_ms)
    return times


def launches_per_second(platform_url: str, threads: int) -> float:
    """Whole launches (course page, tool login, platform /auth, launch POST) per second; a session per thread."""
    per_thread = THROUGHPUT_LAUNCHES // threads
    barrier = threading.Barrier(threads + 1)

    def client(index: int) -> None:
        session = browser_session()
        one_launch(session, platform_url, STUDENTS[index % len(STUDENTS)])  # open the keep-alive connections
        barrier.wait()
        for i in range(per_thread):
            one_launch(session, platform_url, STUDENTS[(index + i) % len(STUDENTS)])

    with ThreadPoolExecutor(threads) as pool:
        futures = [pool.submit(client, i) for i in range(threads)]
        barrier.wait()
        started = time.perf_counter()
        for future in futures:
            future.result()
    return per_thread * threads / (time.perf_counter() - started)


@dataclass
class UploadTimes:
    """Seconds from just before each upload POST: its response, graded in the tool, score at the platform."""

    response_s: list[float] = field(default_factory=list)
    graded_s: list[float] = field(default_factory=list)
    score_s: list[float] = field(default_factory=list)


def _line_item_id(lms: Lms, resource_link: str) -> str:
    return lms.hook("resource-link", resource_link_id=resource_link, line_item=True)["line_item_id"]


def _has_score(lms: Lms, line_item_id: str, user: str) -> bool:
    scores = requests.get(f"{lms.platform.url}/_test/state", timeout=TIMEOUT).json()["scores"]
    return any(s["line_item_id"] == line_item_id and s["user_id"] == user for s in scores)


def one_upload(lms: Lms, index: int, notebook: bytes, times: UploadTimes) -> None:
    user, resource_link = "student-ada", f"bench-upload-{index}"
    line_item_id = _line_item_id(lms, resource_link)
    page = lms.open(user, resource_link)
    started = time.perf_counter()
    _expect(page.upload(notebook), 200, "upload")
    times.response_s.append(time.perf_counter() - started)
    graded = None
    while not _has_score(lms, line_item_id, user):
        if graded is None and page.attempts()[0]["status"] in ("graded", "failed"):
            graded = time.perf_counter() - started
        if time.perf_counter() - started > SCORE_TIMEOUT:
            raise AssertionError(f"no score at the platform for {resource_link} after {SCORE_TIMEOUT} s")
        time.sleep(POLL_INTERVAL)
    times.score_s.append(time.perf_counter() - started)
    times.graded_s.append(graded if graded is not None else times.score_s[-1])
    (attempt,) = page.attempts()
    if attempt["status"] != "graded":
        raise AssertionError(f"the upload was not graded: {attempt}")


def upload_to_score(lms: Lms) -> UploadTimes:
    notebook = notebook_bytes()
    times = UploadTimes()
    one_upload(lms, -1, notebook, UploadTimes())  # warm-up: imports, the autograder zip, the platform token
    for i in range(UPLOADS):
        one_upload(lms, i, notebook, times)
    return times


def report(launches: LaunchTimes, rates: dict[int, float], uploads: UploadTimes) -> None:
    print(f"launch handling, timed client-side per request ({len(launches.login_ms)} launches, keep-alive)")
    print(f"  {'request':<34} {'p50 ms':>8} {'p99 ms':>8}")
    for label, values in (
        ("GET /lti/login + continue -> 302s", launches.login_ms),
        ("POST /lti/launch -> 303", launches.launch_ms),
        ("login + launch POST (tool's part)", launches.total_ms),
        ("floor: GET /lti/canvas.json -> 200", launches.floor_ms),
    ):
        print(f"  {label:<34} {statistics.median(values):>8.2f} {percentile(values, 0.99):>8.2f}")
    for threads, rate in rates.items():
        print(f"  whole launches/s, {threads} client thread{'s' if threads > 1 else ' '}: {rate:>8.1f}")
    if len(rates) > 1:
        low, high = min(rates), max(rates)
        print(f"  scaling {high} threads / {low}: {rates[high] / rates[low]:.2f}x")

    print(f"\nupload to score received at the platform ({len(uploads.score_s)} uploads, a fresh activity each)")
    print(f"  {'from just before the upload POST to':<34} {'p50 s':>8} {'p95 s':>8}")
    for label, values in (
        ("the upload's response", uploads.response_s),
        ("graded in the tool (attempts.json)", uploads.graded_s),
        ("score at the platform", uploads.score_s),
    ):
        print(f"  {label:<34} {statistics.median(values):>8.3f} {percentile(values, 0.95):>8.3f}")
    passback = [s - g for s, g in zip(uploads.score_s, uploads.graded_s, strict=True)]
    print(
        f"  {'graded -> score (passback)':<34} {statistics.median(passback):>8.3f} {percentile(passback, 0.95):>8.3f}"
    )

    launch_p50 = statistics.median(launches.total_ms)
    score_p50 = statistics.median(uploads.score_s)
    print("\ntargets")
    print(f"  launch p50 (login + launch POST) {launch_p50:.2f} ms < {LAUNCH_TARGET_MS:g} ms: "
          f"{'met' if launch_p50 < LAUNCH_TARGET_MS else 'NOT met'}")  # fmt: skip
    print(f"  upload to score p50 {score_p50:.3f} s < {SCORE_TARGET_S:g} s: "
          f"{'met' if score_p50 < SCORE_TARGET_S else 'NOT met'}")  # fmt: skip


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-lti-") as workdir:
        lms = start_lms(Path(workdir), platform_process=True)
        try:
            launches = timed_launches(lms.platform.url, lms.tool.url)
            rates = {threads: launches_per_second(lms.platform.url, threads) for threads in THREAD_COUNTS}
            uploads = upload_to_score(lms)
        finally:
            lms.tool.stop()
            lms.platform.stop()
    report(launches, rates, uploads)


if __name__ == "__main__":
    main()
