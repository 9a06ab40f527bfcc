"""Flask app factory: wires the blueprints to one in-memory platform."""

from __future__ import annotations

from flask import Flask

from lti_dev_platform.keys import PlatformKey
from lti_dev_platform.platform import EXTENSION, Platform
from lti_dev_platform.settings import PlatformSettings
from lti_dev_platform.store import PlatformState


def create_app(settings: PlatformSettings) -> Flask:
    """A fresh platform (new RSA key, empty state) for the tool described by ``settings``."""
    from lti_dev_platform import deep_linking, launch, pages, registration, services, test_hooks

    app = Flask(__name__)
    app.extensions[EXTENSION] = Platform(settings=settings, state=PlatformState(settings), key=PlatformKey())
    for module in (pages, launch, services, deep_linking, registration):
        app.register_blueprint(module.bp)
    if settings.test_hooks:
        app.register_blueprint(test_hooks.bp)
    return app
