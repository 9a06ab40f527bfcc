"""The trusted side of the conversation with a sandbox: framing, deadlines, nested requests.

A message is 8 bytes (JSON length, blob length), the JSON, then raw bytes the JSON points into (see
inside/codec.py). Both lengths are checked against fixed caps before anything is allocated; a message with more
raw bytes than one frame holds comes split (inside/wire.py), its total checked against the budget for one value
(Limits.value_mb) before any of it is read, then read straight into one buffer, frame by checked frame. Every
read and every write waits at most until the current deadline (the sandbox may stop reading or writing at any
moment), and a failure kills the sandbox. Values are turned into objects by values.py.
"""

from __future__ import annotations

import builtins
import mmap
import os
import select
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .inside import wire

FRAME = wire.FRAME
MAX_JSON = wire.MAX_FRAME_JSON
MAX_BLOBS = wire.MAX_FRAME_BLOBS
READ_CHUNK = 1 << 20


def ready(fd: int, events: int, timeout: float) -> bool:
    """Whether `fd` is ready for `events` (select.POLLIN, POLLOUT) within `timeout` seconds. poll, not
    select: select cannot watch a descriptor numbered 1024 or more, which a busy web worker reaches."""
    poller = select.poll()
    poller.register(fd, events)
    return bool(poller.poll(max(0.0, timeout) * 1000))


def _buffer(size: int) -> memoryview:
    """Room for a message's raw bytes. A large one is mapped, not filled: memory is taken as its bytes arrive,
    so a sandbox that announces a size and sends nothing has made the grader hold nothing."""
    if size < READ_CHUNK:
        return memoryview(bytearray(size))
    return memoryview(mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS))


class SandboxFailure(Exception):
    """The sandbox stopped answering (timeout, crash, protocol violation); it has been killed."""


class StudentTimeout(SandboxFailure):
    pass


class ProtocolError(SandboxFailure):
    pass


