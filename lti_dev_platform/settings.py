"""Settings of the dev platform: where it lives and where the tool under test lives."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class PlatformSettings:
    """What the platform needs to know; the tool URLs default to our tool's routes under ``tool_url``.

    ``base_url`` is the platform's own origin and doubles as the LTI issuer (``iss``), as in Moodle.
    With ``preregistered=False`` no tool is known until it completes LTI Dynamic Registration.
    ``test_hooks`` turns on the ``/_test/`` routes; never enable it for a demo someone else can reach.

    How it behaves like a real LMS: ``storage_target`` names the frame that answers LTI platform storage
    messages (Canvas's ``post_message_forwarding``; ``"_parent"`` for the course page itself; None: no
    platform storage, like Moodle). ``short_nrps_roles`` sends roster roles as Moodle 4.5 does ("Learner").
    ``tool_custom`` are the tool's custom fields as an administrator entered them (Canvas's developer key),
    with Canvas's variable substitution. ``lineitems_delay`` slows line item creation, ``nrps_delay`` the roster
    (tests of races).
    ``product_family_code`` is the product its launches name, and picks whose gradebook rules scores follow:
    "moodle" keeps a score only when FullyGraded (any other progress empties the grade, as Moodle's
    scores.php does); anything else ("canvas", the default) keeps FullyGraded and PendingManual scores and
    empties the grade for other progress values (Canvas's scores_controller).
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
    storage_target: str | None = "post_message_forwarding"
    short_nrps_roles: bool = False
    tool_custom: dict[str, str] = field(default_factory=lambda: {"due_at": "$Canvas.assignment.dueAt.iso8601"})
    lineitems_delay: float = 0.0
    nrps_delay: float = 0.0
    product_family_code: str = "lti-dev-platform"

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
