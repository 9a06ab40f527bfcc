"""The codec's fast path for lists of plain scalars keeps every limit of the general path; what a message
decodes to is bounded, not only the message (a budget per message, no value built in quadratic time)."""

from __future__ import annotations

import decimal
import enum
import functools
import operator
import random
import time

import numpy as np
import pandas as pd
import pytest

from autograder.inside.codec import MAX_DEPTH, Blobs, Decoder, Encoder, Malformed
from tests.autograder.conftest import Refs


def decoder(max_nodes: int = 1_000) -> Decoder:
    return Decoder(b"", on_ref=lambda node: ("ref", node["type"]), on_module=lambda name: name, max_nodes=max_nodes)


def nested(value, levels: int):
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(
    "value", [[], [None, True, 3, 2.5, float("inf"), "token"], (1, 2, 3), {1, 2}, [[1, 2], [3]], list(range(500))]
)
def test_data_makes_the_round_trip(value):
    node = Refs().encode(value, Blobs())
    assert decoder().value(node) == value


def test_a_subclass_of_a_scalar_travels_as_its_base_value():
    """Its overrides (an __eq__ that is always true) never reach the grader; an IntEnum member is its int."""

    class Sneaky(int):
        def __eq__(self, other):
            return True

    class Colour(enum.IntEnum):
        RED = 1

    class Label(str):
        pass

    decoded = decoder().value(Refs().encode([1, Sneaky(2), Colour.RED, Label("a"), 3], Blobs()))
    assert decoded == [1, 2, 1, "a", 3]
    assert [type(v) for v in decoded] == [int, int, int, str, int]


def test_every_element_counts_against_the_node_limit():
    assert decoder(max_nodes=10).value([7] * 9) == [7] * 9  # the list and its nine elements
    with pytest.raises(Malformed):
        decoder(max_nodes=10).value([7] * 10)
    with pytest.raises(Malformed):
        decoder(max_nodes=10).value([[7] * 5, [7] * 5])


def test_scalars_one_level_too_deep_are_refused():
    assert decoder().value(nested([1, 2], MAX_DEPTH - 1)) == nested([1, 2], MAX_DEPTH - 1)
    with pytest.raises(Malformed):
        decoder().value(nested([1, 2], MAX_DEPTH))
    with pytest.raises(Malformed):
        decoder().value(nested([], MAX_DEPTH + 1))


# -- bounded decoding: what a message decodes to, not only the message, is bounded -------------------------

MiB = 1 << 20
P = 2**61 - 1  # every multiple of it hashes to 0


def decode(node, blob: bytes = b""):
    return Decoder(memoryview(blob), on_ref=lambda node: node, on_module=lambda name: name).value(node)


@pytest.mark.parametrize(
    "reference",
    [{"$bytes": {"$b": [0, MiB]}}, {"$nd": {"dtype": "|u1", "shape": [MiB], "data": {"$b": [0, MiB]}}}],
    ids=["bytes", "array"],
)
def test_a_blob_counts_each_time_it_is_referenced(reference):
    """One 1 MiB blob referenced 1,200 times made the grader allocate 1.2 GB."""
    blob = bytes(MiB)
    assert len(decode([reference] * 64, blob)) == 64  # 64 MiB, as much as a message may carry
    with pytest.raises(Malformed):
        decode([reference] * 65, blob)


@pytest.mark.parametrize(
    "node",
    [
        {"$set": [k * P for k in range(1, 1000)]},
        {"$frozenset": [-k * P for k in range(1, 1000)]},
        {"$dict": [[k * P, k] for k in range(1, 1000)]},
        {"$set": [{"$tuple": [k * P, 0]} for k in range(1, 1000)]},
    ],
    ids=["set", "frozenset", "dict keys", "tuples"],
)
def test_elements_that_all_share_a_hash_are_refused(node):
    """60,000 such ints froze the grader for 14 s in one C call (a set compares each with every other)."""
    with pytest.raises(Malformed):
        decode(node)


