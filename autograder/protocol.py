"""Trusted side of the sandbox protocol: strict decoding, stand-ins for student objects.

Messages are newline-delimited JSON (see runner.py).  Whatever arrives is
parsed with json.loads and validated into plain data only: None, bool, int,
float, str, lists, tuples, str-keyed dicts and numeric/str numpy arrays.
Anything else in the sandbox stays there and is represented here by a
StudentObject holding an integer handle; using it as a value (comparing it,
testing its truth) raises, which fails the test with "returned an object of
type X".  Callables from tests travel the other way as handles, so calls nest
in both directions.
"""

from __future__ import annotations

import builtins
import json
import os
import select
import time
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

MAX_MESSAGE = 16 * 1024 * 1024
MAX_DEPTH = 100
NUMPY_KINDS = "biufU"


class StudentCodeError(Exception):
    """Base of exceptions re-raised from student code, named after the student's exception type."""


class SandboxFailure(Exception):
    """The sandbox stopped answering (timeout, crash, protocol violation); it has been killed."""


class StudentTimeout(SandboxFailure):
    pass


_BUILTIN_ERRORS = {
    name: cls for name, cls in vars(builtins).items() if isinstance(cls, type) and issubclass(cls, Exception)
}
_student_error_types: dict[str, type[Exception]] = {}


def student_exception(type_name: str, message: str, timeout: float) -> Exception:
    """An exception whose type name matches the student's, so Otter's messages read the same.

    Builtin Exception subclasses are reused (tests may catch ValueError); other names get a
    StudentCodeError subclass.  BaseException-only names (SystemExit...) never escape as such.
    """
    if type_name == "StudentTimeout":
        return StudentTimeout(f"student code did not finish within {timeout:g} s")
    cls = _BUILTIN_ERRORS.get(type_name)
    if cls is None:
        name = type_name if type_name.isidentifier() else "StudentCodeError"
        cls = _student_error_types.setdefault(name, type(name, (StudentCodeError,), {}))
    return cls(message)


class ProtocolError(SandboxFailure):
    pass


