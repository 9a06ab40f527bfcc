"""Sandbox side of the grader: runs notebook cells and serves the grader's requests.

Runs inside bubblewrap as an unprivileged uid (`python -I -m _autograder_inside.runner FDS LIMITS`). It
speaks framed messages over two inherited pipes: 8 bytes (JSON length, blob length), the JSON, the blobs (a
message with more raw bytes than one frame holds is split over several: wire.py).
Requests carry "id", "op" and "args"; replies carry "re" and "ok" (a value node, see codec.py) or "err"
([type name, message]). Both sides send requests while waiting for a reply, so calls nest: a test calls a
student function that calls back a function of the test, and so on.

Student code shares this process and may tamper with anything in it; the grader validates every message
and never relies on this file's honesty. Private copies of the builtins keep an honest runner working when
a notebook patches isinstance or len.

Snapshots: when the grader asks, this process forks a copy that waits, untouched, until the grader resumes
it (`resume`), so hidden tests can later run against the state at the moment of a check while the main
process never sees them.
"""

import _signal as signal  # not `signal`, whose enums import `enum`: milliseconds of every sandbox's start
import builtins
import gc
import io
import keyword
import math
import operator
import os
import sys
import types

from . import codec as codec_module
from . import wire
from .codec import MAX_BLOBS, MAX_ORIGINS, Blobs, Decoder, Encoder, is_shared, refresh, sent_as_data
from .startup import start

_BUILTINS = {k: v for k, v in vars(builtins).items() if not k.startswith("__")}
for _module in (sys.modules[__name__], codec_module, wire):
    vars(_module).update({k: v for k, v in _BUILTINS.items() if k not in vars(_module)})
_fork, _pipe, _read, _write, _close, _waitpid, _exit = (
    os.fork,
    os.pipe,
    os.read,
    os.write,
    os.close,
    os.waitpid,
    os._exit,
)
_readv = os.readv
_loads = wire.loads
MAX_OUTPUT = wire.MAX_OUTPUT

FRAME = wire.FRAME
MAX_JSON = wire.MAX_FRAME_JSON
MAX_TEXT = 2000
APPLIED = {"round": round, "abs": abs, "format": format, "neg": operator.neg, "pos": operator.pos,
           "invert": operator.invert, "trunc": math.trunc, "floor": math.floor, "ceil": math.ceil}  # fmt: skip
"""builtin protocols the grader may apply to an object held here (round(x, 5) in a test)"""


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
    def run(cls, seconds, fn, /, *args, **kwargs):
        outer_armed, outer_left = cls.armed, signal.getitimer(signal.ITIMER_REAL)[0]
        start = _monotonic()
        cls.armed = True
        signal.setitimer(signal.ITIMER_REAL, max(float(seconds), 0.001))
        try:
            return fn(*args, **kwargs)
        finally:
            cls.armed = False
            left = outer_left - (_monotonic() - start) if outer_armed else 0
            signal.setitimer(signal.ITIMER_REAL, max(left, 0.001) if outer_armed else 0)
            cls.armed = outer_armed

    @classmethod
    def paused(cls, fn):
        """Stop the clock while waiting for the grader; raise afterwards if time had run out."""
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

    @classmethod
    def off(cls):
        signal.setitimer(signal.ITIMER_REAL, 0)
        cls.armed = cls.fired = False


def _monotonic():
    return __import__("time").monotonic()


TooLarge = wire.TooLarge  # a reply whose JSON is too long for one message


class Handles(Encoder):
    """Objects that stay in the sandbox, known to the grader by handle; and values for the grader."""

    def __init__(self):
        self.objects = {}  # handle -> object
        self.ids = {}  # id(object) -> handle
        self.origins = 0

    def keep(self, x):
        """x's handle (kept alive here, so that its id is never another object's)."""
        key = id(x)
        if key not in self.ids:
            self.ids[key] = len(self.objects)
            self.objects[self.ids[key]] = x
        return self.ids[key]

    def ref(self, x):
        t = type(x)
        return {
            "$ref": self.keep(x),
            "type": _text(getattr(t, "__qualname__", "?"), 200),
            "module": _text(getattr(t, "__module__", "?"), 200),
            "kind": _kind(x),
            "truth": hasattr(t, "__bool__") or hasattr(t, "__len__"),
            **({"name": _text(x.__name__, 200)} if t is types.ModuleType else {}),
            **({"global": name} if callable(x) and (name := _global_name(x)) else {}),
        }

    def object(self, node):
        return self.objects[node["$ref"]]

    def origin(self, x):
        """A handle for a student's global sent as data, so that the grader can name it back (bounded)."""
        if id(x) not in self.ids:
            if self.origins >= MAX_ORIGINS:
                return None
            self.origins += 1
        return self.keep(x)


