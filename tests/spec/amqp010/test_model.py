"""The AMQP 0-10 model: counts against the XML, known facts, errors with file and line."""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from pathlib import Path

import pytest
from lxml import etree

from amqpfuzz.spec.amqp010.model import (
    DEFAULT_PATH,
    Command,
    Control,
    Spec010,
    Struct,
    TypeRef,
    load_0_10,
)
from amqpfuzz.spec.errors import SpecError


@pytest.fixture(scope="module")
def spec() -> Spec010:
    return load_0_10()


@pytest.fixture(scope="module")
def root() -> etree._Element:
    return etree.parse(str(DEFAULT_PATH)).getroot()


def _local(el: etree._Element) -> str:
    return el.tag.rsplit("}", 1)[-1] if isinstance(el.tag, str) else ""


def _elements(root: etree._Element, tag: str) -> list[etree._Element]:
    return [el for el in root.iter() if _local(el) == tag]


def _edited(tmp_path: Path, old: str, new: str) -> tuple[Path, int]:
    """A copy of the vendored XML with ``old`` (found once) replaced; the line it was on."""
    text = DEFAULT_PATH.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    line = text[: text.index(old)].count("\n") + 1
    path = tmp_path / "amqp0-10.xml"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path, line


def _assert_at(error: SpecError, path: Path, line: int) -> None:
    assert (error.path, error.line) == (str(path), line)
    assert str(error).startswith(f"{path}:{line}: ")


# --- the whole model against the XML ---------------------------------------------------------


def test_inventory_equals_counts_of_xml_elements(spec: Spec010, root: etree._Element) -> None:
    # Every count is one element name: class-level and inline result structs alike, the fields
    # of structs, controls and commands, domains at top level and in classes.
    tags = Counter(_local(el) for el in root.iter())
    expected = {
        "types": tags["type"],
        "constants": tags["constant"],
        "domains": tags["domain"],
        "classes": tags["class"],
        "structs": tags["struct"],
        "controls": tags["control"],
        "commands": tags["command"],
        "fields": tags["field"],
        "rules": tags["rule"],
    }
    assert list(spec.inventory().items()) == list(expected.items())  # same keys, same order


def test_rules_keep_names_and_lines_in_file_order(spec: Spec010, root: etree._Element) -> None:
    in_xml: list[tuple[object, object]] = [
        (el.get("name"), el.sourceline) for el in _elements(root, "rule")
    ]
    assert [(r.name, r.line) for r in spec.rules] == in_xml


def test_rules_know_where_they_sit(spec: Spec010) -> None:
    assert [r.name for r in spec.amqp_class("session").rules] == ["attachment"]
    (blank,) = spec.command("message.transfer").fields[0].rules
    assert (blank.name, blank.where) == ("blank-destination", "message.transfer.destination")
    redelivered = spec.struct("message.delivery-properties").fields[2]
    assert [r.where for r in redelivered.rules] == ["message.delivery-properties.redelivered"] * 2


def test_header_attributes(spec: Spec010, root: etree._Element) -> None:
    assert (spec.major, spec.minor, spec.port) == tuple(
        int(root.get(name, "")) for name in ("major", "minor", "port")
    )
    assert spec.protocol == "0-10"
    assert spec.sources == (str(DEFAULT_PATH),)
    again = load_0_10(str(DEFAULT_PATH))  # a spec is itself (hashed by identity): its parts equal
    assert (again.classes, again.types, again.constants) == (
        spec.classes,
        spec.types,
        spec.constants,
    )


def test_every_field_type_resolves(spec: Spec010) -> None:
    names = {t.name for t in spec.types} | {d.qualified for d in spec.domains}
    names |= {s.qualified for s in spec.structs}
    members: list[Struct | Control | Command] = [*spec.structs, *spec.controls, *spec.commands]
    assert all(f.ref.name in names for m in members for f in m.fields)


# --- known facts -----------------------------------------------------------------------------


def test_message_transfer(spec: Spec010) -> None:
    transfer = spec.command("message.transfer")
    assert isinstance(transfer, Command)
    assert (transfer.code, spec.amqp_class("message").code) == (0x1, 0x4)
    assert spec.command_by_code(0x4, 0x1) is transfer
    assert transfer.has_header and transfer.has_body
    assert transfer.segments is not None
    assert transfer.segments.entries == (
        "message.delivery-properties",
        "message.fragment-properties",
        "message.message-properties",
    )
    assert [f.name for f in transfer.fields] == ["destination", "accept-mode", "acquire-mode"]
    assert transfer.fields[1].required and not transfer.fields[0].required


def test_connection_start_is_a_control(spec: Spec010) -> None:
    start = spec.control("connection.start")
    assert isinstance(start, Control)
    assert spec.control_by_code(0x1, 0x1) is start
    assert start.responses == ("start-ok",)
    assert [(i.role, i.handle) for i in start.implements] == [("client", "MUST")]
    with pytest.raises(KeyError):
        spec.command("connection.start")


def test_types(spec: Spec010) -> None:
    uint16 = spec.type("uint16")
    assert (uint16.code, uint16.fixed_width, uint16.is_fixed) == (0x12, 2, True)
    str16 = spec.type("str16")
    assert (str16.code, str16.variable_width, str16.is_fixed) == (0x95, 2, False)
    assert spec.type("sequence-no").code is None
    assert spec.constant("MIN-MAX-FRAME-SIZE").value == 4096


