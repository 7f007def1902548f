"""A serving peer's waits end on what the client's application reports, where it is heard: the
shim's events of the case being played, read as they come. Socket pairs and a small fake shim:
the waits' logic, not a client's."""

from __future__ import annotations

import json
import socket
import sys
import time
from typing import Any

import pytest

from amqpfuzz.fuzzer.clients.process import ShimProcess
from amqpfuzz.fuzzer.protocols.amqp091.serving.peer import Peer as Peer091
from amqpfuzz.fuzzer.protocols.amqp091.serving.peer import _Play
from amqpfuzz.fuzzer.protocols.amqp10.serving.peer import Peer as Peer10
from amqpfuzz.fuzzer.protocols.serving import Conversation, Ended
from amqpfuzz.spec.amqp091.codec import codec_for


class Lines:
    """A reader of newline-ended frames."""

    def __init__(self) -> None:
        self.held = b""

    @property
    def buffered(self) -> int:
        return len(self.held)

    def feed(self, data: bytes) -> list[bytes]:
        *whole, self.held = (self.held + data).split(b"\n")
        return whole


class Told:
    """A client that reports waiting once the peer has read its ``done``."""

    def __init__(self, conversation: list[bytes]) -> None:
        self.handled = conversation

    def said(self) -> int:
        return len(self.handled)

    def waiting(self) -> bool:
        return b"done" in self.handled


class Talk(Conversation):
    def __init__(self, conn: socket.socket, deadline: float, told: bool) -> None:
        self.handled: list[bytes] = []
        super().__init__(conn, deadline, Lines(), Told(self.handled) if told else None)

    def _handle(self, frame: Any) -> None:
        self.handled.append(frame)


def _talk(told: bool, quiet: float, lasting: float) -> tuple[Talk, float]:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        talk = Talk(ours, time.monotonic() + lasting, told)
        theirs.sendall(b"a\nb\ndone\n")
        talk._wait(quiet, until=lambda heard: heard.waiting())
        return talk, time.monotonic()


def test_a_wait_ends_once_the_client_reports_waiting_not_after_the_quiet_time() -> None:
    # the quiet time outlasts the conversation: only the report can end the wait before it
    talk, ended = _talk(told=True, quiet=60.0, lasting=30.0)
    assert talk.handled == [b"a", b"b", b"done"]
    assert ended < talk.deadline


def test_a_client_nobody_hears_is_waited_for_by_silence() -> None:
    talk, ended = _talk(told=False, quiet=60.0, lasting=1.0)
    assert talk.handled == [b"a", b"b", b"done"]
    assert ended >= talk.deadline  # nothing else ends the wait: the quiet time, or the deadline
    talk, ended = _talk(told=False, quiet=0.05, lasting=30.0)
    assert talk.handled == [b"a", b"b", b"done"] and ended < talk.deadline


def test_a_client_that_never_answers_the_peers_close_hangs_within_the_answer_time() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        talk = Talk(ours, time.monotonic() + 600.0, told=True)
        theirs.sendall(b"a\n")  # and then nothing: no answer to the close
        case_deadline = talk.deadline
        talk._await_answer()
        assert talk.handled == [b"a"] and talk.ex.ended == "timeout"
        assert talk.deadline < case_deadline - 500  # not the case's ten minutes
        theirs.sendall(b"close-ok\n")  # an answer comes: the wait ends on it
        talk.deadline = time.monotonic() + 600.0
        theirs.close()
        with pytest.raises(Ended):
            talk._await_answer()
        assert talk.handled[-1] == b"close-ok" and talk.ex.ended == "socket"


def test_what_a_client_had_in_flight_when_the_strike_came_is_not_its_word() -> None:
    """Where the socket must close without a word, only what the client says of the strike
    counts (0-9-1: a close): py-amqp's ack of an earlier delivery, on its way when an unknown
    frame type came, was judged a word (after sending more): a false failure."""

    class Closes(Talk):
        def _speaks(self, frame: Any) -> bool:
            return bytes(frame).startswith(b"close")

    ours, theirs = socket.socketpair()
    with ours, theirs:
        talk = Closes(ours, time.monotonic() + 5.0, told=False)
        talk.ex.struck = "a frame type nobody defines"
        theirs.sendall(b"ack 1\n")
        talk._read(1.0)
        assert not talk.ex.spoke
        theirs.sendall(b"close 505\n")
        talk._read(1.0)
        assert talk.ex.spoke
    codec = codec_for("0-9-1")
    ack = codec.method("basic.ack", 1, delivery_tag=1)
    close = codec.method("connection.close", 0, reply_code=505)
    speaks = _Play._speaks
    assert not speaks(None, ack) and speaks(None, close)  # type: ignore[arg-type]


@pytest.mark.slow
def test_a_shim_is_heard_case_by_case_and_waits_where_its_protocol_says() -> None:
    events = [
        {"event": "connecting", "case": 0},
        {"event": "connected", "case": 0},
        {"event": "message", "case": 0, "via": "deliver"},
        {"event": "message", "case": 0, "via": "get"},
        {"event": "closed", "case": 0, "by": "server"},
        {"event": "connecting", "case": 1},
        "not json",
    ]
    lines = "\n".join(e if isinstance(e, str) else json.dumps(e) for e in events)
    shim = ShimProcess([sys.executable, "-c", f"print({lines!r}, flush=True)"])
    try:
        shim.connections = 1  # the first case's connection was accepted
        first = shim.hearing(Peer091.waits)
        shim.events(time.monotonic() + 10)  # read up to the case's final event
        assert first.said() == 5 and first.waiting()
        assert not shim.hearing(Peer10.waits).waiting()  # 1.0 waits after its confirm
        shim.connections = 2
        second = shim.hearing(Peer091.waits)
        assert shim.died(wait=10) is not None
        assert second.said() == 1 and not second.waiting()
    finally:
        shim.stop()
