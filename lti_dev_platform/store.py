"""In-memory state of the platform (one process, guarded by one lock): tool, courses, grades, counters."""

from __future__ import annotations

import secrets
import threading
import time
import typing as t
from dataclasses import asdict, dataclass, field

from lti_dev_platform.keys import ToolKeys
from lti_dev_platform.settings import PlatformSettings

LIS = "http://purl.imsglobal.org/vocab/lis/v2"
ROLE_URIS = {
    "Learner": [f"{LIS}/membership#Learner", f"{LIS}/institution/person#Student"],
    "Instructor": [f"{LIS}/membership#Instructor", f"{LIS}/institution/person#Faculty"],
}
DEFAULT_CONTEXT = "decode-101"
DEFAULT_RESOURCE_LINK = "decode-1"


@dataclass(frozen=True)
class User:
    sub: str
    name: str
    given_name: str
    family_name: str
    email: str
    role: str  # "Learner" or "Instructor"

    @property
    def roles(self) -> list[str]:
        return list(ROLE_URIS[self.role])


USERS: dict[str, User] = {
    u.sub: u
    for u in (
        User("student-ada", "Ada Lovelace", "Ada", "Lovelace", "ada@example.edu", "Learner"),
        User("student-grace", "Grace Hopper", "Grace", "Hopper", "grace@example.edu", "Learner"),
        User("instructor-turing", "Alan Turing", "Alan", "Turing", "turing@example.edu", "Instructor"),
    )
}


@dataclass
class Tool:
    """The one registered tool (pre-registered from settings, or replaced by dynamic registration)."""

    type_id: int
    client_id: str
    deployment_id: str
    name: str
    login_url: str
    launch_url: str
    deep_link_url: str
    redirect_uris: list[str]
    jwks_url: str
    keys: ToolKeys
    dynamic: bool = False


@dataclass
class Course:
    id: str
    label: str
    title: str


@dataclass
class ResourceLink:
    id: str
    context_id: str
    title: str
    """the activity's name, sent in launches ("": none sent, as the spec allows)"""
    url: str | None = None  # None: the tool's default target_link_uri
    custom: dict[str, t.Any] = field(default_factory=dict)
    due_at: str | None = None
    line_item_id: str | None = None
    ags: str = "full"
    """what Assignment and Grade Services the launches offer: "full" (column management, Moodle's "grade sync
    and column management"), "sync" (scores only: no line item scope) or "none" (no AGS claim)"""


@dataclass
class LineItem:
    id: str
    context_id: str
    label: str
    score_maximum: float
    resource_id: str | None = None
    tag: str | None = None
    resource_link_id: str | None = None
    start_date_time: str | None = None
    end_date_time: str | None = None
    published: bool = True
    """False: its scores are refused as Canvas refuses them for an unpublished assignment"""


@dataclass
class Score:
    user_id: str
    line_item_id: str
    score_given: float | None
    score_maximum: float | None
    comment: str | None
    timestamp: str
    activity_progress: str
    grading_progress: str
    submitted_at: str | None = None
    """Canvas's submission extension: when the work was submitted (None: at the score's arrival)"""


@dataclass
class LaunchHint:
    """What lti_message_hint stands for; kept server side so the tool cannot tamper with it."""

    user: str
    kind: str  # "resource" or "deeplink"
    context_id: str
    resource_link_id: str | None
    target_link_uri: str
    document_target: str
    storage_target: str | None = None


