"""Dynamic registration only through a single-use, expiring invite; it never changes a registered platform
and the platform's configuration must come from, and stay on, the issuer's own origin.

The test plays the platform (a configuration and a registration endpoint on 127.0.0.2) and a host
elsewhere (127.0.0.3) that must never be contacted; both record every request they get.
"""

from __future__ import annotations

import datetime as dt
import re
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from flask import Flask, jsonify, redirect, request

from lti_service.config import Config
from lti_service.db import Database, Platform
from testbed.tool import RecordingServer, ToolProcess

LTI_TOOL = "https://purl.imsglobal.org/spec/lti-tool-configuration"


class Elsewhere(RecordingServer):
    """A host that is not the platform, serving a plausible configuration that must never be fetched."""

    def routes(self, app: Flask) -> None:
        app.add_url_rule("/config", "config", lambda: jsonify(self.configuration()))

    def configuration(self) -> dict:
        return {
            "issuer": self.url,
            "authorization_endpoint": f"{self.url}/auth",
            "token_endpoint": f"{self.url}/token",
            "jwks_uri": f"{self.url}/jwks",
            "registration_endpoint": f"{self.url}/register",
        }


class FakePlatform(Elsewhere):
    """A platform whose configuration a test can bend (`overrides`), whose registration answers `client_id`
    and keeps the tool's registration requests (`registered`)."""

    def __init__(self, host: str) -> None:
        self.overrides: dict = {}
        self.client_id = "client-1"
        self.registered: list[dict] = []
        super().__init__(host)

    def routes(self, app: Flask) -> None:
        app.add_url_rule("/config", "config", lambda: jsonify({**self.configuration(), **self.overrides}))
        app.add_url_rule("/register", "register", self.answer, methods=["POST"])
        app.add_url_rule("/moved", "moved", lambda: redirect(request.args["to"], 302))

    def answer(self):
        self.registered.append(request.get_json())
        return jsonify({"client_id": self.client_id, LTI_TOOL: {"deployment_id": "d-1"}})


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tool = ToolProcess(tmp_path_factory.mktemp("registration-tool"))
    platform, elsewhere = FakePlatform("127.0.0.2"), Elsewhere("127.0.0.3")
    tool.start("--no-worker")
    yield tool, platform, elsewhere
    tool.stop()
    platform.stop()
    elsewhere.stop()


@pytest.fixture
def fresh(setup):
    tool, platform, elsewhere = setup
    platform.requests.clear()
    elsewhere.requests.clear()
    platform.overrides, platform.client_id = {}, f"client-{uuid.uuid4().hex[:8]}"
    platform.registered.clear()
    return setup


def invite(tool: ToolProcess) -> str:
    return tool.cli("platform", "invite", "--url", tool.url).splitlines()[0]


def open_registration(url: str, configuration: str) -> requests.Response:
    """What the LMS does with the registration URL an administrator pasted."""
    return requests.get(url, params={"openid_configuration": configuration, "registration_token": "t"}, timeout=30)


def platforms(tool: ToolProcess) -> list[Platform]:
    with Database(Config(data_dir=tool.data_dir).sqlalchemy_url).session() as session:
        return list(session.query(Platform).order_by(Platform.id))


@pytest.mark.parametrize("path", ["/lti/register", "/lti/register/not-an-invite"])
def test_registration_without_an_invite_fetches_nothing_and_stores_nothing(fresh, path):
    tool, platform, _ = fresh
    before = len(platforms(tool))
    response = open_registration(tool.url + path, f"{platform.url}/config")
    assert response.status_code == 403 and "Registration refused" in response.text
    assert "platform invite" in response.text
    assert platform.requests == [] and len(platforms(tool)) == before
    assert tool.log_events()[-1]["event"] == "registration_refused"


def test_an_invite_registers_once_even_when_used_concurrently(fresh):
    tool, platform, _ = fresh
    url = invite(tool)
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: open_registration(url, f"{platform.url}/config"), range(8)))
    assert sorted(a.status_code for a in answers) == [200] + [403] * 7
    assert platform.requests == ["GET /config", "POST /register"]
    assert [p.client_id for p in platforms(tool)].count(platform.client_id) == 1
    again = open_registration(url, f"{platform.url}/config")
    assert again.status_code == 403 and "used already" in again.text and len(platform.requests) == 2


def test_an_expired_invite_is_refused(fresh):
    from lti_service.lti import invites

    tool, platform, _ = fresh
    db = Database(Config(data_dir=tool.data_dir).sqlalchemy_url)
    token, _ = invites.create(db, dt.timedelta(seconds=-1))
    response = open_registration(f"{tool.url}/lti/register/{token}", f"{platform.url}/config")
    assert response.status_code == 403 and "expired" in response.text and platform.requests == []