class _Shared:
    """A reply whose value or arguments the test shares with student code (see codec.refresh): a global
    that is mutable data carries its handle ("origin"), so that the test can pass it back to student code
    as itself; a call's mutable arguments are sent back ("after"), as student code left them."""

    __slots__ = ("value", "args", "kwargs")

    def __init__(self, value, args=None, kwargs=None):
        self.value, self.args, self.kwargs = value, args, kwargs

    def fields(self, codec, blobs):
        if self.args is None:
            origin = codec.origin(self.value) if is_shared(self.value) else None
            return {} if origin is None else {"origin": origin}
        changed = [*enumerate(self.args), *self.kwargs.items()]
        return {"after": [[key, codec.encode(arg, blobs)] for key, arg in changed if is_shared(arg)]}


def _global_name(x):
    """[module, qualified name] of a class or function its module holds under that name (datascience's
    Table): the grader may use its own import of it, as it does with a module."""
    module, qualname = getattr(x, "__module__", None), getattr(x, "__qualname__", None)
    if type(module) is not str or type(qualname) is not str or "<" in qualname or len(module) + len(qualname) > 200:
        return None
    found = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return [module, qualname] if found is x else None


def _kind(x):
    t = type(x)
    if t is types.ModuleType:
        return "module"
    if isinstance(x, type):
        return "class"
    if hasattr(t, "__next__"):
        return "iterator"
    return "function" if callable(x) else "object"


def _import(name):
    return __import__(name, fromlist=["_"])


