"""pylti1p3 tool configuration read from the platforms table.

Only launch validation uses it; signing (AGS client assertions, deep-linking responses) is ours, with
the keys of keys.py.
"""

from __future__ import annotations

from typing import Protocol

from pylti1p3.deployment import Deployment
from pylti1p3.registration import Registration
from pylti1p3.tool_config.abstract import ToolConfAbstract

from ..db import Platform


class Platforms(Protocol):
    """The registered platforms, as this configuration reads them (platforms.PlatformDirectory)."""

    def find(self, issuer: str, client_id: str | None, deployment_id: str | None = None) -> Platform | None: ...


class DatabaseToolConf(ToolConfAbstract):
    """Many platforms, many client ids per issuer.

    pylti1p3 keeps `issuers_relation_types` in a class-level dict shared by every instance (one
    configuration object could break another's); each instance here gets its own.
    """

    def __init__(self, platforms: Platforms) -> None:
        super().__init__()
        self.issuers_relation_types = {}
        self.platforms = platforms

    def platform(self, iss: str, client_id: str | None) -> Platform | None:
        return self.platforms.find(iss, client_id or None)

    def check_iss_has_one_client(self, iss: str) -> bool:
        return False

    def check_iss_has_many_clients(self, iss: str) -> bool:
        return True

    def find_registration_by_issuer(self, iss: str, *args, **kwargs) -> Registration | None:
        return self.find_registration_by_params(iss, None)

    def find_registration_by_params(self, iss: str, client_id: str | None, *args, **kwargs) -> Registration | None:
        platform = self.platform(iss, client_id)
        if platform is None:
            return None
        return (
            Registration()
            .set_issuer(platform.issuer)
            .set_client_id(platform.client_id)
            .set_auth_login_url(platform.auth_login_url)
            .set_auth_token_url(platform.auth_token_url)
            .set_key_set_url(platform.key_set_url)
        )

    def find_deployment(self, iss: str, deployment_id: str) -> Deployment | None:
        return self.find_deployment_by_params(iss, deployment_id, None)

    def find_deployment_by_params(
        self, iss: str, deployment_id: str, client_id: str | None, *args, **kwargs
    ) -> Deployment | None:
        if self.platforms.find(iss, client_id or None, deployment_id) is None:
            return None
        return Deployment().set_deployment_id(deployment_id)
