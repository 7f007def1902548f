"""The AMQP 1.0 model: counts against the XML parts, known facts, errors with file and line."""

from __future__ import annotations

import dataclasses
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
from lxml import etree

from amqpfuzz.spec.amqp10.model import (
    DEFAULT_PARTS,
    CompositeType,
    PrimitiveType,
    RestrictedType,
    Spec100,
    load_1_0,
)
from amqpfuzz.spec.errors import SpecError

TYPES, TRANSPORT, MESSAGING, SECURITY, TRANSACTIONS = DEFAULT_PARTS


@pytest.fixture(scope="module")
def spec() -> Spec100:
    return load_1_0()


def _local(el: etree._Element) -> str:
    return el.tag.rsplit("}", 1)[-1] if isinstance(el.tag, str) else ""


def _line_of(part: Path, text: str) -> int:
    """The line of ``text``, which must occur once in ``part``."""
    whole = part.read_text(encoding="utf-8")
    assert whole.count(text) == 1, text
    return whole[: whole.index(text)].count("\n") + 1


def _edited(tmp_path: Path, part: Path, old: str, new: str) -> tuple[Path, int]:
    """A copy of a vendored part with ``old`` (found once) replaced; the line it was on."""
    line = _line_of(part, old)
    path = tmp_path / part.name
    path.write_text(part.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    return path, line


def _replacing(part: Path, copy: Path) -> list[Path]:
    """The five vendored parts with ``part`` swapped for ``copy``."""
    return [copy if p == part else p for p in DEFAULT_PARTS]


def _assert_at(error: SpecError, path: Path, line: int) -> None:
    assert (error.path, error.line) == (str(path), line)
    assert str(error).startswith(f"{path}:{line}: ")


# --- the whole model against the XML ---------------------------------------------------------


def test_inventory_equals_counts_of_xml_elements(spec: Spec100) -> None:
    roots = [etree.parse(str(p)).getroot() for p in DEFAULT_PARTS]
    tags = Counter(_local(el) for root in roots for el in root.iter())
    classes = Counter(
        el.get("class") for root in roots for el in root.iter() if _local(el) == "type"
    )
    expected = {
        "parts": len(roots),
        "sections": tags["section"],
        "primitive_types": classes["primitive"],
        "encodings": tags["encoding"],
        "composite_types": classes["composite"],
        "restricted_types": classes["restricted"],
        "fields": tags["field"],
        "descriptors": tags["descriptor"],
        "definitions": tags["definition"],
    }
    assert list(spec.inventory().items()) == list(expected.items())  # same keys, same order


def test_parts_sources_and_sections(spec: Spec100) -> None:
    assert spec.protocol == "1.0"
    assert spec.sources == tuple(str(p) for p in DEFAULT_PARTS)
    assert [p.name for p in spec.parts] == [
        "types",
        "transport",
        "messaging",
        "security",
        "transactions",
    ]
    performatives = next(s for s in spec.parts[1].sections if s.name == "performatives")
    assert performatives.part == "transport"
    message_format = next(s for s in spec.document_sections if s.name == "message-format")
    assert message_format.label == "Message format definitions"
    assert message_format.doc is not None and message_format.doc.startswith("The term message")


def test_every_field_type_resolves(spec: Spec100) -> None:
    names = {t.name for t in spec.types} | {"*"}
    composites = spec.types_of_class("composite")
    assert all(isinstance(t, CompositeType) for t in composites)
    assert all(f.type in names for t in composites for f in t.fields)


# --- known facts -----------------------------------------------------------------------------


def test_header_by_descriptor(spec: Spec100) -> None:
    header = spec.by_descriptor((0x00000000, 0x00000070))
    assert isinstance(header, CompositeType)
    assert header.name == "header"
    assert [f.name for f in header.fields] == [
        "durable",
        "priority",
        "ttl",
        "first-acquirer",
        "delivery-count",
    ]
    assert [f.type for f in header.fields] == [
        "boolean",
        "ubyte",
        "milliseconds",
        "boolean",
        "uint",
    ]
    assert spec.by_descriptor("amqp:header:list") is header
    assert spec.by_descriptor(0x70) is header  # the ulong sent on the wire
    assert header.descriptor.value == 0x70


def test_accepted_resolves(spec: Spec100) -> None:
    accepted = spec.by_descriptor("amqp:accepted:list")
    assert accepted is spec.type("accepted")
    assert accepted.descriptor is not None and accepted.descriptor.code == (0, 0x24)
    assert accepted.provides == ("delivery-state", "outcome")
    assert (accepted.part, accepted.section) == ("messaging", "delivery-state")


def test_uint_encodings(spec: Spec100) -> None:
    uint = spec.type("uint")
    assert isinstance(uint, PrimitiveType)
    assert [e.code for e in uint.encodings] == [0x70, 0x52, 0x43]
    assert [(e.name, e.category, e.width) for e in uint.encodings] == [
        (None, "fixed", 4),
        ("smalluint", "fixed", 1),
        ("uint0", "fixed", 0),
    ]
    (list_type,) = [t for t in spec.types_of_class("primitive") if t.name == "list"]
    assert [e.category for e in list_type.encodings] == ["fixed", "compound", "compound"]


def test_message_sections(spec: Spec100) -> None:
    assert [t.name for t in spec.sections] == [
        "header",
        "delivery-annotations",
        "message-annotations",
        "properties",
        "application-properties",
        "data",
        "amqp-sequence",
        "amqp-value",
        "footer",
    ]
    amqp_value = spec.type("amqp-value")
    assert isinstance(amqp_value, RestrictedType)
    assert amqp_value.source == "*"
    assert amqp_value.descriptor is not None and amqp_value.descriptor.name == "amqp:amqp-value:*"


def test_fields_restricted_types_and_definitions(spec: Spec100) -> None:
    attach = spec.type("attach")
    assert isinstance(attach, CompositeType)
    fields = {f.name: f for f in attach.fields}
    assert (fields["source"].type, fields["source"].requires) == ("*", ("source",))
    assert fields["name"].mandatory and not fields["name"].multiple
    assert fields["offered-capabilities"].multiple
    assert fields["snd-settle-mode"].default == "mixed"
    role = spec.type("role")
    assert isinstance(role, RestrictedType)
    assert dict(role.choices) == {"sender": "false", "receiver": "true"}
    assert role.descriptor is None
    assert spec.definition("PORT").value == "5672"
    assert spec.definition("MESSAGE-FORMAT").part == "messaging"


def test_types_of_class(spec: Spec100) -> None:
    for type_class in ("primitive", "composite", "restricted"):
        assert {t.type_class for t in spec.types_of_class(type_class)} == {type_class}
    with pytest.raises(ValueError, match="no type class"):
        spec.types_of_class("described")
    with pytest.raises(KeyError):
        spec.by_descriptor((0, 0x99))


def test_docs_of_the_messaging_part(spec: Spec100) -> None:
    header = spec.type("header")
    assert isinstance(header, CompositeType)
    assert header.doc is not None and header.doc.startswith("The header section carries")
    durable = header.fields[0]
    assert durable.label == "specify durability requirements"
    assert durable.doc is not None
    # Empty <xref> elements stand for the name they link to.
    assert "allows the rejected outcome" in durable.doc
    assert "rejected with the precondition-failed error" in durable.doc
    opened = spec.type("open").doc  # the transport part's docs too
    assert opened is not None and opened.startswith("The first frame sent on a connection")


def test_everything_is_immutable(spec: Spec100) -> None:
    header = spec.by_descriptor("amqp:header:list")
    assert isinstance(header, CompositeType)
    targets = [
        (spec, "sources"),
        (spec, "protocol"),
        (spec.parts[0], "name"),
        (spec.document_sections[0], "doc"),
        (header, "fields"),
        (header, "type_class"),
        (header.descriptor, "code"),
        (header.fields[0], "mandatory"),
        (spec.type("uint").encodings[0], "code"),  # type: ignore[union-attr]
        (spec.type("role"), "choices"),
        (spec.definition("PORT"), "value"),
    ]
    for obj, name in targets:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, name, None)
    with pytest.raises(TypeError):
        spec.type("role").choices["sender"] = "true"  # type: ignore[union-attr,index]
    assert isinstance(spec.types, tuple) and isinstance(header.fields, tuple)