class Channel:
    def __init__(self, read_fd, write_fd):
        self.read_fd, self.write_fd = read_fd, write_fd
        self.next_id = 0
        self.codec = Handles()
        self.grader_functions = {}  # handle -> stand-in
        self.namespace = {}
        self.seed = None  # (seed, variable) from the assignment's otter_config
        self.submission_name = None  # the file name otter run would see; None: the one the notebook expects
        self.snapshots = {}  # pid -> fd that wakes it
        self.is_snapshot = False
        self.budget = MAX_BLOBS  # raw bytes of one message the grader takes (op_budget)

    # -- framing -------------------------------------------------------------
    def send(self, msg, blobs=None):
        pieces = wire.frames(msg, blobs.parts if blobs else (), blobs.size if blobs else 0, MAX_JSON)
        for piece in pieces:
            view = memoryview(piece)
            while view:
                view = view[_write(self.write_fd, view) :]

    def recv(self):
        """One message, read exactly (never ahead: a snapshot may read the next one from the same pipe)."""
        json_len, blob_len = FRAME.unpack(self._read_exactly(FRAME.size))
        msg = _loads(self._read_exactly(json_len))
        if type(msg) is dict and wire.SPLIT in msg:  # its raw bytes follow in frames of their own
            size, done = msg.pop(wire.SPLIT), 0
            blob = memoryview(bytearray(size))
            while done < size:
                _, length = FRAME.unpack(self._read_exactly(FRAME.size))
                self._read_into(blob[done : done + length])
                done += length
            return msg, blob
        blob = memoryview(bytearray(blob_len))
        self._read_into(blob)
        return msg, blob

    def _read_into(self, target):
        """Fill `target` (a view of a buffer of the message's) straight from the pipe, exactly."""
        while target:
            count = _readv(self.read_fd, [target])
            if not count:
                _exit(0)  # the grader went away
            target = target[count:]

    def _read_exactly(self, size):
        chunks, left = [], size
        while left:
            chunk = _read(self.read_fd, min(left, 1 << 20))
            if not chunk:
                _exit(0)  # the grader went away
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def reply(self, rid, fn, /, *args, **kwargs):
        try:
            value = fn(*args, **kwargs)
            blobs, shared = Blobs(self.budget), {}
            if type(value) is _Shared:
                value, shared = value.value, value.fields(self.codec, blobs)
            msg = {"re": rid, "ok": self.codec.encode(value, blobs), **shared}
        except BaseException as e:  # noqa: BLE001 - everything a student may raise is reported
            return self.send({"re": rid, "err": [_text(type(e).__name__, 200), _text(e)], **_OUTPUT.take()})
        printed = _OUTPUT.take()
        try:
            self.send({**msg, **printed}, blobs)
        except TooLarge:  # too much for one message as data: no argument is sent back, and the value stays here
            # as a reference; a value of a data type crosses as data or not at all (its methods are student code)
            data = sent_as_data(type(value))
            kept = self.codec.unsendable(value, codec_module.TooLarge()) if data else self.codec.ref(value)
            self.send({"re": rid, "ok": kept, **printed})

    def serve(self, until=None):
        """Handle requests until the reply to request `until` arrives (forever if None)."""
        while True:
            msg, blob = self.recv()
            if "re" in msg:
                if msg["re"] == until:
                    return msg, blob
                continue
            if msg.get("op") == "exit" and self.is_snapshot:
                self.send({"re": msg.get("id"), "ok": None})
                _exit(0)
            op = getattr(self, "op_" + str(msg.get("op")), None)
            if op is None:
                self.send({"re": msg.get("id"), "err": ["ProtocolError", "unknown op"]})
                continue
            args = {k: self.decode(v, blob) for k, v in msg.get("args", {}).items()}
            capturing, _OUTPUT.capturing = _OUTPUT.capturing, msg.get("op") != "exec"
            try:
                self.reply(msg["id"], _Alarm.run, msg.get("timeout", 5), op, **args)
            finally:
                _OUTPUT.capturing = capturing

    def request(self, op, **args):
        """Call the grader; its exceptions are re-raised here."""
        self.next_id += 1
        rid = self.next_id
        blobs = Blobs(self.budget)
        nodes = {k: self.codec.encode(v, blobs) for k, v in args.items()}

        def roundtrip():
            self.send({"id": rid, "op": op, "args": nodes, **_OUTPUT.take()}, blobs)  # printed before the call
            return self.serve(until=rid)

        msg, blob = _Alarm.paused(roundtrip)
        if "err" in msg:
            name, text = msg["err"]
            exc = getattr(builtins, name, None)
            if not (isinstance(exc, type) and issubclass(exc, Exception)):
                exc = RuntimeError
            raise exc(text)
        return self.decode(msg["ok"], blob)

    def decode(self, node, blob):
        """A value from the grader (trusted: no size limits)."""
        decoder = Decoder(blob, self.codec.object, _import, max_nodes=1 << 62, max_bytes=1 << 62)
        decoder.on_grader = lambda tag, body: self.grader_object(tag, body, decoder.value)
        return decoder.value(node)

    def grader_object(self, tag, body, decode):
        if tag == "$tf":
            return self.grader_function(body, decode)
        if tag == "$ti":
            return _GraderIterator(self, body)
        handle, node = body  # $same: the student's own object, made equal to the test's copy of it
        value, original = decode(node), self.codec.objects.get(handle)
        return original if original is not None and refresh(original, value) else value

    def grader_function(self, body, decode):
        """The stand-in for a grader function, built once per function (its handle never changes; the
        grader describes it again to each snapshot, which may have been forked before it existed)."""
        function = self.grader_functions.get(body["handle"])
        if function is None:
            function = self.grader_functions[body["handle"]] = _grader_function(self, body, decode)
        return function

    # -- cells and names -----------------------------------------------------------
    def op_exec(self, source, name):
        if self.seed is not None and not source.startswith("%%"):
            _seed(self.namespace, *self.seed)
        try:
            code = compile(source, name, "exec")
        except SyntaxError:
            return _shell(self.namespace).run(source)  # IPython syntax: magics, !commands, x?
        exec(code, self.namespace)

    def op_get(self, name):
        return _Shared(self.namespace[name])

    def op_set(self, name, value):
        self.namespace[name] = value

    def op_delete(self, name):
        del self.namespace[name]

    def op_keys(self):
        return [k for k in self.namespace if type(k) is str]

    def op_submission(self, name):
        """The submission's file name, as `otter run` would see it (see _install_stubs' Notebook)."""
        self.submission_name = name

    def op_budget(self, value_bytes):
        """The grader's budget for one value (Limits.value_mb): a value with more raw bytes stays here, and the
        grader is told why (a message over it would be refused as hostile)."""
        self.budget = value_bytes

    def op_configure(self, seed, seed_variable):
        """Otter's intercell seeding: before every cell, seed numpy and random (or set seed_variable)."""
        self.seed = (seed, seed_variable)
        if seed_variable is None:
            __import__("numpy")  # otter run imports numpy in a first cell when it seeds

    def op_put(self, path, data, append=False):
        """Write a support file from the autograder zip into the working directory, or `append` a further
        piece of it (a large file comes in pieces)."""
        target = os.path.join("/tmp", path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "ab" if append else "wb") as f:
            f.write(data)

    def op_preload(self, modules):
        """Import libraries the notebook will import, before any student code (a sandbox started ahead)."""
        for name in modules:
            try:
                __import__(name)
            except Exception:  # noqa: BLE001 - the notebook's own import will say why
                pass

    def op_modules(self):
        """The top-level packages imported so far (what a sandbox started ahead may import first)."""
        return sorted({name.partition(".")[0] for name in list(sys.modules)})

    def op_printoptions(self):
        numpy = sys.modules.get("numpy")
        if numpy is None:
            return None
        return {k: v for k, v in numpy.get_printoptions().items() if type(v) in (int, float, str, bool, type(None))}

    # -- student objects held by handle ------------------------------------------------
    def op_call(self, ref, args, kwargs):
        return _Shared(ref(*args, **kwargs), args, kwargs)

    def op_attr(self, ref, name):
        return getattr(ref, name)

    def op_item(self, ref, key):
        return ref[key]

    def op_len(self, ref):
        return len(ref)

    def op_iter(self, ref):
        return iter(ref)

    def op_next(self, ref):
        return next(ref)

    def op_repr(self, ref):
        return _text(repr(ref), 100_000)

    def op_str(self, ref):
        return _text(str(ref), 100_000)

    def op_dir(self, ref):
        return [name for name in dir(ref) if type(name) is str]

    def op_isinstance(self, ref, cls):
        return bool(isinstance(ref, cls))

    def op_convert(self, ref, to):
        return {"float": float, "int": int, "complex": complex, "index": __import__("operator").index}[to](ref)

    def op_apply(self, ref, function, args):
        """A builtin protocol on the object (round, abs, format...), run here where its methods live."""
        if function not in APPLIED or type(args) is not list or len(args) > 1:
            raise TypeError(f"the grader asked for an unknown operation {str(function)[:40]!r}")
        return APPLIED[function](ref, *args)

    def op_asarray(self, ref):
        numpy = __import__("numpy")
        array = numpy.asarray(ref)
        return array if type(array) is numpy.ndarray else numpy.array(array)

    # -- snapshots ---------------------------------------------------------------------
    def op_snapshot(self):
        """Fork a copy of this process that waits untouched until `resume` (or exits on `drop`)."""
        wake_read, wake_write = _pipe()
        gc.freeze()  # the snapshot's garbage collector then leaves the shared pages alone (copy-on-write)
        pid = _fork()
        if pid != 0:
            gc.unfreeze()
        if pid == 0:
            _close(wake_write)
            for fd in self.snapshots.values():
                _close(fd)
            self.snapshots, self.is_snapshot = {}, True
            _Alarm.off()
            if _read(wake_read, 1) != b"g":
                _exit(0)
            self.serve()  # until the grader says `exit`
        _close(wake_read)
        self.snapshots[pid] = wake_write
        return pid

    def op_drop(self, pid):
        _close(self.snapshots.pop(pid))
        _waitpid(pid, 0)

    def op_resume(self, pid):
        """Hand the pipes to a snapshot until it exits; the grader talks to it meanwhile."""
        _Alarm.off()
        _write(self.snapshots.pop(pid), b"g")
        return _waitpid(pid, 0)[1]


