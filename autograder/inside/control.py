"""The control channel between the grader and a grading process: length-framed JSON over a Unix socket,
with file descriptors (a student sandbox's pipes) passed alongside.

The grader's side bounds every read by size and time: a grading process runs course code on student
values and may say anything, or nothing.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from typing import Any

HEADER = struct.Struct(">I")
MAX_FDS = 4


class ControlError(Exception):
    """The other side broke the protocol, went away or did not answer in time."""


class Control:
    def __init__(self, sock: socket.socket, max_message: int = 1 << 30) -> None:
        self.sock, self.max_message = sock, max_message

    def send(self, message: dict[str, Any], fds: list[int] | tuple[int, ...] = ()) -> None:
        data = json.dumps(message, separators=(",", ":")).encode()
        frame = HEADER.pack(len(data)) + data
        try:
            sent = socket.send_fds(self.sock, [frame], list(fds)) if fds else self.sock.send(frame)
            if sent < len(frame):  # never an empty send: it fails once a quick peer has answered and gone
                self.sock.sendall(frame[sent:])
        except OSError as e:
            raise ControlError(f"the other side went away ({e})") from None

    def recv(self, deadline: float | None = None) -> tuple[dict[str, Any], list[int]]:
        """One message and the descriptors sent with it; ControlError past `deadline` (monotonic)."""
        self._timeout(deadline)
        try:
            head, fds, _, _ = socket.recv_fds(self.sock, HEADER.size, MAX_FDS)
            head += self._exactly(HEADER.size - len(head), deadline)
            (size,) = HEADER.unpack(head)
            if size > self.max_message:
                raise ControlError("an oversized message")
            body = self._exactly(size, deadline)
        except TimeoutError:
            raise ControlError("no answer in time") from None
        except OSError as e:
            raise ControlError(f"the other side went away ({e})") from None
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            raise ControlError("a malformed message") from None
        if not isinstance(message, dict):
            raise ControlError("a malformed message")
        return message, fds

    def _exactly(self, size: int, deadline: float | None) -> bytes:
        chunks = []
        while size:
            self._timeout(deadline)
            chunk = self.sock.recv(min(size, 1 << 20))
            if not chunk:
                raise ControlError("the other side went away")
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def _timeout(self, deadline: float | None) -> None:
        if deadline is None:
            self.sock.settimeout(None)
            return
        left = deadline - time.monotonic()
        if left <= 0:
            raise ControlError("no answer in time")
        self.sock.settimeout(left)

    def close(self) -> None:
        self.sock.close()