# --- a user's own part -----------------------------------------------------------------------


def test_single_user_part_loads_against_vendored_types(tmp_path: Path) -> None:
    own = tmp_path / "my-security.xml"
    shutil.copy(SECURITY, own)
    spec = load_1_0([own])
    assert spec.sources == (str(TYPES), str(own))
    assert [p.name for p in spec.parts] == ["types", "security"]
    sasl_init = spec.by_descriptor((0, 0x41))
    assert isinstance(sasl_init, CompositeType)
    assert [f.type for f in sasl_init.fields] == ["symbol", "binary", "string"]
    assert spec.type("symbol").part == "types"
    assert spec.inventory()["parts"] == 2


def test_user_types_part_is_not_doubled(tmp_path: Path) -> None:
    own = tmp_path / "my-types.xml"
    shutil.copy(TYPES, own)
    assert load_1_0([own, TRANSACTIONS]).sources == (str(own), str(TRANSACTIONS))


def test_single_part_cannot_use_types_of_other_parts(tmp_path: Path) -> None:
    # messaging uses transport's ``milliseconds``: only the types part is implicit.
    own = tmp_path / "my-messaging.xml"
    shutil.copy(MESSAGING, own)
    line = _line_of(MESSAGING, '<field name="ttl" type="milliseconds"')
    with pytest.raises(SpecError, match="unknown type 'milliseconds'") as error:
        load_1_0([own])
    _assert_at(error.value, own, line)
    assert load_1_0([TRANSPORT, own]).type("header").part == "messaging"