def test_domains_and_resolution_scopes(spec: Spec010) -> None:
    assert spec.domain("execution.error-code").choices["not-found"] == 404
    assert dict(spec.domain("segment-type").choices) == {
        "control": 0,
        "command": 1,
        "header": 2,
        "body": 3,
    }
    fields = {f.name: f for f in spec.struct("message.delivery-properties").fields}
    # ``exchange.name`` is written qualified, ``delivery-mode`` resolves in its own class.
    assert fields["exchange"].ref == TypeRef("domain", "exchange.name", "str8")
    assert fields["delivery-mode"].ref == TypeRef("domain", "message.delivery-mode", "uint8")
    assert fields["ttl"].ref == TypeRef("type", "uint64", "uint64")
    reply_to = spec.struct("message.message-properties").fields[3]
    assert reply_to.ref == TypeRef("struct", "message.reply-to", None)
    assert spec.control("connection.start").fields[1].ref.name == "str16-array"


def test_structs_and_results(spec: Spec010) -> None:
    header = spec.struct("session.header")
    assert (header.code, header.size, header.pack) == (None, 1, 1)
    delivery = spec.struct("message.delivery-properties")
    assert spec.struct_by_code(0x4, 0x1) is delivery
    assert (delivery.size, delivery.pack) == (4, 2)
    assert [f.default for f in spec.struct("message.fragment-properties").fields] == [
        "1",
        "1",
        None,
    ]
    assert spec.command("message.acquire").result == "message.acquired"  # declared inline
    assert spec.command("dtx.start").result == "dtx.xa-result"  # by reference
    assert spec.command("message.transfer").result is None


def test_exceptions_and_roles(spec: Spec010) -> None:
    select = spec.command("tx.select")
    first = select.exceptions[0]
    assert (first.name, first.error_code) == ("exactly-once", "illegal-state")
    (exclusive,) = [f for f in spec.command("message.subscribe").fields if f.name == "exclusive"]
    assert [x.error_code for x in exclusive.exceptions] == ["resource-locked"]
    assert [(r.name, r.implement) for r in spec.amqp_class("tx").roles] == [("server", "SHOULD")]


def test_file_and_stream_segments_require_a_header(spec: Spec010) -> None:
    stage = spec.command("file.stage")
    assert stage.segments is not None and stage.segments.header_required
    assert stage.segments.entries == ("file.file-properties",)
    assert not spec.command("message.accept").has_body


def test_everything_is_immutable(spec: Spec010) -> None:
    transfer = spec.command("message.transfer")
    targets = [
        (spec, "port"),
        (spec, "protocol"),
        (spec.amqp_class("message"), "commands"),
        (transfer, "code"),
        (transfer.fields[0], "type"),
        (transfer.fields[0].ref, "kind"),
        (transfer.segments, "body"),
        (spec.type("uint8"), "code"),
        (spec.domain("segment-type"), "choices"),
        (spec.rules[0], "name"),
    ]
    for obj, name in targets:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, name, None)
    with pytest.raises(TypeError):
        spec.domain("segment-type").choices["control"] = 5  # type: ignore[index]
    assert isinstance(spec.classes, tuple) and isinstance(transfer.fields, tuple)


# --- errors name the file and the line -------------------------------------------------------


def test_truncated_file(tmp_path: Path) -> None:
    data = DEFAULT_PATH.read_bytes()
    cut = data.index(b"<field", len(data) // 2) + 8  # inside a tag, half-way through
    path = tmp_path / "amqp0-10.xml"
    path.write_bytes(data[:cut])
    with pytest.raises(SpecError) as error:
        load_0_10(path)
    _assert_at(error.value, path, data[:cut].count(b"\n") + 1)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            '<field name="heartbeat-min" type="uint16"/>',
            '<field name="heartbeat-min" type="uint17"/>',
            "unknown type 'uint17'",
        ),
        (
            '<field name="host" type="amqp-host-url" required="true"/>',
            '<field name="host" type="session.amqp-host-url" required="true"/>',
            "unknown type 'session.amqp-host-url'",
        ),
        (
            '<field name="offset" type="uint64"/>',
            '<field name="offset" type="message.no-such-domain"/>',
            "unknown type 'message.no-such-domain'",
        ),
        (
            '<entry type="file-properties"/>\n        </header>\n        <body/>\n      </segments>\n'
            '    </command>\n    <command name="publish"',
            '<entry type="return-code"/>\n        </header>\n        <body/>\n      </segments>\n'
            '    </command>\n    <command name="publish"',
            "'file.return-code' is a domain, not a struct",
        ),
    ],
)
def test_unknown_type_reference(tmp_path: Path, old: str, new: str, message: str) -> None:
    path, line = _edited(tmp_path, old, new)
    with pytest.raises(SpecError, match=re.escape(message)) as error:
        load_0_10(path)
    _assert_at(error.value, path, line)


def test_duplicate_command_code(tmp_path: Path) -> None:
    path, line = _edited(
        tmp_path, '<command name="accept" code="0x2">', '<command name="accept" code="0x1">'
    )
    with pytest.raises(SpecError, match="duplicate command code 0x1 in class message") as error:
        load_0_10(path)
    _assert_at(error.value, path, line)


def test_duplicate_control_code(tmp_path: Path) -> None:
    path, line = _edited(
        tmp_path, '<control name="secure" code="0x3">', '<control name="secure" code="0x2">'
    )
    with pytest.raises(SpecError, match="duplicate control code 0x2 in class connection") as error:
        load_0_10(path)
    _assert_at(error.value, path, line)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="cannot read"):
        load_0_10(tmp_path / "absent.xml")


def test_copy_without_namespace_loads(tmp_path: Path, spec: Spec010) -> None:
    path, _ = _edited(tmp_path, ' xmlns="http://www.amqp.org/schema/amqp.xsd"', "")
    assert load_0_10(path).inventory() == spec.inventory()
