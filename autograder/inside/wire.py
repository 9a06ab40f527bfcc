"""The protocol's frames, and JSON for its messages, straight from CPython's C accelerator (`_json`), on both
sides.

A frame is 8 bytes (JSON length, raw-bytes length), the JSON, the raw bytes; a message is one frame. A message
whose raw bytes are more than one frame may carry (MAX_FRAME_BLOBS) is split: its first frame holds the JSON
alone, with SPLIT announcing how many raw bytes follow, then frames of raw bytes only (JSON length 0), each at
most MAX_FRAME_BLOBS, until they have all come. The receiver checks the announced total against its budget
before it reads or allocates any of it.

Why not the `json` package: importing it pulls in `re` and `enum`, most of the runner's import time and so
of every sandbox's start; and a message needs none of its options: compact separators, no whitespace,
UTF-8 bytes. Same results as json.dumps(separators=(",", ":")) and json.loads on what that writes.
"""

import _json
import _struct

FRAME = _struct.Struct(">II")
MAX_FRAME_JSON = 8 * 1024 * 1024
"""bytes of JSON in one frame"""
MAX_FRAME_BLOBS = 64 * 1024 * 1024
"""raw bytes in one frame; a message with more is split"""
JOINED = 1 << 20
"""raw bytes of a message up to which it is written joined, at once (the reader wakes once); a larger one is
written part by part, not copied first"""
SPLIT = "split"
"""key of a split message's JSON: the number of raw bytes that follow in frames of their own"""

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


class TooLarge(Exception):
    """A message whose JSON is longer than a frame may hold."""


def frames(msg, parts, size, max_json=None):
    """The bytes of one message (`msg` and its raw `parts`, `size` bytes in all) as pieces to write: one frame
    (joined if small: see JOINED); or, split, the first frame then each continuation frame's header and its
    slices of the parts (not copied). TooLarge when the JSON is longer than `max_json`."""
    split = size > MAX_FRAME_BLOBS
    data = dumps({**msg, SPLIT: size} if split else msg)
    if max_json is not None and len(data) > max_json:
        raise TooLarge
    if split:
        return [FRAME.pack(len(data), 0) + data, *_continuation(parts, size)]
    if size <= JOINED:
        return [b"".join([FRAME.pack(len(data), size), data, *parts])]
    return [FRAME.pack(len(data), size) + data, *parts]


def _continuation(parts, size):
    left_in_frame = 0
    for part in parts:
        view = memoryview(part).cast("B")
        while view:
            if not left_in_frame:
                left_in_frame = min(size, MAX_FRAME_BLOBS)
                yield FRAME.pack(0, left_in_frame)
            piece = view[:left_in_frame]
            yield piece
            view, left_in_frame, size = view[len(piece) :], left_in_frame - len(piece), size - len(piece)
