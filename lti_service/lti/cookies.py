"""The OIDC state cookie and the launch cookie, set so that they survive inside the LMS's iframe.

A cookie set in a cross-site iframe is kept only with `SameSite=None; Secure`, and where the browser blocks
third-party cookies (Chrome's default in incognito windows and for a growing share of users, Firefox's
strict mode) only if it is also `Partitioned` (CHIPS): kept for the tool inside this LMS's pages only, which
is all a login needs. Safari keeps no third-party cookie at all, partitioned or not: there the login uses the
platform's storage or a new window instead (login.py). Browsers accept Secure cookies from loopback
addresses ("potentially trustworthy"), so the local set-up of `make run` behaves as it will over TLS.
"""

from __future__ import annotations

import hashlib
import ipaddress

from flask import Response, request

PREFIX = "lti1p3-state-"
LAUNCH_PREFIX = "lti1p3-launch-"


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


def set_state_cookie(response: Response, state: str, max_age: int) -> None:
    """The cookie that ties the launch to the browser that started the login."""
    _set_frame_cookie(response, PREFIX + state, state, "/", max_age)


def set_launch_cookie(response: Response, launch_id: str, token: str, path: str) -> None:
    """The cookie that ties a launch's pages (under `path`) to the browser that launched it, so that their
    URLs, which a browser keeps (history, downloads), open nothing elsewhere. A session cookie: it goes when
    the browser closes; inside the LMS's frame it is partitioned, so not even a top-level window of the same
    browser has it."""
    _set_frame_cookie(response, launch_cookie_name(launch_id), token, path, None)


def launch_cookie(launch_id: str) -> str | None:
    return request.cookies.get(launch_cookie_name(launch_id))


def launch_cookie_name(launch_id: str) -> str:
    return LAUNCH_PREFIX + hashlib.sha256(launch_id.encode()).hexdigest()[:16]


def _set_frame_cookie(response: Response, name: str, value: str, path: str, max_age: int | None) -> None:
    secure = _trustworthy()
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path=path,
        httponly=True,
        secure=secure,
        samesite="None" if secure else "Lax",
        partitioned=secure,
    )


def state_cookie(state: str) -> str | None:
    return request.cookies.get(PREFIX + state)


def any_state_cookie() -> bool:
    """Whether this browser sent any of our state cookies (if none, it keeps no cookie for us here)."""
    return any(name.startswith(PREFIX) for name in request.cookies)
