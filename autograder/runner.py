"""Sandbox side of the grader: runs notebook cells and serves calls from the trusted side.

Runs inside bubblewrap as an unprivileged uid with ``python -I``; stdlib only.
It speaks newline-delimited JSON over two inherited pipe fds (argv[1] read,
argv[2] write).  Everything here is untrusted from the grader's point of view:
student code shares this process and may tamper with it, so the trusted side
validates every message as plain data and never relies on this file's honesty.

Requests carry "id" and "op"; replies carry "re" and either "ok" (a value) or
"err" ([type name, message]).  Both sides may send requests while waiting for a
reply, so calls nest: a test calls a student function that calls back a
test-provided function that calls another student function, and so on.
"""

import base64
import builtins
import io
import json
import os
import resource
import signal
import sys
import time
import types

# Student code shares this process and may patch the builtins module (isinstance, len, ...). The runner
# and the json modules it speaks through keep private copies, so such a patch breaks only student code.
_BUILTINS = {k: v for k, v in vars(builtins).items() if not k.startswith("__")}
for _module in (sys.modules[__name__], json, json.decoder, json.encoder, json.scanner):
    vars(_module).update({k: v for k, v in _BUILTINS.items() if k not in vars(_module)})

MAX_MESSAGE = 16 * 1024 * 1024
MAX_TEXT = 2000
MAX_DEPTH = 100


class StudentTimeout(BaseException):
    """Raised inside student code when its time is up; BaseException so `except Exception` cannot hide it."""


class _Alarm:
    """A per-request soft time limit that only fires while student code runs."""

    armed = False
    fired = False

    @classmethod
    def handler(cls, signum, frame):
        if cls.armed:
            cls.armed = False
            raise StudentTimeout("student code did not finish in time")
        cls.fired = True

    @classmethod
    def run(cls, seconds, fn, *args, **kwargs):
        outer_armed, outer_left = cls.armed, signal.getitimer(signal.ITIMER_REAL)[0]
        start = time.monotonic()
        cls.armed = True
        signal.setitimer(signal.ITIMER_REAL, max(float(seconds), 0.001))
        try:
            return fn(*args, **kwargs)
        finally:
            cls.armed = False
            left = outer_left - (time.monotonic() - start) if outer_armed else 0
            signal.setitimer(signal.ITIMER_REAL, max(left, 0.001) if outer_armed else 0)
            cls.armed = outer_armed

    @classmethod
    def paused(cls, fn):
        """Stop the clock while waiting for the trusted side; raise afterwards if time had run out."""
        was_armed, cls.armed, cls.fired = cls.armed, False, False
        left = signal.setitimer(signal.ITIMER_REAL, 0)[0]
        try:
            return fn()
        finally:
            if was_armed:
                if cls.fired:
                    raise StudentTimeout("student code did not finish in time")
                signal.setitimer(signal.ITIMER_REAL, max(left, 0.001))
                cls.armed = True


