"""Hosted Canvas (Instructure's cloud): one issuer per environment, whatever the institution's domain, and
its LTI endpoints on Instructure's SSO host.

Canvas moved the OIDC authorization, token and JWKS endpoints from canvas.instructure.com to
sso.canvaslms.com (sso.beta / sso.test for those environments). The old URLs still answer, but LTI platform
storage (postMessage to the platform's frame) only works with the new authorization host, whose origin is
where the storage frame lives.
"""

from __future__ import annotations

from typing import NamedTuple


class CanvasEndpoints(NamedTuple):
    issuer: str
    auth_login_url: str
    auth_token_url: str
    key_set_url: str


def _hosted(issuer: str, sso: str) -> CanvasEndpoints:
    return CanvasEndpoints(
        issuer, f"{sso}/api/lti/authorize_redirect", f"{sso}/login/oauth2/token", f"{sso}/api/lti/security/jwks"
    )


HOSTED_CANVAS = {
    "production": _hosted("https://canvas.instructure.com", "https://sso.canvaslms.com"),
    "beta": _hosted("https://canvas.beta.instructure.com", "https://sso.beta.canvaslms.com"),
    "test": _hosted("https://canvas.test.instructure.com", "https://sso.test.canvaslms.com"),
}
