"""Student objects as the grader's tests see them.

Data (numbers, strings, containers, numpy arrays, pandas objects) is rebuilt here as real objects by
values.py. Everything else stays in the sandbox behind a StudentObject: attribute reads, calls, indexing,
length, iteration, repr and conversion to an array run there and come back as data or further references.
Comparing one or testing its truth never runs student code here: == is identity, ordering is a TypeError,
and truth is True only for types that define neither __bool__ nor __len__ (otherwise a TypeError), so a
custom __eq__ or __bool__ can never take part in a trusted comparison.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterator, MutableMapping
from typing import Any, Protocol

from .inside.codec import sent_as_data


class Values(Protocol):
    """What a reference asks of the codec that made it (values.Values, which imports this module)."""

    generation: int

    def request(self, op: str, **args: Any) -> Any: ...

    def call(self, ref: StudentObject, args: list[Any], kwargs: dict[str, Any]) -> Any: ...


READABLE_DUNDERS = {"__name__", "__qualname__", "__doc__", "__module__", "__wrapped__", "__self__", "__func__"}
MAX_REPR = 100_000


def _applied(function: str) -> Any:
    """A one-argument builtin protocol (abs(), math.floor()...) of a reference, run in the sandbox."""
    return lambda self: self._apply(function)


class StudentObject:
    """A reference to an object that stays in the sandbox."""

    __slots__ = ("_values", "_handle", "_generation", "_type", "_module", "_kind", "_truth", "__weakref__")

    def __init__(self, values: Values, node: dict[str, Any]) -> None:
        self._values, self._handle, self._generation = values, node["$ref"], values.generation
        self._type, self._module = str(node.get("type"))[:200], str(node.get("module"))[:200]
        self._kind, self._truth = str(node.get("kind")), node.get("truth") is not False

    def _remote(self, op: str, **args: Any) -> Any:
        return self._values.request(op, ref=self, **args)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__") and name not in READABLE_DUNDERS:
            raise AttributeError(name)  # protocol probes (numpy's __array_interface__...) are not forwarded
        return self._remote("attr", name=name)

    def __getitem__(self, key: Any) -> Any:
        return self._remote("item", key=key)

    def __len__(self) -> int:
        return _checked(self._remote("len"), int, "len()")

    def __iter__(self) -> Any:
        return self._remote("iter")

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        array = self._remote("asarray")
        return array if dtype is None else array.astype(dtype)

    def __float__(self) -> float:
        return _checked(self._remote("convert", to="float"), float, "float()")

    def __int__(self) -> int:
        return _checked(self._remote("convert", to="int"), int, "int()")

    def __index__(self) -> int:
        return _checked(self._remote("convert", to="index"), int, "an index")

    def __complex__(self) -> complex:
        return _checked(self._remote("convert", to="complex"), complex, "complex()")

    def __repr__(self) -> str:
        return _checked(self._remote("repr"), str, "repr()")[:MAX_REPR]

    def __str__(self) -> str:
        return _checked(self._remote("str"), str, "str()")[:MAX_REPR]

    def __round__(self, ndigits: Any = None) -> Any:
        return self._apply("round", *([] if ndigits is None else [ndigits]))

    __abs__, __neg__, __pos__ = _applied("abs"), _applied("neg"), _applied("pos")
    __invert__, __trunc__ = _applied("invert"), _applied("trunc")
    __floor__, __ceil__ = _applied("floor"), _applied("ceil")

    def __format__(self, spec: str) -> str:
        return _checked(self._apply("format", spec), str, "format()")[:MAX_REPR]

    def _apply(self, function: str, *args: Any) -> Any:
        """round(), abs(), format()... of the object: its own method runs in the sandbox, as under `otter
        run`; what it returns comes back as data or a reference."""
        return self._remote("apply", function=function, args=list(args))

    def __dir__(self) -> list[str]:
        names = self._remote("dir")
        return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []

    def __bool__(self) -> bool:
        if self._truth:
            raise TypeError(f"the grader does not test the truth of a student object of type {self._type}")
        return True

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    __hash__ = object.__hash__

    def __instancecheck__(self, instance: Any) -> bool:
        """isinstance(x, student_class): asked in the sandbox."""
        return _checked(self._values.request("isinstance", ref=instance, cls=self), bool, "isinstance()")

    @property
    def __class__(self) -> type:
        """The grader's own class of the same name when its module is imported here and it is a class held
        by reference (so that isinstance(table, Table) holds as it would under `otter run`), else
        StudentObject."""
        return _claimed_class(self._module, self._type) or type(self)


class Unsendable:
    """A value of a data type (a DataFrame, an array, a list...) that student code returned but that could
    not be sent as data: too large, or its library patched so that it cannot be read. No test can use it
    (a reference would let the student's methods answer for it)."""

    __slots__ = ("_type", "_reason")

    def __init__(self, node: dict[str, Any]) -> None:
        body = node["$unsendable"] if isinstance(node.get("$unsendable"), dict) else {}
        self._type, self._reason = str(body.get("type"))[:200], str(body.get("reason"))[:200]

    def _unusable(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"student code returned a {self._type} that could not be sent to the grader ({self._reason})")

    __getattr__ = __getitem__ = __iter__ = __len__ = __bool__ = __call__ = __array__ = _unusable
    __float__ = __int__ = __index__ = __complex__ = __lt__ = __le__ = __gt__ = __ge__ = _unusable
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __contains__ = _unusable

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"<a {self._type} that could not be sent: {self._reason}>"


class StudentCallable(StudentObject):
    """A student function, class or other callable: calling it runs the call in the sandbox."""

    __slots__ = ()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._values.call(self, list(args), kwargs)


class StudentIterator(StudentObject):
    """A student generator or iterator: next() runs in the sandbox."""

    __slots__ = ()

    def __iter__(self) -> StudentIterator:
        return self

    def __next__(self) -> Any:
        return self._remote("next")


def _claimed_class(module: str, qualname: str) -> type | None:
    """The class a reference claims, where that class really is held by reference: never one whose values
    travel as data (a reference claiming float or DataFrame lies, and would pass isinstance checks), nor a
    metaclass (`type`), nor an abstract class (never an object's own class: numbers.Real, Sequence).
    Looked up in the namespaces themselves, so no module __getattr__ (a lazy import) runs."""
    found: Any = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, "__dict__", {}).get(part)
    if not isinstance(found, type) or issubclass(found, type) or inspect.isabstract(found) or sent_as_data(found):
        return None
    return found


