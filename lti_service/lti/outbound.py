"""Every request the tool sends to a platform goes through `fetch`, so one rule holds for every caller
(JWKS, dynamic registration, access tokens, line items and scores, the course roster and its pages).

- Only http(s) URLs on the platform's own origins are requested (`platform_origins`: its issuer, its
  login, token and JWKS URLs, and the service origins an operator listed with `platform update
  --service-origin`). A URL from a launch claim, a Link header or a redirect that points anywhere else
  (another host, an internal address, a cloud metadata service) is refused unsent.
- Redirects are followed only within those origins, at most MAX_REDIRECTS times.
- Every request has the HTTP_TIMEOUT for the whole exchange and reads at most MAX_BODY bytes.
- Failures carry a short reason ("HTTP 503", "timed out"), never the response body: what a platform
  answers must not reach the dashboard, the student page or the logs.
- Connections stay open between requests (one session per thread, which keeps no cookies): a worker
  sending a class's scores makes one TLS handshake with the platform, not one per score.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.cookiejar import DefaultCookiePolicy
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
from requests.utils import parse_header_links

from ..db import Platform

MAX_REDIRECTS = 3
MAX_BODY = 8 * 1024 * 1024  # a roster page of a few thousand members fits
DEFAULT_PORTS = {"http": 80, "https": 443}


class OutboundError(Exception):
    """A request refused before sending, or one that got no usable answer; str() is a short reason."""

    def __init__(self, reason: str, retryable: bool) -> None:
        super().__init__(reason)
        self.reason, self.retryable = reason, retryable


@dataclass(frozen=True)
class Reply:
    """A platform's answer: status, body (at most MAX_BODY bytes) and Link header relations (case kept)."""

    status: int
    body: bytes
    links: dict[str, str] = field(default_factory=dict)

    def json(self) -> Any:
        """The body as JSON, or None when it is empty or not JSON."""
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None


def origin(url: object) -> str | None:
    """scheme://host[:port] of an http(s) URL (lower case, default port dropped); None for anything else."""
    if not isinstance(url, str):
        return None
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + (f":{port}" if port and port != DEFAULT_PORTS[parts.scheme] else "")


def platform_origins(platform: Platform) -> frozenset[str]:
    """The origins the tool may contact for this platform (the one definition of that set)."""
    urls = [platform.issuer, platform.auth_login_url, platform.auth_token_url, platform.key_set_url]
    return frozenset(o for o in map(origin, urls + list(platform.service_origins or [])) if o)


def fetch(method: str, url: str, *, origins: Iterable[str], timeout: float, **kwargs: Any) -> Reply:
    """Send one request (headers, data or json in kwargs) to a URL on one of `origins`; OutboundError
    when the URL or a redirect leaves them, or no answer comes within `timeout` seconds."""
    allowed, deadline = frozenset(origins), time.monotonic() + timeout
    for _ in range(MAX_REDIRECTS + 1):
        if origin(url) not in allowed:
            raise OutboundError(f"{_where(url)} is not one of the platform's registered origins", retryable=False)
        response = _send(method, url, max(0.1, deadline - time.monotonic()), kwargs)
        with response:
            if not response.is_redirect:
                return Reply(response.status_code, _read(response, deadline), _links(response))
            url = urljoin(url, response.headers["location"])
            if response.status_code == 303 or (response.status_code in (301, 302) and method.lower() == "post"):
                method, kwargs = "get", {k: v for k, v in kwargs.items() if k == "headers"}
    raise OutboundError(f"more than {MAX_REDIRECTS} redirects", retryable=False)


def _where(url: str) -> str:
    return origin(url) or "a URL that is not http(s)"


_local = threading.local()


def _session() -> requests.Session:
    session = getattr(_local, "session", None)
    if session is None:
        session = _local.session = requests.Session()
        session.cookies.set_policy(DefaultCookiePolicy(allowed_domains=[]))  # what one answer sets, none resends
    return session


def _send(method: str, url: str, timeout: float, kwargs: dict) -> requests.Response:
    try:
        return _session().request(method, url, timeout=timeout, allow_redirects=False, stream=True, **kwargs)
    except requests.Timeout:
        raise OutboundError("timed out", retryable=True) from None
    except requests.RequestException as error:
        raise OutboundError(f"could not connect ({type(error).__name__})", retryable=True) from None


def _read(response: requests.Response, deadline: float) -> bytes:
    body = bytearray()
    try:
        for chunk in response.iter_content(64 * 1024):
            body += chunk
            if len(body) > MAX_BODY:
                raise OutboundError(f"the answer is larger than {MAX_BODY // 1024 // 1024} MB", retryable=False)
            if time.monotonic() > deadline:
                raise OutboundError("timed out", retryable=True)
    except requests.RequestException as error:
        raise OutboundError(f"the answer broke off ({type(error).__name__})", retryable=True) from None
    return bytes(body)


def _links(response: requests.Response) -> dict[str, str]:
    header = response.headers.get("link", "")
    return {link["rel"]: link["url"] for link in parse_header_links(header) if "rel" in link and "url" in link}
