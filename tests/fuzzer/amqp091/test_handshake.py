"""The operators on the connection itself: the driver's stages, what a connection prepared only
part of the way reads as the case's reaction, and campaigns of them on real brokers."""

from __future__ import annotations

import collections
import json
import re
import socket
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from amqpfuzz.fuzzer.brokers import Broker, parse_target
from amqpfuzz.fuzzer.engine.campaign import Stats
from amqpfuzz.fuzzer.engine.runner import Runner
from amqpfuzz.fuzzer.protocols import Outcome
from amqpfuzz.fuzzer.protocols.amqp091.connection import Connection, HeaderAnswer
from amqpfuzz.fuzzer.protocols.families import driver_for
from amqpfuzz.spec import OutcomeKind, RemoteProtocolError
from amqpfuzz.spec.amqp091.codec import ProtocolHeader, codec_for
from amqpfuzz.strategies import malformed_case_builder
from amqpfuzz.strategies.amqp091.operators.handshake import OPERATORS, STAGES, Stage
from tests.fuzzer.amqp091.test_campaigns import campaign

NAMES = tuple(op.name for op in OPERATORS)
CODEC = codec_for("0-9-1")


class Prepared:
    """What the driver reads of a connection: how far it was prepared, its virtual host."""

    def __init__(self, stage: Stage | None) -> None:
        self.stage = stage
        self.vhost = "/"


@pytest.mark.parametrize("name", NAMES)
def test_each_connection_case_runs_where_its_operator_says(name: str) -> None:
    driver = driver_for("0-9-1")
    case = malformed_case_builder([name], protocol="0-9-1")(bytes(64))
    stage = STAGES.get(name)
    assert driver.stage(case) == stage and driver.needs_own_connection(case)
    connection = Prepared(stage)
    probe, opening = driver.probe(connection, 1), driver.open_channel(connection, 1)
    if stage in (Stage.HEADER, Stage.START):  # nothing can follow: the answer is the case's
        assert probe == opening == b""
        assert driver.answers(case) != driver.rules.probe_replies
    elif stage == Stage.TUNE:  # the case tuned it: the target's virtual host opened behind it
        assert opening == b"" and driver.answers(case) == ("connection.open-ok",)
        assert CODEC.reader().feed(probe)[0].name == "connection.open"
    else:  # open (narrow, or not prepared at all): basic.qos on the control channel
        assert CODEC.reader().feed(probe)[0].name == "basic.qos"


def test_a_header_is_answered_by_frames_or_a_header_and_nothing_after_it() -> None:
    reader = HeaderAnswer(CODEC)
    assert reader.feed(b"AMQ") == []
    # a 1.0 SASL header and the frame after it: that protocol's, not read
    assert reader.feed(b"P\x03\x01\x00\x00\x00\x00\x00\x10\x02\x01") == [
        ProtocolHeader(b"AMQP\x03\x01\x00\x00")
    ]
    assert reader.feed(b"\xff" * 20) == []
    start = CODEC.method("connection.start", 0, mechanisms=b"PLAIN", locales=b"en_US")
    framed = HeaderAnswer(CODEC)
    assert [f.name for f in framed.feed(CODEC.encode(start))] == ["connection.start"]
    with pytest.raises(RemoteProtocolError):
        HeaderAnswer(CODEC).feed(b"AMQX\x00\x00\x09\x01")


def _prepared(stage: Stage, sent: bytes) -> tuple[Connection, socket.socket]:
    ours, peer = socket.socketpair()
    connection = Connection(ours, CODEC, 131072, 2047)
    connection.stage = stage
    if stage == Stage.HEADER:
        connection.reader = HeaderAnswer(CODEC)
    connection.send(sent)
    peer.recv(64)
    return connection, peer


def test_a_server_going_on_with_the_handshake_is_the_cases_reply() -> None:
    # the header sent, echoed: the server speaks it (and goes on in it: not read)
    connection, peer = _prepared(Stage.HEADER, b"AMQP\x00\x01\x00\x00")
    peer.sendall(b"AMQP\x00\x01\x00\x00\x00\x00\x00\x08")
    connection.pump(1.0)
    assert connection.ended is not None and connection.ended.kind == OutcomeKind.REPLY
    assert connection.ended.reply == "protocol header"
    # start-ok answered with tune: the server took the login
    connection, peer = _prepared(Stage.START, b"start-ok")
    peer.sendall(CODEC.encode(CODEC.method("connection.tune", 0, channel_max=5)))
    connection.pump(1.0)
    assert connection.ended is not None and connection.ended.kind == OutcomeKind.REPLY
    assert connection.ended.reply == "connection.tune"


def test_a_refusal_is_a_close_after_the_servers_own_header() -> None:
    connection, peer = _prepared(Stage.HEADER, b"AMQP\x01\x01\x00\x0a")
    peer.sendall(b"AMQP\x00\x00\x09\x01")
    peer.close()
    while connection.pump(1.0) and connection.ended is None:
        pass
    assert connection.ended is not None and connection.ended.kind == OutcomeKind.SOCKET_CLOSE
    assert list(connection.inbox[0]) == [ProtocolHeader(b"AMQP\x00\x00\x09\x01")]
    connection, peer = _prepared(Stage.TUNE, b"tune-ok")
    close = CODEC.method("connection.close", 0, reply_code=530, reply_text="NOT_ALLOWED")
    peer.sendall(CODEC.encode(close))
    connection.pump(1.0)
    assert connection.ended is not None and connection.ended.kind == OutcomeKind.CONNECTION_CLOSE
    assert connection.ended.code == 530
    # a channel opened before the connection was, closed: that close is the case's answer
    connection, peer = _prepared(Stage.TUNE, b"tune-ok, channel.open")
    refused = CODEC.method("channel.close", 1, reply_code=504, reply_text="CHANNEL_ERROR")
    peer.sendall(CODEC.encode(refused))
    connection.pump(1.0)
    assert connection.ended is not None and connection.ended.kind == OutcomeKind.CHANNEL_CLOSE
    assert connection.ended.code == 504


