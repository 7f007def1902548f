"""Each 1.0 operator's case is malformed under the type system and the transport part, and
expects the reaction the section it cites names (the operator audit, issue 36): one test per
expectation the audit corrected."""

from __future__ import annotations

import random

import pytest
from hypothesis.errors import InvalidArgument

from amqpfuzz.spec.amqp10.codec import codec_for
from amqpfuzz.strategies import Case, Reaction, malformed_case_builder, operators
from amqpfuzz.strategies.amqp10.context import CODES
from amqpfuzz.strategies.amqp10.family import FAMILY
from amqpfuzz.strategies.source import Source

codec = codec_for()


def _cases(name: str, count: int = 400) -> list[Case]:
    build = malformed_case_builder([name], protocol="1.0", prefix="amqpfuzz-e-")
    rnd = random.Random(name)
    return [build(rnd.randbytes(512)) for _ in range(count)]


def test_a_short_size_cuts_the_frame_s_own_body() -> None:
    # SIZE 8 is an empty frame, valid and ignored (transport 2.4.5): the case's error would then
    # be the body's octets read as a frame header, whose SIZE a peer may rightly wait for
    sizes = set()
    for case in _cases("size-short"):
        data = case.steps[0].render(3)
        size = int.from_bytes(data[:4], "big")
        sizes.add(size)
        assert 8 < size < len(data), case
    assert min(sizes) == 9


def test_a_handle_in_use_may_be_answered_by_the_close_the_text_names() -> None:
    # 2.7.3: "MUST be responded to with an immediate close carrying a Handle-in-use
    # session-error": an end with it (the error's scope) or a close with it (the text's word)
    for case in _cases("handle-in-use", 50):
        assert case.expected.outcome == "session-close"
        assert case.expected.accepts("session-close", "amqp:session:handle-in-use")
        assert case.expected.accepts("connection-close", "amqp:session:handle-in-use")
        assert not case.expected.accepts("connection-close", "amqp:connection:framing-error")


def test_a_handle_a_peer_may_not_support_may_close_the_connection() -> None:
    # 2.7.2: "A peer that receives a handle outside the supported range MUST close the
    # connection with the framing-error error-code"; handle 0 is in every range
    framing = "amqp:connection:framing-error"
    seen = {True: 0, False: 0}
    for case in _cases("unattached-handle"):
        frame = codec.reader(max_frame_size=1 << 20)
        frame.expect_header = False
        (found,) = frame.feed(case.steps[0].render(3))
        beyond = int(found.body["handle"]) > 0
        seen[beyond] += 1
        assert case.expected.accepts("session-close", "amqp:session:unattached-handle")
        assert case.expected.accepts("connection-close", framing) == beyond, case
    assert seen[True] and seen[False]


def test_a_frame_over_max_is_not_drawn_against_a_peer_with_no_limit() -> None:
    # open's max-frame-size defaults to 4294967295, the most a 32-bit SIZE can say (2.7.1,
    # 2.3.1): against a peer that announced none no frame is oversized, and the operator must
    # not build a frame of 4 GiB trying
    op = next(o for o in operators("1.0") if o.name == "frame-over-max")
    unlimited = FAMILY.context("1.0", frame_max=0xFFFFFFFF, prefix="amqpfuzz-e-")
    assert not op.usable_in(unlimited)
    assert op.usable_in(FAMILY.context("1.0", frame_max=0xFFFFFFFE))
    with pytest.raises(InvalidArgument, match="frame-over-max"):
        op.case(Source(bytes(512)), unlimited)
    # a zeroed blob reads as the first operator named: frame-over-max is not drawn at all
    build = malformed_case_builder(
        ["frame-over-max", "early-large-frame"], protocol="1.0", frame_max=0xFFFFFFFF
    )
    rnd = random.Random("unlimited")
    for blob in (bytes(512), *(rnd.randbytes(512) for _ in range(50))):
        assert build(blob).operator == "early-large-frame"
    with pytest.raises(InvalidArgument, match="none has a case"):
        malformed_case_builder(["frame-over-max"], protocol="1.0", frame_max=0xFFFFFFFF)
    # with a limit, the frame is just over it
    limited = malformed_case_builder(["frame-over-max"], protocol="1.0", frame_max=4096)
    case = limited(bytes(512))
    assert 4096 < len(case.steps[0].render(3)) <= 4096 + 64


UNNAMED = [
    "before-open", "open-twice", "no-session", "begin-twice", "unknown-disposition",
    "unknown-frame-type", "deep-nesting", "too-many-fields",
]  # fmt: skip


@pytest.mark.parametrize("name", UNNAMED)
def test_a_wrong_the_transport_names_no_reaction_to_may_be_met_by_any_close(name: str) -> None:
    # the false-alarm audit (issue 36): RabbitMQ answers a second open with a close that
    # carries no error, and a begin before open by closing the socket; 2.4.1 names no reaction
    # to either (nor 2.5.1, 2.7.6, 2.3.1 and 1.4 to the others), so any close is conformant,
    # as is accepting it; the broker must still answer and stay up
    for case in _cases(name, 20):
        expected = case.expected
        assert expected.any_close and "or any close" in str(expected)
        for outcome in ("connection-close", "session-close", "link-close", "socket-close"):
            assert expected.accepts(outcome, None), (outcome, case)
        assert expected.accepts("connection-close", "amqp:internal-error")
        assert expected.accepts("reply", None)
        for outcome in ("timeout", "broker-down", "bad-frame"):
            assert not expected.accepts(outcome, None), (outcome, case)
    # a reproducer keeps it; one written before it had none
    data = expected.as_dict()
    assert Reaction.from_dict(data, lambda n: CODES.code(codec.spec, n)) == expected
    older = {k: v for k, v in data.items() if k != "any_close"}
    assert not Reaction.from_dict(older, lambda n: CODES.code(codec.spec, n)).any_close


def test_a_wrong_the_transport_names_a_reaction_to_wants_that_one() -> None:
    # 2.6.7 names the detach a transfer beyond credit may bring: not any close; 2.7.4 names
    # the session error of a handle never attached
    for name in ("beyond-credit", "unattached-handle", "handle-in-use"):
        for case in _cases(name, 20):
            assert not case.expected.any_close, case
            assert not case.expected.accepts("socket-close", None), case
    named = {o.name for o in operators("1.0") if not o.unnamed}
    assert named.isdisjoint(UNNAMED) and len(named) > 20
