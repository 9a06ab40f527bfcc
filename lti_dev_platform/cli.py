"""``python -m lti_dev_platform serve``: run the platform next to the tool for trying it by hand."""

from __future__ import annotations

import argparse
import sys

from waitress.server import create_server

from lti_dev_platform.app import create_app
from lti_dev_platform.serving import CONNECTIONS, bind
from lti_dev_platform.settings import PlatformSettings


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m lti_dev_platform", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve the platform")
    serve.add_argument("--host", default="127.0.0.2", help="address to listen on (default 127.0.0.2)")
    serve.add_argument("--port", type=int, default=5001, help="port (0 = any free port; default 5001)")
    serve.add_argument("--tool-url", default="http://127.0.0.1:5000", help="base URL of the tool")
    serve.add_argument("--base-url", help="the platform's public URL and issuer (default http://HOST:PORT)")
    serve.add_argument("--client-id", default="decode-grader-dev")
    serve.add_argument("--deployment-id", default="1")
    serve.add_argument("--dynamic", action="store_true", help="no pre-registered tool: use dynamic registration")
    serve.add_argument("--tool-register-url", help="with --dynamic: the tool registration URL to open")
    serve.add_argument("--test-hooks", action="store_true", help="serve the /_test/ routes")
    serve.add_argument(
        "--no-platform-storage", action="store_true", help="offer no LTI platform storage (as Moodle; Canvas does)"
    )
    serve.add_argument(
        "--short-nrps-roles", action="store_true", help='roster roles as Moodle 4.5 sends them ("Learner")'
    )
    return parser.parse_args(argv)


def startup_text(settings: PlatformSettings, client_id: str | None, deployment_id: str | None) -> str:
    """The values a tool needs for manual registration."""
    s = settings
    lines = [
        "LTI dev platform",
        f"  Issuer (platform ID):  {s.issuer}",
        f"  Client ID:             {client_id or '(none yet: use dynamic registration)'}",
        f"  Deployment ID:         {deployment_id or '(none yet)'}",
        f"  Auth (OIDC) URL:       {s.url('/auth')}",
        f"  Access token URL:      {s.url('/token')}",
        f"  Platform JWKS URL:     {s.url('/.well-known/jwks.json')}",
        f"  OpenID configuration:  {s.url('/.well-known/openid-configuration')}",
        f"  Tool login / launch:   {s.tool_login_url} / {s.tool_launch_url}",
        f"  Tool JWKS:             {s.tool_jwks_url}",
        f"  Dynamic registration:  {s.url('/register/start')}",
        f"Open {s.url('/')} to launch the tool.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sock = bind(args.host, args.port)
    port = sock.getsockname()[1]
    settings = PlatformSettings(
        base_url=args.base_url or f"http://{args.host}:{port}",
        tool_url=args.tool_url,
        client_id=args.client_id,
        deployment_id=args.deployment_id,
        preregistered=not args.dynamic,
        test_hooks=args.test_hooks,
        storage_target=None if args.no_platform_storage else PlatformSettings.storage_target,
        short_nrps_roles=args.short_nrps_roles,
        tool_register_url=args.tool_register_url,
    )
    app = create_app(settings)
    server = create_server(app, sockets=[sock], threads=8, ident="lti-dev-platform", **CONNECTIONS)
    registered = not args.dynamic
    print(
        startup_text(settings, args.client_id if registered else None, args.deployment_id if registered else None),
        flush=True,
    )
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
