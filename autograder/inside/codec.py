"""Values as data, both ways: what can be rebuilt exactly travels as data, anything else as a reference.

Shared by the sandbox (encoding student values, decoding the grader's) and the grader (encoding its
values, decoding the sandbox's). Decoding is strict: every node is checked, and sizes, counts, depth and
itemsizes are checked BEFORE anything is allocated, so a hostile sandbox can make the grader allocate no
more than the message it sent, whose raw bytes are bounded by the receiver's budget for one value (Blobs'
limit; the grader's is Limits.value_mb, checked as a message announces its size: inside/wire.py). What a message
decodes to is bounded too, not only the message: every decoded piece counts against one budget per message
(bytes for raw data, however often a blob is referenced; elements for nodes, object-array items, the length of
a range...), and no value is built in a way whose cost the sender can make quadratic (a set whose elements all
share one hash) or that makes an ordinary use of it unbounded (a range of 10**12, int() of
Decimal('1e999999999')). A value the decoder would refuse on its own the encoder does not send (it becomes
{"$unsendable"}, saying why); only a message's total can exceed the budget.

A message is a JSON document plus one area of raw bytes; {"$b": [offset, length]} points into it.
A subclass of a data type (of int, list, DataFrame...) travels as its base type's data, read with the base
type's own methods: its overrides are student code and never reach the grader. Data nodes:
  None, bool, int, float (NaN/Infinity allowed), str; a list is a JSON array;
  {"$tuple": [...]}, {"$set": [...]}, {"$frozenset": [...]}, {"$dict": [[key, value], ...]},
  {"$bytes": blob}, {"$complex": [re, im]}, {"$range": [start, stop, step]},
  {"$date"|"$datetime"|"$time": isoformat}, {"$timedelta": [days, seconds, microseconds]},
  {"$decimal": text}, {"$fraction": [numerator, denominator]},
  {"$nd": {"dtype", "shape", "data": blob}} or {"$nd": {"dtype": "|O", "shape", "items": [...]}}, or for
  PACKED_TEXTS strings or more {"$nd": {"dtype": "|O", "shape", "texts": {"data": blob, "ends": blob}}},
  {"$npv": {"dtype", "data": blob}} (a numpy scalar),
  {"$index": ...}, {"$series": ...}, {"$frame": ...} (pandas objects),
  {"$unsendable": {"type", "reason"}}: a value of a data type that could not be sent as data;
  {"$ref": handle, "type", "module", "kind", "truth", "name", "global"}: an object that stays where it
  lives (a module's "name", a class's or function's "global" [module, qualified name] let the grader use its
  own import of it);
  {"$module": name}: a module of the grader's, which the sandbox imports itself;
  {"$tf": {...}}: a function of the grader handed to student code (see runner.py);
  {"$ti": handle}: an iterator of the grader handed to student code (its next() runs in the grader);
  {"$same": [handle, value]}: the student's own object of that handle, made equal to value (see refresh);
  {"$pdscalar": {"kind", ...}}: a pandas Timestamp, Timedelta, NaT or NA;
  {"$global": [module, qualified name]}: a function or class both sides import by name;
  {"$const": "Ellipsis"|"NotImplemented"}: the singleton itself;
  {"$sub": {"global": [module, qualified name], "value"}}: a library's subclass of a data type and its data;
  {"$dstable": {"labels", "columns", "formats"}}, {"$dsrow": {"labels", "values"}}: a datascience Table, Row.
"""

import math
import sys

MAX_BLOBS = 64 * 1024 * 1024
"""raw bytes one message may carry unless the receiver has said its own budget (Blobs' limit)"""
MAX_DEPTH = 64
MAX_ITEMS = 1_000_000
"""elements of one container sent as data; a larger container is sent as a reference (strings packed in raw
bytes, see PACKED_TEXTS, are bounded by the budget instead)"""
MAX_NODES = 2_000_000
"""elements a decoder accepts in one message: nodes, and the elements a range or empty array stands for (the
grader adds one per 8 raw bytes the message brought: values.py)"""
MAX_SHARED_HASH = 64
"""elements of a set, or keys of a dict, that may share one hash value: building it compares each with all the
others of its hash, so more would let a sender make it quadratic (60,000 ints that all hash to 0: 14 s)"""
MAX_EXPONENT = 4300
"""of a Decimal: as many digits as an int may have (int() of Decimal('1e2000000') takes a minute)"""
MAX_ITEMSIZE = 1 << 16
MAX_NDIM = 32
KINDS = "biufcmMUS"  # numpy dtype kinds sent as raw bytes (bool, ints, floats, complex, times, str, bytes)
_dtype_pattern = None  # compiled on first use: `re` is not imported at a sandbox's start


def _is_dtype(text):
    """Whether text is a numpy dtype string sent as raw bytes ('<f8', '|S16', '<M8[ns]')."""
    global _dtype_pattern
    if _dtype_pattern is None:
        _dtype_pattern = __import__("re").compile(r"[<>|=][biufcmMUS]\d{1,6}(\[\d*[a-zA-Z]{1,2}\])?")
    return _dtype_pattern.fullmatch(text) is not None


REF_KEYS = {"$ref", "type", "module", "kind", "truth", "name", "global"}
SCALARS = frozenset({type(None), bool, int, float, str})
"""types that are their own node (exact types: a subclass of one travels as its base value, see _base_type)"""


def _all_scalars(xs):
    return all(map(SCALARS.__contains__, map(type, xs)))


_HASH_SPREAD = frozenset({type(None), bool, str, bytes})
"""types whose hash values never pile up: str and bytes hashes are randomised per process"""
_HASH_MODULUS = sys.hash_info.modulus


def _crowded(xs):
    """Whether more than MAX_SHARED_HASH distinct elements of xs share one hash value (TypeError when one is
    unhashable), found in linear time. Strings, and ints below 2**61-1 (whose hash is their value), never pile
    up; otherwise the hash values are counted, in a table whose own hashes cannot pile up (an int's hash is
    itself modulo 2**61-1: at most 8 hash values share one). An object that recurs counts once: a message's
    NaNs decode to one float object, where the sandbox's set held many."""
    types = set(map(type, xs))
    if types <= _HASH_SPREAD | {int}:
        ints = xs if types == {int} else [x for x in xs if type(x) is int]
        if not ints or (-_HASH_MODULUS < min(ints) and max(ints) < _HASH_MODULUS):
            return False
    hashes = list(map(hash, xs))
    if len(set(hashes)) == len(hashes):
        return False
    counts = {}
    for h in {id(x): h for x, h in zip(xs, hashes, strict=True)}.values():  # a recurring object counts once
        counts[h] = counts.get(h, 0) + 1
    return max(counts.values()) > MAX_SHARED_HASH