class Channel:
    def __init__(self, read_fd, write_fd):
        self.reader = os.fdopen(read_fd, "rb", buffering=65536)
        self.write_fd = write_fd
        self.next_id = 0
        self.objects = {}  # handle -> student object
        self.handles = {}  # id(object) -> handle
        self.namespace = {}

    # -- framing -------------------------------------------------------------
    def send(self, msg):
        data = json.dumps(msg, separators=(",", ":")).encode() + b"\n"
        view = memoryview(data)
        while view:
            view = view[os.write(self.write_fd, view) :]

    def recv(self):
        line = self.reader.readline(MAX_MESSAGE + 1)
        if not line or not line.endswith(b"\n"):
            os._exit(0)  # trusted side went away or sent garbage
        return json.loads(line)

    def reply(self, rid, fn, *args, **kwargs):
        try:
            msg = {"re": rid, "ok": fn(*args, **kwargs)}
            data = json.dumps(msg, separators=(",", ":"))
            if len(data) > MAX_MESSAGE:
                raise ValueError("value too large to send to the grader")
        except BaseException as e:  # noqa: BLE001 - everything a student may raise is reported
            msg = {"re": rid, "err": [_type_name(e), _text(e)]}
        self.send(msg)

    def serve(self, until=None):
        """Handle requests until the reply to request `until` arrives (forever if None)."""
        while True:
            msg = self.recv()
            if "re" in msg:
                if msg["re"] == until:
                    return msg
                continue
            op = getattr(self, "op_" + msg.get("op", ""), None)
            if op is None:
                self.send({"re": msg.get("id"), "err": ["ProtocolError", "unknown op"]})
            else:
                args, timeout = msg.get("args", {}), msg.get("timeout", 5)
                self.reply(msg["id"], _Alarm.run, timeout, op, **args)

    def request(self, op, **args):
        """Call the trusted side; its exceptions are re-raised here."""
        self.next_id += 1
        rid = self.next_id

        def roundtrip():
            self.send({"id": rid, "op": op, "args": args})
            return self.serve(until=rid)

        msg = _Alarm.paused(roundtrip)
        if "err" in msg:
            name, text = msg["err"]
            exc = getattr(builtins, name, None)
            if not (isinstance(exc, type) and issubclass(exc, Exception)):
                exc = RuntimeError
            raise exc(text)
        return self.decode(msg["ok"])

    # -- values ----------------------------------------------------------------
    def handle(self, obj):
        key = id(obj)
        if key not in self.handles:
            self.handles[key] = len(self.objects)
            self.objects[len(self.objects)] = obj
        return self.handles[key]

    def encode(self, x, depth=0):
        """Plain data as itself (exact types only); anything else as a handle."""
        t = type(x)
        if depth > MAX_DEPTH:
            raise ValueError("value nested too deeply")
        if x is None or t in (bool, int, float, str):
            return x
        if t is list:
            return [self.encode(v, depth + 1) for v in x]
        if t is tuple:
            return {"$tuple": [self.encode(v, depth + 1) for v in x]}
        if t is dict and all(type(k) is str for k in x):
            return {"$d": {k: self.encode(v, depth + 1) for k, v in x.items()}}
        if t is TrustedFunction:
            return {"$t": x.handle}
        numpy = sys.modules.get("numpy")
        if numpy is not None:
            if t is numpy.ndarray and x.dtype.kind in "biufU":
                return {"$nd": x.tolist(), "dtype": x.dtype.str, "shape": list(x.shape)}
            if isinstance(x, numpy.generic) and t.__module__ == "numpy" and x.dtype.kind in "biufU":
                return x.item()
        return {"$s": self.handle(x), "type": _text(t.__qualname__, 200), "callable": callable(x)}

    def decode(self, x):
        if isinstance(x, list):
            return [self.decode(v) for v in x]
        if not isinstance(x, dict):
            return x
        if "$tuple" in x:
            return tuple(self.decode(v) for v in x["$tuple"])
        if "$d" in x:
            return {k: self.decode(v) for k, v in x["$d"].items()}
        if "$s" in x:
            return self.objects[x["$s"]]
        if "$t" in x:
            return TrustedFunction(self, x["$t"])
        if "$nd" in x:
            import numpy

            return numpy.array(x["$nd"], dtype=x["dtype"]).reshape(x["shape"])
        raise ValueError("malformed value")

    # -- operations requested by the trusted side --------------------------------
    def op_exec(self, source, name):
        exec(compile(source, name, "exec"), self.namespace)

    def op_get(self, name):
        return self.encode(self.namespace[name])

    def op_set(self, name, value):
        self.namespace[name] = self.decode(value)

    def op_delete(self, name):
        del self.namespace[name]

    def op_keys(self):
        return [k for k in self.namespace if type(k) is str]

    def op_call(self, handle, args, kwargs):
        return self.encode(self.objects[handle](*self.decode(args), **self.decode(kwargs)))

    def op_put(self, path, data):
        """Write a support file from the autograder zip into the working directory."""
        target = os.path.join("/tmp", path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(base64.b64decode(data))


class TrustedFunction:
    """A function living on the trusted side (e.g. a test's replacement for a student function)."""

    __slots__ = ("channel", "handle")

    def __init__(self, channel, handle):
        self.channel, self.handle = channel, handle

    def __call__(self, *args, **kwargs):
        ch = self.channel
        return ch.request("call", handle=self.handle, args=ch.encode(list(args)), kwargs=ch.encode(kwargs))

    def __repr__(self):
        return "<grader function>"


def _type_name(e):
    return _text(type(e).__name__, 200)


def _text(x, cap=MAX_TEXT):
    try:
        s = str(x)
    except BaseException:  # noqa: BLE001 - a student __str__ may raise anything
        s = "<unprintable>"
    return s if len(s) <= cap else s[:cap] + "..."


class _Sink(io.TextIOBase):
    """Student stdout/stderr: accepted and discarded, so printing costs nothing and never blocks."""

    def writable(self):
        return True

    def write(self, s):
        return len(s)


def _install_stubs(channel):
    """Stand-ins for otter, IPython's get_ipython and display so notebooks run unchanged."""

    class Notebook:
        def __init__(self, *args, **kwargs):
            pass

        def check(self, question, *args, **kwargs):
            channel.request("check", question=_text(question, 200))

        def __getattr__(self, name):
            return lambda *args, **kwargs: None

    otter = types.ModuleType("otter")
    otter.Notebook = Notebook
    sys.modules["otter"] = otter

    class Shell:
        def __getattr__(self, name):
            return lambda *args, **kwargs: None

    shell = Shell()
    builtins.get_ipython = lambda: shell
    builtins.display = lambda *args, **kwargs: None


def _limit(kind, value):
    resource.setrlimit(kind, (value, value))


def main():
    read_fd, write_fd, memory, cpu, nproc, fsize = map(int, sys.argv[1:7])
    _limit(resource.RLIMIT_AS, memory)
    _limit(resource.RLIMIT_CPU, cpu)
    _limit(resource.RLIMIT_NPROC, nproc)
    _limit(resource.RLIMIT_FSIZE, fsize)
    _limit(resource.RLIMIT_NOFILE, 256)
    _limit(resource.RLIMIT_CORE, 0)
    channel = Channel(read_fd, write_fd)
    os.set_inheritable(read_fd, False)
    os.set_inheritable(write_fd, False)
    main_module = types.ModuleType("__main__")
    main_module.__dict__["__builtins__"] = builtins
    channel.namespace = main_module.__dict__
    sys.modules["__main__"] = main_module
    _install_stubs(channel)
    sys.stdout = sys.stderr = _Sink()
    sys.stdin = io.StringIO()
    signal.signal(signal.SIGALRM, _Alarm.handler)
    channel.send({"hello": os.getpid()})
    channel.serve()


if __name__ == "__main__":
    main()
