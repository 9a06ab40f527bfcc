"""`python -m lti_service ...`: serve, worker, platform add/update/invite/list/remove, assignment
add/list/show/update/remove (assignments/cli.py), keys rotate/list/remove, db upgrade."""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import logging
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .assignments import cli as assignment_cli
from .config import Config
from .logs import configure_logging
from .lti import invites
from .lti.canvas import HOSTED_CANVAS
from .lti.outbound import origin
from .lti.registration import CANVAS_SERVICES
from .platforms import add_platform, list_platforms, remove_platform, update_platform
from .services import Services

if TYPE_CHECKING:
    from flask import Flask

OTHER_OPEN_FILES = 200  # what the web process opens besides connections: database, queue, keys
PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent ends
RESTART_PAUSE = 1.0  # seconds before a dead worker process is started again (no busy loop if it cannot start)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m lti_service", description="The notebook-grading LTI 1.3 tool.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the web app (waitress) and, unless --no-worker, a grading worker")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=5000)
    serve.add_argument("--threads", type=int, default=8, help="web request threads")
    serve.add_argument("--workers", type=int, default=2, help="grading worker processes (one grading each at a time)")
    serve.add_argument("--no-worker", action="store_true", help="web only (workers run elsewhere)")
    worker = sub.add_parser("worker", help="run a grading and passback worker only")
    worker.add_argument("--workers", type=int, default=2, help="grading processes (one grading each at a time)")
    worker.add_argument("--parent", type=int, help="stop when the process with this id ends (serve's own worker)")
    worker.add_argument("--cpu", type=int, help="run on this CPU only (set by the process supervising workers)")

    platform = sub.add_parser("platform", help="manage registered platforms").add_subparsers(
        dest="action", required=True
    )
    add = platform.add_parser("add", help="register a platform (or add a deployment to a registered one)")
    add.add_argument(
        "--canvas", choices=sorted(HOSTED_CANVAS), help="hosted Canvas: fills in the issuer and the three URLs"
    )
    add.add_argument("--issuer")
    add.add_argument("--client-id", required=True)
    add.add_argument("--deployment-id", action="append", required=True, help="repeat for several deployments")
    add.add_argument("--auth-url", help="the platform's OIDC authorization endpoint")
    add.add_argument("--token-url", help="the platform's OAuth2 token endpoint")
    add.add_argument("--jwks-url", help="the platform's public keyset URL")
    add.add_argument("--name", default="")
    update = platform.add_parser("update", help="change a registered platform's URLs, name or service origins")
    update.add_argument("id", type=int)
    update.add_argument("--auth-url", dest="auth_login_url")
    update.add_argument("--token-url", dest="auth_token_url")
    update.add_argument("--jwks-url", dest="key_set_url")
    update.add_argument("--name")
    update.add_argument(
        "--service-origin", dest="service_origins", action="append",
        help="https://host[:port] where the platform also serves line items and rosters (Canvas: your Canvas's "
        "address); repeat for several; replaces the list",
    )  # fmt: skip
    invite = platform.add_parser("invite", help="print a single-use URL for LTI Dynamic Registration")
    invite.add_argument("--expires", default="1h", help="how long it stays valid: 30m, 1h, 2d (default 1h)")
    invite.add_argument("--name", default="", help="name of the platform it will register")
    invite.add_argument("--url", help="the tool's public address (default PUBLIC_URL)")
    platform.add_parser("list", help="list registered platforms")
    remove = platform.add_parser("remove", help="remove a platform by its id (see list)")
    remove.add_argument("id", type=int)
    remove.add_argument("--delete-data", action="store_true", help="also delete its students' attempts and grades")

    assignment_cli.add_parser(sub)

    keys = sub.add_parser("keys", help="manage the tool's signing keys").add_subparsers(dest="action", required=True)
    keys.add_parser("rotate", help="add a new signing key (the previous stays in the JWKS until removed)")
    keys.add_parser("list", help="list keys, newest last (the newest signs)")
    remove_key = keys.add_parser("remove", help="remove a key from the JWKS")
    remove_key.add_argument("kid")

    sub.add_parser("status", help="print readiness (database, queue, sandbox) and the metrics /metrics serves")
    backup = sub.add_parser("backup", help="copy the SQLite database, keys and secret key while serving")
    backup.add_argument("path", type=Path, help="a new directory for the copy")
    restore = sub.add_parser("restore", help="put a backup back (stop the tool first)")
    restore.add_argument("path", type=Path, help="a directory made by backup")
    db = sub.add_parser("db", help="database schema").add_subparsers(dest="action", required=True)
    db.add_parser("upgrade", help="apply schema migrations (serve and worker also do this at start)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "platform" and args.action == "add":
        _platform_endpoints(parser, args)
    if getattr(args, "workers", 1) < 1:
        parser.error("--workers must be at least 1 (serve --no-worker runs none)")
    configure_logging()
    config = Config()
    services = Services.from_config(config)
    if args.command == "serve":
        return serve(services, args)
    if args.command == "worker":
        return run_worker(services, args.workers, args.parent, args.cpu)
    if args.command == "platform":
        return manage_platforms(services, args)
    if args.command == "keys":
        return manage_keys(services, args)
    if args.command == "assignment":
        return assignment_cli.run(services, args)
    if args.command == "status":
        return status(services)
    if args.command in ("backup", "restore"):
        return backup_or_restore(config, args.command, args.path)
    print(f"database at {config.sqlalchemy_url.split('@')[-1]} is up to date")
    return 0


def status(services: Services) -> int:
    """What /readyz and /metrics say, for a terminal; exit status 1 when something is not ready."""
    from .jobs import build_queue
    from .monitoring import metrics, readiness

    queue = build_queue(services)
    checks = readiness(services, queue)
    for part, state in checks.items():
        print(f"{part:<9} {state}")
    print(metrics(services, queue).decode(), end="")
    return 0 if all(state == "ok" for state in checks.values()) else 1


def backup_or_restore(config: Config, command: str, path: Path) -> int:
    from .backup import BackupError, backup, restore

    try:
        (backup if command == "backup" else restore)(config, path)
    except BackupError as e:
        print(f"{command} failed: {e}", file=sys.stderr)
        return 2
    print(f"{'backed up into' if command == 'backup' else 'restored from'} {path}")
    return 0


def serve(services: Services, args: argparse.Namespace) -> int:
    """The web app in a waitress thread and, unless --no-worker, worker processes that this one starts
    again whenever they die. Grading stays out of the web process: its thousands of connections would push
    the grader's pipes past what select() can watch, and grading would compete with requests for the GIL."""
    from . import create_app

    app = create_app(services=services)
    server = _web_server(app, services.config, args.host, args.port, args.threads)
    web = threading.Thread(target=server.run, name="web", daemon=True)
    web.start()
    logging.getLogger("lti_service").info("serving on http://%s:%s", args.host, args.port)
    print(f"LTI tool on http://{args.host}:{args.port}  (login /lti/login, launch /lti/launch, JWKS /lti/jwks.json)")
    sys.stdout.flush()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # stop as on Ctrl-C: the worker is stopped too
    try:
        if args.no_worker:
            threading.Event().wait()
        else:
            _supervise_workers(args.workers, services.config.pin_workers)
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0


def _supervise_workers(count: int, pin: bool) -> None:
    """Run `count` worker processes of one grading thread each until interrupted, starting each again when
    it dies (another worker, or the new one, takes its attempts over once their leases end). Processes
    rather than threads: the grader's side of each grading is Python, and two gradings in one process
    wait for each other's GIL (a burst of 300 drained 17-28% faster on two cores)."""
    command = [sys.executable, "-m", "lti_service", "worker", "--workers", "1", "--parent", str(os.getpid())]
    commands = [command + ["--cpu", str(cpu)] if cpu is not None else command for cpu in _worker_cpus(count, pin)]
    children = [subprocess.Popen(command) for command in commands]
    try:
        while True:
            exited = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT)  # a child has ended; poll() reaps it
            ours = [i for i, child in enumerate(children) if child.pid == exited.si_pid]
            if not ours:  # not a worker: reap it so that waitid does not report it again
                os.waitpid(exited.si_pid, 0)
            for i in ours:
                code = children[i].wait()
                logging.getLogger("lti_service").warning("a worker process exited (%s); starting another", code)
                time.sleep(RESTART_PAUSE)
                children[i] = subprocess.Popen(commands[i])
    finally:  # we are stopping: stop the workers too
        _stop_workers(children)


