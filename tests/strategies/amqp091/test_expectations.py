"""Each operator's case is malformed under the specification's grammar *and* under the dialect
of the broker it targets, and expects the reaction the specification's section names (the
operator audit, issue 36): one test per expectation the audit corrected."""

from __future__ import annotations

import ast
import random
import re
from typing import Any

import pytest

from amqpfuzz import strategies as afs
from amqpfuzz.fuzzer.protocols.families import driver_for
from amqpfuzz.spec.amqp091 import load
from amqpfuzz.spec.amqp091.asserts import violation
from amqpfuzz.spec.amqp091.codec import MethodFrame, codec_for
from amqpfuzz.spec.amqp091.codec.tables import DIALECTS, GRAMMARS
from amqpfuzz.strategies import Case, Reaction
from amqpfuzz.strategies.amqp091.family import FAMILY
from amqpfuzz.strategies.source import Source

FRAME_MAX = 4096
DRAWS = 1500


def _cases(name: str, protocol: str = "0-9-1", **options: Any) -> list[Case]:
    """``DRAWS`` cases of the operator ``name``, from random blobs (a fixed seed)."""
    ctx = FAMILY.context(protocol, frame_max=FRAME_MAX, prefix="af-e-", **options)
    op = next(o for o in afs.operators(protocol) if o.name == name)
    rnd = random.Random(f"{protocol}:{name}")
    return [op.case(Source(rnd.randbytes(FAMILY.blob)), ctx) for _ in range(DRAWS)]


@pytest.mark.parametrize("protocol", ["0-9-1", "0-9-1-rabbit", "0-9", "0-8"])
def test_table_type_sends_a_code_neither_the_grammar_nor_the_dialect_defines(
    protocol: str,
) -> None:
    # 'L' is the 0-9-1 grammar's long-long-int (section 4.2.1) and RabbitMQ 3.10 decodes it;
    # 'U' is the grammar's short-int: neither is an undefined type code for a RabbitMQ target
    defined = GRAMMARS.get(protocol, GRAMMARS["0-9-1"]) | frozenset(DIALECTS["rabbit"])
    sent = {case.note.removeprefix("table type code ") for case in _cases("table-type", protocol)}
    codes = {ast.literal_eval(text).decode("latin-1") for text in sent}
    assert len(codes) > 100
    assert not codes & defined, sorted(codes & defined)
    if protocol.startswith("0-9-1"):
        assert not codes & {"L", "U", "l", "s", "x"}


@pytest.mark.parametrize("name", ["frame-end", "size-larger", "size-smaller", "unknown-frame-type"])
def test_a_fatal_framing_error_closes_the_socket_without_a_word(name: str) -> None:
    # section 4.2.3: a frame-end that is not 0xCE (where a lying size field puts another octet)
    # or an undefined frame type is "a fatal protocol error": the connection is closed
    # "without sending any further data on it", not with connection.close 501
    spec = load("0-9-1")
    op = next(o for o in afs.operators() if o.name == name)
    reaction = op.reaction(spec)
    assert reaction.outcome == "socket-close"
    assert not reaction.codes and not reaction.responses and not reaction.tolerated
    assert not reaction.accepts("connection-close", 501)
    assert reaction.accepts("socket-close", None)


@pytest.mark.parametrize("protocol", ["0-9-1", "0-9", "0-8"])
def test_unknown_frame_type_sends_no_type_the_specification_defines(protocol: str) -> None:
    # 0-8 and 0-9 define out-of-band method, header and body frames and trace frames (4 to 7);
    # the 0-9-1 document's section 4.2.3 lists type 4 as its heartbeat (its XML says 8)
    defined = {1, 2, 3, 4, 8} | ({5, 6, 7} if protocol != "0-9-1" else set())
    kinds = {
        int(c.note.removeprefix("frame type ")) for c in _cases("unknown-frame-type", protocol)
    }
    assert len(kinds) > 100
    assert not kinds & defined, sorted(kinds & defined)


@pytest.mark.parametrize("protocol", ["0-9-1", "0-9", "0-8"])
def test_a_heartbeat_on_a_channel_expects_the_codes_the_sections_name(protocol: str) -> None:
    # 4.2.7: "A peer that receives an invalid heartbeat frame MUST raise a connection exception
    # with reply code 501 (frame error)"; 4.2.3: a non-zero channel on a heartbeat frame, 503
    spec = load(protocol)
    op = next(o for o in afs.operators(protocol) if o.name == "heartbeat-channel")
    reaction = op.reaction(spec)
    assert reaction.outcome == "connection-close"
    assert [c.value for c in reaction.codes] == [501, 503]
    assert not reaction.accepts("connection-close", 505)