class TooLarge(Exception):
    """The value cannot travel as data (too large, or not rebuildable); it travels as a reference."""


class OverBudget(TooLarge):
    """More raw bytes than the receiver takes in one message (`size` of them, past its `budget`)."""

    def __init__(self, size, budget):
        super().__init__(size, budget)
        self.size, self.budget = size, budget

    def reason(self, own_size=None):
        """Why the value did not cross, with its own size when known (else what the message had reached)."""
        size = self.size if own_size is None else own_size
        beside = "" if size > self.budget else ", with the values sent beside it,"
        return f"larger{beside} than the grader's budget for one value: {_mb(size)}, the budget is {_mb(self.budget)}"


def _mb(size):
    return f"{size / (1 << 20):,.1f} MB"


class Malformed(ValueError):
    """A message value that is not what this codec produces."""


class ByReference(Exception):
    """A library object that travels as data only in its plain form (a datascience Table with the library's
    own formats, not too large) is, this time, sent as a reference, as any object that is not data."""


class Blobs:
    """The raw-bytes area of one outgoing message, at most `limit` bytes (the receiver's budget)."""

    def __init__(self, limit=MAX_BLOBS):
        self.parts, self.size, self.limit = [], 0, limit

    def add(self, data):
        data = memoryview(data).cast("B")
        if self.size + data.nbytes > self.limit:
            raise OverBudget(self.size + data.nbytes, self.limit)
        node = {"$b": [self.size, data.nbytes]}
        self.parts.append(data)
        self.size += data.nbytes
        return node


class _Measured(Blobs):
    """Counts the raw bytes a value takes, keeping none of them (to say how far over the budget it is)."""

    def __init__(self):
        super().__init__(limit=float("inf"))

    def add(self, data):
        node = {"$b": [self.size, memoryview(data).nbytes]}
        self.size += node["$b"][1]
        return node


# == encoding ==================================================================================


class Encoder:
    """Turns values into nodes; `ref(x)` decides what a value that is not data becomes.

    A value of a data type (a list, an array, a DataFrame, or a subclass of one) travels as data or not at
    all: when encoding it fails (too large, or its library patched by student code), it becomes
    {"$unsendable": ...}, never a reference, whose methods would be student code."""

    def ref(self, x):
        raise TooLarge

    def unsendable(self, x, error):
        if isinstance(error, OverBudget):
            reason = error.reason(self.size_of(x))
        else:
            reason = "too large to send" if isinstance(error, TooLarge) else f"{type(error).__name__} while sending it"
        return {"$unsendable": {"type": str(getattr(type(x), "__qualname__", "?"))[:200], "reason": reason}}

    def size_of(self, x):
        """The raw bytes x takes as data (None if that cannot be found): encoded again, counting only."""
        measured = _Measured()
        try:
            self.encode(x, measured)
        except Exception:  # noqa: BLE001 - whatever student code made of it; the reason says less
            return None
        return measured.size

    def encode(self, x, blobs, depth=0):
        t = type(x)
        if t in SCALARS:
            return x
        encoder, as_base, library = _ENCODERS.get(t) or _library_encoder(t), None, None
        if encoder is None:
            as_base, encoder = _base_type(t)
            if encoder is None:
                return self.ref(x)
            library = _library_class(t, x)
        mark = (len(blobs.parts), blobs.size)
        try:
            if depth > MAX_DEPTH:
                raise TooLarge
            node = encoder(self, as_base(x) if as_base else x, blobs, depth + 1)
            return {"$sub": {"global": library, "value": node}} if library else node
        except Exception as error:  # noqa: BLE001 - whatever student code made of it
            del blobs.parts[mark[0] :]
            blobs.size = mark[1]
            return self.ref(x) if isinstance(error, ByReference) else self.unsendable(x, error)

    def items(self, xs, blobs, depth):
        if len(xs) > MAX_ITEMS:
            raise TooLarge
        if _all_scalars(xs):  # the common case (a list of token ids, of floats), without a call per element
            return list(xs)
        return [self.encode(v, blobs, depth) for v in xs]


def _hashed(xs):
    """The elements of a set or the keys of a dict, which the decoder refuses when too many share a hash."""
    if _crowded(xs):
        raise TooLarge
    return xs


def _encode_dict(encoder, x, blobs, depth):
    if len(x) > MAX_ITEMS:
        raise TooLarge
    _hashed(x.keys())
    return {"$dict": [[encoder.encode(k, blobs, depth), encoder.encode(v, blobs, depth)] for k, v in x.items()]}


def _encode_range(encoder, x, blobs, depth):
    if len(x) > MAX_ITEMS:  # as a list of that length would be
        raise TooLarge
    return {"$range": [x.start, x.stop, x.step]}


def _encode_decimal(encoder, x, blobs, depth):
    if not _small_exponent(x):
        raise TooLarge
    return {"$decimal": str(x)}


def _small_exponent(decimal):
    return not decimal.is_finite() or abs(decimal.as_tuple().exponent) <= MAX_EXPONENT


def _encode_datetime(tag):
    return lambda encoder, x, blobs, depth: {tag: x.isoformat()}  # a zone becomes its UTC offset


_ENCODERS = {
    **dict.fromkeys(SCALARS, lambda e, x, b, d: x),  # for subclasses, which _base_type makes plain first
    list: lambda e, x, b, d: e.items(x, b, d),
    tuple: lambda e, x, b, d: {"$tuple": e.items(x, b, d)},
    set: lambda e, x, b, d: {"$set": e.items(_hashed(x), b, d)},
    frozenset: lambda e, x, b, d: {"$frozenset": e.items(_hashed(x), b, d)},
    dict: _encode_dict,
    bytes: lambda e, x, b, d: {"$bytes": b.add(x)},
    complex: lambda e, x, b, d: {"$complex": [x.real, x.imag]},
    range: _encode_range,
    type(...): lambda e, x, b, d: {"$const": "Ellipsis"},
    type(NotImplemented): lambda e, x, b, d: {"$const": "NotImplemented"},
}
# Types of modules imported only when used (a value of such a type means its module is imported).
_STDLIB_ENCODERS = {
    ("datetime", "date"): lambda e, x, b, d: {"$date": x.isoformat()},
    ("datetime", "datetime"): _encode_datetime("$datetime"),
    ("datetime", "time"): _encode_datetime("$time"),
    ("datetime", "timedelta"): lambda e, x, b, d: {"$timedelta": [x.days, x.seconds, x.microseconds]},
    ("decimal", "Decimal"): _encode_decimal,
    ("fractions", "Fraction"): lambda e, x, b, d: {"$fraction": [x.numerator, x.denominator]},
}