# --- errors name the file and the line -------------------------------------------------------


def test_truncated_part(tmp_path: Path) -> None:
    data = MESSAGING.read_bytes()
    cut = data.index(b"<field", len(data) // 2) + 8  # inside a tag, half-way through
    path = tmp_path / MESSAGING.name
    path.write_bytes(data[:cut])
    with pytest.raises(SpecError) as error:
        load_1_0(_replacing(MESSAGING, path))
    _assert_at(error.value, path, data[:cut].count(b"\n") + 1)


def test_field_with_unknown_type(tmp_path: Path) -> None:
    path, line = _edited(
        tmp_path,
        TRANSPORT,
        '<field name="hostname" type="string" label="the name of the target host">',
        '<field name="hostname" type="strng" label="the name of the target host">',
    )
    with pytest.raises(
        SpecError, match="field 'hostname' of 'open' has unknown type 'strng'"
    ) as error:
        load_1_0(_replacing(TRANSPORT, path))
    _assert_at(error.value, path, line)


def test_duplicate_descriptor_in_one_part(tmp_path: Path) -> None:
    path, line = _edited(
        tmp_path,
        MESSAGING,
        '<descriptor name="amqp:accepted:list" code="0x00000000:0x00000024"/>',
        '<descriptor name="amqp:accepted:list" code="0x00000000:0x00000023"/>',
    )
    with pytest.raises(SpecError) as error:
        load_1_0(_replacing(MESSAGING, path))
    _assert_at(error.value, path, line)
    assert "duplicate descriptor code 0x00000000:0x00000023 (first at line " in str(error.value)


def test_duplicate_descriptor_across_parts(tmp_path: Path) -> None:
    path, line = _edited(
        tmp_path,
        TRANSACTIONS,
        'code="0x00000000:0x00000030"',
        'code="0x00000000:0x00000010"',  # the code of transport's open
    )
    with pytest.raises(SpecError) as error:
        load_1_0(_replacing(TRANSACTIONS, path))
    _assert_at(error.value, path, line)
    assert f"(first at {TRANSPORT}:" in str(error.value)


def test_duplicate_type_name_across_parts(tmp_path: Path) -> None:
    path, line = _edited(
        tmp_path,
        SECURITY,
        '<type name="sasl-code" class="restricted"',
        '<type name="uint" class="restricted"',
    )
    with pytest.raises(SpecError, match=re.escape("duplicate type 'uint'")) as error:
        load_1_0([path])  # the vendored types part, loaded implicitly, defines uint first
    _assert_at(error.value, path, line)