@pytest.mark.parametrize(("protocol", "codes"), [("0-9-1", [501, 505]), ("0-8", [501])])
def test_a_header_of_another_class_may_be_answered_as_either_section_says(
    protocol: str, codes: list[int]
) -> None:
    # 4.2.6.1: an invalid class-id, 501 frame-error; 4.2.6: "wrong class IDs in content
    # headers" are badly formatted content, 505 unexpected-frame (a code 0-8 does not define)
    for case in _cases("header-class", protocol)[:50]:
        assert case.expected.outcome == "connection-close"
        assert [c.value for c in case.expected.codes] == codes


def test_a_connection_method_on_a_channel_expects_what_section_4_2_3_names() -> None:
    # "A peer that receives a non-zero channel number for one of these frames MUST signal a
    # connection exception with reply code 503 (command invalid)": not 504 channel-error
    op = next(o for o in afs.operators() if o.name == "connection-on-channel")
    reaction = op.reaction(load("0-9-1"))
    assert [c.value for c in reaction.codes] == [503]
    assert not reaction.accepts("connection-close", 504)


def _ids(case: Case) -> tuple[int, int]:
    """The class and method ids a case's (single) method frame carries."""
    payload = case.steps[0].payload  # type: ignore[attr-defined]
    return int.from_bytes(payload[:2], "big"), int.from_bytes(payload[2:4], "big")


def test_unknown_class_and_method_are_unknown_to_the_broker_and_in_the_grammar() -> None:
    # a broker that speaks RabbitMQ's extension (its profile says so) knows class 85 (confirm)
    # and basic.nack, exchange.bind and unbind; and the grammar's ids run from 1 (4.2.1)
    ctx = FAMILY.context("0-9-1", frame_max=FRAME_MAX, traffic={"extension": True})
    assert ctx.extended is not None
    unknown_class = next(o for o in afs.operators() if o.name == "unknown-class")
    for class_id in (0, 85):
        case = unknown_class.case(Source(class_id.to_bytes(2, "big") + bytes(40)), ctx)
        assert _ids(case)[0] not in {0, 85, *(c.index for c in ctx.spec.classes)}
    unknown_method = next(o for o in afs.operators() if o.name == "unknown-method")
    classes = [c for c in ctx.spec.classes if c.handler == "channel" and c.name != "channel"]
    extension = {c.index: c for c in ctx.extended.spec.classes}
    for place, amqp_class in enumerate(classes):
        wider = extension.get(amqp_class.index)
        for method_id in (0, *(m.index for m in (wider.methods if wider else ()))):
            blob = bytes((place,)) + method_id.to_bytes(2, "big") + bytes(40)
            class_id, drawn = _ids(unknown_method.case(Source(blob), ctx))
            assert class_id == amqp_class.index and drawn != 0
            assert drawn not in {m.index for m in (wider or amqp_class).methods}, (
                amqp_class.name,
                drawn,
            )


@pytest.mark.parametrize("protocol", ["0-9-1", "0-9", "0-8"])
@pytest.mark.parametrize("name", ["unknown-vhost", "handshake-again"])
def test_a_virtual_host_nobody_made_breaks_no_assert(protocol: str, name: str) -> None:
    # 0-8's and 0-9's connection.open asserts ^[a-zA-Z0-9/-_]+$ on its path: a name with a '-'
    # would be a syntax error before it is an unknown virtual host (402 invalid-path)
    codec = codec_for(protocol)
    fld = next(f for f in codec.spec.method("connection.open").fields if f.name == "virtual-host")
    opened = 0
    for case in _cases(name, protocol)[:300]:
        reader = codec.reader(check_asserts=False)
        reader.feed(codec.spec.protocol_header)
        for frame in reader.feed(case.render(1)):
            if isinstance(frame, MethodFrame) and frame.name == "connection.open":
                opened += 1
                assert violation(fld.asserts, frame.arguments["virtual_host"]) is None, case
    assert opened > 50


# -- second pass: the broker-side expectations the audit left open ---------------------------


def test_a_short_string_that_is_not_utf8_may_be_accepted() -> None:
    # 4.2.1's grammar: short-string = OCTET *string-char, string-char = %x01 .. %xFF; only
    # 4.2.5.3's prose says UTF-8. A server that takes the octets is conformant, and answers the
    # method as a valid one (a name it then finds nowhere: its rules' not-found); one that
    # refuses them closes with 502
    cases = _cases("invalid-utf8")[:200]
    for case in cases:
        expected = case.expected
        assert expected.outcome == "connection-close" and expected.code == 502, case
        assert expected.or_reply and expected.accepts("reply", None), case
        assert not expected.accepts("connection-close", 501)
    assert any(c.expected.accepts("channel-close", 404) for c in cases)


def _broken(case: Case) -> Any:
    (frame,) = case.frames
    return frame