def _base_type(t):
    """(conversion, encoder) for a subclass of a data type (a list, an ndarray, a DataFrame...), which
    travels as its base type's data, taken with the base type's own methods: what the subclass overrides
    (__eq__, shape, __iter__) never reaches the grader, whose comparisons then run on real data."""
    for base, convert in _BASE_TYPES:
        if issubclass(t, base):
            return convert, _ENCODERS[base]
    # getattr with a default: another thread may be importing numpy or pandas right now
    ndarray = getattr(sys.modules.get("numpy"), "ndarray", None)
    if ndarray is not None and issubclass(t, ndarray):
        return (lambda x: ndarray.view(x, ndarray)), _encode_array
    pandas = sys.modules.get("pandas")
    for name, encode in (("DataFrame", _encode_frame), ("Series", _encode_series), ("Index", _encode_index)):
        base = getattr(pandas, name, None)
        if base is not None and issubclass(t, base):
            return (lambda x, base=base: base(x, copy=False)), encode
    return None, None


def _library_class(t, x):
    """[module, qualified name] of a library's subclass of a data type (collections.Counter, a library's
    named tuple) whose value holds nothing but its base data: the other side may rebuild it as its own
    class of that name (the grader only for trusted packages; see `_decode_subclass`)."""
    module, qualname = getattr(t, "__module__", None), getattr(t, "__qualname__", None)
    if type(module) is not str or type(qualname) is not str or module == "__main__" or "<" in qualname:
        return None
    if getattr(x, "__dict__", None) or len(module) + len(qualname) > 200:  # state beyond the data
        return None
    found = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return [module, qualname] if found is t else None


_BASE_TYPES = (
    (int, int.__index__),
    (float, float.__float__),
    (str, str.__str__),
    (bytes, lambda x: memoryview(x).tobytes()),
    (list, lambda x: list(list.__iter__(x))),
    (tuple, lambda x: tuple(tuple.__iter__(x))),
    (dict, lambda x: dict(dict.items(x))),
    (set, lambda x: set(set.__iter__(x))),
    (frozenset, lambda x: frozenset(frozenset.__iter__(x))),
)


_DATA_TYPES = (type(None), type(...), type(NotImplemented), bool, int, float, str, bytes, complex, range, list, tuple,
               set, frozenset, dict)  # fmt: skip
_LIBRARY_DATA_TYPES = (
    ("numbers", "Number"), ("datetime", "date"), ("datetime", "time"), ("datetime", "timedelta"),
    ("decimal", "Decimal"), ("fractions", "Fraction"), ("numpy", "ndarray"), ("numpy", "generic"),
    ("pandas", "DataFrame"), ("pandas", "Series"), ("pandas", "Index"),
)  # fmt: skip


def sent_as_data(cls):
    """Whether values of cls travel as data (or as {"$unsendable"}), never as a reference: the class or one
    of its bases is a data type (numbers.Number counts every class registered with it). A reference that
    claims such a class lies."""
    if issubclass(cls, _DATA_TYPES):
        return True
    for module, name in _LIBRARY_DATA_TYPES:
        base = getattr(sys.modules.get(module), name, None)
        if base is not None and issubclass(cls, base):
            return True
    pandas = sys.modules.get("pandas")
    return pandas is not None and issubclass(cls, type(pandas.NA))  # Timestamp, Timedelta, NaT: datetime's


def _library_encoder(t):
    """Encoders for types of other modules, looked up only when that module is already imported."""
    module = getattr(t, "__module__", "") or ""
    stdlib = _STDLIB_ENCODERS.get((module, getattr(t, "__name__", "")))
    if stdlib is not None and getattr(sys.modules.get(module), t.__name__, None) is t:
        return stdlib
    numpy = sys.modules.get("numpy")
    if module.startswith("numpy") and numpy is not None:
        if t is numpy.ndarray:
            return _encode_array
        if isinstance(t, type) and issubclass(t, numpy.generic) and module == "numpy":
            return _encode_numpy_scalar
    if module.startswith("datascience"):
        return _datascience_encoder(t)
    pandas = sys.modules.get("pandas")
    if module.startswith("pandas") and pandas is not None:
        if t in (pandas.Timestamp, pandas.Timedelta, type(pandas.NaT), type(pandas.NA)):
            return _encode_pandas_scalar
        if t is pandas.DataFrame:
            return _encode_frame
        if t is pandas.Series:
            return _encode_series
        if t in _pandas_index_types(pandas):
            return _encode_index
    return None


def _encode_array(encoder, x, blobs, depth):
    if x.size == 0 and _empty_extent(x.shape) > MAX_ITEMS:
        raise TooLarge
    if x.dtype.kind == "O":
        if x.size > MAX_ITEMS and x.size * 8 > blobs.limit - blobs.size:  # crosses packed or not at all: 8 bytes
            raise OverBudget(blobs.size + x.size * 8, blobs.limit)  # of ends per string at least
        values = x.ravel(order="C").tolist()
        if len(values) >= PACKED_TEXTS and all(type(v) is str for v in values):
            return {"$nd": {"dtype": "|O", "shape": list(x.shape), "texts": _pack_texts(values, blobs)}}
        if len(values) > MAX_ITEMS:
            raise TooLarge
        items = [encoder.encode(v, blobs, depth) for v in values]
        return {"$nd": {"dtype": "|O", "shape": list(x.shape), "items": items}}
    if not _is_dtype(x.dtype.str) or x.dtype.itemsize > MAX_ITEMSIZE:
        raise TooLarge
    if x.nbytes > blobs.limit - blobs.size:  # before a copy of it is made contiguous
        raise OverBudget(blobs.size + x.nbytes, blobs.limit)
    numpy = sys.modules["numpy"]
    data = numpy.ascontiguousarray(x).reshape(-1).view(numpy.uint8)
    return {"$nd": {"dtype": x.dtype.str, "shape": list(x.shape), "data": blobs.add(data)}}


