"""The 0-10 strategies and mutation operators: values of every type, instances of every struct,
control and command, whole connections, valid cases our checked codec reads back as the command
they name, and malformed cases that our own decoder refuses for the reason their operator
gives (or, for the operators of sessions and the connection's order, reads as well-formed)."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from amqpfuzz import strategies as afs
from amqpfuzz.fuzzer.protocols.amqp010.driver import Amqp010Driver
from amqpfuzz.spec import RemoteProtocolError
from amqpfuzz.spec.amqp010.codec import Command, Control, Header, Struct, codec_for
from amqpfuzz.strategies import fuzz_cases, malformed_cases, operators, valid_cases
from amqpfuzz.strategies.amqp010 import (
    CASE_CHANNEL,
    Wire,
    commands,
    connection_frames_of,
    controls,
    error_code,
    structs,
    type_values,
)
from amqpfuzz.strategies.amqp010.context import DOMAINS
from amqpfuzz.strategies.amqp010.values import Values
from amqpfuzz.strategies.source import Source

case_methods = functools.partial(afs.case_methods, protocol="0-10")
malformed_case_builder = functools.partial(afs.malformed_case_builder, protocol="0-10")
valid_case_builder = functools.partial(afs.valid_case_builder, protocol="0-10")
codec = codec_for()
spec = codec.spec
TYPES = sorted(codec.types.types)
OPERATORS = [op.name for op in operators("0-10")]
STATE = {op.name for op in operators("0-10") if op.level == "state"}
AMQPFUZZ = str(Path(sys.executable).parent / "amqpfuzz")
BLOBS = st.binary(min_size=512, max_size=512)


@pytest.mark.parametrize("type_name", TYPES)
@settings(max_examples=20)
@given(data=st.data())
def test_every_type_has_values_the_checked_codec_encodes_and_reads_back(
    type_name: str, data: st.DataObject
) -> None:
    value = data.draw(type_values(type_name))
    assert codec.decode_value(codec.encode_value(value, type_name), type_name) == value


@settings(max_examples=200)
@given(structs())
def test_every_struct_round_trips(value: Struct) -> None:
    assert codec.decode_struct(value.name, codec.encode_struct(value)) == value


@settings(max_examples=200)
@given(st.one_of(controls(), commands()))
def test_every_control_and_command_round_trips(item: Control | Command) -> None:
    assert codec.decode(codec.encode(item)) == [item]


@settings(max_examples=30)
@given(connection_frames_of(frame_max=4096))
def test_a_whole_connection_is_read_back_by_our_reader(items: list[bytes]) -> None:
    reader = codec.reader()
    found = [f for item in items for f in reader.feed(item)]
    reader.close()
    assert found[0] == Header()
    names = [getattr(f, "name", None) for f in found[1:]]
    assert names[:4] == [
        "connection.start-ok",
        "connection.tune-ok",
        "connection.open",
        "session.attach",
    ]
    assert names[-2:] == ["session.detach", "connection.close"]
    assert all(f.channel == 1 for f in found[5:-1])


# -- operators ------------------------------------------------------------------------------------


def test_there_are_at_least_15_operators_each_with_its_codes_from_the_xml() -> None:
    ops = operators("0-10")
    assert len(ops) >= 15 and len(OPERATORS) == len(set(OPERATORS))
    for op in ops:
        assert op.scope in (*DOMAINS.values(), "socket"), op
        if op.scope != "socket":
            assert op.codes, op.name
            for code in op.codes_in(spec):
                domain = next(d for d, s in DOMAINS.items() if s == op.scope)
                assert spec.domain(domain).choices[code.name] == code.value, (op.name, code)
    # the classes of input behind known 0-10 broker defects, as the issue names them
    for name in ("sequence-set-inverted", "header-on-non-transfer", "body-on-non-transfer",
                 "gap-before-attach", "command-before-attach", "first-frame-missing",
                 "segment-interrupted", "size-lies", "frame-size-small"):  # fmt: skip
        assert name in OPERATORS


@pytest.mark.parametrize("operator", OPERATORS)
@settings(max_examples=40)
@given(blob=BLOBS)
def test_each_operator_breaks_what_it_says(operator: str, blob: bytes) -> None:
    """Our checked decoder refuses what a frame, assembly or encoding operator sent with one of
    the codes the operator requires; what a state operator sent is well-formed (its fault is
    where and when it comes) and its codes are the session's, or the socket's."""
    case = malformed_case_builder(operators=[operator], prefix="amqpfuzz-t-")(blob)
    assert case.operator == operator and case.expected.outcome != "reply"
    data = case.render(7)
    if operator in STATE:
        found = codec.decode(data, expect_header=case.placement == "header", check=False)
        assert found, case
        if case.placement == "header":
            assert found == [Header(*data[4:8])] and data != Header().encode()
        else:
            assert {f.channel for f in found} == {7}
        return
    with pytest.raises(RemoteProtocolError) as refused:
        codec.decode(data)
    assert refused.value.category in {c.name for c in case.expected.codes}, (case, refused.value)


def test_a_zeroed_blob_reads_as_the_first_operator_and_the_first_valid_case() -> None:
    assert malformed_case_builder()(bytes(512)).operator == OPERATORS[0]
    case = valid_case_builder()(bytes(512))
    assert case.operator is None and case.spec_ref == case_methods()[0]


# -- valid cases ----------------------------------------------------------------------------------


@settings(max_examples=300)
@given(blob=BLOBS)
def test_valid_cases_are_one_synced_command_each_answered_as_its_definition_says(
    blob: bytes,
) -> None:
    case = valid_case_builder(prefix="amqpfuzz-t-")(blob)
    (command,) = codec.decode(case.render(3))
    assert isinstance(command, Command) and command.channel == 3 and command.sync
    assert command.name == case.spec_ref and case.placement == "open"
    result = spec.command(command.name).result is not None
    assert case.expected.responses == ("session.completed",) + (
        ("execution.result",) if result else ()
    )
    tolerated = {c.name for c in case.expected.tolerated}
    assert {"not-found", "illegal-state", "not-implemented"} <= tolerated
    assert not {"command-invalid", "illegal-argument", "internal-error"} & tolerated


def test_valid_cases_cover_every_command_a_server_implements_but_the_answers() -> None:
    implemented = {
        c.qualified for c in spec.commands if any(i.role == "server" for i in c.implements)
    }
    assert set(case_methods()) == implemented - {"execution.result", "execution.exception"}


@settings(max_examples=200)
@given(fuzz_cases(protocol="0-10", prefix="amqpfuzz-p-"))
def test_cases_name_only_prefixed_queues_and_exchanges(case: Any) -> None:
    """What a case names (and so may create) carries the run's prefix: the driver finds it and
    deletes it afterwards."""
    driver = Amqp010Driver("0-10")
    named = list(driver.created(case, [], "amqpfuzz-p-"))
    for item in driver._items(case):
        for f in spec.command(item.name).fields if isinstance(item, Command) else ():
            if f.ref.kind == "domain" and f.ref.name in ("queue.name", "exchange.name"):
                value = item[f.name]
                if value:
                    assert str(value).startswith("amqpfuzz-p-"), (item, f.name)
                    assert (f.ref.name.split(".")[0], value) in named


def test_a_command_s_every_frame_gets_the_case_s_channel() -> None:
    transfer = codec.command(
        "message.transfer",
        {"accept-mode": 1, "acquire-mode": 1},
        sync=True,
        header=[Values(codec).struct("message.delivery-properties", Source(bytes(64)))],
        body=bytes(5000),
    )
    wire = Wire(codec.encode(transfer, 4096), "transfer", CASE_CHANNEL)
    data = wire.render(9)
    (back,) = codec.decode(data)
    assert back.channel == 9 and back.body == bytes(5000)
    assert Wire(b"\x0f\x01\x00\x05" + bytes(8), "short", CASE_CHANNEL).render(9)[6:8] == b"\x00\x09"


def test_the_driver_finds_codes_by_name_in_all_three_domains() -> None:
    assert error_code(spec, "framing-error").scope == "connection"
    assert (
        error_code(spec, "unknown-ids").value == 4
        and error_code(spec, "unknown-ids").scope == "session"
    )
    assert error_code(spec, "command-invalid").value == 503
    with pytest.raises(KeyError):
        error_code(spec, "no-such-code")


@pytest.mark.parametrize(
    ("call", "text"),
    [
        (lambda: operators("0-10") and malformed_cases(["nope"], protocol="0-10"), "operators="),
        (lambda: valid_cases(["queue.nope"], protocol="0-10"), "methods="),
        (lambda: fuzz_cases(protocol="0-10", frame_max=100), "frame_max"),
        (lambda: type_values("uint99"), "not a type"),
        (lambda: structs(["no.struct"]), "names="),
        (lambda: connection_frames_of(sasl=["GSSAPI"]), "sasl="),
    ],
)
def test_arguments_are_checked_when_the_strategy_is_made(call: Any, text: str) -> None:
    with pytest.raises(InvalidArgument, match=text):
        call()


@pytest.mark.slow
def test_the_cli_lists_the_0_10_operators_with_their_codes() -> None:
    done = subprocess.run(
        [AMQPFUZZ, "mutations", "--protocol", "0-10", "--json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["operators"]
    assert [r["name"] for r in rows] == OPERATORS
    by_name = {r["name"]: r for r in rows}
    assert by_name["frame-size-small"]["codes"] == [{"name": "framing-error", "value": 501}]
    assert by_name["command-before-command-point"]["reaction"] == "session-close"
    assert by_name["protocol-header-wrong"]["reaction"] == "socket-close"