class Channel:
    """One grading conversation with one sandbox; used by a single thread."""

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
        self._kill, self._grace = kill, grace
        self.test_timeout = test_timeout
        self._overall_deadline = overall_deadline
        self._buffer = bytearray()
        self._next_id = 0
        self._callables: list[Callable[..., Any]] = []
        self._callable_ids: dict[int, int] = {}
        self._proxies: dict[int, StudentObject] = {}
        self.dead: str | None = None
        self.on_check: Callable[[str], None] = lambda question: None

    # -- framing -------------------------------------------------------------
    def _fail(self, exc: SandboxFailure) -> SandboxFailure:
        if self.dead is None:
            self.dead = str(exc)
            self._kill()
        return exc

    def _send(self, msg: dict[str, Any]) -> None:
        data = json.dumps(msg, separators=(",", ":"), allow_nan=True).encode() + b"\n"
        view = memoryview(data)
        try:
            while view:
                _, writable, _ = select.select([], [self._write_fd], [], 30)
                if not writable:
                    raise self._fail(ProtocolError("student code stopped reading requests"))
                view = view[os.write(self._write_fd, view[:65536]) :]
        except (BrokenPipeError, OSError) as e:
            raise self._fail(SandboxFailure(f"student code crashed the sandbox ({e})")) from None

    def _recv(self, deadline: float, timeout: float) -> dict[str, Any]:
        while (end := self._buffer.find(b"\n")) < 0:
            if len(self._buffer) > MAX_MESSAGE:
                raise self._fail(ProtocolError("sandbox sent an oversized message"))
            wait = min(deadline, self._overall_deadline) - time.monotonic()
            ready = select.select([self._read_fd], [], [], wait)[0] if wait > 0 else []
            if not ready:
                if time.monotonic() >= self._overall_deadline:
                    raise self._fail(StudentTimeout("grading exceeded its overall time limit"))
                raise self._fail(StudentTimeout(f"student code did not finish within {timeout:g} s"))
            chunk = os.read(self._read_fd, 1 << 20)
            if not chunk:
                raise self._fail(SandboxFailure("student code crashed the sandbox (it exited)"))
            self._buffer += chunk
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        try:
            msg = json.loads(line)
        except (ValueError, RecursionError):
            raise self._fail(ProtocolError("sandbox sent malformed data")) from None
        if not isinstance(msg, dict):
            raise self._fail(ProtocolError("sandbox sent malformed data"))
        return msg

    def hello(self, timeout: float) -> dict[str, Any]:
        """Wait for the runner's first message, proving the sandbox started."""
        return self._recv(time.monotonic() + timeout, timeout)

    def request(self, op: str, timeout: float, **args: Any) -> Any:
        """Send a request and serve the sandbox's nested requests until its reply arrives.

        The deadline is timeout plus a grace period (the runner enforces `timeout` itself);
        time spent serving nested requests on this side does not count.
        """
        if self.dead is not None:
            raise SandboxFailure(self.dead)
        self._next_id += 1
        rid = self._next_id
        self._send({"id": rid, "op": op, "args": args, "timeout": timeout})
        deadline = time.monotonic() + timeout + self._grace
        while True:
            msg = self._recv(deadline, timeout)
            if "re" not in msg:
                started = time.monotonic()
                self._serve(msg)
                deadline += time.monotonic() - started
                continue
            if msg["re"] != rid:
                raise self._fail(ProtocolError("sandbox replied out of order"))
            if "err" in msg:
                err = msg["err"]
                if not (isinstance(err, list) and len(err) == 2 and all(isinstance(e, str) for e in err)):
                    raise self._fail(ProtocolError("sandbox sent a malformed error"))
                raise student_exception(err[0][:200], err[1][:2000], timeout)
            return self.decode(msg.get("ok"))

    def _serve(self, msg: dict[str, Any]) -> None:
        """Answer a request from the sandbox: a call of a test's callable, or an otter check."""
        rid, op, args = msg.get("id"), msg.get("op"), msg.get("args")
        if not isinstance(rid, int) or not isinstance(args, dict):
            raise self._fail(ProtocolError("sandbox sent a malformed request"))
        try:
            if op == "call":
                fn = self._callables[_int(args.get("handle"))]
                call_args = self.decode(args.get("args"))
                kwargs = self.decode(args.get("kwargs"))
                if not isinstance(call_args, list) or not isinstance(kwargs, dict):
                    raise ProtocolError("malformed call")
                reply: dict[str, Any] = {"re": rid, "ok": self.encode(fn(*call_args, **kwargs))}
            elif op == "check":
                self.on_check(str(args.get("question")))
                reply = {"re": rid, "ok": None}
            else:
                raise ProtocolError(f"unknown request {op!r}")
        except ProtocolError as e:
            raise self._fail(e) from None
        except Exception as e:
            if self.dead is not None:
                raise
            reply = {"re": rid, "err": [type(e).__name__, str(e)[:2000]]}
        self._send(reply)

    # -- values ----------------------------------------------------------------
    def decode(self, x: Any, depth: int = 0) -> Any:
        """Validate a JSON value from the sandbox into plain data or StudentObject handles."""
        if depth > MAX_DEPTH:
            raise self._fail(ProtocolError("value nested too deeply"))
        if x is None or type(x) in (bool, int, float, str):
            return x
        if type(x) is list:
            return [self.decode(v, depth + 1) for v in x]
        if type(x) is dict and len(x) >= 1:
            if "$d" in x and type(x["$d"]) is dict:
                return {k: self.decode(v, depth + 1) for k, v in x["$d"].items()}
            if "$tuple" in x and type(x["$tuple"]) is list:
                return tuple(self.decode(v, depth + 1) for v in x["$tuple"])
            if "$nd" in x:
                return self._decode_array(x)
            if "$s" in x and type(x["$s"]) is int:
                handle = x["$s"]
                if handle not in self._proxies:
                    kind = StudentFunction if x.get("callable") is True else StudentObject
                    self._proxies[handle] = kind(self, handle, str(x.get("type"))[:200])
                return self._proxies[handle]
            if "$t" in x and type(x["$t"]) is int and 0 <= x["$t"] < len(self._callables):
                return self._callables[x["$t"]]
        raise self._fail(ProtocolError("sandbox sent a value that is not plain data"))

    def _decode_array(self, x: dict[str, Any]) -> Any:
        import numpy as np

        try:
            dtype = np.dtype(str(x["dtype"]))
            if dtype.kind not in NUMPY_KINDS:
                raise ValueError(dtype)
            data = self.decode(x["$nd"])
            shape = [_int(n) for n in x["shape"]]
            return np.array(data, dtype=dtype).reshape(shape)
        except (TypeError, ValueError, KeyError, OverflowError, ProtocolError):
            raise self._fail(ProtocolError("sandbox sent a malformed array")) from None

    def encode(self, x: Any, depth: int = 0) -> Any:
        """Turn a trusted value into protocol data; callables become handles the sandbox can call."""
        if depth > MAX_DEPTH:
            raise ValueError("value nested too deeply to pass to student code")
        if x is None or type(x) in (bool, int, float, str):
            return x
        if isinstance(x, StudentObject):
            return {"$s": x._handle}
        if isinstance(x, str):
            return str(x)
        if isinstance(x, bool):
            return bool(x)
        if isinstance(x, int):
            return int(x)
        if isinstance(x, float):
            return float(x)
        if isinstance(x, list):
            return [self.encode(v, depth + 1) for v in x]
        if isinstance(x, tuple):
            return {"$tuple": [self.encode(v, depth + 1) for v in x]}
        if isinstance(x, dict) and all(isinstance(k, str) for k in x):
            return {"$d": {str(k): self.encode(v, depth + 1) for k, v in x.items()}}
        if type(x).__module__ == "numpy":
            if hasattr(x, "dtype") and x.dtype.kind in NUMPY_KINDS:
                if x.ndim == 0:
                    return x.item()
                return {"$nd": x.tolist(), "dtype": x.dtype.str, "shape": list(x.shape)}
        if callable(x):
            if id(x) not in self._callable_ids:
                self._callable_ids[id(x)] = len(self._callables)
                self._callables.append(x)
            return {"$t": self._callable_ids[id(x)]}
        raise TypeError(f"cannot pass an object of type {type(x).__name__} to student code")