PACKED_TEXTS = 1000
"""strings in an object array (a column of names) from which they travel as raw UTF-8 bytes and their ends,
not in the JSON (capped at 8 MB): a column of millions of names then crosses, as many as the budget's raw bytes
hold (8 bytes of ends each, so not limited to MAX_ITEMS)"""


def _pack_texts(values, blobs):
    numpy = sys.modules["numpy"]
    encoded = [v.encode("utf-8", "surrogatepass") for v in values]
    ends = numpy.cumsum(numpy.fromiter(map(len, encoded), dtype="<i8", count=len(encoded)), dtype="<i8")
    return {"data": blobs.add(b"".join(encoded)), "ends": blobs.add(ends)}


def _unpack_texts(d, body, count):
    """The strings of a packed object array: `ends` must rise from 0 to the data's length, one per element (so
    their count is bounded by the message's raw bytes, 8 of them per string, and charged as elements)."""
    numpy = _module("numpy")
    raw_ends = d.bytes(_field(body, "ends"))
    if len(raw_ends) != 8 * count:
        raise Malformed("packed strings of the wrong count")
    data = bytes(d.bytes(_field(body, "data")))
    ends = numpy.frombuffer(raw_ends, dtype="<i8")
    starts = numpy.concatenate([numpy.zeros(1, dtype="<i8"), ends[:-1]]) if count else ends
    if count and (ends[-1] != len(data) or bool((ends < starts).any()) or starts[0] != 0):
        raise Malformed("packed strings out of range")
    d.charge(count)
    try:
        pairs = zip(starts.tolist(), ends.tolist(), strict=True)
        return [data[a:b].decode("utf-8", "surrogatepass") for a, b in pairs]
    except UnicodeDecodeError:
        raise Malformed("packed strings that are not text") from None


def _empty_extent(shape):
    """What an empty array stands for: iterating one of shape (10**18, 0) yields 10**18 empty rows."""
    return math.prod(n for n in shape if n)


def _encode_numpy_scalar(encoder, x, blobs, depth):
    if not _is_dtype(x.dtype.str):
        raise TooLarge
    numpy = sys.modules["numpy"]
    return {"$npv": {"dtype": x.dtype.str, "data": blobs.add(numpy.array(x).reshape(-1).view(numpy.uint8))}}


def _encode_pandas_scalar(encoder, x, blobs, depth):
    pandas = sys.modules["pandas"]
    if x is pandas.NaT or x is pandas.NA:
        return {"$pdscalar": {"kind": "NaT" if x is pandas.NaT else "NA"}}
    tz = getattr(x, "tz", None)
    return {"$pdscalar": {"kind": type(x).__name__, "value": int(x.value), "unit": str(x.unit),
                          "tz": None if tz is None else str(tz)}}  # fmt: skip


def _decode_pandas_scalar(body):
    pandas = _pandas()
    kind = _field(body, "kind", str)
    if kind in ("NaT", "NA"):
        return pandas.NaT if kind == "NaT" else pandas.NA
    value, unit, tz = _field(body, "value", int), _field(body, "unit", str), body.get("tz")
    if kind not in ("Timestamp", "Timedelta") or unit not in ("s", "ms", "us", "ns"):
        raise Malformed("bad pandas scalar")
    try:
        if kind == "Timedelta":
            return pandas.Timedelta(value, unit="ns").as_unit(unit)
        stamp = pandas.Timestamp(value, unit="ns").as_unit(unit)
        return stamp.tz_localize("UTC").tz_convert(_field(body, "tz", str)) if tz is not None else stamp
    except (TypeError, ValueError, OverflowError) as e:
        raise Malformed(f"bad {kind}: {type(e).__name__}") from None


def _pandas_index_types(pandas):
    return (pandas.Index, pandas.RangeIndex, pandas.MultiIndex, pandas.DatetimeIndex, pandas.TimedeltaIndex,
            pandas.CategoricalIndex)  # fmt: skip


def _encode_frame(encoder, x, blobs, depth):
    if x.attrs or len(x.columns) > MAX_ITEMS:
        raise TooLarge
    data = [_encode_values(encoder, x._ixs(i, axis=1)._values, blobs, depth) for i in range(len(x.columns))]
    return {"$frame": {"columns": _encode_index(encoder, x.columns, blobs, depth), "data": data,
                       "index": _encode_index(encoder, x.index, blobs, depth, of_data=bool(data))}}  # fmt: skip


def _encode_series(encoder, x, blobs, depth):
    if x.attrs:
        raise TooLarge
    return {"$series": {"data": _encode_values(encoder, x._values, blobs, depth),
                        "index": _encode_index(encoder, x.index, blobs, depth, of_data=True),
                        "name": _label(encoder, x.name, blobs, depth)}}  # fmt: skip


def _encode_index(encoder, x, blobs, depth, of_data=False):
    """of_data: x indexes data of its own length (a Series' or a DataFrame's rows), which bounds a RangeIndex;
    any other RangeIndex is limited as a range is."""
    pandas = sys.modules["pandas"]
    t = type(x)
    if t is pandas.RangeIndex:
        if not of_data and len(x) > MAX_ITEMS:
            raise TooLarge
        return {"$index": {"range": [x.start, x.stop, x.step], "name": _label(encoder, x.name, blobs, depth)}}
    if t is pandas.MultiIndex:
        return {"$index": {"levels": [_encode_index(encoder, level, blobs, depth) for level in x.levels],
                           "codes": [_encode_array(encoder, c, blobs, depth) for c in x.codes],
                           "names": [_label(encoder, n, blobs, depth) for n in x.names]}}  # fmt: skip
    if t not in _pandas_index_types(pandas):
        raise TooLarge
    return {"$index": {"data": _encode_values(encoder, x._values, blobs, depth),
                       "name": _label(encoder, x.name, blobs, depth)}}  # fmt: skip


def _label(encoder, label, blobs, depth):
    node = encoder.encode(label, blobs, depth)
    if type(node) is dict and "$ref" in node:
        raise TooLarge
    return node


