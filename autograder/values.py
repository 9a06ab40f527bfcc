"""The grader's side of the value codec (inside/codec.py): the sandbox's values as objects here, and the
grader's values (data, functions, modules) as messages to the sandbox.

A module the student imported becomes the grader's own import of it when it is on the allow-list below
(pure libraries); modules with state the notebook depends on (random generators, pyplot's current
figure) and everything else stay in the sandbox.
"""

from __future__ import annotations

import builtins
import importlib
import inspect
import sys
from collections.abc import Callable
from typing import Any

from .inside.codec import (
    MAX_BLOBS,
    MAX_NODES,
    MAX_ORIGINS,
    Blobs,
    Decoder,
    Encoder,
    Malformed,
    OverBudget,
    TooLarge,
    is_shared,
    refresh,
)
from .protocol import Channel, ProtocolError
from .remote import ModuleView, StudentCallable, StudentIterator, StudentObject, Unsendable

TRUSTED_MODULES = frozenset(
    "bisect cmath collections copy datascience datetime decimal fractions functools heapq itertools json math "
    "numbers numpy operator pandas re scipy sklearn statistics statsmodels string textwrap typing".split()
)
STATEFUL = {"numpy": frozenset({"random"})}  # attributes of a trusted module that stay in the sandbox
MAX_HANDLE = 1 << 60
"""handles are counted up from 0 by the runner; below 2**61-1, an int's hash is itself, so no two collide
in the table of proxies"""
MAX_ORIGIN_BYTES = 64 * 1024 * 1024
"""of the copies of student globals kept here with their origin (the oldest are forgotten first)"""


