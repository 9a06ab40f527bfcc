"""A minimal LTI tool for exercising the dev platform: its own RSA key, login, launch, deep linking, registration."""

from __future__ import annotations

import secrets
import time
import typing as t
import uuid
from urllib.parse import urlencode

import jwt
import requests
from cryptography.hazmat.primitives.asymmetric import rsa
from flask import Flask, jsonify, redirect, request
from jwt.algorithms import RSAAlgorithm

LTI = "https://purl.imsglobal.org/spec/lti/claim"
DL = "https://purl.imsglobal.org/spec/lti-dl/claim"
TOOL_CONFIG = "https://purl.imsglobal.org/spec/lti-tool-configuration"


class ToolKey:
    def __init__(self, kid: str) -> None:
        self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = kid

    def jwk(self) -> dict[str, t.Any]:
        jwk = RSAAlgorithm.to_jwk(self.private.public_key(), as_dict=True)
        return {**jwk, "kid": self.kid, "alg": "RS256", "use": "sig"}

    def sign(self, claims: dict[str, t.Any]) -> str:
        return jwt.encode(claims, self.private, algorithm="RS256", headers={"kid": self.kid})


class FakeTool:
    """State of the fake tool; ``app`` serves it. ``platform_url`` and ``client_id`` are set by the fixtures."""

    def __init__(self) -> None:
        self.key = ToolKey("tool-key-1")
        self.url = ""
        self.platform_url = ""
        self.client_id = "decode-grader-dev"
        self.deployment_id = "1"
        self.pending: dict[str, str] = {}  # state -> nonce
        self.launches: list[dict[str, t.Any]] = []
        self.registration: dict[str, t.Any] | None = None
        self.deep_link_item: dict[str, t.Any] = {
            "type": "ltiResourceLink",
            "title": "Decode, part 2",
            "custom": {"part": "2"},
            "lineItem": {"scoreMaximum": 10, "label": "Decode part 2", "resourceId": "decode-2"},
        }
        self.app = self._make_app()

    def assertion(self, **overrides: t.Any) -> str:
        """A client assertion for the platform's token endpoint; overrides replace claims (None removes)."""
        now = int(time.time())
        claims = {
            "iss": self.client_id,
            "sub": self.client_id,
            "aud": f"{self.platform_url}/token",
            "iat": now,
            "exp": now + 300,
            "jti": uuid.uuid4().hex,
            **overrides,
        }
        return self.key.sign({k: v for k, v in claims.items() if v is not None})

    def token_request(self, scope: str, assertion: str | None = None) -> requests.Response:
        return requests.post(
            f"{self.platform_url}/token",
            data={
                "grant_type": "client_credentials",
                "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                "client_assertion": assertion or self.assertion(),
                "scope": scope,
            },
            timeout=10,
        )

    def access_token(self, scope: str) -> str:
        resp = self.token_request(scope)
        assert resp.status_code == 200, resp.text
        return resp.json()["access_token"]

    def deep_link_response(self, claims: dict[str, t.Any], key: ToolKey | None = None) -> str:
        settings = claims[f"{DL}/deep_linking_settings"]
        message = {
            "iss": self.client_id,
            "aud": claims["iss"],
            "iat": int(time.time()),
            "exp": int(time.time()) + 300,
            "nonce": secrets.token_hex(8),
            f"{LTI}/message_type": "LtiDeepLinkingResponse",
            f"{LTI}/version": "1.3.0",
            f"{LTI}/deployment_id": claims[f"{LTI}/deployment_id"],
            f"{DL}/content_items": [self.deep_link_item],
            f"{DL}/data": settings["data"],
            f"{DL}/msg": "Added by the fake tool",
        }
        return (key or self.key).sign(message)

    def _make_app(self) -> Flask:
        app = Flask(__name__)

        @app.get("/lti/jwks.json")
        def jwks() -> t.Any:
            return jsonify({"keys": [self.key.jwk()]})

        @app.route("/lti/login", methods=["GET", "POST"])
        def login() -> t.Any:
            params = request.values
            assert params["iss"] == self.platform_url
            state, nonce = secrets.token_hex(8), secrets.token_hex(8)
            self.pending[state] = nonce
            query = {
                "scope": "openid",
                "response_type": "id_token",
                "response_mode": "form_post",
                "prompt": "none",
                "client_id": self.client_id,
                "redirect_uri": f"{self.url}/lti/launch",
                "login_hint": params["login_hint"],
                "lti_message_hint": params["lti_message_hint"],
                "state": state,
                "nonce": nonce,
            }
            return redirect(f"{self.platform_url}/auth?{urlencode(query)}")

        @app.post("/lti/launch")
        def launch() -> t.Any:
            token = request.form["id_token"]
            jwk_client = jwt.PyJWKClient(f"{self.platform_url}/.well-known/jwks.json")
            claims = jwt.decode(
                token,
                jwk_client.get_signing_key_from_jwt(token).key,
                algorithms=["RS256"],
                audience=self.client_id,
                issuer=self.platform_url,
            )
            nonce = self.pending.pop(request.form["state"])
            assert claims["nonce"] == nonce
            self.launches.append(
                {"header": jwt.get_unverified_header(token), "claims": claims, "form": dict(request.form)}
            )
            if claims[f"{LTI}/message_type"] == "LtiDeepLinkingRequest":
                return_url = claims[f"{DL}/deep_linking_settings"]["deep_link_return_url"]
                return (
                    f'<form method="post" action="{return_url}">'
                    f'<input type="hidden" name="JWT" value="{self.deep_link_response(claims)}">'
                    '<button type="submit">Add</button></form>'
                )
            return jsonify({"launched": claims["sub"], "message_type": claims[f"{LTI}/message_type"]})

        @app.get("/lti/register")
        def register() -> t.Any:
            config = requests.get(request.args["openid_configuration"], timeout=10).json()
            body = {
                "application_type": "web",
                "response_types": ["id_token"],
                "grant_types": ["implicit", "client_credentials"],
                "initiate_login_uri": f"{self.url}/lti/login",
                "redirect_uris": [f"{self.url}/lti/launch"],
                "client_name": "Fake tool",
                "jwks_uri": f"{self.url}/lti/jwks.json",
                "token_endpoint_auth_method": "private_key_jwt",
                "scope": "https://purl.imsglobal.org/spec/lti-ags/scope/score",
                TOOL_CONFIG: {
                    "domain": "127.0.0.1",
                    "target_link_uri": f"{self.url}/lti/launch",
                    "claims": ["iss", "sub", "name"],
                    "messages": [{"type": "LtiResourceLinkRequest"}, {"type": "LtiDeepLinkingRequest"}],
                },
            }
            resp = requests.post(
                config["registration_endpoint"],
                json=body,
                headers={"Authorization": f"Bearer {request.args['registration_token']}"},
                timeout=10,
            )
            if resp.status_code != 200:
                return f"registration failed: {resp.status_code} {resp.text}", 502
            self.registration = resp.json()
            self.client_id = self.registration["client_id"]
            self.deployment_id = self.registration[TOOL_CONFIG]["deployment_id"]
            close = "window.parent.postMessage({subject: 'org.imsglobal.lti.close'}, '*');"
            return f"<p>Registered</p><script>{close}</script>"

        return app
