"""Values larger than one message cross, split over several (inside/wire.py), within the grader's budget for one
value (Limits.value_mb): an 80 MB array, a 72 MB DataFrame, 300,000 names, a 40 MB datascience Table, a 96 MB
DataFrame a hidden test hands to student code. Past the budget a value stays in the sandbox, saying how large it
was; a sandbox that splits a message wrongly, or stops in the middle of one, is killed as for any other
violation, and the grader holds no more than the bytes it was really sent.
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from autograder import GradeOptions, grade_submission
from autograder.inside import wire
from autograder.inside.codec import Blobs, Decoder, Encoder, Malformed
from autograder.options import Limits
from autograder.protocol import Channel, ProtocolError, SandboxFailure, StudentTimeout
from autograder.remote import Unsendable
from testbed.build_cache import otter_assign
from testbed.host import peak_memory_kib, reset_peak_memory, started_sandbox
from tests.autograder.conftest import FIND_CHANNEL

ASSIGNMENTS = Path(__file__).parent / "large_values"
CASES = [("large_values", "array"), ("large_values", "frame"), ("large_values", "names"),
         ("large_values", "describe"), ("large_table", "table")]  # fmt: skip
"""(assignment, question): large_table requires datascience, so its gradings start its environment (slower)"""


class Built:
    """An assignment whose answers are each larger than one message, built with `otter assign`."""

    def __init__(self, name: str) -> None:
        dist = otter_assign(ASSIGNMENTS, f"{name}.ipynb", "--no-run-tests") / "source" / "dist"
        (self.zip,) = (dist / "autograder").glob("*.zip")
        self.student = json.loads((dist / "student" / f"{name}.ipynb").read_text())
        solution = json.loads((dist / "autograder" / f"{name}.ipynb").read_text())
        self.solutions = [c["source"] for c in solution["cells"] if _tagged(c, "otter_assign_solution_cell")]
        self.questions = [q for assignment, q in CASES if assignment == name]

    def answering(self, question: str) -> bytes:
        """The student notebook with only `question` answered (the others stay `...`)."""
        notebook = copy.deepcopy(self.student)
        answers = [c for c in notebook["cells"] if _tagged(c, "otter_answer_cell")]
        answers[self.questions.index(question)]["source"] = self.solutions[self.questions.index(question)]
        return json.dumps(notebook).encode()


def _tagged(cell: dict, tag: str) -> bool:
    return tag in cell["metadata"].get("tags", [])


@pytest.fixture(scope="module")
def built() -> dict[str, Built]:
    return {name: Built(name) for name in dict(CASES)}


@pytest.mark.parametrize(("assignment", "question"), CASES, ids=[q for _, q in CASES])
def test_a_value_larger_than_one_message_crosses_and_tests_use_it_as_under_otter_run(built, assignment, question):
    result = grade_submission(built[assignment].zip, built[assignment].answering(question))
    graded = {q.name: q for q in result.questions}[question]
    assert result.error is None and not result.cell_errors, (result.error, result.cell_errors)
    assert graded.score == graded.max_score == 1.0, [t.message for t in graded.tests]
    assert result.usage["tests_peak_memory_mb"] < 800  # the grading process: about twice the value, no more


def test_a_course_sets_the_budget_and_a_test_of_a_larger_value_says_why(built):
    assert Limits.from_config({"value_mb": 50}) == {"value_mb": 50}  # in otter_config.json's "grading_limits"
    large = built["large_values"]
    result = grade_submission(large.zip, large.answering("names"), GradeOptions(value_mb=50))
    (message,) = [t.message for q in result.questions if q.name == "names" for t in q.tests]
    assert "returned a Series that could not be sent to the grader" in message  # len(names), the test's first use
    assert "(larger than the grader's budget for one value: 69.0 MB, the budget is 50.0 MB)" in message


# -- at the channel: a real sandbox, the grader's side in this process --------------------------------


def run(channel: Channel, source: str, timeout: float = 30) -> None:
    channel.request("exec", timeout, source=source, name="<cell>")


def test_a_value_over_the_budget_stays_in_the_sandbox_saying_how_large_it_was(toy):
    with started_sandbox(toy.zip, Limits(value_mb=16)) as (channel, values):
        run(channel, "import numpy as np, pandas as pd\nsmall, big = np.ones(1_000_000), np.ones(3_000_000)\n"
                     "frame = pd.DataFrame({c: np.ones(1_000_000) for c in 'abcd'})")  # fmt: skip
        assert values.request("get", name="small").sum() == 1_000_000  # 7.6 MB: under the budget
        for name, size in (("big", "22.9 MB"), ("frame", "30.5 MB")):  # the frame's whole size, not where it stopped
            value = values.request("get", name=name)
            assert type(value) is Unsendable
            why = f"larger than the grader's budget for one value: {size}, the budget is 16.0 MB"
            with pytest.raises(TypeError, match=why):
                len(value)
        with pytest.raises(TypeError, match="larger than the grader's budget for one value: 22.9 MB"):
            values.request("set", name="given", value=np.ones(3_000_000))  # nor does one of the grader's go in
        assert channel.dead is None


def test_columns_of_millions_of_strings_cross(toy):
    """More strings than a message's elements (2.1 million) or one container's (1.2 million in one array), and a
    column of pandas' string dtype whose text is more than a message's JSON holds (12 MB): all travel packed."""
    with started_sandbox(toy.zip, Limits()) as (channel, values):
        run(channel, "import numpy as np, pandas as pd\n"
                     "frame = pd.DataFrame({c: [f'{c}{i}' for i in range(700_000)] for c in 'abc'})\n"
                     "column = np.array([f'n{i}' for i in range(1_200_000)], dtype=object)\n"
                     "labels = pd.Series([f'label number {i:09d}' if i % 7 else None for i in range(500_000)],"
                     " dtype='string')")  # fmt: skip
        frame = values.request("get", name="frame")
        assert frame.shape == (700_000, 3) and frame["c"].iloc[-1] == "c699999"
        column = values.request("get", name="column")
        assert column.shape == (1_200_000,) and column[-1] == "n1199999"
        labels = values.request("get", name="labels")
        assert labels.dtype == "string" and labels.isna().sum() == 71_429
        assert labels.iloc[-1] == "label number 000499999" and labels.iloc[7] is pd.NA


@pytest.mark.parametrize(
    ("texts", "missing"),
    [
        (np.array([["a", "b"]], dtype=object), np.zeros(2, dtype=bool)),
        (np.array(["a", "b"], dtype=object), np.zeros(2, dtype=int)),
        (np.array(["a", "b"], dtype=object), np.zeros(3, dtype=bool)),
        (np.array(["a", 1], dtype=object), np.zeros(2, dtype=bool)),
    ],
    ids=["texts of two dimensions", "a mask of ints", "a mask of another length", "a text that is a number"],
)
def test_a_packed_string_column_that_does_not_fit_is_refused(texts, missing):
    blobs, encoder = Blobs(), Encoder()
    column = {"kind": "StringArray", "texts": encoder.encode(texts, blobs), "missing": encoder.encode(missing, blobs)}
    series = {"data": {"$pdarray": column}, "index": {"$index": {"range": [0, 2, 1], "name": None}}, "name": None}
    with pytest.raises(Malformed, match="bad StringArray"):
        Decoder(memoryview(b"".join(map(bytes, blobs.parts))), None, None).value({"$series": series})


def test_a_split_message_is_written_as_frames_of_at_most_one_frames_bytes(monkeypatch):
    monkeypatch.setattr(wire, "MAX_FRAME_BLOBS", 1000)
    parts = [memoryview(bytes(range(250)) * 6), memoryview(b"z" * 1200)]  # 2,700 bytes: three frames
    pieces = wire.frames({"re": 1}, parts, 2700)
    header, rest = bytes(pieces[0]), pieces[1:]
    _, blob_length = wire.FRAME.unpack(header[:8])
    assert blob_length == 0 and wire.loads(header[8:]) == {"re": 1, wire.SPLIT: 2700}
    raw, lengths = bytearray(), []
    while rest:
        _, length = wire.FRAME.unpack(rest.pop(0))
        lengths.append(length)
        while length:
            piece = rest.pop(0)
            assert isinstance(piece, memoryview)  # a slice of the part, not a copy
            raw += piece
            length -= len(piece)
    assert lengths == [1000, 1000, 700] and bytes(raw) == b"".join(map(bytes, parts))


# -- a hostile sandbox ------------------------------------------------------------------------------

BUDGET = 128 * 1024 * 1024
CRAFT = """
def first(size, blob=b""):  # a split message's first frame, announcing `size` raw bytes
    data = json.dumps({"re": request["id"], "ok": None, "split": size}).encode()
    os.write(channel.write_fd, struct.pack(">II", len(data), len(blob)) + data + blob)

