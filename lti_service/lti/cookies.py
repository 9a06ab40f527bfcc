"""The OIDC state cookie, set so that it survives inside the LMS's iframe.

A cookie set in a cross-site iframe is kept only with `SameSite=None; Secure`. pylti1p3 adds those only
when the request is HTTPS; browsers also accept Secure cookies from loopback addresses (which are
"potentially trustworthy"), so the local set-up of `make run` works in an iframe as it will over TLS.
"""

from __future__ import annotations

import ipaddress

from flask import request
from pylti1p3.contrib.flask.cookie import FlaskCookieService


def _trustworthy() -> bool:
    if request.is_secure:
        return True
    host = request.host.rsplit(":", 1)[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ToolCookieService(FlaskCookieService):
    def update_response(self, response) -> None:
        secure = _trustworthy()
        for key, data in self._cookie_data_to_set.items():
            response.set_cookie(
                key,
                data["value"],
                max_age=data["exp"],
                path="/",
                httponly=True,
                secure=secure,
                samesite="None" if secure else "Lax",
            )