class Values(Encoder):
    """Encoding and decoding for one grading; proxies belong to the process they came from."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.generation = 0
        self._proxies: dict[int, StudentObject] = {}
        self._grader_objects: list[Any] = []  # functions and iterators the sandbox may call, by handle
        self._handles: dict[int, int] = {}
        self._described: set[int] = set()  # functions whose description this process has received
        self._origins: dict[int, tuple[Any, int, int]] = {}  # id(copy) -> (copy, handle, size): see remember
        self._origin_bytes = 0
        self.on_check: Callable[[str], None] = lambda question: None
        channel.encode, channel.decode, channel.serve = self.encode_args, self.decode_reply, self.serve

    def new_peer(self) -> None:
        """The channel now talks to another process (a snapshot): references from before are not valid."""
        self.generation += 1
        self._proxies.clear()
        self._described.clear()
        self._origins.clear()
        self._origin_bytes = 0

    def request(self, op: str, **args: Any) -> Any:
        return self.channel.request(op, self.channel.test_timeout, **args)

    def call(self, ref: StudentObject, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """Call student code. Its mutable arguments are shared as under `otter run`: a copy of a student's
        global crosses as that global itself, and what the call left in each comes back into the
        caller's object (inside/codec.py, "mutable values shared by a call")."""
        value, after = self.request(
            "call", ref=ref, args=list(map(self._shared, args)), kwargs={k: self._shared(v) for k, v in kwargs.items()}
        )
        for key, state in after:
            target = args[key] if type(key) is int and 0 <= key < len(args) else kwargs.get(key, _NONE)
            refresh(target, state)
        return value

    def _shared(self, x: Any) -> Any:
        origin = self._origins.get(id(x))
        return _Same(x, origin[1]) if origin is not None and origin[0] is x else x

    def _remember(self, copy: Any, handle: Any, size: int) -> None:
        """Keep a copy of a student's global with its handle, within MAX_ORIGINS and MAX_ORIGIN_BYTES."""
        if type(handle) is not int or not 0 <= handle < MAX_HANDLE or not is_shared(copy):
            return
        self._origins[id(copy)] = (copy, handle, size)
        self._origin_bytes += size
        while len(self._origins) > MAX_ORIGINS or self._origin_bytes > MAX_ORIGIN_BYTES:
            self._origin_bytes -= self._origins.pop(next(iter(self._origins)))[2]

    # -- the sandbox's values here -------------------------------------------------------------
    def decode(self, node: Any, blob: memoryview) -> Any:
        return self.decode_all([node], blob)[0]

    def decode_all(self, nodes: list[Any], blob: memoryview, decoder: Decoder | None = None) -> list[Any]:
        """Values of one message, within one budget (see Decoder)."""
        decoder = decoder or self._decoder(blob)
        try:
            return [decoder.value(node) for node in nodes]
        except (Malformed, RecursionError) as e:
            raise self.channel.fail(ProtocolError(f"the sandbox sent a malformed value ({e})")) from None

    def decode_reply(self, op: str, reply: dict[str, Any], blob: memoryview) -> Any:
        """The value of a reply to `op`; for a call, also [(argument position or name, its new state)]."""
        after = reply.get("after", [])
        well_formed = type(after) is list and all(
            type(entry) is list and len(entry) == 2 and type(entry[0]) in (int, str) for entry in after
        )
        if not well_formed or (after and op != "call") or ("origin" in reply and op != "get"):
            raise self.channel.fail(ProtocolError("the sandbox sent a malformed reply"))
        decoder = self._decoder(blob)
        value, *states = self.decode_all([reply.get("ok"), *(node for _, node in after)], blob, decoder)
        if op == "get" and "origin" in reply:
            self._remember(value, reply["origin"], decoder.nbytes + 8 * decoder.nodes)
        return (value, [(key, state) for (key, _), state in zip(after, states, strict=True)]) if op == "call" else value

    def _decoder(self, blob: memoryview) -> Decoder:
        """A decoder for one message, whose budgets grow with its raw bytes (already checked against the
        channel's budget): as many bytes as it brought, and an element more per 8 of them (each packed string
        has 8 bytes of ends), beyond a small message's."""
        size = len(blob)
        max_bytes = max(size, min(MAX_BLOBS, self.channel.budget))
        return Decoder(blob, self._reference, self._module, max_nodes=MAX_NODES + size // 8, max_bytes=max_bytes,
                       on_class=_trusted_global)  # fmt: skip

    def _reference(self, node: dict[str, Any]) -> Any:
        if "$unsendable" in node:
            return Unsendable(node)
        handle = node["$ref"]
        if type(handle) is not int or not 0 <= handle < MAX_HANDLE:
            raise Malformed("bad reference")
        if node.get("kind") == "module" and isinstance(node.get("name"), str):
            return self._trusted_module(node["name"], self._proxy(node, StudentObject))
        own = _trusted_global(node.get("global")) if node.get("kind") in ("class", "function") else None
        if own is not None:
            return own
        kind = {"function": StudentCallable, "class": StudentCallable, "iterator": StudentIterator}
        return self._proxy(node, kind.get(node.get("kind"), StudentObject))

    def _proxy(self, node: dict[str, Any], cls: type[StudentObject]) -> StudentObject:
        proxy = self._proxies.get(node["$ref"])
        if proxy is None:
            proxy = self._proxies[node["$ref"]] = cls(self, node)
        return proxy

    def _trusted_module(self, name: str, remote: StudentObject) -> Any:
        """The grader's own import of a public module of a trusted package. Not a private one, nor tests:
        importing numpy.f2py.__main__ runs f2py on the grader's command line, a test module may raise
        pytest's Skipped (a BaseException) as it is imported."""
        parts = name.split(".")
        if parts[0] not in TRUSTED_MODULES or name in ("numpy.random",) or not all(map(_public, parts)):
            return remote
        try:
            module = importlib.import_module(name)
        except ImportError:
            return remote
        stateful = STATEFUL.get(name)
        return ModuleView(module, remote, stateful) if stateful else module

    def _module(self, name: str) -> Any:
        raise Malformed("the sandbox sends modules as references")

    # -- the grader's values to the sandbox -------------------------------------------------------
    def encode_args(self, args: dict[str, Any]) -> tuple[dict[str, Any], list[memoryview]]:
        blobs = Blobs(self.channel.budget)
        return {name: self.encode(value, blobs) for name, value in args.items()}, blobs.parts

    def encode(self, x: Any, blobs: Blobs, depth: int = 0) -> Any:
        if type(x) is _Same:
            return {"$same": [x.handle, super().encode(x.value, blobs, depth)]}
        return super().encode(x, blobs, depth)

    def unsendable(self, x: Any, error: Exception) -> Any:
        why = error.reason() if isinstance(error, OverBudget) else repr(error)
        raise TypeError(f"cannot pass this {type(x).__name__} to student code ({why})")

    def ref(self, x: Any) -> Any:
        """A grader value that is not data: a student object, a module, or a function."""
        if isinstance(x, StudentObject):
            if x._generation != self.generation:
                raise TypeError("a student object from another run of the notebook cannot be used here")
            return {"$ref": x._handle}
        if isinstance(x, ModuleView):
            return {"$module": x._module.__name__}
        if inspect.ismodule(x):
            return {"$module": x.__name__}
        if callable(x):
            return _importable(x) or {"$tf": self._function_body(x)}
        if hasattr(type(x), "__next__"):  # an iterator or generator: student code may only call next()
            return {"$ti": self._keep(x)}
        raise TypeError(f"cannot pass an object of type {type(x).__name__} to student code")

    def _keep(self, x: Any) -> int:
        """A handle for a grader object the sandbox may call (kept alive, so its id is never reused)."""
        handle = self._handles.get(id(x))
        if handle is None:
            handle = self._handles[id(x)] = len(self._grader_objects)
            self._grader_objects.append(x)
        return handle

    def _function_body(self, fn: Callable[..., Any]) -> dict[str, Any]:
        """How the sandbox builds its stand-in for fn (once per function: later only the handle counts)."""
        handle = self._keep(fn)
        if handle in self._described:
            return {"handle": handle}
        self._described.add(handle)
        code = getattr(fn, "__code__", None)
        return {
            "handle": handle,
            "name": str(getattr(fn, "__name__", "function")),
            "qualname": str(getattr(fn, "__qualname__", getattr(fn, "__name__", "function"))),
            "module": getattr(fn, "__module__", None) if isinstance(getattr(fn, "__module__", None), str) else None,
            "doc": fn.__doc__ if isinstance(fn.__doc__, str) else None,
            "params": self._parameters(fn),
            "file": code.co_filename if code else "<grader>",
            "line": code.co_firstlineno if code else 1,
        }

    def _parameters(self, fn: Callable[..., Any]) -> list[list[Any]]:
        try:
            parameters = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):
            return [["args", 2, 0, None], ["kwargs", 4, 0, None]]
        described = []
        for p in parameters:
            if p.default is inspect.Parameter.empty:
                described.append([p.name, int(p.kind), 0, None])
                continue
            try:
                described.append([p.name, int(p.kind), 1, _DataOnly().encode(p.default, _NoBlobs())])
            except TypeError:
                described.append([p.name, int(p.kind), 2, None])
        return described

    # -- requests from the sandbox --------------------------------------------------------------
    def serve(self, op: str, args: dict[str, Any], blob: memoryview) -> Any:
        if op == "call":
            handle = args.get("handle")
            if type(handle) is not int or not 0 <= handle < len(self._grader_objects):
                raise self.channel.fail(ProtocolError("the sandbox called an unknown function"))
            call_args, kwargs = self.decode_all([args.get("args"), args.get("kwargs")], blob)
            if not isinstance(call_args, list) or not isinstance(kwargs, dict):
                raise self.channel.fail(ProtocolError("malformed call"))
            return self._grader_objects[handle](*call_args, **kwargs)
        if op == "next":
            handle = args.get("handle")
            if type(handle) is not int or not 0 <= handle < len(self._grader_objects):
                raise self.channel.fail(ProtocolError("the sandbox asked for an unknown iterator"))
            return next(self._grader_objects[handle])
        if op == "check":
            question = args.get("question")
            if not isinstance(question, str):
                raise self.channel.fail(ProtocolError("malformed check"))
            return self.on_check(question)
        raise self.channel.fail(ProtocolError(f"unknown request {str(op)[:40]!r}"))


