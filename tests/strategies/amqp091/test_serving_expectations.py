"""Each server-side operator's case is malformed under the specification's grammar *and* under
the dialect of the client it targets, and requires of the client the reaction the
specification's section names (the serving side's audit, after the broker side's of issue 36):
one test per expectation the audit corrected."""

from __future__ import annotations

import ast
import random

import pytest

from amqpfuzz.spec import OutcomeKind
from amqpfuzz.spec.amqp091 import Spec
from amqpfuzz.spec.amqp091.codec import (
    ContentBody,
    ContentHeader,
    MethodFrame,
    codec_for,
)
from amqpfuzz.spec.amqp091.codec.tables import defined_codes
from amqpfuzz.spec.amqp091.loader import load
from amqpfuzz.spec.errors import RemoteProtocolError
from amqpfuzz.spec.protocols import extension_of
from amqpfuzz.strategies.amqp091.serving import (
    OPERATORS,
    POINTS,
    SCRIPT_BLOB,
    Point,
    Strike,
    script_builder,
)
from amqpfuzz.strategies.amqp091.serving.operators.common import unknown_type
from amqpfuzz.strategies.operator import Operator, Special
from amqpfuzz.strategies.source import Source

PROTOCOLS = ["0-9-1", "0-9", "0-8"]
DRAWS = 400


def _spec(protocol: str) -> Spec:
    """The model the serving peer speaks for ``protocol`` (0-9-1's: RabbitMQ's extension)."""
    return load(extension_of(protocol) or protocol)


def _op(name: str) -> Operator:
    return next(o for o in OPERATORS if o.name == name)


def _strike(spec: Spec, point: Point, frame_max: int = 4096, empty: bool = False) -> Strike:
    codec = codec_for(spec)
    frames: tuple[object, ...] = ()
    if point is Point.DELIVER:
        deliver = codec.method("basic.deliver", 1, consumer_tag="c", delivery_tag=1)
        frames = (deliver, *codec.content(1, b"" if empty else b"hello", content_type="t/p"))
    elif point is Point.REPLY:
        frames = (codec.method("queue.declare-ok", 1, queue="q"),)
    elif point is Point.START:
        frames = (_script(spec, Point.START).start,)
    elif point is Point.TUNE:
        frames = (_script(spec, Point.TUNE).tune,)
    return Strike(spec, codec, frame_max, frames, 1, frozenset({1}), "c", "q")  # type: ignore[arg-type]


def _script(spec: Spec, point: Point) -> object:
    op = next(o for o in OPERATORS if POINTS[o.name] is point and o.applies_to(spec))
    return script_builder(spec, (op,), POINTS, 0.0)(bytes(SCRIPT_BLOB))


def _built(name: str, protocol: str = "0-9-1", **strike: object) -> list[object]:
    """``DRAWS`` builds of the operator ``name`` at its point, from random blobs."""
    spec, op = _spec(protocol), _op(name)
    at = _strike(spec, POINTS[name], **strike)  # type: ignore[arg-type]
    rnd = random.Random(f"{protocol}:{name}")
    return [
        script_builder(spec, (op,), POINTS, 0.0)(rnd.randbytes(SCRIPT_BLOB)).built(at)
        for _ in range(DRAWS)
    ]


def _frames(spec: Spec, built: object) -> list[object]:
    """What a client reads of a build's steps (our own reader, nothing checked but framing)."""
    reader = codec_for(spec).reader()
    return list(reader.feed(b"".join(step.render(1) for step in built.steps)))  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["frame-end", "size-larger", "size-smaller", "unknown-frame-type"])
