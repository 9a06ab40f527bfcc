"""Assignment and Grade Services client: access tokens (cached until they expire) and score posts.

Written here rather than taken from pylti1p3, whose requests have no timeouts and whose token cache
ignores expiry. Platform quirks live in `scores_url` and in quirks.py (which refusals of a score are known).
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit, urlunsplit

import jwt

from ..db import Platform
from ..keys import KeyStore
from .outbound import OutboundError, Reply, fetch, platform_origins
from .quirks import REASON, RETRIED, Refusal, score_refusal

SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
LINEITEM_READ_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"
NRPS_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
SCORE_CONTENT_TYPE = "application/vnd.ims.lis.v1.score+json"
LINEITEM_CONTENT_TYPE = "application/vnd.ims.lis.v2.lineitem+json"
LINEITEMS_CONTENT_TYPE = "application/vnd.ims.lis.v2.lineitemcontainer+json"
TOKEN_MARGIN = 30  # seconds before expiry at which a cached token is no longer used
MAXIMUM_REUSED_FOR = 60  # seconds a line item's scoreMaximum, once read, serves the next scores of the column
RETRYABLE_4XX = (401, 408, 409, 429)  # any other 4xx says the request itself is wrong: retrying cannot help


class AgsError(Exception):
    """A failed call to the platform. `retryable` for no answer, 5xx, RETRYABLE_4XX (a 401 drops the
    cached token) and the refusals a later try overcomes (quirks.RETRIED). `status` is the HTTP status when
    the platform answered; `refusal` the known refusal of a score it stands for; `reason` says what failed in
    a few words, never with the platform's response body."""

    def __init__(
        self, message: str, retryable: bool, status: int | None = None, reason: str = "", refusal: Refusal | None = None
    ) -> None:
        super().__init__(message)
        self.retryable, self.status, self.reason, self.refusal = retryable, status, reason or message, refusal


