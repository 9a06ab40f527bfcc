"""Mutable values a test and student code share, as under `otter run` (issue 19).

A student function that changes its argument in place (appends to a list, relabels a Table) changes
the caller's object under `otter run`. Here values cross as copies: after a call, the state of each
mutable argument comes back and the grader's object is made equal to it in place; and a copy of a
student's global, passed back to student code, is that global there. These unit tests drive the grader's
side (values.py) with crafted replies: what it takes, and what it refuses. The runner's side, and
parity with `otter run`, are covered by the parity corpus (decade's `bonus`, towns' `shared`).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest

from autograder.inside.codec import MAX_BLOBS, MAX_ORIGINS, Blobs, Encoder
from autograder.protocol import ProtocolError
from autograder.remote import StudentCallable
from autograder.values import MAX_ORIGIN_BYTES, Values


def node(value: Any) -> tuple[Any, bytes]:
    blobs = Blobs()
    encoded = Encoder().encode(value, blobs)
    return encoded, b"".join(bytes(part) for part in blobs.parts)


class Sandbox:
    """Answers each request with the next crafted reply, remembering what the grader sent."""

    def __init__(self) -> None:
        self.replies: list[tuple[dict[str, Any], bytes]] = []
        self.sent: list[tuple[str, dict[str, Any]]] = []
        channel = {"fail": lambda error: error, "test_timeout": 1.0, "request": self.request, "budget": MAX_BLOBS}
        self.channel = SimpleNamespace(**channel)
        self.values = Values(self.channel)
        self.function = StudentCallable(self.values, {"$ref": 0, "kind": "function"})

    def request(self, op: str, timeout: float, **args: Any) -> Any:
        nodes, _ = self.channel.encode(args)
        self.sent.append((op, nodes))
        reply, blob = self.replies.pop(0)
        return self.channel.decode(op, reply, memoryview(blob))

    def answer(self, ok: Any = None, **extra: Any) -> None:
        self.replies.append(({"ok": ok, **extra}, b""))

    def send_back(self, *states: tuple[Any, Any]) -> None:
        """A call's reply carrying the arguments' new states: (position or name, value)."""
        after, blob = [], b""
        for key, value in states:
            encoded, data = node(value)
            if isinstance(encoded, dict) and "$nd" in encoded:
                encoded["$nd"]["data"]["$b"][0] += len(blob)
            after.append([key, encoded])
            blob += data
        self.replies.append(({"ok": None, "after": after}, blob))


def test_what_a_call_left_in_its_arguments_comes_back_into_the_callers_objects():
    sandbox = Sandbox()
    scores, totals, grid, frame, fixed = [1, 2], {"a": 1}, np.zeros(3), pd.DataFrame({"x": [1]}), (1, 2)
    sandbox.send_back((0, [2, 3]), ("totals", {"a": 2, "b": 1}), (1, np.ones(3)), (2, pd.DataFrame({"y": [5]})))
    sandbox.function(scores, grid, frame, fixed, totals=totals)
    assert scores == [2, 3] and totals == {"a": 2, "b": 1}
    assert grid.tolist() == [1.0, 1.0, 1.0] and list(frame.columns) == ["y"]
    assert fixed == (1, 2)


@pytest.mark.parametrize(
    "state",
    [(0, (9, 9)), (0, "changed"), (1, [9]), (5, [9]), ("missing", [9]), (-1, [9])],
    ids=["another type", "a string", "an immutable argument", "no such position", "no such name", "negative"],
)
def test_a_state_that_does_not_fit_its_argument_changes_nothing(state):
    sandbox = Sandbox()
    scores = [1, 2]
    sandbox.send_back(state)
    sandbox.function(scores, (1, 2))
    assert scores == [1, 2]


def test_an_array_keeps_its_shape_and_dtype():
    sandbox = Sandbox()
    grid = np.zeros(3)
    sandbox.send_back((0, np.ones(4)))
    sandbox.function(grid)
    assert grid.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    ("op", "extra"),
    [
        ("exec", {"after": [[0, [1]]]}),
        ("get", {"after": [[0, [1]]]}),
        ("call", {"after": {"0": [1]}}),
        ("call", {"after": [[0.5, [1]]]}),
        ("call", {"after": [[0]]}),
        ("call", {"origin": 3}),
        ("attr", {"origin": 3}),
    ],
    ids=[
        "after an exec",
        "after a get",
        "not a list",
        "a float position",
        "no state",
        "origin of a call",
        "origin of an attribute",
    ],  # fmt: skip
)
def test_a_reply_with_misplaced_or_malformed_sharing_is_refused(op, extra):
    values = Values(SimpleNamespace(fail=lambda error: error, budget=MAX_BLOBS))
    with pytest.raises(ProtocolError):
        values.decode_reply(op, {"ok": None, **extra}, memoryview(b""))


def test_the_sandbox_cannot_name_its_own_object_as_the_grader_does():
    values = Values(SimpleNamespace(fail=lambda error: error, budget=MAX_BLOBS))
    with pytest.raises(ProtocolError):
        values.decode_reply("get", {"ok": {"$same": [0, [1]]}}, memoryview(b""))


def test_a_copy_of_a_global_goes_back_as_that_global_and_an_equal_list_does_not():
    sandbox = Sandbox()
    sandbox.answer([3, 5], origin=7)
    week = sandbox.values.request("get", name="week")
    sandbox.send_back()
    sandbox.function(week, [3, 5])
    op, nodes = sandbox.sent[-1]
    assert op == "call" and nodes["args"] == [{"$same": [7, [3, 5]]}, [3, 5]]


@pytest.mark.parametrize("origin", [-1, 2**60, "7", 1.5, None], ids=str)
def test_an_origin_that_is_not_a_handle_is_ignored(origin):
    sandbox = Sandbox()
    sandbox.answer([3, 5], origin=origin)
    week = sandbox.values.request("get", name="week")
    sandbox.send_back()
    sandbox.function(week)
    assert sandbox.sent[-1][1]["args"] == [[3, 5]]


def test_the_copies_remembered_are_bounded_in_count_and_size():
    sandbox = Sandbox()
    for handle in range(MAX_ORIGINS + 5):
        sandbox.answer([handle], origin=handle)
    copies = [sandbox.values.request("get", name="x") for _ in range(MAX_ORIGINS + 5)]
    sandbox.send_back()
    sandbox.function(copies[0], copies[-1])
    assert sandbox.sent[-1][1]["args"] == [[0], {"$same": [MAX_ORIGINS + 4, [MAX_ORIGINS + 4]]}]

    big = np.zeros(MAX_ORIGIN_BYTES // 8 // 3 + 1)
    encoded, blob = node(big)
    for handle in range(4):
        sandbox.replies.append(({"ok": encoded, "origin": handle}, blob))
    arrays = [sandbox.values.request("get", name="a") for _ in range(4)]
    shared = []
    for array in arrays:
        sandbox.send_back()
        sandbox.function(array)
        shared.append("$same" in sandbox.sent[-1][1]["args"][0])
    assert shared == [False, False, True, True]