def _trusted_global(name: Any) -> Any:
    """The grader's own class or function that a student's reference names ([module, qualified name]), when
    its module is a public module of a trusted package (so `type(t) == Table` compares datascience's Table
    with itself) or it is a builtin class; None otherwise. Looked up in the namespaces themselves: no module
    __getattr__ runs."""
    if type(name) is not list or len(name) != 2 or not all(type(part) is str for part in name):
        return None
    module, qualname = name
    if module == "builtins":  # `type(x) == str`, an exception class: classes only, never eval or open
        found = vars(builtins).get(qualname)
        return found if isinstance(found, type) else None
    parts, names = module.split("."), qualname.split(".")
    stateful = STATEFUL.get(parts[0], frozenset())
    if parts[0] not in TRUSTED_MODULES or not all(map(_public, parts + names)) or stateful.intersection(parts + names):
        return None
    try:
        found: Any = importlib.import_module(module)
    except ImportError:
        return None
    for i, part in enumerate(names):
        if i and not isinstance(found, type):  # a qualified name goes through classes, never another module
            return None
        found = getattr(found, "__dict__", {}).get(part)
    return found if isinstance(found, type) or inspect.isroutine(found) else None


def _public(name: str) -> bool:
    return name.isidentifier() and not name.startswith("_") and name not in ("tests", "conftest")


class _Same:
    """A copy of a student's global, passed back to student code: there it is the global itself."""

    __slots__ = ("value", "handle")

    def __init__(self, value: Any, handle: int) -> None:
        self.value, self.handle = value, handle


_NONE = object()


class _DataOnly(Encoder):
    """Encodes a parameter's default only when it is small data; else the sandbox shows a placeholder."""

    def ref(self, x: Any) -> Any:
        raise TypeError("not data")


class _NoBlobs(Blobs):
    def add(self, data: Any) -> Any:
        raise TooLarge


def _importable(fn: Any) -> dict[str, list[str]] | None:
    """[module, qualified name] when the sandbox can import the same function or class itself (a
    builtin, numpy.mean, math.sqrt): the student then gets the real thing, not a stand-in."""
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname:
        return None
    if module.split(".")[0] not in TRUSTED_MODULES | {"builtins"}:
        return None
    found: Any = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return {"$global": [module, qualname]} if found is fn else None
