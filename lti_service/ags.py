"""Assignment and Grade Services client: access tokens (cached until they expire) and score posts.

Written here rather than taken from pylti1p3, whose requests have no timeouts and whose token cache
ignores expiry. Platform quirks live in `scores_url`.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import jwt
import requests

from .db import Platform
from .keys import KeyStore

SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
LINEITEM_READ_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"
NRPS_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
SCORE_CONTENT_TYPE = "application/vnd.ims.lis.v1.score+json"
TOKEN_MARGIN = 30  # seconds before expiry at which a cached token is no longer used
RETRYABLE_4XX = (401, 408, 409, 429)  # any other 4xx says the request itself is wrong: retrying cannot help


class AgsError(Exception):
    """A failed call to the platform. `retryable` for no answer, 5xx and RETRYABLE_4XX (a 401 drops the
    cached token; a 409 asks for a later timestamp, see passback); `reason` says what happened without
    the response body."""

    def __init__(self, message: str, retryable: bool, reason: str = "") -> None:
        super().__init__(message)
        self.retryable = retryable
        self.reason = reason or message


def scores_url(lineitem_url: str) -> str:
    """The scores endpoint of a line item. Moodle's line item URLs carry a query string
    (`.../lineitem?type_id=1`): `/scores` goes on the path, before the query."""
    parts = urlsplit(lineitem_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/scores"))


@dataclass
class _Token:
    value: str
    expires_at: float


class AgsClient:
    def __init__(self, keys: KeyStore, timeout: float) -> None:
        self.keys, self.timeout = keys, timeout
        self._tokens: dict[tuple[str, str, str], _Token] = {}
        self._lock = threading.Lock()

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
            key.private_pem,
            algorithm="RS256",
            headers={"kid": key.kid},
        )
        form = {
            "grant_type": "client_credentials",
            "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            "client_assertion": assertion,
            "scope": " ".join(scopes),
        }
        body = self._call("post", platform.auth_token_url, data=form)
        if not isinstance(body.get("access_token"), str):
            raise AgsError("the platform's token endpoint returned no access_token", retryable=True)
        expires_in = body.get("expires_in", 3600)
        return _Token(body["access_token"], time.time() + (expires_in if isinstance(expires_in, int) else 3600))

    def lineitem_maximum(self, platform: Platform, lineitem_url: str) -> float | None:
        """The line item's scoreMaximum, read from the platform (None when it cannot say)."""
        token = self.access_token(platform, [LINEITEM_READ_SCOPE, SCORE_SCOPE])
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/vnd.ims.lis.v2.lineitem+json"}
        try:
            maximum = self._service_call(platform, "get", lineitem_url, headers=headers).get("scoreMaximum")
        except AgsError as error:
            if error.retryable:
                raise  # the platform is unwell now: a guessed maximum could post a wrong score
            return None
        return float(maximum) if isinstance(maximum, int | float) and maximum > 0 else None

    def post_score(self, platform: Platform, lineitem_url: str, score: dict) -> None:
        token = self.access_token(platform, [LINEITEM_READ_SCOPE, SCORE_SCOPE])
        headers = {"Authorization": f"Bearer {token}", "Content-Type": SCORE_CONTENT_TYPE}
        self._service_call(platform, "post", scores_url(lineitem_url), json=score, headers=headers)

    def _service_call(self, platform: Platform, method: str, url: str, **kwargs) -> dict:
        """A call with a cached access token, dropped when the platform no longer accepts it."""
        try:
            return self._call(method, url, **kwargs)
        except AgsError as error:
            if "HTTP 401" in str(error):
                self.forget_token(platform)
            raise

    def _call(self, method: str, url: str, **kwargs) -> dict:
        try:
            response = requests.request(method, url, timeout=self.timeout, **kwargs)
        except requests.RequestException as error:
            name = type(error).__name__
            raise AgsError(f"{url}: {name}", retryable=True, reason=f"no answer from the platform ({name})") from None
        status = response.status_code
        if status >= 400:
            raise AgsError(
                f"{url}: HTTP {status} {response.text[:200]}",
                retryable=status >= 500 or status in RETRYABLE_4XX,
                reason=f"the platform answered HTTP {status}",
            )
        try:
            body = response.json() if response.content else {}
        except ValueError:
            body = {}
        return body if isinstance(body, dict) else {}
