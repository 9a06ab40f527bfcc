"""The OIDC login that starts every launch, made to work where the browser keeps no cookie for the tool.

The launch must come back to the browser that started the login (the OIDC `state`). The proof, in order of
preference:

1. the state cookie (cookies.py), partitioned, so that browsers that block third-party cookies keep it in
   the LMS's iframe. /lti/login sets it and redirects to /lti/login/continue, which checks that the cookie
   came back *before* the browser is sent to the platform;
2. LTI platform storage where the platform offers it (`lti_storage_target`; 1EdTech "LTI Client Side
   postMessages" and "Platform Storage"): the login page stores the state in the platform's window, and the
   launch page reads it back before it confirms the launch (static/platform_storage.js);
3. a new window, where the tool is a first party and its cookie is kept: it starts a fresh login (new state
   and nonce) that takes the platform's `lti_message_hint` to the platform for the first time.

A login takes the platform's hint to the platform at most once (`take_ticket`): Moodle accepts each hint
once only and answers a replayed one with "Invalid request".
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from urllib.parse import urlencode, urlsplit

from .errors import LaunchError
from .storage import STATE_LIFETIME, DatabaseLaunchDataStorage
from .tool_conf import DatabaseToolConf

LOGIN_LIFETIME = STATE_LIFETIME  # seconds from the platform's login initiation to the launch
LOGIN_PARAMS = ("iss", "login_hint", "target_link_uri", "lti_message_hint", "lti_deployment_id", "client_id")


@dataclass(frozen=True)
class Login:
    """One OIDC login in progress, kept server-side under its state."""

    state: str
    nonce: str
    params: dict[str, str]
    """the platform's login initiation parameters (LOGIN_PARAMS)"""
    auth_url: str
    client_id: str
    storage_target: str | None = None
    """the platform's storage frame (lti_storage_target), when it offers platform storage"""
    new_window: bool = False
    """started in a new window opened because the iframe kept no cookie"""

    @property
    def platform_origin(self) -> str:
        """Where the platform's storage frame lives: the origin of its OIDC authorization endpoint."""
        parts = urlsplit(self.auth_url)
        return f"{parts.scheme}://{parts.netloc}"

    @property
    def storage_key(self) -> str:
        return f"state-{self.state}"

    def authorization_url(self, redirect_uri: str) -> str:
        """The OIDC authentication request that sends the browser to the platform."""
        query = {
            "scope": "openid",
            "response_type": "id_token",
            "response_mode": "form_post",
            "prompt": "none",
            "client_id": self.client_id,
            "redirect_uri": redirect_uri,
            "state": self.state,
            "nonce": self.nonce,
            "login_hint": self.params["login_hint"],
        }
        if "lti_message_hint" in self.params:
            query["lti_message_hint"] = self.params["lti_message_hint"]
        return self.auth_url + ("&" if "?" in self.auth_url else "?") + urlencode(query)


class Logins:
    """Logins in progress, in the server-side LTI state store; each key lives LOGIN_LIFETIME seconds."""

    def __init__(self, storage: DatabaseLaunchDataStorage, tool_conf: DatabaseToolConf) -> None:
        self.storage, self.tool_conf = storage, tool_conf

    def start(self, values: Mapping[str, str], new_window: bool = False) -> Login:
        """Check the platform's login initiation (its size is login_limits.py's) and remember the login (with
        its nonce) and a one-time ticket."""
        params = {name: str(values[name]) for name in LOGIN_PARAMS if values.get(name)}
        if "iss" not in params or "login_hint" not in params:
            raise LaunchError("login_invalid", "the login initiation lacks iss or login_hint")
        registration = self.tool_conf.find_registration_by_params(params["iss"], params.get("client_id"))
        if registration is None:
            raise LaunchError("unknown_issuer", f"no platform {params['iss']} with client id {params.get('client_id')}")
        target = None if new_window else str(values.get("lti_storage_target") or "")[:100] or None
        login = Login(
            state=secrets.token_urlsafe(24),
            nonce=secrets.token_urlsafe(24),
            params=params,
            auth_url=registration.get_auth_login_url(),
            client_id=registration.get_client_id(),
            storage_target=target,
            new_window=new_window,
        )
        self.storage.set_value(f"lti1p3-login-{login.state}", asdict(login), exp=LOGIN_LIFETIME)
        self.storage.set_value(f"lti1p3-ticket-{login.state}", True, exp=LOGIN_LIFETIME)
        return login

    def get(self, state: str | None) -> Login | None:
        data = self.storage.get_value(f"lti1p3-login-{state}") if state else None
        return Login(**data) if isinstance(data, dict) else None

    def take_ticket(self, login: Login) -> bool:
        """True once per login: the platform's hint goes to the platform at most once."""
        return self.storage.consume(f"lti1p3-ticket-{login.state}")

    def finish(self, login: Login) -> bool:
        """True once per login: its launch is accepted once (the nonce is used once)."""
        return self.storage.consume(f"lti1p3-login-{login.state}")
