"""A PEP 503 package index of wheels, served on loopback: what the tests build assignments' environments from
(no test reaches PyPI). `make test` downloads the wheels the tests' builds need into build/test-wheels/
(tests/test-wheels.txt); tests/conftest.py serves them for the whole session."""

from __future__ import annotations

import functools
import http.server
import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from autograder.environment import canonicalize_name
from testbed.submissions import ROOT

TEST_WHEELS = ROOT / "build" / "test-wheels"
WHEEL_LIST = ROOT / "tests" / "test-wheels.txt"
DOWNLOADED = TEST_WHEELS / "test-wheels.txt"
"""the list the wheels were downloaded from, copied when the download finished (the Makefile's stamp)"""


def serve_index(root: Path, wheels: Iterable[Path]) -> Iterator[str]:
    """A PEP 503 index of `wheels` on loopback, made in the empty folder `root`; yields its URL."""
    for path in wheels:
        project = root / "simple" / canonicalize_name(path.name.split("-")[0])
        project.mkdir(parents=True, exist_ok=True)
        links = project / "index.html"
        old = links.read_text() if links.exists() else ""
        links.write_text(old + f'<a href="/{path.name}">{path.name}</a>\n')
        os.symlink(path.resolve(), root / path.name)
    handler = functools.partial(QuietHandler, directory=str(root))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/simple"
        finally:
            server.shutdown()
            thread.join()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def downloaded_wheels() -> list[Path]:
    """The downloaded wheels; an error that says what to run when they are missing or out of date."""
    if not DOWNLOADED.is_file() or DOWNLOADED.read_text() != WHEEL_LIST.read_text():
        raise FileNotFoundError(
            f"the wheels the tests build environments from are missing or out of date in {TEST_WHEELS} (the tests "
            "never reach PyPI): run `make test`, which downloads them (or `make test-wheels` for them alone)"
        )
    return sorted(TEST_WHEELS.glob("*.whl"))
