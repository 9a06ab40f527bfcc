"""The control channel between the grader and a grading process: length-framed JSON over a Unix socket,
with file descriptors (a student sandbox's pipes) passed alongside.

The grader's side bounds every read by size and time, and everything a grading process sends by `Bounds`
before it is parsed: a grading process runs course code on student values and may say anything, or
nothing, and what the grader parses costs the grader's memory and CPU, not the grading's cgroup.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import time
from typing import Any, NamedTuple

HEADER = struct.Struct(">I")
MAX_FDS = 4
MB = 1 << 20


class Bounds(NamedTuple):
    """What one JSON text may hold, checked at C speed before it is parsed: its bytes, its lists and objects
    (every '[' and '{', strings included: an overcount refuses, never admits) and its items (containers plus
    every ','). Its depth is at most its containers, and json's C parser refuses one deeper than the
    recursion limit (RecursionError) before it builds more."""

    size: int
    containers: int
    items: int

    def excess(self, data: bytes | bytearray) -> str | None:
        """What in `data` is past these bounds, in words ("more than 2 MB"); None if nothing.
        Parsing JSON costs ~100 bytes of memory per list or object and ~60 per item however short its text
        (a 66 MB message of `[[],[],...]` parsed into 1.6 GB): counting them first bounds what parsing builds."""
        if oversize := self.oversize(len(data)):
            return oversize
        containers = data.count(b"[") + data.count(b"{")
        if containers > self.containers:
            return f"more than {self.containers} lists and objects"
        if containers + data.count(b",") > self.items:
            return f"more than {self.items} items"
        return None

    def oversize(self, size: int) -> str | None:
        """What is wrong with a text of `size` bytes, in words; None if nothing."""
        return f"more than {self.size / MB:g} MB" if size > self.size else None


GRADING_PROCESS = Bounds(2 * MB, 20_000, 200_000)
"""What the grader accepts from a grading process in one message. Measured on the parity corpus (every
notebook, failing ones included): the largest outcome is 13 KB with 57 lists and objects and 424 commas,
the largest manifest 1.4 KB with 44; a grading process fits its outcome to these bounds by shortening
messages (child.py). 2 MB is 150 times the largest and parses into at most ~40 MB here."""
MAX_TOTAL = 8 * MB
"""bytes a grading process may send over a whole grading (the corpus's gradings send at most 14 KB)"""
MAX_MESSAGES = 1000
"""messages a grading process may send over a whole grading (a grading sends 4, and 3 more per restart)"""


class ControlError(Exception):
    """The other side broke the protocol, went away or did not answer in time."""


class ControlLimit(ControlError):
    """The other side sent more than the channel's bounds; str() says what, in words."""


class Control:
    """One end of the channel. `bounds`: what the other side may send (None: it is the grader, trusted); a
    message past them, or past MAX_TOTAL bytes or MAX_MESSAGES messages over this channel's life (one
    grading), raises ControlLimit."""

    def __init__(self, sock: socket.socket, bounds: Bounds | None = None) -> None:
        self.sock, self.bounds = sock, bounds
        self.received, self.messages = 0, 0

    def send(self, message: dict[str, Any], fds: list[int] | tuple[int, ...] = ()) -> None:
        self.send_encoded(encode(message), fds)

    def send_encoded(self, data: bytes, fds: list[int] | tuple[int, ...] = ()) -> None:
        """Send a message already encoded (`encode`)."""
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
        except TimeoutError:
            raise ControlError("no answer in time") from None
        except OSError as e:
            raise ControlError(f"the other side went away ({e})") from None
        try:
            return self._message(head, deadline), fds
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise

    def _message(self, head: bytes, deadline: float | None) -> dict[str, Any]:
        """The message whose header starts with `head`: read within the budget, checked, then parsed."""
        try:
            head += self._exactly(HEADER.size - len(head), deadline)
            (size,) = HEADER.unpack(head)
            self._count(size)
            body = self._exactly(size, deadline)
        except TimeoutError:
            raise ControlError("no answer in time") from None
        except OSError as e:
            raise ControlError(f"the other side went away ({e})") from None
        if self.bounds is not None and (excess := self.bounds.excess(body)):
            raise ControlLimit(f"{excess} in one message")
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            raise ControlError("a malformed message") from None
        if not isinstance(message, dict):
            raise ControlError("a malformed message")
        return message

    def _count(self, size: int) -> None:
        """Count a message of `size` bytes against the channel's budget, before it is read."""
        self.received += size
        self.messages += 1
        if self.bounds is None:
            return
        if oversize := self.bounds.oversize(size):
            raise ControlLimit(f"{oversize} in one message")
        if self.received > MAX_TOTAL:
            raise ControlLimit(f"more than {MAX_TOTAL / MB:g} MB in all")
        if self.messages > MAX_MESSAGES:
            raise ControlLimit(f"more than {MAX_MESSAGES} messages")

    def _exactly(self, size: int, deadline: float | None) -> bytearray:
        data = bytearray(size)
        view = memoryview(data)
        while view:
            self._timeout(deadline)
            received = self.sock.recv_into(view, min(len(view), MB))
            if not received:
                raise ControlError("the other side went away")
            view = view[received:]
        return data

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


def encode(message: dict[str, Any]) -> bytes:
    """A message as the channel sends it."""
    return json.dumps(message, separators=(",", ":")).encode()
