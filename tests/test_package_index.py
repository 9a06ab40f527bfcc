"""No test reaches a package index beyond loopback: an assignment's environment built in the tests comes from the
index tests/conftest.py serves on 127.0.0.1 (the wheels `make test` downloads into build/test-wheels/)."""

from __future__ import annotations

import os
import subprocess
import sys
from urllib.parse import urlsplit

from autograder import environment
from autograder.environment import Requirements

INDEX_OPTIONS = ("--index-url", "--extra-index-url", "--find-links", "-i", "-f")


def test_environments_built_in_the_tests_come_from_a_loopback_index(tmp_path, monkeypatch):
    """The index every build of the session uses (unless a test sets its own), and pip's command line under it."""
    assert urlsplit(os.environ.get("GRADER_PIP_INDEX_URL", environment.DEFAULT_INDEX)).hostname == "127.0.0.1"
    commands: list[list[str]] = []

    def confined(command: list[str], *args: object) -> subprocess.CompletedProcess[bytes]:
        commands.append(command)
        return subprocess.CompletedProcess(command, 0, b"", b"")

    monkeypatch.setattr(environment, "_confined", confined)
    environment._run_pip(Requirements(("six",)), tmp_path, environment._build_uid(), lambda text: None)
    (command,) = commands
    urls = [value for option, value in zip(command, command[1:], strict=False) if option in INDEX_OPTIONS]
    urls += [arg.split("=", 1)[1] for arg in command if arg.startswith(tuple(f"{o}=" for o in INDEX_OPTIONS))]
    assert urls, command
    assert all(urlsplit(url).hostname == "127.0.0.1" or url.startswith("file:") for url in urls), urls
    assert "--isolated" in command  # no PIP_* variable or user configuration adds an index


def test_the_confined_pip_sees_no_configuration_of_the_machine(tmp_path):
    """/etc/pip.conf, /etc/xdg/pip/pip.conf and the PIP_* variables name indexes of the machine's (PyPI among
    them): pip in its bubblewrap sees none of them."""
    builder = environment._build_uid()
    os.chown(tmp_path, builder, builder)
    pip = environment._confined([sys.executable, "-m", "pip", "config", "list"], tmp_path, builder, timeout=60)
    assert pip.returncode == 0, pip.stderr
    assert pip.stdout.decode().strip() == ""