def _encode_values(encoder, array, blobs, depth):
    """The values of a column or an index (`_values`: taken without pandas' missing-value machinery, which
    student code may have broken): a numpy array or one of pandas' own arrays."""
    pandas, numpy = sys.modules["pandas"], sys.modules["numpy"]
    t, arrays = type(array), pandas.arrays
    if t is numpy.ndarray:
        return _encode_array(encoder, array, blobs, depth)
    if t is arrays.NumpyExtensionArray:
        return _encode_array(encoder, array.to_numpy(), blobs, depth)
    if t in (arrays.DatetimeArray, arrays.TimedeltaArray):
        tz = getattr(array, "tz", None)
        return {"$pdarray": {"kind": t.__name__, "data": _encode_array(encoder, array._ndarray, blobs, depth),
                             "tz": None if tz is None else str(tz)}}  # fmt: skip
    if t is pandas.Categorical:
        return {"$pdarray": {"kind": "Categorical", "codes": _encode_array(encoder, array.codes, blobs, depth),
                             "categories": _encode_index(encoder, array.categories, blobs, depth),
                             "ordered": bool(array.ordered)}}  # fmt: skip
    if t in (arrays.IntegerArray, arrays.FloatingArray, arrays.BooleanArray):
        return {"$pdarray": {"kind": t.__name__, "dtype": str(array.dtype),
                             "data": _encode_array(encoder, array._data, blobs, depth),
                             "mask": _encode_array(encoder, array._mask, blobs, depth)}}  # fmt: skip
    if t is arrays.StringArray and array.dtype.storage == "python":
        items = [None if v is pandas.NA else v for v in numpy.asarray(array, dtype=object).tolist()]
        if not all(type(v) in (str, type(None)) for v in items):
            raise TooLarge
        if len(items) >= PACKED_TEXTS:  # packed as an object array's strings are, with which ones are missing
            missing = numpy.fromiter((v is None for v in items), dtype=bool, count=len(items))
            texts = numpy.array(["" if v is None else v for v in items], dtype=object)
            return {"$pdarray": {"kind": "StringArray", "texts": _encode_array(encoder, texts, blobs, depth),
                                 "missing": _encode_array(encoder, missing, blobs, depth)}}  # fmt: skip
        return {"$pdarray": {"kind": "StringArray", "items": items}}
    raise TooLarge


# == mutable values shared by a call ===========================================================
# A test and the student's code share the objects they pass each other under `otter run`: a student
# function that appends to a list or relabels a Table in place changes the caller's object. Here such a
# value crosses as a copy, so after a call the callee's new state of each mutable argument is sent back and
# the caller's copy is made equal to it in place; and a value the grader got from a student's global
# remembers it (its "origin"), so that passing it back to student code changes that global, not a copy.
# Only a call's own arguments are shared so (not values inside them), and a global only as `get` returns it.

MAX_ORIGINS = 1000
"""student globals a grading remembers the origin of; later ones cross as copies"""


def _mutable_types():
    numpy, pandas = sys.modules.get("numpy"), sys.modules.get("pandas")
    tables = sys.modules.get("datascience.tables")
    return (list, dict, set, bytearray, getattr(numpy, "ndarray", list), getattr(pandas, "DataFrame", list),
            getattr(pandas, "Series", list), getattr(tables, "Table", list))  # fmt: skip


def is_shared(x):
    """Whether x is a mutable value that a callee may change in place for its caller (exact types only: a
    subclass travels as its base data and could not be changed back into itself)."""
    return type(x) in _mutable_types()


def refresh(target, new):
    """Make target, in place, equal to new (a value of the same exact type just decoded); False when that
    is not possible (an array whose shape or dtype changed, a read-only one): target then stays as it was."""
    t = type(target)
    if type(new) is not t or not is_shared(target):
        return False
    if t is list or t is bytearray:
        target[:] = new
    elif t is dict or t is set:
        target.clear()
        target.update(new)
    elif t.__module__.startswith("numpy"):
        if target.shape != new.shape or target.dtype != new.dtype or not target.flags.writeable:
            return False
        target[...] = new
    elif t.__module__.startswith("pandas"):
        target._update_inplace(new)  # what pandas' own inplace=True does
    else:  # a datascience Table: its data, not the row accessors bound to itself
        for name in ("_columns", "_formats", "_num_rows"):
            setattr(target, name, getattr(new, name))
    return True


# == decoding ==================================================================================


class Decoder:
    """Nodes of one message back into values, checking everything; `Malformed` on anything unexpected.

    One decoder per message: what it decodes counts against the message's budget (`charge`), max_nodes
    elements and max_bytes of raw data (a blob referenced twice counts twice).
    Hooks: on_ref(node) for references, on_grader(tag, body) for the grader's functions and iterators and
    the student's own objects it names ($same; only the sandbox accepts these), on_module(name) for modules.
    """

    def __init__(
        self, blob, on_ref, on_module, on_grader=None, max_nodes=MAX_NODES, max_bytes=MAX_BLOBS, on_class=None
    ):
        self.blob, self.on_ref, self.on_module, self.on_grader = blob, on_ref, on_module, on_grader
        self.on_class = on_class or (lambda name: _resolve_global(self, name))
        self.nodes, self.max_nodes, self.nbytes, self.max_bytes = 0, max_nodes, 0, max_bytes

    def charge(self, elements=0, nbytes=0):
        self.nodes += elements
        self.nbytes += nbytes
        if self.nodes > self.max_nodes or self.nbytes > self.max_bytes:
            raise Malformed("value too large")

    def value(self, node, depth=0):
        self.charge(1)
        if depth > MAX_DEPTH:
            raise Malformed("value nested too deeply")
        t = type(node)
        if t in SCALARS:
            return node
        if t is list:
            return self.values(node, depth + 1)
        if t is not dict or not node:
            raise Malformed("unexpected node")
        tag = next(iter(node))
        if (tag == "$ref" and set(node) <= REF_KEYS) or (tag == "$unsendable" and len(node) == 1):
            return self.on_ref(node)
        if len(node) != 1 or tag not in _DECODERS:
            raise Malformed(f"unexpected node {str(tag)[:20]!r}")
        if tag in ("$tf", "$ti", "$same"):
            if self.on_grader is None:
                raise Malformed("unexpected grader object")
            return self.on_grader(tag, node[tag])
        return _DECODERS[tag](self, node[tag], depth + 1)

    def values(self, body, depth):
        """The elements of a JSON array, at `depth`."""
        items = _list(body)
        if depth <= MAX_DEPTH and _all_scalars(items):  # as the loop below would, without a call for each
            self.charge(len(items))
            return list(items)
        return [self.value(v, depth) for v in items]

    def bytes(self, node):
        offset, length = _ints(_field(node, "$b"), 2)
        if offset < 0 or length < 0 or offset + length > len(self.blob):
            raise Malformed("blob out of range")
        self.charge(nbytes=length)
        return self.blob[offset : offset + length]

    def items(self, length):
        """Charge what a range or an empty array stands for, limited as a list's length is."""
        if length > MAX_ITEMS:
            raise Malformed("too many elements")
        self.charge(length)


