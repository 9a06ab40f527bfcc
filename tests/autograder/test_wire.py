"""The protocol's JSON (inside/wire.py): what json writes and reads for a message, without importing it in
the sandbox, whose start it would slow down."""

from __future__ import annotations

import json
import math
import time

import pytest

from autograder.assignment import load_assignment
from autograder.grading import start_ready
from autograder.inside import wire
from autograder.options import Limits
from autograder.sandbox import Sandbox
from autograder.values import Values

MESSAGES = [
    {"id": 1, "op": "call", "args": {"handle": 3, "args": [[1, 2, 3]], "kwargs": {}}, "timeout": 5},
    {"re": 7, "ok": [None, True, False, -12, 2.5, 1e300, 'tokén ✓ \x00 "quoted"', {"$ref": 0}]},
    {"re": 2, "err": ["ValueError", "line one\nline two\ttab \U0001f600 lone \ud800"]},
    [],
    "a bare string",
    12345678901234567890,
]


@pytest.mark.parametrize("message", MESSAGES)
def test_a_message_is_written_and_read_as_json_does(message):
    written = wire.dumps(message)
    assert written == json.dumps(message, separators=(",", ":")).encode()
    assert wire.loads(written) == json.loads(written) == message
    assert wire.loads(bytearray(written)) == message


def test_non_finite_floats_travel_as_json_spells_them():
    written = wire.dumps([float("inf"), float("-inf"), float("nan")])
    assert written == b"[Infinity,-Infinity,NaN]"
    inf, minus_inf, nan = wire.loads(written)
    assert (inf, minus_inf) == (math.inf, -math.inf) and math.isnan(nan)


@pytest.mark.parametrize(
    "text", [b"", b"{", b'{"a":1} {"b":2}', b'{"a":1}x', b" {}", b"\xff\xfe", b"[1,]", b'{"a":01}', b"undefined"]
)
def test_anything_but_exactly_one_json_value_is_a_value_error(text):
    with pytest.raises(ValueError):
        wire.loads(text)


def test_what_is_not_data_is_refused():
    with pytest.raises(TypeError, match="not JSON serializable"):
        wire.dumps({"ok": object()})


def test_a_sandbox_starts_without_json_re_or_enum(toy):
    """The runner's own imports stay small: each of these costs milliseconds of every grading's start."""
    deadline = time.monotonic() + 30
    ready = start_ready(load_assignment(toy.zip), Limits(), deadline, Sandbox(Limits(), deadline))
    try:
        Values(ready.channel)
        modules = set(ready.channel.request("modules", 5))
    finally:
        ready.close()
    assert "_autograder_inside" in modules
    assert not {"json", "re", "enum", "signal", "importlib"} & modules