def _int(x: Any) -> int:
    if type(x) is not int:
        raise ProtocolError("expected an integer")
    return x


class StudentObject:
    """Stand-in for a non-plain student object: it can be handed back to the sandbox, never used as a value.

    Every use as a value (comparison, truth, arithmetic, length, iteration, indexing) fails the test, so a
    custom __eq__, __float__ or __len__ in student code can never take part in a trusted comparison.
    """

    __slots__ = ("_channel", "_handle", "_type")

    def __init__(self, channel: Channel, handle: int, type_name: str) -> None:
        self._channel, self._handle, self._type = channel, handle, type_name

    def _remote(self, op: str, **args: Any) -> Any:
        return self._channel.request(op, self._channel.test_timeout, handle=self._handle, **args)

    def _not_a_value(self, *args: Any) -> Any:
        raise TypeError(f"student code returned an object of type {self._type}")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __bool__ = _not_a_value
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _not_a_value
    __float__ = __int__ = __index__ = __contains__ = _not_a_value
    __len__ = __iter__ = __getitem__ = _not_a_value
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"<student object of type {self._type}>"


class StudentFunction(StudentObject):
    """Stand-in for a student callable: calling it runs the call in the sandbox."""

    __slots__ = ()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        ch = self._channel
        return self._remote("call", args=ch.encode(list(args)), kwargs=ch.encode(kwargs))


class StudentEnv(MutableMapping[str, Any]):
    """The student's globals as Otter's tests see them (`env` and named parameters)."""

    def __init__(self, channel: Channel) -> None:
        self._channel = channel

    def _request(self, op: str, **args: Any) -> Any:
        return self._channel.request(op, self._channel.test_timeout, **args)

    def __getitem__(self, name: str) -> Any:
        if not isinstance(name, str):
            raise KeyError(name)
        try:
            return self._request("get", name=name)
        except KeyError:
            raise KeyError(name) from None

    def __setitem__(self, name: str, value: Any) -> None:
        self._request("set", name=str(name), value=self._channel.encode(value))

    def __delitem__(self, name: str) -> None:
        self._request("delete", name=str(name))

    def __iter__(self) -> Iterator[str]:
        keys = self._request("keys")
        return iter([k for k in keys if isinstance(k, str)] if isinstance(keys, list) else [])

    def __len__(self) -> int:
        return sum(1 for _ in self)