def _grader_function(channel, body, decode):
    """A real Python function standing in for a function of the grader: the same name, signature,
    defaults, module, file and line as far as student code looks; calling it calls the grader.

    body["params"] holds [name, kind, default, node] per parameter (kind as inspect.Parameter.kind;
    default 0: none, 1: the value in node, 2: one that is not data, shown as <default>).
    """
    signature, positional, keywords, star, starstar, defaults = [], [], [], None, None, {}
    for name, kind, default, node in body["params"]:
        if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("__grader"):
            raise ValueError("bad parameter name")
        suffix = ""
        if default:
            defaults[name] = decode(node) if default == 1 else _OPAQUE_DEFAULT
            suffix = f"=__grader_defaults[{name!r}]"
        if kind in (0, 1):
            signature.append(name + suffix)
            positional.append(name)
        elif kind == 2:
            star = name
            signature.append("*" + name)
        elif kind == 3:
            if star is None and "*" not in signature:
                signature.append("*")
            signature.append(name + suffix)
            keywords.append(name)
        else:
            starstar = name
            signature.append("**" + name)
    kinds = [p[1] for p in body["params"]]
    if 0 in kinds:
        signature.insert(max(i for i, k in enumerate(kinds) if k == 0) + 1, "/")
    source = (
        f"def __grader_function({', '.join(signature)}):\n"
        f"    return __grader_call(({''.join(p + ', ' for p in positional)}), "
        f"{{{', '.join(f'{k!r}: {k}' for k in keywords)}}}, {star or '()'}, {starstar or '{}'})\n"
    )
    handle = body["handle"]
    namespace = {
        "__grader_defaults": defaults,
        "__grader_call": lambda *call: _call_grader(channel, handle, positional, defaults, *call),
    }
    exec(source, namespace)
    function = namespace["__grader_function"]
    name, qualname = _text(body["name"], 200), _text(body["qualname"], 400)
    function.__code__ = function.__code__.replace(
        co_name=name, co_qualname=qualname, co_filename=_text(body["file"], 400), co_firstlineno=int(body["line"])
    )
    function.__name__, function.__qualname__ = name, qualname
    function.__module__, function.__doc__ = body["module"], body["doc"]
    return function