def test_honest_sets_whose_elements_share_hashes_still_decode():
    nan = float("nan")
    assert decode({"$set": [-1, -2, 1, 2]}) == {-1, -2, 1, 2}  # hash(-1) == hash(-2)
    assert len(decode({"$set": [nan] * 500})) == 1  # a message's NaNs are one object
    assert len(decode({"$set": [float("nan") for _ in range(500)]})) == 500
    powers = [2 ** (61 * j) for j in range(64)]  # 64 ints that all hash to 1, the most allowed
    floats = [2.0 ** (61 * j) for j in range(-17, 17)]  # 34 floats that hash to 1
    assert decode({"$set": powers}) == set(powers)
    assert decode({"$set": floats}) == set(floats)
    assert decode({"$dict": [[k, k] for k in powers]}) == {k: k for k in powers}


@pytest.mark.alone
@pytest.mark.parametrize("scale", [1, P + 1], ids=["small ints", "ints beyond 2**61 (their hashes counted)"])
def test_a_million_element_set_decodes_in_linear_time(scale):
    items = [k * scale for k in range(-500_000, 500_000)]
    started = time.perf_counter()
    assert len(decode({"$set": items})) == 1_000_000
    assert time.perf_counter() - started < 5


@pytest.mark.parametrize(
    "node",
    [
        {"$range": [0, 25_000_000, 1]},
        {"$range": [0, 10**30, 1]},
        [{"$range": [0, 1_000_000, 1]}] * 3,  # each as long as a list may be, together over the budget
        {"$index": {"range": [0, 10**12, 1], "name": None}},
        {
            "$frame": {
                "columns": {"$index": {"range": [0, 0, 1], "name": None}},
                "data": [],
                "index": {"$index": {"range": [0, 10**12, 1], "name": None}},
            }
        },  # fmt: skip
        {"$nd": {"dtype": "<f8", "shape": [10**18, 0], "data": {"$b": [0, 0]}}},
        {"$nd": {"dtype": "|O", "shape": [0, 10**18], "items": []}},
        {"$nd": {"dtype": "|S0", "shape": [10**9], "data": {"$b": [0, 0]}}},
        {"$decimal": "1e999999999"},
        {"$decimal": "1e-5000"},
    ],
    ids=[
        "range",
        "huge range",
        "ranges",
        "RangeIndex",
        "DataFrame without columns",
        "empty rows",
        "empty object rows",
        "zero itemsize",
        "decimal",
        "tiny decimal",
    ],  # fmt: skip
)
def test_values_whose_ordinary_use_is_unbounded_are_refused(node):
    """list(range(25_000_000)) in a test allocated a gigabyte on the grader; int(Decimal('1e2000000')) takes
    a minute; iterating an empty array of shape (10**18, 0) never ends."""
    with pytest.raises(Malformed):
        decode(node)


def test_short_ranges_and_series_of_any_length_still_decode():
    assert type(decode({"$range": [0, 10, 2]})) is range
    data = bytes(3 * MiB)
    series = decode(
        {"$series": {"data": {"$nd": {"dtype": "|i1", "shape": [3 * MiB], "data": {"$b": [0, 3 * MiB]}}},
                     "index": {"$index": {"range": [0, 3 * MiB, 1], "name": None}}, "name": None}},
        data,
    )  # fmt: skip
    assert len(series) == 3 * MiB  # its RangeIndex is as long as its data, which the budget counted
    assert str(decode({"$decimal": "-1.25E+3"})) == "-1.25E+3"
    assert decode({"$nd": {"dtype": "<f8", "shape": [0, 5], "data": {"$b": [0, 0]}}}).shape == (0, 5)


@pytest.mark.parametrize(
    "value",
    [
        range(25_000_000),
        {2**k for k in range(61 * 70)},  # 70 ints share each hash
        decimal.Decimal("1e5000"),
        np.empty((10**7, 0)),
        pd.RangeIndex(10**7),
        pd.DataFrame(index=pd.RangeIndex(10**7)),
    ],
    ids=["range", "set", "decimal", "empty rows", "RangeIndex", "DataFrame without columns"],
)
def test_what_the_decoder_refuses_the_encoder_does_not_send(value):
    assert "$unsendable" in Refs().encode(value, Blobs())


