"""The control channel between the grader and a grading process (autograder/inside/control.py)."""

from __future__ import annotations

import os
import socket
import threading

import pytest

from autograder.inside.control import Control, ControlError


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
