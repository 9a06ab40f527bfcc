"""Run the real tool (`python -m lti_service serve`) as a subprocess on loopback, for tests and benchmarks."""

from __future__ import annotations

import io
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from http.cookiejar import DefaultCookiePolicy
from pathlib import Path
from types import SimpleNamespace

import requests
from flask import Flask, request

from lti_dev_platform.serving import ServerThread
from lti_service.cli import main
from lti_service.config import Config
from lti_service.platforms import add_platform
from lti_service.services import Services
from testbed.submissions import ROOT


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


class ToolProcess:
    """The tool with its own data directory; `cli` runs other subcommands against the same settings."""

    def __init__(self, data_dir: Path, port: int | None = None, **env: str) -> None:
        self.port, self.data_dir = port or free_port(), data_dir
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "DATA_DIR": str(data_dir), "PYTHONPATH": str(ROOT), **env}
        self.log = data_dir / "tool.log"
        self.processes: list[subprocess.Popen] = []
        data_dir.mkdir(parents=True, exist_ok=True)

    def _spawn(self, *args: str) -> subprocess.Popen:
        command = [sys.executable, "-m", "lti_service", *args]
        process = subprocess.Popen(command, env=self.env, stdout=subprocess.DEVNULL, stderr=self.log.open("ab"))
        self.processes.append(process)
        return process

    def cli(self, *args: str) -> str:
        result = self._run_cli(args)
        assert result.returncode == 0, result.stderr
        return result.stdout

    def cli_fails(self, *args: str) -> str:
        """A subcommand that must fail; its error message."""
        result = self._run_cli(args)
        assert result.returncode != 0, result.stdout
        return result.stderr

    def _run_cli(self, args: tuple[str, ...]) -> subprocess.CompletedProcess:
        """`python -m lti_service ARGS` with the tool's settings, run in this process: what it prints and its
        exit status, without a process start (a second of imports, 60 times in the suite). The entry point
        itself runs as a process wherever the tool starts (`serve`, `worker`)."""
        out, err = io.StringIO(), io.StringIO()
        with _settings(self.env), _own_logging(), redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exit:  # argparse's usage errors
                code = exit.code
        return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())

    def services(self) -> Services:
        """The tool's services in this process, from its settings as its commands read them; the caller
        disposes of `db.engine`. What a command does, without a process start (a second of imports)."""
        with _settings(self.env):
            config = Config()
        return Services.from_config(config)

    def register_platform(self, issuer: str, client_id: str, deployment_id: str) -> None:
        """What `platform add` does (its own tests run the command: test_setup.py), in this process."""
        services = self.services()
        try:
            urls = (f"{issuer}/auth", f"{issuer}/token", f"{issuer}/.well-known/jwks.json")
            add_platform(services.db, issuer, client_id, [deployment_id], *urls)
        finally:
            services.db.engine.dispose()

    def start(self, *serve_args: str) -> ToolProcess:
        """`serve` (with its own worker unless serve_args say --no-worker); returns once it answers."""
        web = self._spawn("serve", "--host", "127.0.0.1", "--port", str(self.port), *serve_args)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # wait for the port to answer, not for a fixed time
            assert web.poll() is None, self.log.read_text()[-3000:]
            try:
                requests.get(f"{self.url}/lti/jwks.json", timeout=1)
                return self
            except (requests.ConnectionError, requests.Timeout):  # not listening yet, or listening, not answering
                time.sleep(0.05)
        raise AssertionError(f"the tool did not start: {self.log.read_text()[-3000:]}")

    def worker_pids(self) -> list[int]:
        """The worker processes `serve` runs as its children."""
        return children(self.processes[0].pid)

    def start_worker(self, workers: int = 1) -> subprocess.Popen:
        """`worker` apart from `serve` (the scale-out shape): one grading process, or a process supervising
        `workers` of them."""
        return self._spawn("worker", "--workers", str(workers))

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def log_events(self) -> list[dict]:
        import json

        events = []
        for line in self.log.read_text().splitlines():
            try:
                events.append(json.loads(line))
            except ValueError:
                continue
        return events


@contextmanager
def _settings(env: dict[str, str]) -> Iterator[None]:
    """The process's environment is `env` for the block (the tool reads its settings from there)."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextmanager
def _own_logging() -> Iterator[None]:
    """The root logger's handlers and level as they were before the block: a command sets its own
    (configure_logging), which would otherwise replace pytest's capture for the tests that follow."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers = []  # so that configure_logging's force=True closes none of pytest's handlers
    try:
        yield
    finally:
        for handler in root.handlers:
            handler.close()
        root.handlers, root.level = handlers, level


class PlatformProcess:
    """The dev platform in its own process (for benchmarks: the client's process then only runs the client).

    `base_url` is the platform's public URL and issuer when something (a relay) stands in front of it;
    it listens on `address` either way."""

    def __init__(
        self,
        tool_url: str,
        log: Path,
        client_id: str = "decode-grader-dev",
        deployment_id: str = "1",
        base_url: str | None = None,
    ) -> None:
        self.port = free_port("127.0.0.2")
        self.address = f"http://127.0.0.2:{self.port}"
        self.url = base_url or self.address
        self.settings = SimpleNamespace(client_id=client_id, deployment_id=deployment_id)
        command = [sys.executable, "-m", "lti_dev_platform", "serve", "--host", "127.0.0.2", "--port", str(self.port)]
        command += ["--tool-url", tool_url, "--client-id", client_id, "--deployment-id", deployment_id, "--test-hooks"]
        command += ["--base-url", self.url]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log.open("ab"))
        wait_for(lambda: self._answers(), timeout=30)

    def _answers(self) -> bool:
        assert self.process.poll() is None, "the platform exited"
        try:
            return requests.get(self.address + "/", timeout=1).status_code == 200
        except requests.ConnectionError:
            return False

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=20)


class RecordingServer:
    """A web server on a loopback address of its own that records every request it gets ("GET /path");
    subclasses add their answers in `routes`."""

    def __init__(self, host: str) -> None:
        self.requests: list[str] = []
        self._lock = threading.Lock()
        app = Flask(f"recorder-{host}")
        app.before_request(self._record)
        self.routes(app)
        self.server = ServerThread(app, host=host).start()
        self.url = self.server.url

    def _record(self) -> None:
        with self._lock:
            self.requests.append(f"{request.method} {request.path}")

    def routes(self, app: Flask) -> None:
        """Answers (none: 404 for everything)."""

    def stop(self) -> None:
        self.server.stop()


LOOPBACK_IS_SECURE = DefaultCookiePolicy(secure_protocols=("https", "wss", "http"))


class BrowserSession(requests.Session):
    """A requests session that, like a browser, sends Secure cookies to loopback addresses over HTTP.

    Browsers treat loopback as potentially trustworthy, and the tool's state cookie is `Secure;
    SameSite=None` there so that it survives the LMS iframe. requests copies the session's cookies into
    a jar with the default policy for every request (and its redirects), so the policy is set there.
    """

    def prepare_request(self, request: requests.Request) -> requests.PreparedRequest:
        prepared = super().prepare_request(request)
        prepared._cookies.set_policy(LOOPBACK_IS_SECURE)  # the jar its redirects reuse too
        prepared.headers.pop("Cookie", None)
        prepared.prepare_cookies(prepared._cookies)
        return prepared


def browser_session() -> requests.Session:
    return BrowserSession()


def children(pid: int) -> list[int]:
    """The processes started by `pid`'s main thread."""
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def wait_for(condition, timeout: float = 60, interval: float = 0.05):
    """Poll until condition() returns something truthy; that value (an AssertionError after timeout)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout} s")
