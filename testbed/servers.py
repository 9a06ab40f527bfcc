"""Servers a fault test may stop and restart at will: a private PostgreSQL and Redis, and a TCP relay in
front of the platform (closing it makes the LMS refuse connections). Other engineers' tests use the
machine's shared PostgreSQL and Redis, so restarts only ever touch these."""

from __future__ import annotations

import glob
import shutil
import socket
import subprocess
import tempfile
import threading
from pathlib import Path

import redis

from testbed.tool import free_port, wait_for


class PrivateRedis:
    """redis-server on a free loopback port, keeping nothing on disk (a restart forgets the queue)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(self._answers, timeout=10)

    def _answers(self) -> bool:
        try:
            return redis.Redis(port=self.port, socket_timeout=1).ping()
        except redis.ConnectionError:
            return False

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def restart(self) -> None:
        self.stop()
        self.start()


class PrivatePostgres:
    """A PostgreSQL cluster of our own (initdb in a temporary directory, trust auth, a free port), run as
    the postgres system user because PostgreSQL refuses to run as root."""

    def __init__(self) -> None:
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="private-pg-"))
        shutil.chown(self.dir, "postgres", "postgres")
        self.data = self.dir / "data"
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self._as_postgres("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")
        self.start()

    def _as_postgres(self, tool: str, *args: str) -> None:
        (binary,) = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{tool}"))[-1:]
        command = ["runuser", "-u", "postgres", "--", binary, *args]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)

    def _ctl(self, action: str, *args: str) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.dir} -c fsync=off"
        log = str(self.dir / "log")
        self._as_postgres("pg_ctl", action, "-D", str(self.data), "-l", log, "-o", options, "-w", *args)

    def start(self) -> None:
        self._ctl("start")

    def restart(self) -> None:
        self._ctl("restart", "-m", "fast")

    def stop(self) -> None:
        try:
            self._ctl("stop", "-m", "immediate")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


class TcpRelay:
    """Forwards a loopback port to another; `refuse()` closes the listening socket (connections are then
    refused, and open ones are cut) until `accept()` opens it again on the same port."""

    def __init__(self, target: tuple[str, int], host: str, port: int) -> None:
        self.target, self.host, self.port = target, host, port
        self._listener: socket.socket | None = None
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self.accept()

    def accept(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.host, self.port))
        listener.listen(512)
        self._listener = listener
        threading.Thread(target=self._serve, args=(listener,), daemon=True).start()

    def refuse(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            connections, self._open = self._open, set()
        if listener is not None:
            listener.close()
        for connection in connections:
            _close(connection)

    def _serve(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:  # closed by refuse()
                return
            try:
                upstream = socket.create_connection(self.target, timeout=10)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open.update((client, upstream))
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                _close(end)
            with self._lock:
                self._open.difference_update((source, sink))


def _close(connection: socket.socket) -> None:
    try:
        connection.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    connection.close()
