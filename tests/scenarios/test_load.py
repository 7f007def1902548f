"""The loader: every file loads and matches the model; broken copies fail at their line."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

import pytest

from amqpfuzz.scenarios import (
    FAMILIES,
    SCENARIOS,
    Checker,
    Language,
    ScenarioError,
    StepKind,
    handles,
    load_all,
    load_index,
    load_scenario,
)
from amqpfuzz.spec import AmqpfuzzError
from amqpfuzz.spec.amqp091 import load

# -- the files as they are ------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["0-9-1", "0-9", "0-10"])
def test_every_file_loads(protocol: str) -> None:
    files = [p for p in (SCENARIOS / protocol).glob("*.yaml") if p.name != "index.yaml"]
    scenarios = load_all(protocol)
    assert len(scenarios) == len(files) > 0
    assert {s.path for s in scenarios} == set(files)
    assert all(s.protocol == protocol for s in scenarios)


def test_the_index_loads() -> None:
    entries = load_index()
    assert entries
    assert {e.protocol for e in entries} <= {"0-9-1", "0-9"}


def test_0_9_1_files_match_the_model() -> None:
    spec = load("0-9-1")
    for scenario in load_all("0-9-1"):
        rule = spec.rule(scenario.spec_ref)
        assert scenario.on_failure == rule.on_failure, scenario.path
        assert " ".join(scenario.rule.split()) == " ".join(rule.doc.split()), scenario.path


def test_codes_in_expectations_close_what_their_class_says() -> None:
    for scenario in load_all():
        spec = load(scenario.protocol) if scenario.protocol not in ("0-10", "1.0") else None
        for step in scenario.walk():
            code = step.args.get("code")
            if step.kind == "expect" and code is not None:
                assert spec is not None
                constant = spec.constant(str(code))
                closes = "connection" if constant.is_hard_error else "channel"
                assert step.args["close"] == closes, (scenario.path, step.line)


def test_the_model_is_read_only() -> None:
    scenario = load_scenario(SCENARIOS / "0-9-1" / "queue.declare.exclusive.exclusive.yaml")
    step = scenario.steps[2]
    assert step.kind == "send"
    assert isinstance(step.args, MappingProxyType)
    assert isinstance(step.args["arguments"], MappingProxyType)
    with pytest.raises(TypeError):
        step.args["method"] = "queue.delete"  # type: ignore[index]
    loop = load_scenario(SCENARIOS / "0-9-1" / "queue.bind.binding-count.yaml")
    repeat = next(s for s in loop.steps if s.kind == "repeat")
    assert "steps" not in repeat.args and len(repeat.steps) == 4
    assert repeat.walk()[1:] == repeat.steps


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_step_kind_of_a_family_has_its_check(family: str) -> None:
    scenarios = FAMILIES[family]
    checker = scenarios.checker(Path("x.yaml"), scenarios.protocols[0])
    language = scenarios.language.steps
    assert set(checker.handlers) == {k for k, v in language.items() if not v.scalar}
    for kind, method in checker.handlers.items():
        assert callable(getattr(checker, method)), (family, kind)


def test_a_checker_that_leaves_a_kind_unhandled_is_refused_when_made() -> None:
    two = Language.of(StepKind("a", "one"), StepKind("b", "another"))
    with pytest.raises(TypeError, match=r"no handler for \['b'\]"):

        class Half(Checker):
            language = two

            @handles("a")
            def _a(self, value: object) -> tuple[()]:
                return ()

    with pytest.raises(TypeError, match="a is handled by _a and _again"):

        class Twice(Checker):
            language = Language.of(StepKind("a", "one"))

            @handles("a")
            def _a(self, value: object) -> tuple[()]:
                return ()

            @handles("a")
            def _again(self, value: object) -> tuple[()]:
                return ()


def test_not_runnable_files_have_no_steps() -> None:
    for scenario in load_all():
        assert scenario.runnable == bool(scenario.steps), scenario.path


def test_errors_belong_to_the_one_root() -> None:
    assert issubclass(ScenarioError, AmqpfuzzError)
    with pytest.raises(ValueError, match="no scenarios for protocol"):
        load_all("0-8")


# -- broken copies ----------------------------------------------------------------------------

ORIGINAL = SCENARIOS / "0-9-1" / "queue.declare.exclusive.exclusive.yaml"
TX = SCENARIOS / "0-9-1" / "tx.commit.transacted.yaml"


def _copy(tmp_path: Path, source: Path, old: str, new: str, count: int = 1) -> tuple[Path, int]:
    """A copy of ``source`` in ``tmp_path/<protocol>/`` with ``old`` replaced by ``new``
    (first occurrence), and the line where the replacement happened."""
    text = source.read_text(encoding="utf-8")
    assert old in text, old
    line = text[: text.index(old)].count("\n") + 1
    folder = tmp_path / source.parent.name
    folder.mkdir(exist_ok=True)
    copy = folder / source.name
    copy.write_text(text.replace(old, new, count), encoding="utf-8")
    return copy, line


BROKEN = [
    # (name, source, old, new, words of the message[, the error's line minus the change's]):
    # the error names the line of the offending key, which is the changed line unless said
    (
        "unknown method",
        ORIGINAL,
        "method: queue.purge",
        "method: queue.scrub",
        "no method 'queue.scrub'",
    ),
    (
        "server's method",
        ORIGINAL,
        "method: queue.purge",
        "method: queue.purge-ok",
        "not sent by the client",
    ),
    ("unknown argument", ORIGINAL, "exclusive: true", "exclusiv: true", "no field 'exclusiv'"),
    ("wrong type", ORIGINAL, "exclusive: true", "exclusive: 1", "is a bit"),
    (
        "unknown code",
        ORIGINAL,
        "code: resource-locked",
        "code: resource-lockd",
        "'resource-lockd' is not a constant",
    ),
    (
        "code of the other class",
        TX,
        "code: precondition-failed",
        "code: channel-error",
        "it closes the connection",
    ),
    ("bad YAML", ORIGINAL, "  - connect: {as: b}", "  - connect: {as: b}}", "bad YAML"),
    (
        "name without prefix",
        ORIGINAL,
        'queue: "${prefix}q", passive',
        'queue: "q", passive',
        "must start with ${prefix}",
    ),
    ("unknown step", ORIGINAL, "- connect: {as: b}", "- dial: {as: b}", "unknown step kind 'dial'"),
    (
        "unknown step key",
        ORIGINAL,
        "- connect: {as: b}",
        "- connect: {as: b, tls: true}",
        "no key 'tls'",
    ),
    (
        "connection not opened",
        ORIGINAL,
        "- connect: {as: b}",
        "- connect: {as: c}",
        "used before `connect: {as: b}`",
        1,
    ),
    (
        "channel not opened",
        ORIGINAL,
        "- open_channel: {connection: b, channel: 2}",
        "- wait: 0.1",
        "channel 2 of 'b' is used before",
        3,
    ),
    (
        "unknown variable",
        ORIGINAL,
        'queue: "${prefix}q", passive',
        'queue: "${prefix}${n9}", passive',
        "unknown variable ${n9}",
    ),
    (
        "missing capability",
        ORIGINAL,
        "capabilities: [second-connection]",
        "capabilities: []",
        "the steps need second-connection",
    ),
    (
        "unknown capability",
        ORIGINAL,
        "capabilities: [second-connection]",
        "capabilities: [second-connection, teleport]",
        "capabilities is a list",
    ),
    (
        "duplicate key",
        ORIGINAL,
        "on_failure: resource-locked",
        "on_failure: resource-locked\non_failure: null",
        "appears twice",
        1,
    ),
    (
        "unknown top key",
        ORIGINAL,
        "on_failure: resource-locked",
        "on_failure: resource-locked\nseverity: high",
        "unknown key 'severity'",
        1,
    ),
    (
        "on_failure not the rule's",
        ORIGINAL,
        "on_failure: resource-locked",
        "on_failure: not-found",
        "the rule's on-failure is 'resource-locked'",
    ),
    (
        "spec_ref not a rule",
        ORIGINAL,
        "spec_ref: queue.declare/exclusive/exclusive",
        "spec_ref: queue.declare/exclusive/private",
        "not a rule of the 0-9-1 XML",
    ),
    (
        "scenario not the XML's",
        ORIGINAL,
        "One client declares",
        "A client declares",
        "does not quote the XML's scenario",
        -1,
    ),
    (
        "handshake method on an open connection",
        TX,
        "method: tx.commit",
        "method: connection.open",
        "belongs to the handshake",
    ),
    (
        "expect with two modes",
        TX,
        "close: channel,",
        "close: channel, nothing: 1,",
        "exactly one of reply, close, nothing",
    ),
    (
        "not runnable with steps",
        ORIGINAL,
        "capabilities: [second-connection]",
        "capabilities: [second-connection]\nrunnable: false",
        "a file that is not runnable has none",
        2,
    ),
]


@pytest.mark.parametrize(
    ("source", "old", "new", "words", "offset"),
    [(*case[1:], 0)[:5] for case in BROKEN],
    ids=[str(case[0]) for case in BROKEN],
)
def test_a_broken_copy_fails_at_its_line(
    tmp_path: Path, source: Path, old: str, new: str, words: str, offset: int
) -> None:
    copy, line = _copy(tmp_path, source, old, new)
    with pytest.raises(ScenarioError) as caught:
        load_scenario(copy)
    assert caught.value.path == str(copy)
    assert words in str(caught.value)
    assert str(caught.value).startswith(f"{copy}:"), str(caught.value)
    assert caught.value.line == line + offset, str(caught.value)


def test_a_missing_steps_key_names_the_file(tmp_path: Path) -> None:
    text = TX.read_text(encoding="utf-8")
    start, end = text.index("steps:"), text.index("outcome:")
    copy = tmp_path / "0-9-1" / TX.name
    copy.parent.mkdir()
    copy.write_text(text[:start] + text[end:], encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"tx\.commit\.transacted\.yaml:1: missing key 'steps'"):
        load_scenario(copy)


def test_a_file_in_the_wrong_folder_or_name(tmp_path: Path) -> None:
    folder = tmp_path / "0-9"
    folder.mkdir()
    (folder / TX.name).write_text(TX.read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(ScenarioError, match=r":1: a file in 0-9/ has protocol: 0-9"):
        load_scenario(folder / TX.name)
    other = tmp_path / "0-9-1" / "tx.commit.other.yaml"
    other.parent.mkdir()
    other.write_text(TX.read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"is named tx\.commit\.transacted\.yaml"):
        load_scenario(other)


def test_a_file_that_is_not_a_mapping(tmp_path: Path) -> None:
    path = tmp_path / "list.yaml"
    path.write_text("- 1\n- 2\n", encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"list\.yaml:1: a scenario file is a mapping"):
        load_scenario(path)