def _list(x, length=None):
    if type(x) is not list or (length is not None and len(x) != length):
        raise Malformed("expected a list")
    return x


def _ints(x, length=None):
    if not all(type(v) is int for v in _list(x, length)):
        raise Malformed("expected integers")
    return x


def _field(body, name, kind=None):
    if type(body) is not dict or name not in body:
        raise Malformed(f"missing {name}")
    value = body[name]
    if kind is not None and type(value) is not kind:
        raise Malformed(f"bad {name}")
    return value


def _make(cls, *args):
    try:
        return cls(*args)
    except (TypeError, ValueError, OverflowError, ArithmeticError) as e:
        raise Malformed(f"cannot rebuild {cls.__name__}: {type(e).__name__}") from None


def _decode_dict(d, body, depth):
    pairs = [_list(pair, 2) for pair in _list(body)]
    keys, values = [d.value(k, depth) for k, _ in pairs], [d.value(v, depth) for _, v in pairs]
    return dict(zip(_hashable(keys), values, strict=True))


def _decode_set(cls):
    return lambda d, body, depth: cls(_hashable(d.values(body, depth)))


def _hashable(xs):
    """xs, checked to make a set or dict keys in linear time."""
    try:
        crowded = _crowded(xs)
    except TypeError:
        raise Malformed("unhashable set element or key") from None
    if crowded:
        raise Malformed("too many set elements or keys share a hash")
    return xs


def _numbers(body, length):
    if type(body) is not list or len(body) != length or not all(type(v) in (int, float) for v in body):
        raise Malformed("expected numbers")
    return body


def _iso(name):
    def decode(d, body, depth):
        if type(body) is not str or len(body) > 64:
            raise Malformed("bad date")
        return _make(getattr(_module("datetime"), name).fromisoformat, body)

    return decode


def _module(name):
    __import__(name)  # waits if another thread is importing it (not importlib: 0.5 ms of a sandbox's start)
    return sys.modules[name]


def _decode_decimal(d, body, depth):
    if type(body) is not str or len(body) > 1000:
        raise Malformed("bad decimal")
    decimal = _make(_module("decimal").Decimal, body)
    if not _small_exponent(decimal):
        raise Malformed("decimal exponent too large")
    return decimal


def _decode_range(d, body, depth):
    r = _make(range, *_ints(body, 3))
    d.items(_make(len, r))
    return r


def _dtype(text):
    numpy = _module("numpy")
    if type(text) is not str or not _is_dtype(text):
        raise Malformed("bad dtype")
    dtype = numpy.dtype(text)
    if not 0 < dtype.itemsize <= MAX_ITEMSIZE or dtype.kind not in KINDS:
        raise Malformed("bad dtype")
    return dtype


def _decode_array(d, body, depth):
    numpy = _module("numpy")
    shape = _ints(_field(body, "shape"))
    if len(shape) > MAX_NDIM or any(n < 0 for n in shape):
        raise Malformed("bad shape")
    count = math.prod(shape)
    if count == 0:
        d.items(_empty_extent(shape))
    if _field(body, "dtype") == "|O":
        if "texts" in body:
            texts = _unpack_texts(d, _field(body, "texts"), count)
            array = numpy.empty(count, dtype=object)
            array[:] = texts
            return array.reshape(shape)
        if count > MAX_ITEMS:
            raise Malformed("object array too large")
        array = numpy.empty(count, dtype=object)
        items = _list(_field(body, "items"))
        if len(items) != count:
            raise Malformed("object array of the wrong size")
        for i, item in enumerate(items):
            array[i] = d.value(item, depth)
        return array.reshape(shape)
    dtype = _dtype(body["dtype"])
    data = d.bytes(_field(body, "data"))
    if count * dtype.itemsize != len(data):
        raise Malformed("array data of the wrong size")
    return numpy.frombuffer(data, dtype=dtype).reshape(shape).copy()


def _decode_numpy_scalar(d, body, depth):
    array = _decode_array(d, {"dtype": _field(body, "dtype"), "shape": [], "data": _field(body, "data")}, depth)
    return array[()]


def _decode_module(d, body, depth):
    if type(body) is not str or not all(part.isidentifier() for part in body.split(".")):
        raise Malformed("bad module name")
    return d.on_module(body)


def _decode_global(d, body, depth):
    module, name = _list(body, 2)
    if type(module) is not str or type(name) is not str:
        raise Malformed("bad global")
    value = d.on_module(module)
    for part in name.split("."):
        value = getattr(value, part)
    return value


def _resolve_global(d, name):
    """A class named by a trusted sender (the grader, to the sandbox): imported; None if it is not there."""
    try:
        return _decode_global(d, name, 0)
    except (Malformed, ImportError, AttributeError):
        return None


SUBCLASSABLE = (int, float, str, bytes, list, tuple, dict, set, frozenset)


def _decode_subclass(d, body, depth):
    """A library's subclass of a data type as that class when the receiver's `on_class` knows it (the
    grader: a public class of a trusted package), built by its own constructor from the decoded data; else
    the base value, as any other subclass."""
    value = d.value(_field(body, "value"), depth)
    cls, base = d.on_class(_field(body, "global")), type(value)
    if not isinstance(cls, type) or base not in SUBCLASSABLE or cls is base or not issubclass(cls, base):
        return value
    try:
        return cls(*value) if base is tuple and hasattr(cls, "_fields") else cls(value)
    except Exception:  # noqa: BLE001 - a class that is not built from its data alone
        return value


# -- pandas ---------------------------------------------------------------------------------


def _pandas():
    return _module("pandas")