def colliding_int64(n: int) -> np.ndarray:
    """n int64 values that pandas' own hash table (khash, hash k>>33 ^ k ^ k<<11 on 32 bits) puts in one
    bucket chain: the kernel of that GF(2)-linear map, combined at random."""

    def khash(k: int) -> int:
        return ((k >> 33) ^ k ^ (k << 11)) & 0xFFFFFFFF

    pivots, kernel = {}, []
    for bit in range(63):
        image, combination = khash(1 << bit), 1 << bit
        while image and image.bit_length() in pivots:
            pivot_image, pivot_combination = pivots[image.bit_length()]
            image, combination = image ^ pivot_image, combination ^ pivot_combination
        if image:
            pivots[image.bit_length()] = (image, combination)
        else:
            kernel.append(combination)
    rng, values = random.Random(0), set()
    while len(values) < n:
        values.add(functools.reduce(operator.xor, (k for k in kernel if rng.getrandbits(1)), 0))
    return np.array(sorted(values), dtype=np.int64)


def categorical(categories: dict, blob_codes_offset: int) -> dict:
    codes = {"$nd": {"dtype": "|i1", "shape": [3], "data": {"$b": [blob_codes_offset, 3]}}}
    return {"$series": {"data": {"$pdarray": {"kind": "Categorical", "ordered": False, "codes": codes,
                                              "categories": {"$index": {"data": categories, "name": None}}}},
                        "index": {"$index": {"range": [0, 3, 1], "name": None}}, "name": None}}  # fmt: skip


@pytest.mark.alone
@pytest.mark.parametrize("kind", ["int64", "object"])
def test_categories_are_checked_without_a_hash_table_student_values_can_defeat(kind):
    """pandas checks categories (and MultiIndex levels) are unique with a hash table of its own: values that
    all fall in one bucket chain made that quadratic (40,000: 2 s)."""
    n = 60_000
    if kind == "int64":
        data = colliding_int64(n).tobytes()
        categories = {"$nd": {"dtype": "<i8", "shape": [n], "data": {"$b": [0, len(data)]}}}
    else:  # Python ints beyond int64, hashed by Python: all 0
        data, categories = b"", {"$nd": {"dtype": "|O", "shape": [n], "items": [k * P for k in range(10, n + 10)]}}
    started = time.perf_counter()
    series = decode(categorical(categories, len(data)), data + bytes(3))
    level = decode({"$index": {"levels": [{"$index": {"data": categories, "name": None}}], "names": [None],
                               "codes": [{"$nd": {"dtype": "|i1", "shape": [3], "data": {"$b": [len(data), 3]}}}]}},
                   data + bytes(3))  # fmt: skip
    assert time.perf_counter() - started < 3
    assert len(series.cat.categories) == n and len(level.levels[0]) == n


@pytest.mark.parametrize("items", [[1, 2, 1], [1, "a", 1], [1.0, float("nan"), float("nan")], [(1,), [2]]])
def test_categories_must_be_unique_and_hashable(items):
    categories = {"$nd": {"dtype": "|O", "shape": [len(items)], "items": [
        {"$tuple": list(v)} if type(v) is tuple else v for v in items]}}  # fmt: skip
    with pytest.raises(Malformed):
        decode(categorical(categories, 0), bytes(3))


def test_honest_categoricals_and_multi_indexes_make_the_round_trip():
    series = pd.Series(pd.Categorical(["b", "a", None, "b"], categories=["b", "a", "c"]))
    frame = pd.DataFrame({"x": [1, 2, 3]}, index=pd.MultiIndex.from_tuples([("a", 1), ("a", 2), ("b", 1)]))
    mixed = pd.Series(pd.Categorical([1, "a"]))
    for value in (series, frame, mixed):
        blobs = Blobs()
        node = Refs().encode(value, blobs)
        decoded = decode(node, b"".join(bytes(part) for part in blobs.parts))
        assert decoded.equals(value)


