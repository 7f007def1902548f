"""The MUST and MUST NOT sentences of the 1.0 messaging XML, each encoded by a scenario file or
listed there as not runnable with the reason; those of the transport XML, each encoded by a file
or listed, with the reason, in ``transport-not-encoded.toml``; and what the loader refuses in a
1.0 file."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from amqpfuzz.scenarios import ScenarioError, load_all, load_scenario
from amqpfuzz.scenarios.model import normalise
from amqpfuzz.spec.amqp10.sentences import normative_sentences

FILES = Path(__file__).resolve().parents[3] / "scenarios" / "1.0"


def test_the_inventory_reads_every_must_of_the_messaging_xml() -> None:
    sentences = normative_sentences()
    text = (Path(__file__).resolve().parents[3] / "spec/data/amqp1-0-messaging.xml").read_text()
    # every occurrence of the word in the XML's prose is in one sentence of the inventory
    assert sum(s.text.count("MUST") for s in sentences) == text.count("MUST")
    assert len({s.ref for s in sentences}) == len(sentences) == 39
    assert all("MUST" in s.text.upper() for s in sentences)


def test_every_sentence_is_quoted_by_exactly_one_file() -> None:
    files = {s.spec_ref: s for s in load_all("1.0") if not s.spec_ref.startswith("transport:")}
    sentences = {s.ref: s for s in normative_sentences()}
    assert set(files) == set(sentences)
    for ref, scenario in files.items():
        assert normalise(scenario.rule) == normalise(sentences[ref].text), ref
        if not scenario.runnable:  # listed as untestable, with the reason
            assert len(scenario.interpretation) > 60 and not scenario.steps, ref
    runnable = [s for s in files.values() if s.runnable]
    assert len(runnable) >= 13


def test_the_transport_sentences_are_each_encoded_or_listed_with_a_reason() -> None:
    sentences = {s.ref: s for s in normative_sentences("transport")}
    assert len(sentences) == 94  # the transport XML's prose: every MUST of it
    files = {s.spec_ref: s for s in load_all("1.0") if s.spec_ref.startswith("transport:")}
    for ref, scenario in files.items():
        assert normalise(scenario.rule) == normalise(sentences[ref].text), ref
        assert scenario.runnable, ref
    listing = tomllib.loads((FILES / "transport-not-encoded.toml").read_text())
    listed = [f"transport:{ref}" for group in listing["group"] for ref in group["refs"]]
    assert all(len(group["reason"]) > 80 for group in listing["group"])
    assert len(listed) == len(set(listed))  # each once
    assert not set(listed) & set(files)  # never both
    assert set(listed) | set(files) == set(sentences)
    assert len(files) >= 10


def _copy(tmp_path: Path, name: str, old: str, new: str) -> Path:
    folder = tmp_path / "1.0"
    folder.mkdir(exist_ok=True)
    path = folder / name
    text = (FILES / name).read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("MUST NOT be modified", "MUST NOT be changed", "does not quote the XML's sentence"),
        ('spec_ref: "message-format#1"', 'spec_ref: "message-format#9"', "not a MUST sentence"),
        ("  - check: {that: got.bare", "  - chek: {that: got.bare", "unknown step kind 'chek'"),
        ("save: got}", "save: gotten}", "'got' is not bound by an earlier step"),
        ("channel: 1, handle: 1, credit: 1", "channel: 2, handle: 1, credit: 1", "no session"),
        ('address: "${prefix}q"}', 'address: "elsewhere"}', "starts with ${prefix}"),
        ("capabilities: [consumer]", "capabilities: []", "the steps need consumer"),
    ],
)
def test_a_broken_1_0_file_fails_at_its_line(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    path = _copy(tmp_path, "message-format.1.yaml", old, new)
    with pytest.raises(ScenarioError) as raised:
        load_scenario(path)
    assert message in str(raised.value) and str(raised.value).startswith(f"{path}:")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("performative: flow,", "performative: flaw,", "'flaw' is not a performative"),
        ("handle: 7,", "hindle: 7,", "flow has no field 'hindle'"),
        ("link-credit: 1}", "link-credit: 1, properties: {a: 1}}", "only a field of a primitive"),
        ("condition: session-error}", "condition: session-eror}", "'session-eror' is neither"),
    ],
)
def test_a_broken_transport_frame_step_fails_at_its_line(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    path = _copy(tmp_path, "transport-performatives.flow.handle.1.yaml", old, new)
    with pytest.raises(ScenarioError) as raised:
        load_scenario(path)
    assert message in str(raised.value) and str(raised.value).startswith(f"{path}:")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("operator: aborted-delivery}", "operator: aborted-delivry}", "not a server-side operator"),
        ("close: none,", "close: maybe,", "close is one of connection, session"),
        ("frames: valid}", "frames: [sesion-flow]}", "frames is valid, or a list of"),
        ("capabilities: [client]", "capabilities: []", "the steps need client"),
        ("  - serve: {operator: aborted-delivery}\n", "", "expect_client follows a serve"),
    ],
)
def test_a_broken_client_file_fails_at_its_line(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    path = _copy(tmp_path, "transport-performatives.transfer.aborted.1.yaml", old, new)
    with pytest.raises(ScenarioError) as raised:
        load_scenario(path)
    assert message in str(raised.value) and str(raised.value).startswith(f"{path}:")


def test_the_client_files_are_not_played_on_brokers_and_name_what_the_client_must_do() -> None:
    client = [s for s in load_all("1.0") if s.for_client]
    assert len(client) >= 15
    for scenario in client:
        kinds = [step.kind for step in scenario.steps]
        assert kinds == ["serve", "expect_client"], scenario.name
