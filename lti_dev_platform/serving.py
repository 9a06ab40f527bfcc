"""Serve a WSGI app with waitress in a background thread, with a clean stop (for tests and the CLI)."""

from __future__ import annotations

import socket
import threading
import typing as t

from flask import Flask
from waitress import wasyncore
from waitress.server import create_server

from lti_dev_platform.app import create_app
from lti_dev_platform.settings import PlatformSettings

# An LMS holds a whole class's keep-alive connections (waitress's default is 100, then it stops accepting);
# poll() because select() cannot watch file descriptors above 1023.
CONNECTIONS = {"connection_limit": 5000, "asyncore_use_poll": True}


class ServerThread:
    """Binds at construction (so the port is known, port 0 = ephemeral) and serves until ``stop()``.

    Use as a context manager: ``with ServerThread(app, "127.0.0.2") as server: requests.get(server.url)``.
    """

    def __init__(
        self,
        app: t.Callable[..., t.Any],
        host: str = "127.0.0.1",
        port: int = 0,
        threads: int = 8,
        sock: socket.socket | None = None,
    ) -> None:
        if sock is not None:
            host, port = sock.getsockname()[:2]
            self._server = create_server(app, sockets=[sock], threads=threads, ident="lti-dev-platform", **CONNECTIONS)
        else:
            self._server = create_server(
                app, host=host, port=port, threads=threads, ident="lti-dev-platform", **CONNECTIONS
            )
        self.host = host
        self.port: int = port or self._server.effective_port  # type: ignore[union-attr]
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"waitress-{host}:{self.port}", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def _run(self) -> None:
        server = self._server
        try:
            while not self._stopping.is_set():
                wasyncore.loop(timeout=1.0, map=server._map, use_poll=True, count=1)  # type: ignore[union-attr]
        finally:
            server.task_dispatcher.shutdown()  # type: ignore[union-attr]
            wasyncore.close_all(server._map)  # type: ignore[union-attr]

    def start(self) -> ServerThread:
        if not self._thread.is_alive():
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.pull_trigger()  # type: ignore[union-attr]  # wake the poll loop now
        self._thread.join(timeout=10)

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def bind(host: str, port: int) -> socket.socket:
    """A listening socket, so the CLI knows an ephemeral port before it builds the app (whose issuer needs it)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    return sock


class PlatformServer(ServerThread):
    """The dev platform served in a thread; ``settings`` and ``app`` are the live ones (issuer = ``url``)."""

    settings: PlatformSettings
    app: Flask


def start_platform(tool_url: str, host: str = "127.0.0.2", port: int = 0, **settings: t.Any) -> PlatformServer:
    """Bind, build the app for the bound URL (the issuer includes the port), and serve it in a thread.

    ``settings`` are further PlatformSettings fields (client_id, preregistered, test_hooks, ...).
    Call ``stop()`` (or use ``with``) when done.
    """
    sock = bind(host, port)
    base_url = f"http://{host}:{sock.getsockname()[1]}"
    platform_settings = PlatformSettings(base_url=base_url, tool_url=tool_url, **settings)
    app = create_app(platform_settings)
    server = PlatformServer(app, sock=sock)
    server.settings, server.app = platform_settings, app
    return server.start()  # type: ignore[return-value]