def _stop_workers(children: list[subprocess.Popen]) -> None:
    """SIGTERM to the workers and to one being started when the stop came (the stop interrupted its Popen,
    which never returned it: only the kernel's list of this process's children has it); then wait for them."""
    known = {child.pid for child in children}
    own = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text().split()
    strays = [int(pid) for pid in own if int(pid) not in known]
    for child in children:
        if child.poll() is None:
            child.terminate()
    for pid in strays:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    for child in children:
        child.wait(timeout=60)
    for pid in strays:
        os.waitpid(pid, 0)  # SIGTERM ends it, whether still starting or already grading


def _worker_cpus(count: int, pin: bool) -> list[int | None]:
    """The CPU each worker process (and every sandbox it starts) runs on: one of its own when `pin` and
    there are enough, else any. A grading is a conversation between a worker and its sandbox, hundreds of
    messages each waking the other side: on one CPU a wake-up stays local and neither side waits to be
    scheduled elsewhere (a burst of 300 drained 17% faster on two cores)."""
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[:count] if pin and count <= len(cpus) else [None] * count


def _web_server(app: Flask, config: Config, host: str, port: int, threads: int):
    """Waitress, sized for a class at a deadline: idle keep-alive connections must not lock anyone out
    (waitress's defaults are 100 connections and a 120 s idle timeout)."""
    from waitress.server import create_server

    return create_server(
        app, host=host, port=port, threads=threads, clear_untrusted_proxy_headers=False,
        connection_limit=_connection_limit(config.web_connection_limit), channel_timeout=config.web_idle_timeout,
        asyncore_use_poll=True,  # select() cannot watch file descriptors above 1023
    )  # fmt: skip


