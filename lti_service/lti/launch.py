"""Validating an LTI 1.3 launch with pylti1p3, with its known defects fixed in one place.

- A replayed id_token is rejected: its login (with the nonce) is consumed atomically, once, after the
  signature checks.
- The audience must contain our client id (pylti1p3 only compares aud[0]); several audiences need azp.
- Up to CLOCK_SKEW seconds of platform clock drift is tolerated (pylti1p3 has no leeway).
- Platform keys are cached per JWKS URL and refetched once (rate-limited) on an unknown kid, so a
  platform's key rotation works without a JWKS request on every launch. Every request has a timeout.
- The launch must belong to a login of this tool (login.py) and come back to the browser that started it:
  with the state cookie, or, for a login that stored its state in the platform's storage, by a page that
  reads it back from there (PlatformStorageCheck) before the launch is confirmed. The nonce must be the
  login's own.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from functools import lru_cache

import jwt
from jwcrypto.jwk import JWK
from pylti1p3.contrib.flask import FlaskMessageLaunch, FlaskRequest
from pylti1p3.exception import LtiException

from .cookies import any_state_cookie, state_cookie
from .errors import LaunchError
from .login import Login, Logins
from .outbound import OutboundError, fetch, platform_origins
from .storage import DatabaseLaunchDataStorage
from .tool_conf import DatabaseToolConf

JWKS_TTL = 3600
JWKS_REFETCH_MIN_INTERVAL = 10
STORAGE_CHECK_LIFETIME = 300  # seconds the launch page may take to confirm the state from platform storage


class CookiesBlocked(Exception):
    """The launch came back without any state cookie, although the login's cookie check passed."""


class PlatformStorageCheck(Exception):
    """The launch is authentic; its state must still be read back from the platform's storage in the browser
    (the login kept it there), and then confirmed with LaunchServices.confirmed_claims."""

    def __init__(self, login: Login) -> None:
        super().__init__("state in platform storage")
        self.login = login