class PlatformState:
    """Everything the platform remembers. Use ``with state.lock`` around reads and writes."""

    def __init__(self, settings: PlatformSettings) -> None:
        self.settings = settings
        self.lock = threading.RLock()
        self.tool: Tool | None = None
        self.next_type_id = 1
        self.registrations: list[dict[str, t.Any]] = []
        self.registration_tokens: dict[str, float] = {}
        if settings.preregistered:
            self.tool = self._preregistered_tool()
        self.reset()

    def _preregistered_tool(self) -> Tool:
        s = self.settings
        assert s.tool_login_url and s.tool_launch_url and s.tool_jwks_url
        tool = Tool(
            type_id=self.next_type_id,
            client_id=s.client_id,
            deployment_id=s.deployment_id,
            name="Pre-registered tool",
            login_url=s.tool_login_url,
            launch_url=s.tool_launch_url,
            deep_link_url=s.tool_launch_url,
            redirect_uris=[s.tool_launch_url],
            jwks_url=s.tool_jwks_url,
            keys=ToolKeys(s.tool_jwks_url, s.jwks_timeout),
        )
        self.next_type_id += 1
        return tool

    def reset(self) -> None:
        """Forget grades, courses and counters; keep the registered tool (re-registering is the slow part)."""
        with self.lock:
            self.courses: dict[str, Course] = {}
            self.resource_links: dict[tuple[str, str], ResourceLink] = {}
            self.line_items: dict[str, LineItem] = {}
            self.scores: dict[tuple[str, str], Score] = {}
            self.score_log: list[dict[str, t.Any]] = []
            self.token_requests = 0
            self.lineitem_reads = 0  # GETs of one line item (the tool reads its scoreMaximum)
            self.nrps_requests: dict[str, int] = {}  # context id -> roster requests
            self.seen_jti: dict[str, float] = {}
            self.fail_scores = {"count": 0, "status": 500, "message": "injected failure (test hook)"}
            self.outage: dict[str, t.Any] | None = None  # while set, service endpoints fail (see test_hooks)
            self.users: dict[str, User] = dict(USERS)
            self.concluded: set[str] = set()  # subs whose enrolment ended: off the roster, their scores refused
            self.deep_link_items: list[dict[str, t.Any]] = []
            self.hints: dict[str, LaunchHint] = {}
            self.deep_link_data: dict[str, dict[str, str]] = {}
            self.next_line_item = 1
            self.next_resource_link = 1
            self.service_base_url: str | None = None
            self.course(DEFAULT_CONTEXT)
            self.resource_link(DEFAULT_CONTEXT, DEFAULT_RESOURCE_LINK)

    # Courses, resource links and line items are created on first use, so tests can pick fresh ids.
    def course(self, context_id: str) -> Course:
        with self.lock:
            if context_id not in self.courses:
                if context_id == DEFAULT_CONTEXT:
                    self.courses[context_id] = Course(context_id, "DECODE101", "Decode: an introduction")
                else:
                    self.courses[context_id] = Course(context_id, context_id.upper(), f"Course {context_id}")
            return self.courses[context_id]

    def resource_link(
        self, context_id: str, link_id: str, *, title: str | None = None, with_line_item: bool = True
    ) -> ResourceLink:
        with self.lock:
            self.course(context_id)
            key = (context_id, link_id)
            if key not in self.resource_links:
                default_title = "Decode assignment" if link_id == DEFAULT_RESOURCE_LINK else f"Activity {link_id}"
                link = ResourceLink(link_id, context_id, default_title if title is None else title)
                if with_line_item:
                    item = self.add_line_item(context_id, link.title, 100.0, resource_link_id=link_id)
                    link.line_item_id = item.id
                self.resource_links[key] = link
            return self.resource_links[key]

    def enrol(self, subs: list[str]) -> None:
        """Add learners (named after their sub) to every course, e.g. a whole class for a load test."""
        with self.lock:
            for sub in subs:
                self.users.setdefault(sub, User(sub, sub, sub, "Learner", f"{sub}@example.edu", "Learner"))

    def new_resource_link_id(self) -> str:
        with self.lock:
            while (link_id := f"dl-{self.next_resource_link}") in {k[1] for k in self.resource_links}:
                self.next_resource_link += 1
            self.next_resource_link += 1
            return link_id

    def add_line_item(
        self, context_id: str, label: str, score_maximum: float, attach: bool = True, **extra: t.Any
    ) -> LineItem:
        """A new line item; with ``attach`` (as Moodle does) the launches of its resource link name it."""
        with self.lock:
            item = LineItem(str(self.next_line_item), context_id, label, score_maximum, **extra)
            self.next_line_item += 1
            self.line_items[item.id] = item
            if attach and item.resource_link_id and (context_id, item.resource_link_id) in self.resource_links:
                link = self.resource_links[(context_id, item.resource_link_id)]
                link.line_item_id = link.line_item_id or item.id
            return item

    def new_registration_token(self, lifetime: int = 3600) -> str:
        token = secrets.token_urlsafe(24)
        with self.lock:
            self.registration_tokens[token] = time.time() + lifetime
        return token

    def take_registration_token(self, token: str) -> bool:
        """One-time: a token is valid once and only before it expires."""
        with self.lock:
            expires = self.registration_tokens.pop(token, None)
        return expires is not None and expires > time.time()

    def take_jti(self, jti: str, exp: float) -> bool:
        """False when this jti was seen before (a replayed client assertion)."""
        with self.lock:
            now = time.time()
            for old in [k for k, v in self.seen_jti.items() if v < now - 60]:
                del self.seen_jti[old]
            if jti in self.seen_jti:
                return False
            self.seen_jti[jti] = exp
            return True

    def gradebook(self, resource_link_id: str) -> dict[str, float | None]:
        """user -> score given, on the line items of one resource link: what a load test polls for (the whole
        snapshot of a class at a deadline is a large document)."""
        with self.lock:
            items = {i.id for i in self.line_items.values() if i.resource_link_id == resource_link_id}
            return {s.user_id: s.score_given for s in self.scores.values() if s.line_item_id in items}

    def snapshot(self) -> dict[str, t.Any]:
        """JSON for /_test/state."""
        with self.lock:
            tool = self.tool
            return {
                "tool": None
                if tool is None
                else {
                    "type_id": tool.type_id,
                    "client_id": tool.client_id,
                    "deployment_id": tool.deployment_id,
                    "name": tool.name,
                    "login_url": tool.login_url,
                    "launch_url": tool.launch_url,
                    "deep_link_url": tool.deep_link_url,
                    "redirect_uris": tool.redirect_uris,
                    "jwks_url": tool.jwks_url,
                    "jwks_fetches": tool.keys.fetches,
                    "dynamic": tool.dynamic,
                },
                "token_requests": self.token_requests,
                "lineitem_reads": self.lineitem_reads,
                "nrps_requests": dict(self.nrps_requests),
                "scores": [asdict(s) for s in self.scores.values()],
                "score_log": list(self.score_log),
                "line_items": [asdict(i) for i in self.line_items.values()],
                "resource_links": [asdict(r) for r in self.resource_links.values()],
                "registrations": list(self.registrations),
                "deep_link_items": list(self.deep_link_items),
                "fail_scores": dict(self.fail_scores),
                "outage": self.outage,
            }