def _decode_index(d, body, depth, of_data=False):
    """of_data: the index of a Series or DataFrame, whose data of the same length bounds a RangeIndex."""
    pandas = _pandas()
    name = d.value(body.get("name"), depth) if type(body) is dict else None
    if type(body) is dict and "range" in body:
        index = _make(pandas.RangeIndex, *_ints(body["range"], 3))
        if not of_data:
            d.items(_make(len, index))
        return _make(index.rename, name)
    if type(body) is dict and "levels" in body:
        levels = [_unique(_index_node(d, level, depth)) for level in _list(body["levels"])]
        codes = [_array_node(d, c, depth) for c in _list(body["codes"])]
        names = d.values(body.get("names", []), depth)
        if not (len(levels) == len(codes) == len(names)) or not levels:
            raise Malformed("bad MultiIndex")
        try:
            return pandas.MultiIndex(levels=levels, codes=codes, names=names, verify_integrity=True)
        except (TypeError, ValueError):
            raise Malformed("bad MultiIndex") from None
    try:
        return pandas.Index(_decode_values(d, _field(body, "data"), depth), name=name, copy=False)
    except (TypeError, ValueError):
        raise Malformed("bad Index") from None


def _index_node(d, node, depth, of_data=False):
    return _decode_index(d, _field(node, "$index"), depth + 1, of_data)


def _unique(index):
    """Categories or a MultiIndex level, checked to be unique as a set's elements are and marked so: pandas
    would otherwise build a hash table of its own to find out, whose hash function student values can defeat
    as well (40,000 int64 categories that all hash alike: 2 s, quadratic)."""
    try:
        unique = type(index) is not _pandas().MultiIndex and _is_unique(index)
    except (TypeError, ValueError):
        raise Malformed("bad categories or levels") from None
    if not unique:
        raise Malformed("categories or levels that are not unique")
    index._cache["is_unique"] = True  # what Index.is_unique caches (pandas.util.cache_readonly)
    return index


def _is_unique(index):
    """Whether index holds no value twice (missing values are all alike, as in pandas), found by sorting or,
    for values without an order (of mixed types), by hashing guarded as for a set."""
    if index.isna().sum() > 1:
        return False
    try:
        ordered = index.sort_values()
    except TypeError:
        items = index.tolist()
        return not _crowded(items) and len(set(items)) == len(items)
    return not (ordered[1:] == ordered[:-1]).any()


def _array_node(d, node, depth, numeric=True):
    array = _decode_array(d, _field(node, "$nd"), depth + 1)
    if numeric and array.dtype.kind == "O":
        raise Malformed("expected a numeric array")
    return array


def _decode_values(d, node, depth):
    if type(node) is not dict or "$pdarray" not in node:
        return _array_node(d, node, depth, numeric=False)
    pandas, body = _pandas(), node["$pdarray"]
    kind = _field(body, "kind", str)
    try:
        if kind == "Categorical":
            categories = _unique(_index_node(d, _field(body, "categories"), depth))
            codes = _array_node(d, _field(body, "codes"), depth)
            return pandas.Categorical.from_codes(codes, categories, ordered=_field(body, "ordered", bool))
        if kind in ("DatetimeArray", "TimedeltaArray"):
            values = pandas.array(_array_node(d, _field(body, "data"), depth))
            tz = body.get("tz")
            if tz is not None:
                values = values.tz_localize("UTC").tz_convert(_field(body, "tz", str))
            return values
        if kind == "StringArray":
            return pandas.array(_string_items(d, body, depth), dtype="string[python]")
        if kind in ("IntegerArray", "FloatingArray", "BooleanArray"):
            data, mask = _array_node(d, _field(body, "data"), depth), _array_node(d, _field(body, "mask"), depth)
            return getattr(pandas.arrays, kind)(data, mask)
    except (TypeError, ValueError, KeyError) as e:
        raise Malformed(f"bad {kind}: {type(e).__name__}") from None
    raise Malformed(f"unknown pandas array {kind[:40]!r}")


def _string_items(d, body, depth):
    """The strings of a StringArray, None where one is missing: listed, or packed with a mask of the missing."""
    if "texts" in body:
        texts = _array_node(d, _field(body, "texts"), depth, numeric=False)
        missing = _array_node(d, _field(body, "missing"), depth)
        if texts.ndim != 1 or missing.dtype.kind != "b" or missing.shape != texts.shape:
            raise Malformed("bad StringArray")
        items = texts.tolist()
        for i in _module("numpy").flatnonzero(missing).tolist():
            items[i] = None
    else:
        items = _list(_field(body, "items"))
        d.items(len(items))
    if not all(type(v) in (str, type(None)) for v in items):
        raise Malformed("bad StringArray")
    return items


def _decode_series(d, body, depth):
    pandas = _pandas()
    values = _decode_values(d, _field(body, "data"), depth)
    index = _index_node(d, _field(body, "index"), depth, of_data=True)
    if len(index) != len(values):
        raise Malformed("Series index of the wrong length")
    name = d.value(body.get("name"), depth)
    try:
        return pandas.Series(values, index=index, name=name, copy=False)
    except TypeError:
        raise Malformed("bad Series name") from None


def _decode_frame(d, body, depth):
    pandas = _pandas()
    nodes = _list(_field(body, "data"))
    columns = _index_node(d, _field(body, "columns"), depth)
    index = _index_node(d, _field(body, "index"), depth, of_data=bool(nodes))
    data = [_decode_values(d, column, depth) for column in nodes]
    if len(data) != len(columns) or any(len(column) != len(index) for column in data):
        raise Malformed("DataFrame of inconsistent shape")
    frame = pandas.DataFrame(dict(enumerate(data)), index=index, copy=False)
    frame.columns = columns
    return frame


# == datascience ================================================================================
# A Table is its columns (numpy arrays), their labels and their formats; a Row is a tuple with its table's
# labels. Both are rebuilt as real instances of the library's classes (so `type(t) == Table` holds and a
# Row handed back to student code has its methods), from data only: labels are strings, columns arrays,
# formats instances of the library's own formatter classes whose state is a few scalars (set on an object
# made without running any constructor). Anything else about them (a formatter of the student's, an
# attribute set on the table, a column that is not an array, a table over the receiver's budget) sends it as a
# reference.
TABLE_STATE = frozenset({"_columns", "_formats", "formatter", "_num_rows", "take", "exclude"})
ROW_CLASS_STATE = frozenset({"_table", "__module__", "__doc__"})
MAX_FORMAT_STATE = 16


