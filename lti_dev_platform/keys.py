"""The platform's signing key and the trust in the tool's keys, built on lti1p3platform's Registration."""

from __future__ import annotations

import threading
import typing as t

import jwt
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from lti1p3platform.exceptions import LtiException
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.registration import Registration


class PlatformKey:
    """One RSA key made at start-up; it signs id_tokens and access tokens (kid = JWK thumbprint).

    Signing takes the key object, not its PEM: PyJWT parses and checks a PEM key on every call (about
    40 ms of CPU for RSA 2048, a hundred times the signature itself)."""

    def __init__(self) -> None:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._private_key, self._public_key = key, key.public_key()
        public_pem = self._public_key.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ).decode()
        self.jwk = Registration.get_jwk(public_pem)
        self.kid: str = self.jwk["kid"]

    def jwks(self) -> dict[str, t.Any]:
        return {"keys": [self.jwk]}

    def sign(self, payload: dict[str, t.Any], lifetime: int) -> str:
        """RS256 with a kid header, iat and exp; lti1p3platform's encoder does the work."""
        return Registration.encode_and_sign(dict(payload), self._private_key, {"kid": self.kid}, expiration=lifetime)

    def decode(self, token: str, **kwargs: t.Any) -> dict[str, t.Any]:
        """Verify a token this platform signed (access tokens)."""
        return jwt.decode(token, self._public_key, algorithms=["RS256"], **kwargs)


class ToolKeyError(Exception):
    """The tool's JWT could not be verified (bad signature, unknown kid, JWKS unreachable)."""


class _ToolTrust(LTI1P3PlatformConfAbstract):
    """lti1p3platform's verifier bound to one Registration; a fresh one per request (it keeps per-call state)."""

    def init_platform_config(self, **kwargs: t.Any) -> None:
        self._registration = kwargs["registration"]
        self._on_fetch = kwargs["on_fetch"]
        self._timeout = kwargs["timeout"]

    def get_registration_by_params(self, **kwargs: t.Any) -> Registration:
        return self._registration

    def fetch_public_key(self, key_set_url: str) -> t.Any:
        self._on_fetch()
        try:
            resp = requests_get(key_set_url, self._timeout)
        except Exception as exc:  # noqa: BLE001 - any fetch failure is the same failure to the caller
            raise LtiException(f"Error fetching {key_set_url}: {exc}") from exc
        return resp


def requests_get(url: str, timeout: float) -> dict[str, t.Any]:
    resp = requests.get(url, timeout=timeout)
    resp.raise_for_status()
    return resp.json()


class ToolKeys:
    """Verifies JWTs the tool signs (client assertions, deep-linking responses) against the tool's JWKS URL.

    The key set is cached; an unknown kid triggers one refetch, so a tool that rotates keys keeps working.
    """

    def __init__(self, jwks_url: str, timeout: float) -> None:
        self.jwks_url = jwks_url
        self.timeout = timeout
        self.fetches = 0
        self._registration = Registration().set_tool_key_set_url(jwks_url)
        self._lock = threading.Lock()

    def _count(self) -> None:
        self.fetches += 1

    def verify(self, token: str) -> dict[str, t.Any]:
        """Signature (RS256, kid) and exp/iat/nbf; claim checks are the caller's (the library skips them)."""
        for attempt in (1, 2):
            trust = _ToolTrust(registration=self._registration, on_fetch=self._count, timeout=self.timeout)
            trust.get_registration()
            try:
                with self._lock:
                    trust.validate_jwt_format(token)
                    public_key = trust.get_tool_public_key()
            except LtiException as exc:
                if attempt == 1 and "Unable to find public key" in str(exc):
                    with self._lock:
                        self._registration.set_tool_key_set(None)  # type: ignore[arg-type]
                    continue
                raise ToolKeyError(str(exc)) from exc
            try:
                return jwt.decode(token, public_key, algorithms=["RS256"], options={"verify_aud": False}, leeway=5)
            except jwt.PyJWTError as exc:
                raise ToolKeyError(f"invalid JWT: {exc}") from exc
        raise ToolKeyError("unreachable")