class Channel:
    """One grading conversation with one sandbox; used by a single thread.

    `serve` answers the sandbox's own requests (a call of a test's function, a check); `encode` turns
    request arguments into message values, `decode` a request's reply into its value (values.py). All
    three are set by the owner, and `budget`: the most raw bytes one message may bring, either way
    (Limits.value_mb; the sandbox is told it as it starts, grading.start_ready).
    """

    def __init__(
        self,
        read_fd: int,
        write_fd: int,
        kill: Callable[[], None],
        grace: float,
        test_timeout: float,
        overall_deadline: float,
    ) -> None:
        self._read_fd, self._write_fd = read_fd, write_fd
        self.budget = MAX_BLOBS
        os.set_blocking(write_fd, False)
        self._kill, self._grace = kill, grace
        self.test_timeout = test_timeout
        self.overall_deadline = overall_deadline
        self._next_id = 0
        self._buffer = bytearray()
        self._deadline = overall_deadline  # of the request being answered now
        self._resumed: int | None = None  # id of the `resume` request while a snapshot has the pipes
        self.dead: str | None = None
        self.serve: Callable[[str, dict[str, Any], memoryview], Any] = lambda op, args, blob: None
        self.decode: Callable[[str, dict[str, Any], memoryview], Any] = lambda op, reply, blob: reply.get("ok")
        self.encode: Callable[[Any], tuple[Any, list[bytes]]] = lambda value: (value, [])

    # -- failing -------------------------------------------------------------------
    def fail(self, exc: SandboxFailure) -> SandboxFailure:
        """Kill the sandbox (once) and return the exception to raise."""
        if self.dead is None:
            self.dead = str(exc)
            self._kill()
        return exc

    # -- framing ---------------------------------------------------------------------
    def _send(self, msg: dict[str, Any], blobs: list[memoryview], deadline: float) -> None:
        for piece in wire.frames(msg, blobs, sum(memoryview(b).nbytes for b in blobs)):
            view = memoryview(piece)
            while view:
                try:  # the pipe has room almost always: write first, wait (bounded) only when it is full
                    view = view[os.write(self._write_fd, view[:READ_CHUNK]) :]
                    continue
                except BlockingIOError:
                    pass
                except OSError as e:
                    raise self.fail(SandboxFailure(f"student code crashed the sandbox ({e})")) from None
                wait = min(deadline, self.overall_deadline) - time.monotonic()
                if wait <= 0 or not ready(self._write_fd, select.POLLOUT, wait):
                    raise self.fail(StudentTimeout("the sandbox stopped reading the grader's requests"))

    def _wait_readable(self, deadline: float, timeout: float) -> None:
        wait = min(deadline, self.overall_deadline) - time.monotonic()
        if wait <= 0 or not ready(self._read_fd, select.POLLIN, wait):
            if time.monotonic() >= self.overall_deadline:
                raise self.fail(StudentTimeout("grading exceeded its overall time limit"))
            raise self.fail(StudentTimeout(f"student code did not finish within {timeout:g} s"))

    def _fill(self, size: int, deadline: float, timeout: float) -> None:
        """Read until the buffer holds `size` bytes (reading ahead is fine on this side)."""
        while len(self._buffer) < size:
            self._wait_readable(deadline, timeout)
            try:
                chunk = os.read(self._read_fd, max(size - len(self._buffer), READ_CHUNK))
            except OSError as e:
                raise self.fail(SandboxFailure(f"student code crashed the sandbox ({e})")) from None
            if not chunk:
                raise self.fail(SandboxFailure("student code crashed the sandbox (it exited)"))
            self._buffer += chunk

    def _fill_into(self, target: memoryview, deadline: float, timeout: float) -> None:
        """Fill `target` with the next bytes: those read ahead, then straight from the pipe (no copy)."""
        ahead = min(len(self._buffer), len(target))
        target[:ahead] = self._buffer[:ahead]
        del self._buffer[:ahead]
        target = target[ahead:]
        while target:
            self._wait_readable(deadline, timeout)
            try:
                count = os.readv(self._read_fd, [target])
            except OSError as e:
                raise self.fail(SandboxFailure(f"student code crashed the sandbox ({e})")) from None
            if not count:
                raise self.fail(SandboxFailure("student code crashed the sandbox (it exited)"))
            target = target[count:]

    def _take(self, size: int) -> bytearray:
        taken = self._buffer[:size]
        del self._buffer[:size]
        return taken

    def _recv(self, deadline: float, timeout: float) -> tuple[dict[str, Any], memoryview]:
        self._fill(FRAME.size, deadline, timeout)
        json_len, blob_len = FRAME.unpack(self._buffer[: FRAME.size])
        if json_len > MAX_JSON or blob_len > min(MAX_BLOBS, self.budget):
            raise self.fail(ProtocolError("the sandbox sent an oversized message"))
        self._fill(FRAME.size + json_len, deadline, timeout)
        del self._buffer[: FRAME.size]
        data, blob = self._take(json_len), _buffer(blob_len)
        self._fill_into(blob, deadline, timeout)
        try:
            msg = wire.loads(data)
        except (ValueError, RecursionError):
            raise self.fail(ProtocolError("the sandbox sent malformed data")) from None
        if not isinstance(msg, dict):
            raise self.fail(ProtocolError("the sandbox sent malformed data"))
        if wire.SPLIT in msg:
            blob = self._recv_split(msg.pop(wire.SPLIT), blob_len, deadline, timeout)
        return msg, blob

    def _recv_split(self, size: Any, first_blob_len: int, deadline: float, timeout: float) -> memoryview:
        """The raw bytes of a split message: its announced size checked against the budget before any is
        allocated, then read into one buffer frame by frame, each frame checked (raw bytes only, no more than
        announced: another message inside it is a protocol violation)."""
        if type(size) is not int or first_blob_len or not MAX_BLOBS < size:
            raise self.fail(ProtocolError("the sandbox split a message wrongly"))
        if size > self.budget:
            raise self.fail(ProtocolError("the sandbox announced a value larger than the grader's budget"))
        buffer = _buffer(size)
        done = 0
        while done < size:
            self._fill(FRAME.size, deadline, timeout)
            json_len, length = FRAME.unpack(self._take(FRAME.size))
            if json_len:
                raise self.fail(ProtocolError("the sandbox sent a message inside a split one"))
            if not 0 < length <= min(MAX_BLOBS, size - done):
                raise self.fail(ProtocolError("the sandbox split a message wrongly"))
            self._fill_into(buffer[done : done + length], deadline, timeout)
            done += length
        return buffer

    # -- requests ----------------------------------------------------------------------
    def hello(self, timeout: float) -> dict[str, Any]:
        """Wait for the runner's first message, proving the sandbox started."""
        return self._recv(time.monotonic() + timeout, timeout)[0]

    def _start(self, op: str, timeout: float, args: dict[str, Any]) -> tuple[int, float]:
        if self.dead is not None:
            raise SandboxFailure(self.dead)
        self._next_id += 1
        nodes, blobs = self.encode(args)
        deadline = time.monotonic() + timeout + self._grace
        self._send({"id": self._next_id, "op": op, "args": nodes, "timeout": timeout}, blobs, deadline)
        return self._next_id, deadline

    def request(self, op: str, timeout: float, **args: Any) -> Any:
        """Send a request and serve the sandbox's nested requests until its reply arrives.

        The deadline is timeout plus a grace period (the runner enforces `timeout` itself); time spent
        serving nested requests on this side does not count.
        """
        rid, deadline = self._start(op, timeout, args)
        return self.decode(op, *self._await(rid, deadline, timeout))

    def _await(self, rid: int, deadline: float, timeout: float) -> tuple[dict[str, Any], memoryview]:
        while True:
            msg, blob = self._recv(deadline, timeout)
            self._printed(msg.get("out"))
            if "re" not in msg:
                started = time.monotonic()
                self._answer(msg, blob, deadline)
                deadline += time.monotonic() - started
                continue
            if msg["re"] != rid:
                if msg["re"] == self._resumed:  # the main process answers `resume`: the snapshot is gone
                    raise self.fail(SandboxFailure("student code crashed the sandbox (it exited)"))
                raise self.fail(ProtocolError("the sandbox replied out of order"))
            if "err" in msg:
                err = msg["err"]
                if not (isinstance(err, list) and len(err) == 2 and all(isinstance(e, str) for e in err)):
                    raise self.fail(ProtocolError("the sandbox sent a malformed error"))
                error = student_exception(err[0][:200], err[1][:2000], timeout)
                if isinstance(error, StudentTimeout):  # what ran out of time may still be running (a fork
                    raise self.fail(error)  # bomb's children): the sandbox is replaced, as after a hang
                raise error
            return msg, blob

    def _printed(self, out: Any) -> None:
        """What student code printed during a test's call, printed here: a doctest compares it."""
        if out is None:
            return
        if type(out) is not str or len(out) > wire.MAX_OUTPUT:
            raise self.fail(ProtocolError("the sandbox sent malformed output"))
        sys.stdout.write(out)

    def _answer(self, msg: dict[str, Any], blob: memoryview, deadline: float) -> None:
        """Answer a request from the sandbox (a call of a test's function, an otter check)."""
        rid, op, args = msg.get("id"), msg.get("op"), msg.get("args")
        if type(rid) is not int or not isinstance(args, dict) or not isinstance(op, str):
            raise self.fail(ProtocolError("the sandbox sent a malformed request"))
        outer, self._deadline = self._deadline, deadline
        try:
            value = self.serve(op, args, blob)
            nodes, blobs = self.encode({"ok": value})
            reply = {"re": rid, **nodes}
        except SandboxFailure:
            raise
        except Exception as e:
            if self.dead is not None:
                raise
            reply, blobs = {"re": rid, "err": [type(e).__name__, str(e)[:2000]]}, []
        finally:
            self._deadline = outer
        self._send(reply, blobs, deadline)

    @contextmanager
    def handover(self, snapshot: int, timeout: float) -> Iterator[None]:
        """Talk to a snapshot: the main process hands it the pipes and waits until it exits."""
        rid, _ = self._start("resume", timeout, {"pid": snapshot})
        self._resumed = rid
        try:
            yield
            self.request("exit", timeout)
        finally:
            self._resumed = None
        self._await(rid, time.monotonic() + timeout + self._grace, timeout)


_BUILTIN_ERRORS = {
    name: cls for name, cls in vars(builtins).items() if isinstance(cls, type) and issubclass(cls, Exception)
}


class StudentCodeError(Exception):
    """Base of exceptions re-raised from student code, named after the student's exception type."""


_ERROR_TYPES: dict[str, type[Exception]] = {}
MAX_ERROR_TYPES = 256


def student_exception(type_name: str, message: str, timeout: float) -> Exception:
    """An exception whose type name matches the student's, so Otter's messages read the same.

    Builtin Exception subclasses are reused (tests may catch ValueError); other names get a
    StudentCodeError subclass, from a bounded cache. BaseException-only names (SystemExit...) never
    escape as such.
    """
    if type_name == "StudentTimeout":
        return StudentTimeout(f"student code did not finish within {timeout:g} s")
    cls = _BUILTIN_ERRORS.get(type_name)
    if cls is None:
        name = type_name if type_name.isidentifier() else "StudentCodeError"
        cls = _ERROR_TYPES.get(name)
        if cls is None:
            cls = type(name, (StudentCodeError,), {})
            if len(_ERROR_TYPES) < MAX_ERROR_TYPES:
                _ERROR_TYPES[name] = cls
    return cls(message)
