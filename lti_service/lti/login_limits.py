"""Bounds on what an anonymous OIDC login may store: `/lti/login` is the one endpoint anybody can call
that writes (login.py keeps every login, with its nonce, until the launch).

- Each login parameter has at most MAX_PARAM characters and the request at most MAX_REQUEST bytes; a
  larger login is refused (413) before its body is read or anything is stored.
- Pending logins are bounded per client address (`request.remote_addr`: the proxy's X-Forwarded-For
  with TRUST_PROXY=1) and in all; more are refused (429) until logins complete (a launch deletes its
  login's rows) or expire (storage.STATE_LIFETIME). Expired rows are purged when the table is full.
"""

from __future__ import annotations

from collections.abc import Iterable

from flask import request
from werkzeug.exceptions import RequestEntityTooLarge

from .errors import LaunchError
from .storage import DatabaseLaunchDataStorage, client_address

MAX_PARAM = 2048  # characters; Canvas's lti_message_hint (a JWT) is the longest real one, under 1000
MAX_REQUEST = 16 * 1024
ROWS_PER_LOGIN = 2  # the login (login.py) and its one-time ticket


def login_params(names: Iterable[str]) -> dict[str, str]:
    """The login's parameters (the non-empty ones of `names`), or LaunchError when any is too long."""
    if (request.content_length or 0) > MAX_REQUEST:
        raise LaunchError("login_too_large", detail=f"{request.content_length} bytes")
    request.max_content_length = MAX_REQUEST  # also for a body sent without Content-Length
    try:
        values = request.values
    except RequestEntityTooLarge:
        raise LaunchError("login_too_large", detail="body over the limit") from None
    params = {name: values[name] for name in names if values.get(name)}
    too_long = [name for name, value in params.items() if len(value) > MAX_PARAM]
    if too_long:
        raise LaunchError("login_too_large", detail=", ".join(too_long))
    return params


def admit(storage: DatabaseLaunchDataStorage, per_client: int, total: int) -> None:
    """Refuse (LaunchError 429) a login whose client, or everybody, has too many logins pending."""
    client = client_address()
    if storage.live_rows(client) >= per_client * ROWS_PER_LOGIN:
        raise LaunchError("login_rate_limited", detail=client)
    if storage.all_rows() >= total * ROWS_PER_LOGIN:
        storage.purge_expired()
        if storage.all_rows() >= total * ROWS_PER_LOGIN:
            raise LaunchError("login_busy", detail=client)