@pytest.mark.parametrize(
    "node",
    [
        {"$index": {"range": [0, 3, 1], "name": [1]}},
        {
            "$series": {
                "data": {"$nd": {"dtype": "|i1", "shape": [0], "data": {"$b": [0, 0]}}},
                "index": {"$index": {"range": [0, 0, 1], "name": None}},
                "name": [1],
            }
        },  # fmt: skip
    ],
    ids=["Index", "Series"],
)
def test_an_unhashable_pandas_name_is_malformed(node):
    with pytest.raises(Malformed):
        decode(node)


def test_singletons_are_themselves_on_the_other_side():
    """`answer != ...` tells an unanswered question as under otter run (a reference to the sandbox's
    Ellipsis would be a different object)."""
    decoded = decoder().value(Refs().encode([..., NotImplemented, None], Blobs()))
    assert decoded[0] is ... and decoded[1] is NotImplemented and decoded[2] is None


def test_an_unknown_constant_is_malformed():
    with pytest.raises(Malformed, match="unknown constant"):
        decoder().value({"$const": "__import__('os')"})


MIXED = [f"restaurant number {i:07d}" if i % 2 else i for i in range(600_000)]  # no packing: one JSON item each


@pytest.mark.parametrize(
    "value",
    [
        pd.DataFrame({"name": MIXED}),
        np.array(MIXED, dtype=object),
        [f"row {i:07d} of a long list" for i in range(300_000)],
    ],
    ids=["DataFrame", "object array", "list"],
)
def test_data_too_large_for_one_message_never_crosses_as_a_reference(value):
    """Over the message's JSON cap, a value of a data type is not kept in the sandbox behind a reference:
    its methods there are student code, and could answer a test's `df.shape` with a lie. It crosses as
    {"$unsendable"}, which no test can use."""
    import json
    import os
    import struct
    from concurrent.futures import ThreadPoolExecutor

    from autograder.inside import runner

    read, write = os.pipe()
    with ThreadPoolExecutor(1) as pool:  # read as it is written: a reply sent as data would fill the pipe
        received = pool.submit(lambda: b"".join(iter(lambda: os.read(read, 1 << 20), b"")))
        runner.Channel(read, write).reply(1, lambda: value)
        os.close(write)
        message = received.result(timeout=60)
    os.close(read)
    json_length, _ = struct.unpack(">II", message[:8])
    assert "$unsendable" in json.loads(message[8 : 8 + json_length])["ok"]


def packed(ends: list[int], data: bytes, shape: list[int]) -> tuple[dict, bytes]:
    raw_ends = np.array(ends, dtype="<i8").tobytes()
    texts = {"data": {"$b": [0, len(data)]}, "ends": {"$b": [len(data), len(raw_ends)]}}
    return {"$nd": {"dtype": "|O", "shape": shape, "texts": texts}}, data + raw_ends


def test_a_long_column_of_names_travels_packed_and_comes_back_the_same():
    names = np.array([f"name {i} é\ud800" for i in range(5_000)], dtype=object)
    blobs = Blobs()
    node = Encoder().encode(names, blobs)
    assert "texts" in node["$nd"] and "items" not in node["$nd"]  # not one JSON string per name
    blob = b"".join(bytes(part) for part in blobs.parts)
    back = Decoder(blob, None, None).value(node)
    assert back.dtype == object and back.tolist() == names.tolist()


@pytest.mark.parametrize(
    ("ends", "data", "shape"),
    [
        ([3, 2, 6], b"abcdef", [3]),
        ([2, 4, 7], b"abcdef", [3]),
        ([2, 4], b"abcdef", [3]),
        ([2, 4, 6], b"ab\xffdef", [3]),
        ([-2, 4, 6], b"abcdef", [3]),
        ([0] * 3, b"", [10**7]),
    ],
    ids=["falling ends", "past the data", "too few ends", "not UTF-8", "negative", "more strings than allowed"],
)
def test_packed_strings_that_do_not_fit_are_refused(ends, data, shape):
    node, blob = packed(ends, data, shape)
    with pytest.raises(Malformed):
        Decoder(blob, None, None, max_nodes=1_000_000).value(node)