@pytest.mark.parametrize("method", ["queue.declare", "exchange.declare"])
def test_a_name_over_its_domain_s_length_is_a_syntax_error_not_the_syntax_rule_s(
    method: str,
) -> None:
    # the field's syntax rule (on-failure precondition-failed) is about its characters (and an
    # exchange name's being non-empty); a name of allowed characters over the domain's length
    # (127) breaks the domain's assert alone: 502 syntax-error, a connection exception
    spec = load("0-9-1")
    fld = next(f for f in spec.method(method).fields if f.name in ("queue", "exchange"))
    seen = {"length": 0, "other": 0}
    for case in _cases("assert-violation"):
        if not case.spec_ref.startswith(f"{method}/{fld.name}"):
            continue
        value = _broken(case).arguments[fld.attr]
        what = case.note.split(" breaks ")[1]
        if what.startswith("length"):
            assert len(value) > 127 and re.fullmatch(r"[a-zA-Z0-9-_.:]*", value), case
            assert case.expected.outcome == "connection-close", case
            assert [c.name for c in case.expected.codes] == ["syntax-error"], case
            seen["length"] += 1
        else:  # the characters, or an empty exchange name: what the rule says
            assert case.expected.outcome == "channel-close", case
            assert case.expected.codes[0].name == "precondition-failed", case
            seen["other"] += 1
    assert seen["length"] and seen["other"], seen


def _start_ok(case: Case) -> MethodFrame:
    codec = codec_for("0-9-1")
    reader = codec.reader(check_asserts=False)
    reader.feed(codec.spec.protocol_header)
    return next(
        f
        for f in reader.feed(case.render(1))
        if isinstance(f, MethodFrame) and f.name == "connection.start-ok"
    )


@pytest.mark.parametrize("name", ["refused-login", "malformed-response"])
def test_a_failed_login_is_told_why_only_where_its_start_ok_asked(name: str) -> None:
    # 2.2.4: before Open or Open-Ok, "a peer that detects an error MUST close the socket
    # without sending any further data"; RabbitMQ's extension sends connection.close 403 first
    # to a client whose start-ok announced authentication_failure_close, and to no other
    told = {True: 0, False: 0}
    for case in _cases(name)[:300]:
        properties = _start_ok(case).arguments["client_properties"]
        asked = properties.get("capabilities", {}).get("authentication_failure_close") is True
        told[asked] += 1
        assert case.expected.outcome == "socket-close" and not case.expected.codes, case
        assert case.expected.accepts("socket-close", None)
        assert case.expected.accepts("connection-close", 403) == asked, case
        assert not case.expected.accepts("connection-close", 502), case
    assert told[True] and told[False], told


def test_a_reaction_read_back_from_a_reproducer_keeps_the_scope_its_codes_close() -> None:
    """A failed login's 403 closes the connection (a soft code, read by its name alone, would
    close a channel): a reproducer's reaction, read back, allows what the case allowed."""
    driver = driver_for("0-9-1")
    for case in _cases("refused-login")[:100]:
        again = Reaction.from_dict(case.expected.as_dict(), driver.code)
        assert again == case.expected, case
        assert again.accepts("connection-close", 403) == case.expected.accepts(
            "connection-close", 403
        )


@pytest.mark.parametrize("protocol", ["0-9-1", "0-9", "0-8"])
def test_a_method_out_of_order_before_open_closes_the_socket_without_a_word(
    protocol: str,
) -> None:
    # 2.2.4: an error detected "prior to sending or receiving Open or Open-Ok": the socket is
    # closed without sending any further data, not connection.close 503, 504 or 505
    for case in _cases("out-of-order", protocol)[:100]:
        assert case.expected.outcome == "socket-close", case
        assert not case.expected.codes and not case.expected.tolerated, case
        assert not case.expected.responses and not case.expected.or_reply, case
        for code in (503, 504, 505):
            assert not case.expected.accepts("connection-close", code), case


@pytest.mark.parametrize("name", ["unknown-vhost", "handshake-again"])
def test_errors_in_or_after_connection_open_keep_their_negotiated_close(name: str) -> None:
    # the server has received Open (unknown-vhost: its close is the reply to it) or the
    # connection is open (handshake-again): 2.2.4's silent close no longer applies
    for case in _cases(name)[:50]:
        assert case.expected.outcome == "connection-close", case


def test_a_missing_entity_case_names_the_rule_it_breaks() -> None:
    # a queue named that does not exist breaks the field's must-exist rule; queue-known ("either
    # specify a queue name or have previously declared a queue") is about an empty name
    refs = set()
    for case in _cases("missing-entity"):
        refs.add(case.spec_ref)
        frame = _broken(case)
        fld = case.spec_ref.split("/")[1]
        named = {f.name: v for f, v in zip(frame.method.fields, frame.values, strict=True)}
        if isinstance(named.get(fld), str):
            assert named[fld], case  # a name, never the empty one
    assert not any(ref.endswith("/queue-known") for ref in refs), sorted(refs)
    assert "queue.bind/queue/must-exist" in refs and "queue.purge/queue/must-exist" in refs
