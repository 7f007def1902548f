"""The 1.0 strategies and mutation operators: values of every type, instances of every
composite, messages, whole connections, and malformed cases that our own decoder refuses for
the reason their operator gives."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import Phase, find, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from amqpfuzz.spec.amqp10.codec import Composite, DecodeError, FramingError, codec_for
from amqpfuzz.strategies import (
    case_builder,
    composites,
    connection_frames_of,
    fuzz_cases,
    malformed_case_builder,
    malformed_cases,
    messages,
    operators,
    type_values,
    valid_cases,
)

codec = codec_for()
TYPES = [
    t.name
    for t in codec.spec.types
    if t.name in codec.types.composites or codec.types.primitive_of(t.name) is not None
]
AMQPFUZZ = str(Path(sys.executable).parent / "amqpfuzz")


@pytest.mark.parametrize("type_name", TYPES)
@settings(max_examples=30)
@given(data=st.data())
def test_every_type_has_values_the_checked_codec_encodes_and_reads_back(
    type_name: str, data: st.DataObject
) -> None:
    value = data.draw(type_values(type_name))
    as_type = None if codec.types.descriptor_of(type_name) is not None else type_name
    if type_name in codec.types.composites:
        as_type = None
    encoded = codec.encode(value, as_type)
    assert codec.decode(encoded) == codec.with_defaults(value)


@settings(max_examples=200)
@given(composites())
def test_every_composite_round_trips_with_its_defaults(value: Composite) -> None:
    assert codec.decode(codec.encode(value)) == codec.with_defaults(value)


def test_composites_cover_every_performative_and_sasl_frame() -> None:
    frames = [n for n in codec.types.composites if codec.types.provides(n, ("frame", "sasl-frame"))]
    assert len(frames) == 14
    first = settings(phases=[Phase.generate], max_examples=5000, database=None)  # not shrunk
    for name in frames:
        assert find(composites(), lambda c, name=name: c.name == name, settings=first).name == name


@settings(max_examples=100)
@given(messages())
def test_messages_round_trip_section_by_section(sections: list[Any]) -> None:
    assert codec.sections(codec.message(sections)) == [codec.with_defaults(s) for s in sections]
    bodies = [
        s
        for s in sections
        if getattr(s, "descriptor", None) in ("data", "amqp-sequence", "amqp-value")
    ]
    assert len(bodies) == 1


@settings(max_examples=50)
@given(connection_frames_of())
def test_a_whole_connection_is_read_back_by_our_reader(items: list[bytes]) -> None:
    reader = codec.reader()
    found = [x for item in items for x in reader.feed(item)]
    names = [getattr(x, "name", "header") for x in found]
    assert "open" in names and names[-1] == "close"
    transfers = [x for x in found if getattr(x, "name", "") == "transfer"]
    assert transfers and not transfers[-1].body["more"]


def test_there_are_at_least_25_operators_each_with_a_condition_and_a_section() -> None:
    catalogue = operators("1.0")
    assert len(catalogue) >= 25
    for op in catalogue:
        reaction = op.reaction(codec.spec)
        assert "." in op.description  # the section of the 1.0 specification, as 2.3.1
        if op.scope == "ignore":
            assert reaction.outcome == "reply"
        elif op.scope == "socket":
            assert reaction.outcome == "socket-close" and str(reaction).endswith("header")
        else:
            assert reaction.outcome == f"{op.scope}-close"
            assert all(str(c.value).startswith("amqp:") for c in reaction.codes)


@pytest.mark.parametrize("operator", [op.name for op in operators("1.0")])
@settings(max_examples=25)
@given(blob=st.binary(min_size=512, max_size=512))
def test_each_operator_breaks_what_it_says(operator: str, blob: bytes) -> None:
    """Frame and encoding operators make bytes our own decoder refuses, with the condition
    the operator requires (or, for cases a peer may accept, any decode error); semantic and
    state operators make well-formed frames."""
    op = next(o for o in operators("1.0") if o.name == operator)
    case = malformed_case_builder([operator], protocol="1.0", prefix="amqpfuzz-t-")(blob)
    # the operator's reaction, and what the case also allows (closes of the connection)
    assert case.operator == operator
    assert replace(case.expected, tolerated=()) == op.reaction(codec.spec)
    assert all(c.scope == "connection" for c in case.expected.tolerated)
    data = b"".join(step.render(3) for step in case.steps)
    reader = codec.reader(max_frame_size=131072 if case.placement != "start" else 512)
    reader.expect_header = False
    if op.scope == "socket":  # not the header that opens a 1.0 connection
        assert case.placement == "header" and data[:8] != b"AMQP\x00\x01\x00\x00"
    elif op.scope == "ignore":
        assert all(f.body is None for f in reader.feed(data))
    elif op.level in ("frame", "encoding"):
        with pytest.raises((DecodeError, FramingError)) as caught:
            reader.feed(data)
        if not op.or_reply:
            assert caught.value.category in {c.value for c in case.expected.codes}
    else:
        frames = reader.feed(data)
        assert frames and all(f.body is not None for f in frames)


def test_a_zeroed_blob_reads_as_the_first_operator_and_the_first_valid_case() -> None:
    zero = bytes(512)
    assert malformed_case_builder(protocol="1.0")(zero).operator == operators("1.0")[0].name
    valid = case_builder(protocol="1.0", valid_share=1.0)(zero)
    assert valid.operator is None and valid.expected.outcome == "reply"


@settings(max_examples=100)
@given(fuzz_cases(protocol="1.0", prefix="amqpfuzz-p-"))
def test_fuzz_cases_name_only_prefixed_nodes_and_links(case: Any) -> None:
    data = b"".join(step.render(1) for step in case.steps)
    for word in (b"amqpfuzz-", b"node-", b"link-"):
        if word in data:
            assert b"amqpfuzz-p-" in data


def test_the_generic_strategies_take_protocol_1_0() -> None:
    assert find(valid_cases(protocol="1.0"), lambda c: True).operator is None
    assert find(malformed_cases(protocol="1.0"), lambda c: True).operator is not None


@pytest.mark.parametrize(
    ("call", "text"),
    [
        (lambda: type_values("no-such-type"), "not a type"),
        (lambda: composites(["open", "nope"]), "composites of AMQP 1.0"),
        (lambda: connection_frames_of(sasl=["KERBEROS"]), "choose from"),
        (lambda: malformed_cases(["nope"], protocol="1.0"), "known operators of AMQP 1.0 are"),
        (lambda: valid_cases(["open"], protocol="1.0"), "valid 1.0 cases are of"),
        (lambda: fuzz_cases(protocol="1.0", frame_max=100), "frame_max"),
    ],
)
def test_arguments_are_checked_when_the_strategy_is_made(call: Any, text: str) -> None:
    with pytest.raises(InvalidArgument, match=text):
        call()


def _cli(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [AMQPFUZZ, *args], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.slow
def test_the_cli_lists_the_1_0_model_and_operators() -> None:
    spec = _cli("spec", "--protocol", "1.0", "--json")
    described = {c["name"]: c["descriptor"] for c in spec["composites"]}
    for name in ("open", "begin", "attach", "flow", "transfer", "disposition", "detach", "end",
                 "close", "sasl-mechanisms", "sasl-init", "sasl-challenge", "sasl-response",
                 "sasl-outcome"):  # fmt: skip
        assert described[name]["name"] == f"amqp:{name}:list"
    assert described["open"]["code"] == "0x00000000:0x00000010"
    assert spec["error_conditions"]["connection-error"]["framing-error"] == (
        "amqp:connection:framing-error"
    )
    assert [p["name"] for p in spec["parts"]] == [
        "types", "transport", "messaging", "security", "transactions",
    ]  # fmt: skip
    mutations = _cli("mutations", "--protocol", "1.0", "--json")
    rows = mutations["operators"]
    without = {op.name for op in operators("1.0") if not op.codes}
    assert {row["name"] for row in rows if not row["codes"]} == without
    assert len(rows) - len(without) >= 25  # each with the error condition it requires
