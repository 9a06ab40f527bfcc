"""The per-app platform object (settings, state, key) and the URLs of the platform's services."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from flask import current_app

from lti_dev_platform.keys import PlatformKey
from lti_dev_platform.settings import PlatformSettings
from lti_dev_platform.store import PlatformState, Tool

EXTENSION = "lti_dev_platform"


@dataclass
class Platform:
    settings: PlatformSettings
    state: PlatformState
    key: PlatformKey

    @property
    def issuer(self) -> str:
        return self.settings.issuer

    @property
    def token_url(self) -> str:
        return self.settings.url("/token")

    def _type_query(self, tool: Tool | None) -> str:
        return "?" + urlencode({"type_id": tool.type_id if tool else 0})

    def _service_url(self, path: str) -> str:
        """Where launches say the services are: here, unless a test moved them (as Canvas serves them from
        the school's domain, not its issuer's)."""
        return (self.state.service_base_url or self.settings.base_url) + path

    # Moodle-like AGS URLs: the query string carries the tool type, so a tool must add `/scores` to the path.
    def lineitems_url(self, context_id: str, tool: Tool | None) -> str:
        return self._service_url(f"/ags/{context_id}/lineitems") + self._type_query(tool)

    def lineitem_url(self, context_id: str, item_id: str, tool: Tool | None) -> str:
        return self._service_url(f"/ags/{context_id}/lineitems/{item_id}/lineitem") + self._type_query(tool)

    def memberships_url(self, context_id: str) -> str:
        return self._service_url(f"/nrps/{context_id}/memberships")


def platform() -> Platform:
    """The Platform of the current Flask app."""
    return current_app.extensions[EXTENSION]