class JwksCache:
    """Platform public keys by JWKS URL, shared by all launches of the process."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._lock = threading.Lock()
        self._sets: dict[str, tuple[float, dict]] = {}

    def key(self, url: str, kid: str, alg: str, origins: frozenset[str]) -> str:
        """The PEM public key for kid, or LaunchError when the platform does not publish it."""
        with self._lock:
            fetched_at, keyset = self._sets.get(url, (0.0, {"keys": []}))
            age = time.monotonic() - fetched_at
            if age > JWKS_TTL or (_find(keyset, kid, alg) is None and age > JWKS_REFETCH_MIN_INTERVAL):
                keyset = self._fetch(url, origins)
                self._sets[url] = (time.monotonic(), keyset)
        jwk = _find(keyset, kid, alg)
        if jwk is None:
            raise LaunchError("unknown_kid")
        return _pem(json.dumps(jwk, sort_keys=True))

    def _fetch(self, url: str, origins: frozenset[str]) -> dict:
        try:
            reply = fetch("get", url, origins=origins, timeout=self.timeout)
        except OutboundError as error:
            raise LaunchError("jwks_unreachable", detail=error.reason) from None
        if reply.status != 200:
            raise LaunchError("jwks_unreachable", detail=f"HTTP {reply.status}")
        keyset = reply.json()
        if not isinstance(keyset, dict) or not isinstance(keyset.get("keys"), list):
            raise LaunchError("jwks_unreachable", detail="the JWKS has no 'keys' list")
        return keyset


@lru_cache(maxsize=256)
def _pem(jwk_json: str) -> str:
    return JWK.from_json(jwk_json).export_to_pem().decode()


def _find(keyset: dict, kid: str, alg: str) -> dict | None:
    for jwk in keyset.get("keys", []):
        if isinstance(jwk, dict) and jwk.get("kid") == kid and jwk.get("alg", "RS256") == alg:
            return jwk
    return None


class ToolMessageLaunch(FlaskMessageLaunch):
    def __init__(self, services: LaunchServices) -> None:
        super().__init__(FlaskRequest(), services.tool_conf, launch_data_storage=services.storage)
        self._storage, self._jwks, self._clock_skew = services.storage, services.jwks, services.clock_skew
        self._logins = services.logins
        self.login: Login | None = None
        self.needs_storage_check = False

    def validate(self) -> ToolMessageLaunch:
        """pylti1p3's checks in a safer order: the nonce is consumed only once the token is authentic."""
        self._validated = True
        try:
            self.validate_state()
            self.validate_jwt_format()
            self.validate_registration()
            self.validate_jwt_signature()
            self.validate_nonce()
            self.validate_deployment()
            self.validate_message()
        except LtiException as error:
            self._validated = False
            raise LaunchError.from_pylti1p3(error) from None
        except Exception:
            self._validated = False
            raise
        return self

    def validate_state(self) -> ToolMessageLaunch:
        """The launch belongs to a login of ours, and the browser's cookie (or else the platform's storage,
        checked later in the browser) shows it is the browser that started that login."""
        state = self._get_request_param("state")
        if not state:
            raise LaunchError("missing_state")
        self.login = self._logins.get(state)
        if self.login is None:  # never ours, expired, or its launch already accepted
            raise LaunchError("replayed_nonce")
        cookie = state_cookie(state)
        if cookie is None and self.login.storage_target:
            self.needs_storage_check = True
        elif cookie is None and not any_state_cookie():
            raise CookiesBlocked()
        elif cookie != state:
            raise LaunchError("state_mismatch")
        return self

    def get_client_id(self) -> str:
        """The authorized party when the token names several audiences (pylti1p3 takes aud[0])."""
        body = self._get_jwt_body()
        aud = body.get("aud")
        return body.get("azp") or (aud[0] if isinstance(aud, list) and aud else aud)

    def validate_nonce(self) -> ToolMessageLaunch:
        """The token's nonce is its login's, and the login is used once (the only write of a launch check)."""
        nonce = self._get_jwt_body().get("nonce")
        if not nonce or nonce != self.login.nonce or not self._logins.finish(self.login):
            raise LaunchError("replayed_nonce")
        return self

    def get_public_key(self) -> tuple[str, str]:
        header = self._jwt.get("header", {})
        kid, alg = header.get("kid"), header.get("alg")
        if not kid or alg != "RS256":
            raise LaunchError("unknown_kid")
        platform = self._tool_config.platform(self._registration.get_issuer(), self._registration.get_client_id())
        origins = platform_origins(platform) if platform else frozenset()
        return self._jwks.key(self._registration.get_key_set_url(), kid, alg, origins), alg

    def validate_jwt_signature(self) -> ToolMessageLaunch:
        public_key, alg = self.get_public_key()
        client_id = self._registration.get_client_id()
        try:
            body = jwt.decode(
                self._get_id_token(),
                public_key,
                algorithms=[alg],
                audience=client_id,
                leeway=self._clock_skew,
                options={"require": ["exp", "iat", "aud", "iss", "sub"]},
            )
        except jwt.ExpiredSignatureError:
            raise LaunchError("expired") from None
        except jwt.ImmatureSignatureError:
            raise LaunchError("not_yet_valid") from None
        except jwt.InvalidAudienceError:
            raise LaunchError("wrong_audience") from None
        except jwt.InvalidTokenError as error:
            raise LaunchError("bad_signature", detail=str(error)) from None
        audiences = body["aud"] if isinstance(body["aud"], list) else [body["aud"]]
        if len(audiences) > 1 and body.get("azp") != client_id:
            raise LaunchError("wrong_audience")
        return self


@dataclass(frozen=True)
class LaunchServices:
    """What a launch needs from the application, built once per app."""

    tool_conf: DatabaseToolConf
    storage: DatabaseLaunchDataStorage
    logins: Logins
    jwks: JwksCache
    clock_skew: int

    def validated_claims(self) -> dict:
        """Validate the launch in the current Flask request; its claims, or LaunchError, CookiesBlocked, or
        PlatformStorageCheck (the claims then wait, server-side, for confirmed_claims)."""
        launch = ToolMessageLaunch(self)
        launch.validate()
        claims = launch.get_launch_data()
        if launch.needs_storage_check:
            self.storage.set_value(f"lti1p3-verify-{launch.login.state}", claims, exp=STORAGE_CHECK_LIFETIME)
            raise PlatformStorageCheck(launch.login)
        return claims

    def confirmed_claims(self, state: str) -> dict:
        """The claims of a launch whose state the browser read back from the platform's storage (once)."""
        claims = self.storage.take(f"lti1p3-verify-{state}") if state else None
        if not isinstance(claims, dict):
            raise LaunchError("login_expired")
        return claims
