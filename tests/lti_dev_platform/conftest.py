"""Fixtures: the dev platform on 127.0.0.2 and a fake tool on 127.0.0.1, both on ephemeral ports, real HTTP."""

from __future__ import annotations

import typing as t

import pytest
import requests

from lti_dev_platform.serving import ServerThread, start_platform
from tests.lti_dev_platform.fake_tool import FakeTool


class Running(t.NamedTuple):
    url: str
    tool: FakeTool

    def state(self) -> dict[str, t.Any]:
        return requests.get(f"{self.url}/_test/state", timeout=10).json()

    def hook(self, name: str, body: dict[str, t.Any]) -> requests.Response:
        return requests.post(f"{self.url}/_test/{name}", json=body, timeout=10)


def _run(preregistered: bool) -> t.Iterator[Running]:
    tool = FakeTool()
    with ServerThread(tool.app, "127.0.0.1") as tool_server:
        tool.url = tool_server.url
        with start_platform(tool.url, preregistered=preregistered, test_hooks=True) as platform:
            tool.platform_url = platform.url
            yield Running(platform.url, tool)


@pytest.fixture
def running() -> t.Iterator[Running]:
    """A platform with the fake tool pre-registered."""
    yield from _run(preregistered=True)


@pytest.fixture
def unregistered() -> t.Iterator[Running]:
    """A platform that knows no tool until dynamic registration."""
    yield from _run(preregistered=False)
