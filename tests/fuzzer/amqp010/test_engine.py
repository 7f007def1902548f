"""AMQP 0-10 cases through the engine, against the scripted 0-10 peer's sessions mode (no 0-10
broker is packaged here; the peer's bytes are written by hand from the specification's layout,
see :mod:`peer010`): a session attached per case on shared connections, its detach behind it as
the probe, connections of their own for cases that may end theirs or need a channel with no
session, each reaction judged by its scope and code. The peer is sloppy on purpose (it reads no
command's arguments): what it lets through is found, with a stable signature."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Iterator

import pytest

from amqpfuzz import strategies as afs
from amqpfuzz.fuzzer.brokers import parse_target
from amqpfuzz.fuzzer.engine.runner import Result, Runner
from amqpfuzz.strategies import Case
from tests.helpers.peer010 import Script, scripted

malformed_case_builder = functools.partial(afs.malformed_case_builder, protocol="0-10")
valid_case_builder = functools.partial(afs.valid_case_builder, protocol="0-10")

PREFIX = "amqpfuzz-t010-"
NO_RESULT = ["execution.sync", "message.flush", "message.stop", "queue.purge", "tx.select"]


@pytest.fixture
def peer() -> Iterator[tuple[Script, str]]:
    script = Script(sessions=True)
    with scripted(script) as port:
        yield script, f"amqp://guest:guest@127.0.0.1:{port}/"


@pytest.fixture
def runner(peer: tuple[Script, str]) -> Iterator[Runner]:
    running = Runner(parse_target(peer[1]), protocol="0-10", timeout=2.0, prefix=PREFIX).start()
    yield running
    running.close()


def drawn(build: Callable[[bytes], Case], count: int, seed: int = 7) -> list[Case]:
    randomly = random.Random(seed)
    return [build(randomly.randbytes(512)) for _ in range(count)]


def kinds(results: list[Result]) -> set[tuple[str, object]]:
    return {(r.outcome.kind, r.outcome.reply_code) for r in results}


def test_valid_commands_are_completed_each_on_a_session_of_its_own(runner: Runner) -> None:
    results = runner.run(drawn(valid_case_builder(methods=NO_RESULT, prefix=PREFIX), 40))
    assert [r.failure for r in results if r.failure] == []
    assert {r.outcome.kind for r in results} == {"reply"}
    for result in results:
        names = [getattr(f, "name", None) for f in result.outcome.frames]
        assert "session.completed" in names, result
    lanes = [lane for lane in runner.lanes if lane.connection is not None]
    assert lanes and all(lane.connection is not None and lane.connection.alive for lane in lanes)


def test_a_command_with_a_result_the_peer_never_sends_is_found(runner: Runner) -> None:
    """queue.query's definition names a result: the peer completes it but sends no
    execution.result. The case waits its time out, and the failure names what was missing."""
    results = runner.run(drawn(valid_case_builder(methods=["queue.query"], prefix=PREFIX), 3))
    assert all(r.failure is not None for r in results)
    assert {r.failure.signature for r in results if r.failure} == {
        "hang:queue.query:valid:reply->timeout"
    }


@pytest.mark.parametrize(
    ("operator", "expected"),
    [
        ("frame-size-small", ("connection-close", 501)),
        ("frame-version", ("connection-close", 501)),
        ("segment-type-unknown", ("connection-close", 501)),
        ("track-unknown", ("connection-close", 501)),
        ("first-frame-missing", ("connection-close", 501)),
        ("segment-interrupted", ("connection-close", 501)),
        ("control-on-command-track", ("connection-close", 501)),
        ("header-on-non-transfer", ("execution-close", 503)),
        ("body-on-non-transfer", ("execution-close", 503)),
        ("class-code-unknown", ("execution-close", 540)),
        ("command-before-attach", ("session-close", 3)),
        ("gap-before-attach", ("session-close", 3)),
        ("command-before-command-point", ("session-close", 4)),
        ("attach-on-attached", ("session-close", 2)),
        ("protocol-header-wrong", ("socket-close", None)),
    ],
)
def test_what_the_peer_refuses_is_judged_conformant(
    runner: Runner, operator: str, expected: tuple[str, int | None]
) -> None:
    cases = drawn(malformed_case_builder(operators=[operator], prefix=PREFIX), 6)
    before = [lane.connection for lane in runner.lanes]
    results = runner.run(cases)
    assert [r.failure for r in results if r.failure] == []
    assert kinds(results) == {expected}
    if expected[0] != "execution-close" and operator != "attach-on-attached":
        assert [lane.connection for lane in runner.lanes] == before  # a connection of its own


def test_what_the_sloppy_peer_lets_through_is_found_with_a_stable_signature(
    runner: Runner,
) -> None:
    """It reads no command's arguments: a lying packing flag, an inverted sequence-set, an
    enum value out of its domain are completed as if they were fine."""
    ops = ["packing-flags-lie", "sequence-set-inverted", "enum-out-of-range"]
    cases = drawn(malformed_case_builder(operators=ops, prefix=PREFIX), 12)
    first = runner.run(cases)
    assert all(r.failure is not None for r in first)
    assert {r.outcome.kind for r in first} == {"reply"}
    again = runner.run(cases)
    assert [r.failure.signature for r in first if r.failure] == [
        r.failure.signature for r in again if r.failure
    ]
    assert {s.split(":")[2] for s in (r.failure.signature for r in first if r.failure)} == set(ops)
