"""The codec's fast path for lists of plain scalars keeps every limit of the general path."""

from __future__ import annotations

import enum

import pytest

from autograder.inside.codec import MAX_DEPTH, Blobs, Decoder, Encoder, Malformed


class Refs(Encoder):
    def ref(self, x):
        return {"$ref": id(x), "type": type(x).__name__, "module": "", "kind": "object", "truth": True, "name": None}


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
