"""Settings of the dev platform: where it lives and where the tool under test lives."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class PlatformSettings:
    """What the platform needs to know; the tool URLs default to our tool's routes under ``tool_url``.

    ``base_url`` is the platform's own origin and doubles as the LTI issuer (``iss``), as in Moodle.
    With ``preregistered=False`` no tool is known until it completes LTI Dynamic Registration.
    ``test_hooks`` turns on the ``/_test/`` routes; never enable it for a demo someone else can reach.
    ``tool_register_url`` is the tool's dynamic registration URL (the Decode tool's is a single-use invite
    from ``python -m lti_service platform invite``); without it ``/register/start`` asks for one.
    """

    base_url: str
    tool_url: str = "http://127.0.0.1:5000"
    client_id: str = "decode-grader-dev"
    deployment_id: str = "1"
    preregistered: bool = True
    test_hooks: bool = False
    tool_login_url: str | None = None
    tool_launch_url: str | None = None
    tool_jwks_url: str | None = None
    tool_register_url: str | None = None
    jwks_timeout: float = 5.0
    id_token_lifetime: int = 300

    def __post_init__(self) -> None:
        self.base_url = self.base_url.rstrip("/")
        self.tool_url = self.tool_url.rstrip("/")
        self.tool_login_url = self.tool_login_url or f"{self.tool_url}/lti/login"
        self.tool_launch_url = self.tool_launch_url or f"{self.tool_url}/lti/launch"
        self.tool_jwks_url = self.tool_jwks_url or f"{self.tool_url}/lti/jwks.json"

    @property
    def issuer(self) -> str:
        return self.base_url

    def url(self, path: str) -> str:
        """Absolute URL of one of the platform's own routes (tokens are audience-checked against these)."""
        return self.base_url + path
