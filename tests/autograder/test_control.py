"""The control channel between the grader and a grading process (autograder/inside/control.py)."""

from __future__ import annotations

import json
import os
import socket
import threading
import time

import pytest

from autograder.child import MAX_MODULES, fitted
from autograder.inside import control
from autograder.inside.control import (
    GRADING_PROCESS,
    HEADER,
    MAX_MESSAGES,
    MAX_TOTAL,
    Control,
    ControlError,
    ControlLimit,
)
from autograder.manifest import MAX_CELL_ERRORS


class AnswersAtOnce:
    """A socket whose peer reads each whole frame the moment it is sent, then goes away: a grading process
    that graded in a few milliseconds and exited before the grader's thread ran again."""

    def __init__(self) -> None:
        self.ours, self.theirs = socket.socketpair()
        self.received = b""

    def send(self, data: bytes) -> int:
        sent = self.ours.send(data)
        self.received += self.theirs.recv(1 << 20)
        self.theirs.close()
        return sent

    def sendall(self, data: bytes) -> None:
        self.ours.sendall(data)

    def close(self) -> None:
        self.ours.close()


def test_a_message_read_whole_by_a_peer_that_then_left_was_sent():
    """Once the whole frame is out, nothing more is sent: an empty send to a peer that has answered and
    gone fails (EPIPE), which made a grading that had finished look like one whose process went away."""
    sock = AnswersAtOnce()
    Control(sock).send({"grade": [[0, "x = 1"]]})  # type: ignore[arg-type]
    assert sock.received.endswith(b'{"grade":[[0,"x = 1"]]}')
    sock.close()


def test_descriptors_and_a_large_message_arrive_whole():
    ours, theirs = socket.socketpair()
    read_end, write_end = os.pipe()
    sender, receiver = Control(ours), Control(theirs)
    big = "x" * (4 << 20)  # more than a socket buffer: sent in several pieces
    try:
        thread = threading.Thread(target=sender.send, args=({"big": big}, [read_end]))
        thread.start()
        message, fds = receiver.recv()
        thread.join()
        assert message == {"big": big} and len(fds) == 1
        os.write(write_end, b"ok")
        assert os.read(fds[0], 2) == b"ok"
        os.close(fds[0])
    finally:
        for fd in (read_end, write_end):
            os.close(fd)
        sender.close()
        receiver.close()


def test_a_peer_that_went_away_before_the_message_is_an_error():
    ours, theirs = socket.socketpair()
    theirs.close()
    with pytest.raises(ControlError, match="went away"):
        Control(ours).send({"grade": []})
    ours.close()


def frame(body: bytes) -> bytes:
    return HEADER.pack(len(body)) + body


def send_later(sock: socket.socket, data: bytes) -> None:
    """Send from a thread of its own (more than a socket's buffer), until the other side stops reading."""

    def send() -> None:
        try:
            sock.sendall(data)
        except OSError:
            pass

    threading.Thread(target=send, daemon=True).start()


@pytest.mark.parametrize(
    "body, excess",
    [
        (b'{"x":"' + b"a" * (2 << 20) + b'"}', "more than 2 MB in one message"),
        (b'{"x":[' + b"[]," * 300_000 + b"[]]}", "more than 20000 lists and objects in one message"),  # ~25 MB parsed
        (b'{"x":[' + b"0," * 300_000 + b"0]}", "more than 200000 items in one message"),
    ],
    ids=["bytes", "lists", "items"],
)
def test_a_grading_process_message_past_a_bound_is_refused_before_it_is_parsed(body, excess, monkeypatch):
    ours, theirs = socket.socketpair()
    parsed = []
    monkeypatch.setattr(control.json, "loads", lambda data: parsed.append(data))
    receiver = Control(ours, GRADING_PROCESS)
    send_later(theirs, frame(body))
    with pytest.raises(ControlLimit, match=excess):
        receiver.recv(time.monotonic() + 10)
    assert parsed == []
    receiver.close()
    theirs.close()


@pytest.mark.alone
def test_a_message_announced_too_large_is_refused_before_it_is_read():
    ours, theirs = socket.socketpair()
    theirs.sendall(HEADER.pack(64 << 20))  # and nothing more: a read would wait until the deadline
    started = time.monotonic()
    with pytest.raises(ControlLimit, match="more than 2 MB in one message"):
        Control(ours, GRADING_PROCESS).recv(started + 10)
    assert time.monotonic() - started < 1
    ours.close()
    theirs.close()


def test_a_grading_process_has_a_budget_of_bytes_and_messages():
    ours, theirs = socket.socketpair()
    receiver = Control(ours, GRADING_PROCESS)
    big = frame(b'{"x":"' + b"a" * ((2 << 20) - 100) + b'"}')
    for _ in range(MAX_TOTAL // len(big)):
        send_later(theirs, big)
        assert receiver.recv(time.monotonic() + 10)[0].keys() == {"x"}
    theirs.sendall(big[: HEADER.size])
    with pytest.raises(ControlLimit, match="more than 8 MB in all"):
        receiver.recv(time.monotonic() + 10)
    receiver = Control(ours, GRADING_PROCESS)
    for _ in range(MAX_MESSAGES):
        theirs.sendall(frame(b"{}"))
        receiver.recv(time.monotonic() + 10)
    theirs.sendall(frame(b"{}"))
    with pytest.raises(ControlLimit, match=f"more than {MAX_MESSAGES} messages"):
        receiver.recv(time.monotonic() + 10)
    receiver.close()
    theirs.close()


def test_descriptors_sent_with_a_refused_message_are_closed():
    ours, theirs = socket.socketpair()
    read_end, write_end = os.pipe()
    socket.send_fds(theirs, [HEADER.pack(64 << 20)], [read_end])
    os.close(read_end)
    with pytest.raises(ControlLimit):
        Control(ours, GRADING_PROCESS).recv(time.monotonic() + 10)
    with pytest.raises(BrokenPipeError):  # no read end is left open anywhere
        os.write(write_end, b"x")
    os.close(write_end)
    ours.close()
    theirs.close()


def test_an_outcome_is_cut_to_fit_one_message_and_keeps_its_results():
    """Student code makes messages long (a failing test quotes its value, a cell's error its text): the
    grading process shortens them until the outcome fits, so an honest grading never meets the bounds."""
    cases = 400
    outcome = {
        "order": ["q1"],
        "passed": {"q1": [i % 2 == 0 for i in range(cases)]},
        "messages": {"q1": ["❌ [1, 2, 3], {'a': [4]} " * 1000] * cases},
        "cell_errors": ["cell 1: ValueError: [[[[,,,," * 100] * 5000,
        "restarts": 0,
        "modules": ["numpy", 12, "x" * 10_000] * 10_000,
    }
    data = fitted(outcome)
    assert GRADING_PROCESS.excess(data) is None
    sent = json.loads(data)["outcome"]
    assert sent["passed"] == {"q1": [i % 2 == 0 for i in range(cases)]}
    assert 0 < len(sent["messages"]["q1"][0]) < 20_000 and len(sent["cell_errors"]) == MAX_CELL_ERRORS
    assert set(sent["modules"]) == {"numpy"} and len(sent["modules"]) == MAX_MODULES // 3 + 1