class Spare:
    """A connection prepared ahead, which the peer may have closed while it waited."""

    def __init__(self, closed: bool) -> None:
        self.closed, self.ended, self.aborted = closed, None, False

    def pump(self, timeout: float) -> bool:
        if self.closed:
            self.ended = Outcome(OutcomeKind.SOCKET_CLOSE, text="the broker closed the socket")
        return self.closed

    def abort(self) -> None:
        self.aborted = True


def test_a_spare_prepared_so_far_that_the_peer_closed_is_not_used() -> None:
    runner = Runner(parse_target("amqp://guest:guest@127.0.0.1:1/"), timeout=0.5)
    case = malformed_case_builder(["unknown-mechanism"], protocol="0-9-1")(bytes(64))
    stale, fresh = Spare(closed=True), Spare(closed=False)
    pool = runner._spares.setdefault("start", collections.deque())
    for spare in (stale, fresh):
        done: Future[Any] = Future()
        done.set_result(spare)
        pool.append(done)
    try:
        assert runner._take_spare(case) is fresh and stale.aborted and not fresh.aborted
    finally:
        runner.close()


# -- on real brokers -----------------------------------------------------------------------------


def _campaign(broker: Broker, out: Path, **options: Any) -> tuple[Stats, list[dict[str, Any]]]:
    """The connection-stage operators alone (RabbitMQ waits 3 s before closing a failed login:
    a timeout above that)."""
    settings = {"seed": 3, "timeout": 5.0, "operators": NAMES, "valid_share": 0.0}
    return campaign(broker, out, **{**settings, **options})


@pytest.mark.slow
def test_the_connection_operators_on_rabbitmq_fail_only_where_its_profile_says(
    rabbitmq: Broker, tmp_path: Path
) -> None:
    stats, records = _campaign(rabbitmq, tmp_path, max_examples=160)
    assert stats.failures == 0, stats.signatures
    verdicts = collections.Counter((r["mutation"], r["verdict"]) for r in records)
    assert {m for m, _ in verdicts} == set(NAMES)
    # every operator but those RabbitMQ answers otherwise passes at least once: it closes with
    # a code where 2.2.4 asks for the socket closed without a word (out-of-order), and an
    # unknown virtual host gets 530, not 402
    assert {m for m, v in verdicts if v == "pass"} == set(NAMES) - {"unknown-vhost", "out-of-order"}
    xfails = {r["deviation_entry"] for r in records if r["verdict"] == "xfail"}
    assert all(
        "unknown-vhost" in e or "channel-above-max" in e or "out-of-order" in e for e in xfails
    ), xfails
    seen = {(r["mutation"], r["observed"]["outcome"]) for r in records}
    assert ("other-protocol-header", "reply") in seen  # 0-8, 0-9 and 1.0 spoken on the port
    assert ("refused-login", "socket-close") in seen and ("channel-above-max", "reply") in seen
    # the target's own login (PLAIN's guest, guest) is in no record: the cases log in as others
    assert not re.search(r"x00guest\\+x00guest", json.dumps(records))


@pytest.mark.slow
def test_the_connection_operators_on_garagemq_fail_only_where_its_profile_says(
    fresh_garagemq: Broker, tmp_path: Path
) -> None:
    stats, records = _campaign(fresh_garagemq, tmp_path, max_examples=120, timeout=2.0)
    assert stats.failures == 0, stats.signatures
    assert {r["mutation"] for r in records} == set(NAMES)
    assert any(r["verdict"] == "xfail" for r in records)
    # it serves 0-9-1 alone: every other header is refused with its own and a close
    other = [r for r in records if r["mutation"] == "other-protocol-header"]
    assert other and all(r["observed"]["outcome"] == "socket-close" for r in other)


def _closed_with(method: tuple[int, int], answered_a_close: bool) -> Connection:
    ours, peer = socket.socketpair()
    connection = Connection(ours, CODEC, 131072, 2047)
    if answered_a_close:  # the broker closed a channel: the connection answers close-ok
        peer.sendall(CODEC.encode(CODEC.method("channel.close", 3, reply_code=404)))
        connection.pump(1.0)
        assert peer.recv(64) == CODEC.encode(CODEC.method("channel.close-ok", 3))
    close = CODEC.method(
        "connection.close", 0, reply_code=504, class_id=method[0], method_id=method[1]
    )
    peer.sendall(CODEC.encode(close))
    connection.pump(1.0)
    assert connection.ended is not None
    return connection


def test_a_connection_closed_on_its_own_close_ok_is_told_apart() -> None:
    """RabbitMQ once closed a lane's connection with 504 "expected 'channel.open'" naming
    channel.close-ok (20/41) in the middle of a valid walk that passes alone every time: the
    connection had answered a channel close of the broker's. Such an ending may be the
    connection's own doing: the runner runs its cases in flight again alone."""
    assert _closed_with((20, 41), answered_a_close=True).ended_by_us
    assert not _closed_with((20, 41), answered_a_close=False).ended_by_us
    assert not _closed_with((50, 10), answered_a_close=True).ended_by_us