def test_a_registration_never_changes_a_registered_platform(fresh):
    tool, platform, _ = fresh
    platform.client_id = "already-here"
    tool.cli(
        "platform", "add", "--issuer", platform.url, "--client-id", "already-here", "--deployment-id", "1",
        "--auth-url", "https://lms.example/auth", "--token-url", "https://lms.example/token",
        "--jwks-url", "https://lms.example/jwks",
    )  # fmt: skip
    response = open_registration(invite(tool), f"{platform.url}/config")
    assert response.status_code == 409 and "registered already" in response.text
    (kept,) = [p for p in platforms(tool) if p.client_id == "already-here"]
    assert (kept.auth_login_url, kept.key_set_url) == ("https://lms.example/auth", "https://lms.example/jwks")


BENT_CONFIGURATIONS = {
    "issuer elsewhere": lambda p, e: ({"issuer": e.url}, "/config"),
    "issuer on another port": lambda p, e: ({"issuer": p.url.rsplit(":", 1)[0] + ":1"}, "/config"),
    "registration endpoint elsewhere": lambda p, e: ({"registration_endpoint": f"{e.url}/register"}, "/config"),
    "redirect elsewhere": lambda p, e: ({}, f"/moved?to={e.url}/config"),
}


@pytest.mark.parametrize("case", BENT_CONFIGURATIONS)
def test_the_configuration_must_come_from_and_stay_on_the_issuers_origin(fresh, case):
    tool, platform, elsewhere = fresh
    platform.overrides, path = BENT_CONFIGURATIONS[case](platform, elsewhere)
    before = len(platforms(tool))
    response = open_registration(invite(tool), platform.url + path)
    assert response.status_code == 502 and "Registration failed" in response.text
    assert elsewhere.requests == [] and "POST /register" not in platform.requests
    assert len(platforms(tool)) == before


def test_the_tool_names_itself_as_its_operator_set_it(fresh, tmp_path):
    """An LMS lists the tool by the name in its registration (Moodle: "Manage tools"): one deployment serves
    every assignment, so it is TOOL_NAME, neutral by default, never the built-in assignment's title."""
    default, platform, _ = fresh
    named = ToolProcess(tmp_path / "named", TOOL_NAME="Physics notebooks").start("--no-worker")
    try:
        for tool, name in ((default, "Notebook grader"), (named, "Physics notebooks")):
            assert open_registration(invite(tool), f"{platform.url}/config").status_code == 200
            body = platform.registered[-1]
            labels = [m["label"] for m in body[LTI_TOOL]["messages"] if "label" in m]
            assert (body["client_name"], labels) == (name, [name])
            canvas = requests.get(f"{tool.url}/lti/canvas.json", timeout=10).json()
            assert canvas["title"] == name and canvas["description"] == body[LTI_TOOL]["description"]
            assert "decode" not in (canvas["description"] + name).lower()
    finally:
        named.stop()


def without_operator_line(html: str) -> str:
    """The page as the LMS administrator reads it, without the line for the tool's operator."""
    html, found = re.subn(r'<p class="meta" id="registration-operator">.*?</p>', "", html, flags=re.S)
    assert found == 1, html
    return html


def test_a_registration_that_did_not_happen_says_what_next_with_a_close_button(fresh):
    """Moodle shows the page in a dialog with only Cancel: it says, in an LMS administrator's words, what
    happened and what to do next, and offers Close (app.js posts the close message); the operator's command
    and the error's detail stay in one line for the operator."""
    tool, platform, elsewhere = fresh
    url = invite(tool)
    platform.overrides = {"issuer": elsewhere.url}
    failed = open_registration(url, f"{platform.url}/config")
    refused = open_registration(url, f"{platform.url}/config")  # used by the failed attempt
    for response, heading, what in (
        (failed, "Registration failed", "could not complete the registration with your LMS"),
        (refused, "Registration refused", "was used already"),
    ):
        assert heading in response.text and what in response.text
        read = without_operator_line(response.text)
        assert "ask the tool's operator for a new registration URL" in read and "Manage tools" in read
        assert '<p id="registration-close" hidden><button type="button">Close</button></p>' in read
        assert "python -m" not in read and "invite" not in read and "issuer" not in read
        assert "python -m lti_service platform invite" in response.text
    assert "the LTI Dynamic Registration spec requires" in failed.text  # the detail, for the operator