def test_a_fatal_framing_error_requires_the_socket_closed_without_a_word(name: str) -> None:
    # section 4.2.3: a frame-end that is not 0xCE (where a lying size field puts another octet)
    # or a frame type none of the defined is "a fatal protocol error": the client closes the
    # connection "without sending any further data on it", not with connection.close 501
    reaction = _op(name).reaction(_spec("0-9-1"))
    assert reaction.outcome is OutcomeKind.SOCKET_CLOSE
    assert not reaction.codes and not reaction.responses and not reaction.tolerated
    assert reaction.accepts("socket-close", None)
    assert not reaction.accepts("connection-close", 501)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_unknown_frame_type_sends_no_type_the_specification_defines(protocol: str) -> None:
    # 0-8 and 0-9 define out-of-band method, header and body frames and trace frames (4 to 7);
    # the 0-9-1 document's section 4.2.3 lists type 4 as its heartbeat (its XML says 8)
    defined = {1, 2, 3, 4, 8} | ({5, 6, 7} if protocol != "0-9-1" else set())
    kinds = {
        int(b.note.removeprefix("frame type ")) for b in _built("unknown-frame-type", protocol)
    }  # type: ignore[attr-defined]
    assert len(kinds) > 100
    assert not kinds & defined, sorted(kinds & defined)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_operator_before_connection_open_requires_a_silent_close(protocol: str) -> None:
    # 0-9-1 section 2.2.4: "prior to sending or receiving Open or Open-Ok, a peer that detects
    # an error MUST close the socket without sending any further data"; for a version the
    # client cannot handle, connection.start/client-support says the same: no protocol header
    # of the client's own, no connection.close
    spec = _spec(protocol)
    early = [
        op
        for op in OPERATORS
        if POINTS[op.name] in (Point.START, Point.TUNE) and op.scope is not Special.IGNORE
    ]
    assert {op.name for op in early} >= {"start-version", "start-table-type", "tune-on-channel"}
    for op in early:
        reaction = op.reaction(spec)
        assert reaction.outcome is OutcomeKind.SOCKET_CLOSE, op.name
        assert not reaction.responses, op.name
        assert not reaction.accepts("connection-close", 501), op.name
        assert not reaction.accepts("connection-close", 502), op.name


def test_tune_on_a_channel_is_refused_silently_or_with_the_code_4_2_3_names() -> None:
    # 4.2.3: a connection frame on a channel other than 0 "MUST signal a connection exception
    # with reply code 503 (command invalid)"; before connection.open, 2.2.4's silent close
    reaction = _op("tune-on-channel").reaction(_spec("0-9-1"))
    assert reaction.accepts("socket-close", None)
    assert reaction.accepts("connection-close", 503)
    assert not reaction.accepts("connection-close", 504)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_heartbeat_on_a_channel_requires_the_codes_the_sections_name(protocol: str) -> None:
    # 4.2.7: "A peer that receives an invalid heartbeat frame MUST raise a connection exception
    # with reply code 501 (frame error)"; 4.2.3: a non-zero channel on a heartbeat frame, 503
    spec = _spec(protocol)
    op = _op("heartbeat-channel")
    assert op.applies_to(spec)
    reaction = op.reaction(spec)
    assert reaction.outcome is OutcomeKind.CONNECTION_CLOSE
    assert [c.value for c in reaction.codes] == [501, 503]
    assert not reaction.accepts("connection-close", 505)


@pytest.mark.parametrize(
    ("protocol", "codes"), [("0-9-1", [501, 505]), ("0-9", [501]), ("0-8", [501])]
)
def test_a_header_of_another_class_may_be_refused_as_either_section_says(
    protocol: str, codes: list[int]
) -> None:
    # 4.2.6.1: an invalid class-id, 501 frame-error; 4.2.6: "wrong class IDs in content
    # headers" are badly formatted content, 505 unexpected-frame (a code 0-8 and 0-9 lack)
    spec = _spec(protocol)
    op = _op("header-class")
    assert op.applies_to(spec)
    assert [c.value for c in op.reaction(spec).codes] == codes


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_table_type_code_is_one_neither_the_grammar_nor_the_dialect_defines(
    protocol: str,
) -> None:
    # 'U' and 'L' are the 0-9-1 grammar's (4.2.1), 'x' and 's' (a short integer) the dialect's
    # RabbitMQ and the client libraries follow: none of them is an undefined type code. Every
    # code the picker can give (one octet picks it), and what both operators send
    spec = _spec(protocol)
    strike = _strike(spec, Point.DELIVER)
    defined = defined_codes(spec.protocol, strike.codec.dialect)
    codes = {unknown_type(strike, Source(bytes((b,)))).decode("latin-1") for b in range(256)}
    assert len(codes) == 256 - len(defined)
    assert not codes & defined, sorted(codes & defined)
    if protocol == "0-9-1":
        assert not codes & {"U", "L", "l", "s", "x"}
    for name in ("start-table-type", "headers-table-type"):
        sent = {code for built in _built(name, protocol) for code in _table_codes(built)}
        assert len(sent) > 50 and not sent & defined, (name, sorted(sent & defined))