def frame(length, data=None):  # a continuation frame: its header, and that many bytes unless told
    os.write(channel.write_fd, struct.pack(">II", 0, length) + (bytes(length) if data is None else data))

def stall():
    import time
    try:
        time.sleep(60)
    except BaseException:  # the runner's own time limit: it would send an error, which is another message
        time.sleep(60)
"""
FRAMES = FIND_CHANNEL + CRAFT  # run in a cell, answering its own `exec` request with crafted frames
OVER_ONE_FRAME = 2**26 + 10
MIDDLE = f"first({OVER_ONE_FRAME}); frame(2**20, bytes(1000))"  # a frame's header, then a thousandth of it
WRONG, OVER = "split a message wrongly", "larger than the grader's budget"
HOSTILE = {
    "a total over the budget": (f"first({BUDGET + 1})", ProtocolError, OVER),
    "a total of a terabyte": ("first(2**40)", ProtocolError, OVER),
    "a total that is not a number": ("first('70000000')", ProtocolError, WRONG),
    "a split of what one frame holds": ("first(1000); frame(1000)", ProtocolError, WRONG),
    "raw bytes in the first frame": (f"first({OVER_ONE_FRAME}, b'x' * 10)", ProtocolError, WRONG),
    "an empty frame": (f"first({OVER_ONE_FRAME}); frame(0)", ProtocolError, WRONG),
    "a frame over one frame's bytes": (f"first({BUDGET}); frame(2**26 + 1, b'')", ProtocolError, WRONG),
    "more bytes than announced": (f"first({OVER_ONE_FRAME}); frame(20); frame(2**26, b'')", ProtocolError, WRONG),
    "another message inside": (f"first({OVER_ONE_FRAME}); frame(1000); reply(None)", ProtocolError, "inside"),
    "fewer bytes, then it exits": (f"first({OVER_ONE_FRAME}); frame(1000); os._exit(0)", SandboxFailure, "exited"),
    "it stops in the middle of a frame": (f"{MIDDLE}; stall()", StudentTimeout, "within 1 s"),
    "it announces the whole budget and stops": (f"first({BUDGET}); stall()", StudentTimeout, "within 1 s"),
}  # fmt: skip


@pytest.mark.parametrize("case", HOSTILE, ids=str)
def test_a_message_split_wrongly_kills_the_sandbox_and_the_grader_holds_only_what_came(toy, case):
    source, failure, why = HOSTILE[case]
    with started_sandbox(toy.zip, Limits(value_mb=BUDGET // 2**20, grace=0.5)) as (channel, _):
        measured = reset_peak_memory()
        before = peak_memory_kib()
        started = time.monotonic()
        with pytest.raises(failure, match=why) as raised:
            run(channel, FRAMES + source, timeout=1.0)
        assert time.monotonic() - started < 10
        assert channel.dead == str(raised.value)  # killed
        if measured:
            assert peak_memory_kib() - before < 32 * 1024, "the grader held bytes it was never sent"
