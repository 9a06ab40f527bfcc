"""JSON for the protocol's messages, straight from CPython's C accelerator (`_json`), on both sides.

Why not the `json` package: importing it pulls in `re` and `enum`, most of the runner's import time and so
of every sandbox's start; and a message needs none of its options: compact separators, no whitespace,
UTF-8 bytes. Same results as json.dumps(separators=(",", ":")) and json.loads on what that writes.
"""

import _json

MAX_OUTPUT = 64 * 1024
"""characters of what student code printed during a test's call that one message may carry (a doctest
compares them): the runner keeps no more, the grader accepts no more"""


class _Decoding:
    """The settings the C scanner reads off a json.JSONDecoder (its defaults)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}.__getitem__


def _not_data(value):
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


_scan = _json.make_scanner(_Decoding())
# markers, default, encoder, indent, key and item separators, sort_keys, skipkeys, allow_nan. No markers
# (circular check): messages are built afresh by the codec, which bounds their depth.
_encode = _json.make_encoder(None, _not_data, _json.encode_basestring_ascii, None, ":", ",", False, False, True)


def dumps(value) -> bytes:
    """The compact JSON text of a message, as ASCII bytes."""
    return "".join(_encode(value, 0)).encode()


def loads(data):
    """The value of one JSON text (bytes, bytearray or str); ValueError when it is not exactly one."""
    text = data.decode() if isinstance(data, (bytes, bytearray)) else data
    try:
        value, end = _scan(text, 0)
    except StopIteration:
        raise ValueError("not a JSON value") from None
    if end != len(text):
        raise ValueError("extra data after the JSON value")
    return value