def _table_codes(built: object) -> list[str]:
    """The type code of the one-entry table a build sends: connection.start's
    server-properties, named in its note, or a content header's headers, read from its octets
    (class, weight, size and flags, then the table: its length, the key and the type code)."""
    note = built.note  # type: ignore[attr-defined]
    if "type code" in note:
        return [ast.literal_eval(note.rsplit("type code ", 1)[1]).decode("latin-1")]
    for step in built.steps:  # type: ignore[attr-defined]
        data = step.render(1)
        if data[0] == 2:
            table = data[7 + 14 : -1]
            return [chr(table[5 + table[4]])]
    return []


def test_truncated_arguments_require_501_alone() -> None:
    # a frame cut short cannot be decoded: frame-error, "a malformed frame that the recipient
    # could not decode"; 502 syntax-error is for "illegal values", which it does not carry
    reaction = _op("truncated-arguments").reaction(_spec("0-9-1"))
    assert [c.value for c in reaction.codes] == [501]


@pytest.mark.parametrize("name", ["body-size-larger", "method-in-content"])
@pytest.mark.parametrize("empty", [False, True])
def test_a_method_inside_a_content_is_followed_by_a_body_with_no_header(
    name: str, empty: bool
) -> None:
    # 4.2.6: "any non-content frame explicitly marks the end of the content" (a sender may
    # abort a content) beside "missing content body frames" being 505: a body frame after the
    # intruding method has no header before it by either reading, so 505 is required either way
    spec = _spec("0-9-1")
    for built in _built(name, empty=empty)[:50]:
        frames = _frames(spec, built)
        methods = [i for i, f in enumerate(frames) if isinstance(f, MethodFrame)]
        assert len(methods) == 2, frames
        after = frames[methods[1] + 1 :]
        assert after and isinstance(after[0], ContentBody), frames
        assert not any(isinstance(f, ContentHeader) for f in after)


def test_above_frame_max_with_no_frame_max_agreed_sends_no_valid_large_frame() -> None:
    # connection.tune: frame-max 0 "means that the server does not impose any specific limit":
    # with none agreed no frame is oversized, and the frame the client cannot decode is another
    spec = _spec("0-9-1")
    for built in _built("above-frame-max", frame_max=0)[:50]:
        sizes = [len(step.render(1)) for step in built.steps]  # type: ignore[attr-defined]
        assert max(sizes) < 4096, sizes
        with pytest.raises(RemoteProtocolError) as refused:
            _frames(spec, built)
        assert refused.value.category == "frame-error"
    for built in _built("above-frame-max", frame_max=8192)[:50]:
        assert max(len(s.render(1)) for s in built.steps) > 8192  # type: ignore[attr-defined]


def test_the_replies_that_may_strike_connection_open_ok_tolerate_what_4_2_3_names() -> None:
    # the first reply a client gets is connection.open-ok: moved to a channel not open, it is a
    # connection method on a channel other than 0 (4.2.3: 503); a client's method sent in its
    # place goes on channel 0, a channel's method there (504)
    spec = _spec("0-9-1")
    closed = _op("reply-closed-channel").reaction(spec)
    assert [c.value for c in closed.codes] == [504] and closed.accepts("connection-close", 503)
    client = _op("client-method").reaction(spec)
    assert client.accepts("connection-close", 504)


@pytest.mark.parametrize("protocol", ["0-9", "0-8"])
def test_scripts_of_0_8_and_0_9_use_only_the_operators_that_apply(protocol: str) -> None:
    # 0-8 and 0-9 define no unexpected-frame: operators requiring it alone have no case there
    # (it raised KeyError); those that accept it beside their own codes do
    spec = _spec(protocol)
    build = script_builder(spec, tuple(OPERATORS), POINTS, 0.0)
    rnd = random.Random(protocol)
    seen = {build(rnd.randbytes(SCRIPT_BLOB)).label for _ in range(600)}
    assert "body-alone" not in seen and "header-alone" not in seen
    assert {"header-class", "unsolicited-reply", "heartbeat-channel"} <= seen
    unsolicited = _op("unsolicited-reply").reaction(spec)
    assert [c.value for c in unsolicited.codes] == [503, 504]