class _GraderIterator:
    """An iterator of the grader's (a test may hand one to student code): next() is asked of the grader."""

    __slots__ = ("channel", "handle")

    def __init__(self, channel, handle):
        self.channel, self.handle = channel, handle

    def __iter__(self):
        return self

    def __next__(self):
        return self.channel.request("next", handle=self.handle)


class _OpaqueDefault:
    def __repr__(self):
        return "<default>"


_OPAQUE_DEFAULT = _OpaqueDefault()
_NO_DEFAULT = object()


def _call_grader(channel, handle, names, defaults, positional, keywords, star, starstar):
    """Call the grader's function. Trailing positional arguments and keyword-only arguments still at
    their default are not sent, so the grader's own default object applies."""
    args = list(positional)
    while args and not star and args[-1] is defaults.get(names[len(args) - 1], _NO_DEFAULT):
        args.pop()
    kwargs = {k: v for k, v in keywords.items() if v is not defaults.get(k, _NO_DEFAULT)}
    return channel.request("call", handle=handle, args=[*args, *star], kwargs={**kwargs, **starstar})


def _seed(namespace, seed, variable):
    if variable is not None:
        namespace[variable] = seed
        return
    sys.modules["numpy"].random.seed(seed)
    __import__("random").seed(seed)


class _Shell:
    """IPython's own InteractiveShell for cells that are not plain Python, created on first use."""

    instance = None

    def __init__(self, namespace):
        from IPython.core.interactiveshell import InteractiveShell
        from traitlets.config import Config

        config = Config()
        config.HistoryManager.enabled = False
        main = sys.modules["__main__"]
        self.shell = InteractiveShell.instance(config=config, user_module=main, user_ns=namespace)
        # A kernel's `%matplotlib inline` selects its display backend; here plots are drawn with Agg
        # (MPLBACKEND) and never shown, so it has nothing to do.
        self.shell.register_magic_function(lambda line: None, "line", "matplotlib")

    def run(self, source):
        result = self.shell.run_cell(source, store_history=False)
        error = result.error_before_exec or result.error_in_exec
        if error is not None:
            raise error


