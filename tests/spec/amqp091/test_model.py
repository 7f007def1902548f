"""The 0-8 / 0-9 / 0-9-1 model and loader: counts checked against the XML, facts, errors."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from lxml import etree

from amqpfuzz.spec import PROTOCOLS, SpecError, load_file, protocols_of
from amqpfuzz.spec.amqp091 import Spec, load
from amqpfuzz.spec.amqp091.loader import load_family_file

DATA = Path(PROTOCOLS["0-9-1"].paths[0]).parent


def _xml_counts(path: Path) -> dict[str, int]:
    """What the XML holds, counted with lxml alone, independently of the loader."""
    root = etree.parse(str(path)).getroot()
    methods = root.findall("class/method")
    return {
        "constants": len(root.findall("constant")),
        "reply_codes": len([c for c in root.findall("constant") if c.get("class")]),
        "domains": len(root.findall("domain")),
        "classes": len(root.findall("class")),
        "methods": len(methods),
        "fields": len(root.findall("class/method/field")) + len(root.findall("class/field")),
        "properties": len(root.findall("class/field")),
        "rules": len(list(root.iter("rule"))),
        "scenarios": len([d for d in root.iter("doc") if d.get("type") == "scenario"]),
        "asserts": len(list(root.iter("assert"))),
    }


@pytest.mark.parametrize("protocol", protocols_of("amqp091"))
def test_inventory_matches_the_xml(protocol: str) -> None:
    spec = load(protocol)
    assert spec.inventory() == _xml_counts(PROTOCOLS[protocol].paths[0])


def test_full_0_9_1_holds_what_design_says() -> None:
    counts = load("0-9-1").inventory()
    # the design notes name these numbers for the full XML; the test above derives them
    assert (counts["rules"], counts["scenarios"], counts["asserts"]) == (115, 82, 19)


def test_methods_classes_and_lookups() -> None:
    spec = load("0-9-1")
    publish = spec.method("basic.publish")
    assert publish.key == (60, 40)
    assert publish.content and not publish.synchronous
    assert [f.name for f in publish.fields] == [
        "reserved-1",
        "exchange",
        "routing-key",
        "mandatory",
        "immediate",
    ]
    assert publish.fields[0].reserved and publish.fields[0].type == "short"
    assert spec.method_by_id(60, 40) is publish
    assert spec.method_by_id(60, 41) is None
    declare = spec.method("queue.declare")
    assert declare.synchronous and declare.responses == ("declare-ok",)
    assert declare.sent_by("client") and not declare.sent_by("server")
    assert spec.method("basic.deliver").sent_by("server")
    assert [p.attr for p in spec.amqp_class("basic").properties][:3] == [
        "content_type",
        "content_encoding",
        "headers",
    ]
    with pytest.raises(KeyError, match=r"basic\.nope"):
        spec.method("basic.nope")


def test_constants_carry_hard_and_soft_error_classes() -> None:
    spec = load("0-9-1")
    assert spec.constant("frame-error").is_hard_error
    assert spec.constant("not-found").is_soft_error
    assert spec.constant("frame-end").value == 206
    assert spec.reply_code(404) is spec.constant("not-found")
    assert spec.reply_code(206) is None
    # 0-8 writes "soft error" and "frame end": normalised to the 0-9-1 spelling
    assert load("0-8").constant("frame-end").value == 206
    assert load("0-8").constant("not-found").is_soft_error


def test_domains_and_asserts_are_inherited_by_fields() -> None:
    spec = load("0-9-1")
    exchange_name = spec.domain("exchange-name")
    assert {a.check for a in exchange_name.asserts} == {"length", "regexp"}
    fld = spec.method("exchange.declare").fields[1]
    assert fld.domain == "exchange-name" and fld.type == "shortstr"
    checks = [a.check for a in fld.asserts]
    assert checks[:2] == ["length", "regexp"] and "notnull" in checks
    channel_max = spec.method("connection.tune-ok").fields[0]
    le = next(a for a in channel_max.asserts if a.check == "le")
    assert (le.method, le.field) == ("tune", "channel-max")


def test_rules_have_refs_failure_codes_and_scenarios() -> None:
    spec = load("0-9-1")
    rules = {r.ref: r for r in spec.rules()}
    rule = rules["channel.open/state"]
    assert rule.on_failure == "channel-error"
    assert "already-opened" in rule.doc
    assert rule.scenario is not None and "reopens the same channel" in rule.scenario
    assert "queue.declare/queue/reserved" in rules
    assert "tx/not-multiple-queues" in rules  # "not multiple queues" in the XML, normalised
    assert all(r.on_failure is None or spec.constant(r.on_failure) for r in rules.values())


def test_protocol_headers() -> None:
    assert load("0-9-1").protocol_header == b"AMQP\x00\x00\x09\x01"
    assert load("0-9-1-rabbit").protocol_header == b"AMQP\x00\x00\x09\x01"
    assert load("0-9").protocol_header == b"AMQP\x01\x01\x00\x09"
    assert load("0-8").protocol_header == b"AMQP\x01\x01\x08\x00"


def test_rabbit_extensions_are_there() -> None:
    spec = load("0-9-1-rabbit")
    assert spec.method("confirm.select").key == (85, 10)
    assert spec.method("basic.nack").key == (60, 120)
    assert spec.method("exchange.unbind-ok").key == (40, 51)  # RabbitMQ's own numbering
    assert spec.method("basic.ack").sent_by("server")


def test_0_9_content_type_is_a_primitive() -> None:
    body = load("0-9").method("message.transfer").fields[-1]
    assert (body.name, body.type) == ("body", "content")


def test_model_is_immutable() -> None:
    spec = load("0-9-1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.method("basic.publish").index = 41  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.constants[0].value = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        spec.method("basic.publish").chassis["client"] = "MUST"  # type: ignore[index]


def test_loading_is_cached_per_protocol() -> None:
    assert load("0-9-1") is load("0-9-1")


# -- errors name the file and the line ------------------------------------------------------


def _copy(tmp_path: Path, text: str, name: str = "spec.xml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _source() -> str:
    return PROTOCOLS["0-9-1"].paths[0].read_text()


def _line_of(text: str, needle: str, occurrence: int = 1) -> int:
    at = -1
    for _ in range(occurrence):
        at = text.index(needle, at + 1)
    return text.count("\n", 0, at) + 1


def test_truncated_xml_names_file_and_line(tmp_path: Path) -> None:
    text = _source()
    cut = text[: len(text) // 2]
    path = _copy(tmp_path, cut)
    with pytest.raises(SpecError) as info:
        load_file(path)
    assert info.value.path == str(path)
    assert info.value.line is not None and info.value.line >= cut.count("\n")
    assert str(info.value).startswith(f"{path}:{info.value.line}: malformed XML")


def test_unknown_domain_reference(tmp_path: Path) -> None:
    text = _source().replace('domain = "queue-name"', 'domain = "queue-nmae"', 2)
    path = _copy(tmp_path, text)
    with pytest.raises(SpecError, match="unknown domain 'queue-nmae'") as info:
        load_file(path)
    assert info.value.line == _line_of(text, 'domain = "queue-nmae"')


def test_duplicate_method_index(tmp_path: Path) -> None:
    text = _source()
    text = text.replace(
        '<method name = "get" synchronous = "1" index = "70"',
        '<method name = "get" synchronous = "1" index = "40"',
    )
    path = _copy(tmp_path, text)
    with pytest.raises(SpecError, match="duplicate method index 40 in class 'basic'") as info:
        load_file(path)
    assert info.value.line == _line_of(text, '<method name = "get" synchronous')


def test_duplicate_class_index(tmp_path: Path) -> None:
    text = _source().replace(
        '<class name = "tx" handler = "channel" index = "90"',
        '<class name = "tx" handler = "channel" index = "60"',
    )
    path = _copy(tmp_path, text)
    with pytest.raises(SpecError, match="duplicate class index 60") as info:
        load_file(path)
    assert info.value.line == _line_of(text, '<class name = "tx"')


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "empty file"),
        ("<root/>", "not <amqp>"),
        ('<amqp major="0" minor="9"/>', "no <class> elements"),
        ("<amqp/>", "neither 'major' nor 'name'"),
    ],
)
def test_files_that_are_not_specifications(tmp_path: Path, content: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        load_file(_copy(tmp_path, content))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="cannot read"):
        load_family_file(tmp_path / "nope.xml")


def test_a_new_method_in_the_xml_appears_in_the_model(tmp_path: Path) -> None:
    text = _source().replace(
        '<method name = "recover-ok"',
        '<method name = "peek" synchronous = "1" index = "200" label = "new">\n'
        '      <chassis name = "server" implement = "MAY" />\n'
        '      <field name = "queue" domain = "queue-name" />\n'
        "    </method>\n"
        '    <method name = "recover-ok"',
    )
    spec = load_file(_copy(tmp_path, text))
    assert isinstance(spec, Spec)
    peek = spec.method("basic.peek")
    assert peek.key == (60, 200) and peek.fields[0].type == "shortstr"