def scores_url(lineitem_url: str) -> str:
    """The scores endpoint of a line item. Moodle's line item URLs carry a query string
    (`.../lineitem?type_id=1`): `/scores` goes on the path, before the query."""
    parts = urlsplit(lineitem_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/scores"))


def with_query(url: str, **params: str) -> str:
    """The URL with more query parameters (a platform's URL may already carry some, as Moodle's do)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(query="&".join(filter(None, [parts.query, urlencode(params)]))))


@dataclass
class _Token:
    value: str
    expires_at: float


class AgsClient:
    def __init__(self, keys: KeyStore, timeout: float) -> None:
        self.keys, self.timeout = keys, timeout
        self._tokens: dict[tuple[str, str, str], _Token] = {}
        self._maximums: dict[tuple[str, str], tuple[float, float | None]] = {}  # -> (read at, maximum)
        self._lock = threading.Lock()
        self._maximum_lock = threading.Lock()  # two threads sending a column's first scores read it once

    def access_token(self, platform: Platform, scopes: list[str]) -> str:
        cache_key = (platform.issuer, platform.client_id, " ".join(sorted(scopes)))
        with self._lock:
            token = self._tokens.get(cache_key)
            if token and token.expires_at - TOKEN_MARGIN > time.time():
                return token.value
        token = self._request_token(platform, scopes)
        with self._lock:
            self._tokens[cache_key] = token
        return token.value

    def forget_token(self, platform: Platform) -> None:
        with self._lock:
            for key in [k for k in self._tokens if k[:2] == (platform.issuer, platform.client_id)]:
                del self._tokens[key]

    def _request_token(self, platform: Platform, scopes: list[str]) -> _Token:
        key = self.keys.signing_key()
        now = int(time.time())
        assertion = jwt.encode(
            {
                "iss": platform.client_id,
                "sub": platform.client_id,
                "aud": platform.auth_token_url,
                "iat": now,
                "exp": now + 300,
                "jti": uuid.uuid4().hex,
            },
            key.signer,
            algorithm="RS256",
            headers={"kid": key.kid},
        )
        form = {
            "grant_type": "client_credentials",
            "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            "client_assertion": assertion,
            "scope": " ".join(scopes),
        }
        body = self._call(platform, "post", platform.auth_token_url, data=form)
        if not isinstance(body.get("access_token"), str):
            raise AgsError("the platform's token endpoint returned no access_token", retryable=True)
        expires_in = body.get("expires_in", 3600)
        return _Token(body["access_token"], time.time() + (expires_in if isinstance(expires_in, int) else 3600))

    def lineitem_maximum(self, platform: Platform, lineitem_url: str) -> float | None:
        """The line item's scoreMaximum (None when the platform cannot say), read again once it is
        MAXIMUM_REUSED_FOR old: a class's scores at a deadline cost one read, not one each, and a maximum
        changed in the LMS is followed within a minute (each score also says the maximum it is out of)."""
        with self._maximum_lock:
            return self._lineitem_maximum(platform, lineitem_url)

    def _lineitem_maximum(self, platform: Platform, lineitem_url: str) -> float | None:
        key = (platform.issuer, lineitem_url)
        read_at, maximum = self._maximums.get(key, (-MAXIMUM_REUSED_FOR, None))
        if time.monotonic() - read_at < MAXIMUM_REUSED_FOR:
            return maximum
        token = self.access_token(platform, [LINEITEM_READ_SCOPE, SCORE_SCOPE])
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/vnd.ims.lis.v2.lineitem+json"}
        try:
            found = self._service_call(platform, "get", lineitem_url, headers=headers).get("scoreMaximum")
        except AgsError as error:
            if error.retryable:
                raise  # the platform is unwell now: a guessed maximum could post a wrong score
            found = None
        maximum = float(found) if isinstance(found, int | float) and found > 0 else None
        self._maximums[key] = (time.monotonic(), maximum)
        return maximum

    def link_lineitems(self, platform: Platform, lineitems_url: str, resource_link_id: str) -> list[dict]:
        """The line items the platform holds for a resource link."""
        token = self.access_token(platform, [LINEITEM_SCOPE])
        headers = {"Authorization": f"Bearer {token}", "Accept": LINEITEMS_CONTENT_TYPE}
        url = with_query(lineitems_url, resource_link_id=resource_link_id)
        items = self._service_call(platform, "get", url, expect=list, headers=headers)
        return [item for item in items if isinstance(item, dict)]

    def create_lineitem(self, platform: Platform, lineitems_url: str, lineitem: dict) -> dict:
        """Create a line item (a gradebook column); the platform's copy, with its URL as "id"."""
        token = self.access_token(platform, [LINEITEM_SCOPE])
        headers = {"Authorization": f"Bearer {token}", "Content-Type": LINEITEM_CONTENT_TYPE}
        headers["Accept"] = LINEITEM_CONTENT_TYPE
        return self._service_call(platform, "post", lineitems_url, json=lineitem, headers=headers)

    def post_score(self, platform: Platform, lineitem_url: str, score: dict) -> None:
        token = self.access_token(platform, [LINEITEM_READ_SCOPE, SCORE_SCOPE])
        headers = {"Authorization": f"Bearer {token}", "Content-Type": SCORE_CONTENT_TYPE}
        self._service_call(platform, "post", scores_url(lineitem_url), json=score, headers=headers, scores=True)

    def _service_call(
        self, platform: Platform, method: str, url: str, expect: type = dict, scores: bool = False, **kwargs
    ):
        """A call with a cached access token, dropped when the platform no longer accepts it."""
        try:
            return self._call(platform, method, url, expect, scores, **kwargs)
        except AgsError as error:
            if error.status == 401:
                self.forget_token(platform)
            raise

    def _call(self, platform: Platform, method: str, url: str, expect: type = dict, scores: bool = False, **kwargs):
        """A request to one of the platform's origins; its JSON body (an empty `expect` when it is not one).
        AgsError with a short reason (the platform's answer body is never kept: it could reach the dashboard);
        for a score (`scores`), the known refusal it is."""
        try:
            reply = fetch(method, url, origins=platform_origins(platform), timeout=self.timeout, **kwargs)
        except OutboundError as error:
            raise AgsError(f"{url}: {error.reason}", retryable=error.retryable, reason=error.reason) from None
        if reply.status >= 400:
            raise _failure(url, reply, score_refusal(reply.status, reply.body) if scores else None)
        body = reply.json()
        return body if isinstance(body, expect) else expect()


def _failure(url: str, reply: Reply, refusal: Refusal | None) -> AgsError:
    retryable = reply.status >= 500 or reply.status in RETRYABLE_4XX or refusal in RETRIED
    reason = REASON[refusal] if refusal else f"the platform answered HTTP {reply.status}"
    return AgsError(f"{url}: HTTP {reply.status}", retryable, status=reply.status, reason=reason, refusal=refusal)