def _datascience_encoder(t):
    tables = sys.modules.get("datascience.tables")
    table = getattr(tables, "Table", None)
    if table is None:
        return None
    if t is table:
        return _encode_table
    if t.__bases__ == (table.Row,) and set(vars(t)) <= ROW_CLASS_STATE and type(vars(t).get("_table")) is table:
        return _encode_row
    return None


def _encode_table(encoder, x, blobs, depth):
    formats = sys.modules["datascience.formats"]
    state = vars(x)
    columns = state.get("_columns")
    if (
        set(state) != TABLE_STATE
        or state["formatter"] is not formats.default_formatter
        or type(columns) is not (sys.modules["collections"].OrderedDict)
    ):
        raise ByReference
    labels, arrays = [_table_label(label) for label in columns], list(columns.values())
    if not all(type(a) is sys.modules["numpy"].ndarray for a in arrays):
        raise ByReference
    if sum(a.nbytes for a in arrays) > blobs.limit - blobs.size or len(labels) > MAX_ITEMS:
        raise ByReference
    try:
        nodes = [_encode_array(encoder, a, blobs, depth) for a in arrays]
    except TooLarge:  # a column that cannot cross as data (over the budget, of a dtype that is not data)
        raise ByReference from None
    return {"$dstable": {"labels": labels, "columns": nodes,
                         "formats": _encode_formats(state["_formats"], formats)}}  # fmt: skip


def _encode_formats(table_formats, formats):
    if type(table_formats) is not dict:
        raise ByReference
    encoded = []
    for label, formatter in table_formats.items():
        cls, state = type(formatter), getattr(formatter, "__dict__", None)
        if getattr(formats, cls.__name__, None) is not cls or not _format_state(cls, state):
            raise ByReference
        encoded.append([_table_label(label), cls.__name__, dict(state)])
    return encoded


def _format_state(cls, state):
    """Whether `state` is what a library formatter of class `cls` holds: a few public settings, scalars,
    none of them in place of one of its methods."""
    return (
        type(state) is dict
        and len(state) <= MAX_FORMAT_STATE
        and all(type(k) is str and k.isidentifier() and not k.startswith("_") for k in state)
        and all(type(v) in SCALARS and not callable(getattr(cls, k, None)) for k, v in state.items())
    )


def _table_label(label):
    """A column label as plain text: a str, or NumPy's str (what `select(make_array("a"))` leaves)."""
    if type(label) is not str and type(label) is not getattr(sys.modules.get("numpy"), "str_", str):
        raise ByReference
    return str.__str__(label)


def _encode_row(encoder, x, blobs, depth):
    labels = [_table_label(label) for label in type(x)._table._columns]
    if len(labels) != len(x):
        raise ByReference
    return {"$dsrow": {"labels": labels, "values": encoder.items(tuple(tuple.__iter__(x)), blobs, depth)}}


def _labels(body):
    labels = _list(_field(body, "labels"))
    if not all(type(label) is str for label in labels) or len(set(labels)) != len(labels):
        raise Malformed("bad labels")
    return labels


def _decode_table(d, body, depth):
    numpy, datascience = _module("numpy"), _module("datascience")
    labels, nodes = _labels(body), _list(_field(body, "columns"))
    if len(nodes) != len(labels):
        raise Malformed("bad table")
    columns = [d.value(node, depth) for node in nodes]
    if not all(type(c) is numpy.ndarray and c.ndim == 1 for c in columns) or len({len(c) for c in columns}) > 1:
        raise Malformed("bad table columns")
    table = datascience.tables.Table()
    for label, column in zip(labels, columns, strict=True):
        table.append_column(label, column)
    for entry in _list(_field(body, "formats")):
        label, name, state = _list(entry, 3)
        cls = getattr(datascience.formats, name, None) if type(name) is str else None
        formatter_class = isinstance(cls, type) and issubclass(cls, datascience.formats.Formatter)
        if label not in table._columns or not formatter_class or not _format_state(cls, state):
            raise Malformed("bad table format")
        formatter = object.__new__(cls)  # no constructor: its state is these scalars
        formatter.__dict__.update(state)
        table._formats[label] = formatter
    return table


def _decode_row(d, body, depth):
    tables = _module("datascience").tables
    labels, values = _labels(body), d.values(_list(_field(body, "values")), depth)
    if len(values) != len(labels):
        raise Malformed("bad row")
    row = type("Row", (tables.Table.Row,), {"_table": tables.Table(labels), "__module__": "datascience.tables"})
    return row(values)


CONSTANTS = {"Ellipsis": ..., "NotImplemented": NotImplemented}


def _decode_constant(body):
    """A singleton is itself on both sides (`answer != ...` tells an unanswered question, as in Otter)."""
    if type(body) is not str or body not in CONSTANTS:
        raise Malformed("unknown constant")
    return CONSTANTS[body]


_DECODERS = {
    "$tuple": lambda d, body, depth: tuple(d.values(body, depth)),
    "$set": _decode_set(set),
    "$frozenset": _decode_set(frozenset),
    "$dict": _decode_dict,
    "$bytes": lambda d, body, depth: bytes(d.bytes(body)),
    "$complex": lambda d, body, depth: complex(*_numbers(body, 2)),
    "$range": _decode_range,
    "$date": _iso("date"),
    "$datetime": _iso("datetime"),
    "$time": _iso("time"),
    "$timedelta": lambda d, body, depth: _make(_module("datetime").timedelta, *_ints(body, 3)),
    "$decimal": _decode_decimal,
    "$fraction": lambda d, body, depth: _make(_module("fractions").Fraction, *_ints(body, 2)),
    "$nd": _decode_array,
    "$npv": _decode_numpy_scalar,
    "$index": _decode_index,
    "$series": _decode_series,
    "$frame": _decode_frame,
    "$module": _decode_module,
    "$global": _decode_global,
    "$pdscalar": lambda d, body, depth: _decode_pandas_scalar(body),
    "$const": lambda d, body, depth: _decode_constant(body),
    "$sub": _decode_subclass,
    "$dstable": _decode_table,
    "$dsrow": _decode_row,
    "$tf": None,  # handled by Decoder.value
    "$ti": None,
    "$same": None,
}