def _checked(value: Any, kind: type, what: str) -> Any:
    if type(value) is not kind and not (kind is float and type(value) is int):
        raise TypeError(f"student code returned a {type(value).__name__} for {what}")
    return value


class ModuleView:
    """The grader's own import of a module the student imported, with its stateful parts (numpy.random)
    left in the sandbox, so a test that seeds numpy's generator seeds the student's."""

    def __init__(self, module: Any, remote: StudentObject, remote_attributes: frozenset[str]) -> None:
        self._module, self._remote, self._remote_attributes = module, remote, remote_attributes

    def __getattr__(self, name: str) -> Any:
        if name in self._remote_attributes:
            return getattr(self._remote, name)
        return getattr(self._module, name)

    def __repr__(self) -> str:
        return repr(self._module)


class StudentEnv(MutableMapping[str, Any]):
    """The student's globals for exception-based tests (`env` and the named parameters)."""

    def __init__(self, values: Values) -> None:
        self._values = values

    def __getitem__(self, name: str) -> Any:
        if not isinstance(name, str):
            raise KeyError(name)
        try:
            return self._values.request("get", name=name)
        except KeyError:
            raise KeyError(name) from None

    def __setitem__(self, name: str, value: Any) -> None:
        self._values.request("set", name=str(name), value=value)

    def __delitem__(self, name: str) -> None:
        self._values.request("delete", name=str(name))

    def names(self) -> list[str]:
        keys = self._values.request("keys")
        return [k for k in keys if isinstance(k, str)] if isinstance(keys, list) else []

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())


class StudentNamespace(dict):
    """The student's globals for one doctest (an OK-format test case), which needs a real dict: a name the
    doctest does not define itself is fetched from the sandbox at each lookup. As in Otter, which runs
    each doctest on a copy of the student's globals, what a doctest assigns stays in its namespace."""

    def __init__(self, values: Values) -> None:
        super().__init__()
        self._env = StudentEnv(values)

    def __missing__(self, name: str) -> Any:
        return self._env[name]

    def get(self, name: Any, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default

    # `name in vars()`, `globals()`, `dir()`: the doctest's own names and the student's, as Otter's copy of
    # the student's globals would answer
    def __contains__(self, name: object) -> bool:
        return dict.__contains__(self, name) or name in self._env.names()

    def keys(self) -> list[str]:  # type: ignore[override]
        return list(dict.fromkeys([*dict.keys(self), *self._env.names()]))

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())