def _shell(namespace):
    if _Shell.instance is None:
        _Shell.instance = _Shell(namespace)
    return _Shell.instance


def _text(x, cap=MAX_TEXT):
    try:
        s = str(x)
    except BaseException:  # noqa: BLE001 - a student __str__ may raise anything
        s = "<unprintable>"
    return s if len(s) <= cap else s[:cap] + "..."


class _Sink(io.TextIOBase):
    """Student stderr, and stdout while a cell runs: accepted and discarded, so printing costs nothing and
    never blocks."""

    def writable(self):
        return True

    def write(self, s):
        return len(s)


class _Output(_Sink):
    """Student stdout. What a test's call prints goes to the grader with the next message (a doctest
    compares it, as under otter run: `>>> show(4)` of a function that prints); up to MAX_OUTPUT."""

    def __init__(self):
        self.capturing, self.parts, self.size = False, [], 0

    def write(self, s):
        if self.capturing and isinstance(s, str) and self.size < MAX_OUTPUT:
            text = str.__str__(s)[: MAX_OUTPUT - self.size]
            self.parts.append(text)
            self.size += len(text)
        return len(s)

    def take(self):
        """{"out": what was printed since the last message}, or {}."""
        if not self.parts:
            return {}
        text, self.parts, self.size = "".join(self.parts), [], 0
        return {"out": text}


_OUTPUT = _Output()


def _install_stubs(channel):
    """Stand-ins for otter's Notebook, IPython's get_ipython and display, so notebooks run unchanged."""

    class Notebook:
        def __init__(self, nb_path=None, *args, **kwargs):
            # otter run's Notebook reads its notebook: saved under another name, the submission is not there,
            # the notebook's `grader` is never made and none of its checks run (as under otter run)
            if nb_path and not _is_submission(channel, nb_path):
                raise FileNotFoundError(2, "No such file or directory", nb_path)

        def check(self, question, *args, **kwargs):
            channel.request("check", question=_text(question, 200))

        def __getattr__(self, name):
            return lambda *args, **kwargs: None

    otter = types.ModuleType("otter")
    otter.Notebook = Notebook
    sys.modules["otter"] = otter
    kernel_shell = _KernelShell(channel.namespace)
    builtins.get_ipython = lambda: kernel_shell
    builtins.display = lambda *args, **kwargs: None


def _is_submission(channel, nb_path):
    """Whether `nb_path`, from the grading directory, names the submission (whose file name the grader may
    have said; if not, it is the name the notebook expects)."""
    name = channel.submission_name
    return name is None or os.path.normpath(os.fspath(nb_path)) == name


class _KernelShell:
    """What get_ipython() returns. Code that only asks whether it runs in a Jupyter kernel (pandas does, at
    import, and chooses its display width by it) sees one, as under `otter run`; anything else is asked of
    IPython's real InteractiveShell, created on first use (importing IPython costs about half a second)."""

    kernel = True

    def __init__(self, namespace):
        self._namespace = namespace

    def __getattr__(self, name):
        return getattr(_shell(self._namespace).shell, name)


def main():
    serve_pipes(*start(2))


def serve_pipes(read_fd, write_fd):
    """Serve the grader on these pipes until it is done (a sandbox started by bubblewrap, or forked)."""
    channel = Channel(read_fd, write_fd)
    os.set_inheritable(read_fd, False)
    os.set_inheritable(write_fd, False)
    main_module = types.ModuleType("__main__")
    main_module.__dict__["__builtins__"] = builtins
    channel.namespace = main_module.__dict__
    sys.modules["__main__"] = main_module
    sys.path.insert(0, "")  # like a Jupyter kernel: modules next to the notebook can be imported
    _install_stubs(channel)
    sys.stdout, sys.stderr = _OUTPUT, _Sink()
    sys.stdin = io.StringIO()
    signal.signal(signal.SIGALRM, _Alarm.handler)
    channel.send({"hello": os.getpid()})
    channel.serve()


if __name__ == "__main__":
    main()
