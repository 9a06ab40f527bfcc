"""Drive launches through the platform the way a browser would, over real HTTP (for tests of any LTI tool).

A browser follows redirects, loads the iframe, and lets the auto-submitting forms submit themselves; these
helpers do the same with ``requests`` and ``html.parser``. They know nothing about the tool beyond LTI.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urlencode, urljoin

import requests

TIMEOUT = 10


class BrowserError(AssertionError):
    """A step of the flow did not produce what a browser would need next (the message says which)."""


@dataclass
class Form:
    action: str
    method: str
    fields: dict[str, str] = field(default_factory=dict)


class _PageParser(HTMLParser):
    """Collects forms (with their fields and first submit button) and iframe sources."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.forms: list[Form] = []
        self.iframes: list[str] = []
        self.meta_refresh: str | None = None
        self._form: Form | None = None
        self._submitted = False
        self._textarea: str | None = None
        self._select: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "iframe" and "src" in a:
            self.iframes.append(a["src"])
        elif tag == "meta" and a.get("http-equiv", "").lower() == "refresh" and "url=" in a.get("content", "").lower():
            self.meta_refresh = a["content"].split("=", 1)[1].strip().strip("'\"")
        elif tag == "form":
            self._form = Form(a.get("action", ""), a.get("method", "get").lower())
            self._submitted = False
            self.forms.append(self._form)
        elif self._form is not None:
            self._field(tag, a)

    def _field(self, tag: str, a: dict[str, str]) -> None:
        assert self._form is not None
        name, kind = a.get("name"), a.get("type", "text" if tag == "input" else "submit").lower()
        if tag == "input" and name:
            if kind in ("checkbox", "radio"):
                if "checked" in a:
                    self._form.fields[name] = a.get("value", "on")
            elif kind in ("submit", "image"):
                if not self._submitted:
                    self._form.fields[name] = a.get("value", "")
                    self._submitted = True
            elif kind not in ("button", "reset", "file"):
                self._form.fields[name] = a.get("value", "")
        elif tag == "button" and kind == "submit" and not self._submitted:
            self._submitted = True
            if name:
                self._form.fields[name] = a.get("value", "")
        elif tag == "textarea" and name:
            self._textarea = name
            self._form.fields[name] = ""
        elif tag == "select" and name:
            self._select = name
        elif tag == "option" and self._select and (self._select not in self._form.fields or "selected" in a):
            self._form.fields[self._select] = a.get("value", "")

    def handle_data(self, data: str) -> None:
        if self._form is not None and self._textarea:
            self._form.fields[self._textarea] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._form = None
        elif tag == "textarea":
            self._textarea = None
        elif tag == "select":
            self._select = None


def parse_page(response: requests.Response) -> _PageParser:
    parser = _PageParser()
    parser.feed(response.text)
    for form in parser.forms:
        form.action = urljoin(response.url, form.action or response.url)
    parser.iframes = [urljoin(response.url, src) for src in parser.iframes]
    return parser


def _describe(response: requests.Response) -> str:
    return f"{response.request.method} {response.url} -> {response.status_code}: {response.text[:500]!r}"


def submit(session: requests.Session, form: Form, **overrides: str) -> requests.Response:
    """Submit a parsed form as a browser does (redirects followed)."""
    data = {**form.fields, **overrides}
    if form.method == "post":
        return session.post(form.action, data=data, timeout=TIMEOUT)
    return session.get(form.action, params=data, timeout=TIMEOUT)


def open_tool(session: requests.Session, login_url: str) -> requests.Response:
    """From the tool's login initiation URL to the tool's answer to the launch POST."""
    resp = session.get(login_url, timeout=TIMEOUT)  # tool login -> redirect -> platform /auth
    page = parse_page(resp)
    if page.meta_refresh and not page.forms:
        resp = session.get(urljoin(resp.url, page.meta_refresh), timeout=TIMEOUT)
        page = parse_page(resp)
    forms = [f for f in page.forms if "id_token" in f.fields]
    if resp.status_code != 200 or not forms:
        raise BrowserError(f"expected the platform's auto-submit form with an id_token: {_describe(resp)}")
    return submit(session, forms[0])


def course_launch_url(
    base_url: str,
    *,
    user: str = "student-ada",
    context_id: str = "decode-101",
    resource_link: str = "decode-1",
    kind: str = "resource",
) -> str:
    query = {"kind": kind} if kind == "deeplink" else {"kind": kind, "resource_link": resource_link}
    return f"{base_url.rstrip('/')}/course/{context_id}/launch/{user}?{urlencode(query)}"


def launch(
    base_url: str,
    session: requests.Session,
    *,
    user: str = "student-ada",
    context_id: str = "decode-101",
    resource_link: str = "decode-1",
    kind: str = "resource",
) -> requests.Response:
    """Open an activity in the course page and load the framed tool; returns the tool's response to the launch."""
    page_resp = session.get(
        course_launch_url(base_url, user=user, context_id=context_id, resource_link=resource_link, kind=kind),
        timeout=TIMEOUT,
    )
    iframes = parse_page(page_resp).iframes if page_resp.status_code == 200 else []
    if not iframes:
        raise BrowserError(f"expected the course page with the tool's iframe: {_describe(page_resp)}")
    return open_tool(session, iframes[0])


@dataclass
class DeepLinkResult:
    tool_response: requests.Response  # the tool's page that holds the deep-linking response form
    platform_response: requests.Response  # the platform's answer to the deep-linking response


def deep_link(
    base_url: str,
    session: requests.Session,
    *,
    user: str = "instructor-turing",
    context_id: str = "decode-101",
    choose: t.Callable[[requests.Session, requests.Response], requests.Response] | None = None,
    max_steps: int = 3,
) -> DeepLinkResult:
    """A deep-linking launch, then the form that returns to the platform.

    If the tool first shows a selection page, ``choose(session, page)`` must submit the choice and return the
    tool's next page; without ``choose`` the page's single form is submitted as is (default values).
    """
    resp = launch(base_url, session, user=user, context_id=context_id, kind="deeplink")
    return_url = f"{base_url.rstrip('/')}/deep-link-return"
    for _ in range(max_steps):
        forms = parse_page(resp).forms
        back = [f for f in forms if f.action == return_url and "JWT" in f.fields]
        if back:
            return DeepLinkResult(resp, submit(session, back[0]))
        if choose is not None:
            resp = choose(session, resp)
        elif len(forms) == 1:
            resp = submit(session, forms[0])
        else:
            break
    raise BrowserError(f"expected a form posting JWT to {return_url}: {_describe(resp)}")


def register(base_url: str, session: requests.Session, tool_registration_url: str) -> requests.Response:
    """Start dynamic registration with the tool's registration URL (as an admin pastes it into the LMS) and
    load the tool's registration page (the tool then calls the platform)."""
    start = f"{base_url.rstrip('/')}/register/start?{urlencode({'url': tool_registration_url})}"
    page_resp = session.get(start, timeout=TIMEOUT)
    iframes = parse_page(page_resp).iframes if page_resp.status_code == 200 else []
    if not iframes:
        raise BrowserError(f"expected the registration page with the tool's iframe: {_describe(page_resp)}")
    return session.get(iframes[0], timeout=TIMEOUT)