def _connection_limit(wanted: int) -> int:
    """WEB_CONNECTION_LIMIT, once the open-file limit is raised to fit it (up to the hard limit); fewer,
    with a warning, when the hard limit is too low."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = wanted + OTHER_OPEN_FILES
    if hard != resource.RLIM_INFINITY:
        needed = min(needed, hard)
    if soft != resource.RLIM_INFINITY and soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
        soft = needed
    if soft == resource.RLIM_INFINITY or soft >= wanted + OTHER_OPEN_FILES:
        return wanted
    fitting = max(100, soft - OTHER_OPEN_FILES)
    logging.getLogger("lti_service").warning("open-file limit %s: accepting %s connections at most", soft, fitting)
    return fitting


def run_worker(services: Services, workers: int, parent: int | None = None, cpu: int | None = None) -> int:
    """A grading worker process, or with `workers` > 1 that many, supervised by this one; with `parent`, one
    that ends with that process (even one killed with SIGKILL); with `cpu`, one on that CPU (its sandboxes
    too: they inherit it)."""
    from .jobs import build_queue

    if workers > 1:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # stop the workers too
        try:
            _supervise_workers(workers, services.config.pin_workers)
        except KeyboardInterrupt:
            pass
        return 0
    if parent is not None:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # the parent ended before we asked to be told
            return 0
    if cpu is not None:  # every thread so far; those started later, and the sandboxes, inherit it
        for thread in os.listdir("/proc/self/task"):
            with contextlib.suppress(ProcessLookupError):  # a thread that has just ended
                os.sched_setaffinity(int(thread), {cpu})
    build_queue(services).run_worker(services)
    return 0


def _platform_endpoints(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """--canvas fills in what the other options leave out; without it all four are needed."""
    if args.canvas:
        hosted = HOSTED_CANVAS[args.canvas]
        args.issuer = args.issuer or hosted.issuer
        args.auth_url = args.auth_url or hosted.auth_login_url
        args.token_url = args.token_url or hosted.auth_token_url
        args.jwks_url = args.jwks_url or hosted.key_set_url
    missing = [f"--{name.replace('_', '-')}" for name in ("issuer", "auth_url", "token_url", "jwks_url")
               if not getattr(args, name)]  # fmt: skip
    if missing:
        parser.error(f"platform add needs {', '.join(missing)} (or --canvas for hosted Canvas)")


def manage_platforms(services: Services, args: argparse.Namespace) -> int:
    try:
        return PLATFORM_ACTIONS[args.action](services, args)
    except ValueError as error:  # a conflict, an unknown id, a bad duration or URL: the message says what to do
        print(str(error), file=sys.stderr)
        return 1


def _add(services: Services, args: argparse.Namespace) -> int:
    platform = add_platform(
        services.db, args.issuer, args.client_id, args.deployment_id, args.auth_url, args.token_url,
        args.jwks_url, args.name,
    )  # fmt: skip
    deployments = ", ".join(platform.deployment_ids)
    print(f"platform {platform.id}: {platform.issuer} client {platform.client_id} deployments {deployments}")
    if args.canvas and not platform.service_origins:
        print(CANVAS_SERVICES.format(id=platform.id))
    return 0


def _update(services: Services, args: argparse.Namespace) -> int:
    fields = ("auth_login_url", "auth_token_url", "key_set_url", "name", "service_origins")
    changes = {name: getattr(args, name) for name in fields if getattr(args, name) is not None}
    urls = [changes[name] for name in fields[:3] if name in changes] + changes.get("service_origins", [])
    if not_urls := [url for url in urls if origin(url) is None]:
        raise ValueError(f"not http(s) URLs: {', '.join(not_urls)}")
    if "service_origins" in changes:
        changes["service_origins"] = sorted({origin(url) for url in changes["service_origins"]})
    if update_platform(services.db, args.id, **changes) is None:
        raise ValueError(f"no platform with id {args.id}")
    print(f"platform {args.id} updated: {', '.join(changes) or 'nothing to change'}")
    return 0


def _invite(services: Services, args: argparse.Namespace) -> int:
    base = (args.url or services.config.public_url).rstrip("/")
    if origin(base) is None:
        raise ValueError("give the tool's public address: --url https://grader.example.edu (or set PUBLIC_URL)")
    token, invite = invites.create(services.db, invites.parse_duration(args.expires), args.name)
    print(f"{base}/lti/register/{token}")
    print(f"Paste it into the LMS's dynamic registration; it works once, until {invite.expires_at:%Y-%m-%d %H:%M} UTC.")
    return 0


def _list(services: Services, args: argparse.Namespace) -> int:
    for p in list_platforms(services.db):
        origins = f"\tservice_origins={','.join(p.service_origins)}" if p.service_origins else ""
        print(f"{p.id}\t{p.issuer}\tclient={p.client_id}\tdeployments={','.join(p.deployment_ids)}\t{p.name}{origins}")
    return 0


def _remove(services: Services, args: argparse.Namespace) -> int:
    try:
        removed = remove_platform(services.db, args.id, args.delete_data)
    except ValueError as error:
        raise ValueError(f"platform {args.id} kept: {error}") from None
    if not removed:
        raise ValueError(f"no platform with id {args.id}")
    return 0


PLATFORM_ACTIONS = {"add": _add, "update": _update, "invite": _invite, "list": _list, "remove": _remove}


def manage_keys(services: Services, args: argparse.Namespace) -> int:
    store = services.keys
    if args.action == "rotate":
        print(f"new signing key {store.rotate().kid}")
    elif args.action == "list":
        for key in store.keys():
            print(key.kid)
    else:
        try:
            store.remove(args.kid)
        except (KeyError, ValueError) as error:
            print(f"cannot remove {args.kid}: {error}", file=sys.stderr)
            return 1
    return 0
