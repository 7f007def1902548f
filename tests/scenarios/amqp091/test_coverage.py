"""Every scenario of the specification documents has its file, quoted word for word.

The documents are read here independently of the loader and of the spec model (lxml for the
0-9-1 XML, plain text for 0-9 and 0-10); the counts are computed from them, never written down.
"""

from __future__ import annotations

from collections import Counter

import pytest

from amqpfuzz.scenarios import SameAs, Scenario, file_name, load_all, load_index, normalise
from tests.helpers.spec_documents import (
    Paragraph,
    paragraphs_0_9,
    scenario_sentences_0_10,
    text_0_10,
    xml_scenarios,
)

PROBE_HEADERS = {"0-9-1", "0-9", "0-8", "0-10"}


def _scenario_files(protocol: str) -> list[Scenario]:
    return [s for s in load_all(protocol) if s.scenario is not None]


# -- 0-9-1 ------------------------------------------------------------------------------------


def test_every_xml_scenario_has_exactly_one_file() -> None:
    xml = xml_scenarios()
    assert xml, "the XML holds scenario docs"
    by_ref = Counter(s.spec_ref for s in _scenario_files("0-9-1"))
    missing = [ref for ref, _, _ in xml if by_ref[ref] == 0]
    doubled = [ref for ref, count in by_ref.items() if count > 1]
    assert not missing, f"scenario docs without a file: {missing}"
    assert not doubled, f"rules with more than one file: {doubled}"
    assert sorted(by_ref) == sorted(ref for ref, _, _ in xml)
    assert sum(by_ref.values()) == len(xml)


def test_every_file_quotes_the_xml_scenario() -> None:
    xml = {ref: text for ref, text, _ in xml_scenarios()}
    for scenario in _scenario_files("0-9-1"):
        assert scenario.scenario is not None
        assert normalise(scenario.scenario) == xml[scenario.spec_ref], scenario.path
        assert scenario.path.name == file_name(scenario.spec_ref)


def test_the_other_0_9_1_files_are_the_protocol_header_probes() -> None:
    probes = [s for s in load_all("0-9-1") if s.scenario is None]
    assert {s.name.removeprefix("protocol-header.") for s in probes} == PROBE_HEADERS
    for probe in probes:
        assert probe.name.startswith("protocol-header.")
        assert probe.capabilities == {"raw-bytes"}
        assert [step.kind for step in probe.steps][:2] == ["connect", "send_header"]


# -- 0-9 --------------------------------------------------------------------------------------


def _place(ref: str) -> str:
    return ref.split("/")[0]


def _index_matches(entry: SameAs, paragraph: Paragraph) -> bool:
    return (
        entry.at == paragraph.at
        and paragraph.rule.startswith(normalise(entry.rule))
        and paragraph.scenario.startswith(normalise(entry.paragraph))
    )


def _file_matches(scenario: Scenario, paragraph: Paragraph) -> bool:
    return (
        _place(scenario.spec_ref) == paragraph.at
        and normalise(scenario.rule) == paragraph.rule
        and normalise(scenario.scenario or "") == paragraph.scenario
    )


def test_every_0_9_paragraph_is_mapped_or_has_its_file() -> None:
    paragraphs = paragraphs_0_9()
    assert paragraphs, "the 0-9 document holds Test scenario paragraphs"
    index, files = load_index(), _scenario_files("0-9")
    for paragraph in paragraphs:
        entries = [e for e in index if _index_matches(e, paragraph)]
        own = [s for s in files if _file_matches(s, paragraph)]
        assert len(entries) + len(own) == 1, (paragraph, entries, own)
    for entry in index:
        assert sum(_index_matches(entry, p) for p in paragraphs) == 1, entry
    for scenario in files:
        assert sum(_file_matches(scenario, p) for p in paragraphs) == 1, scenario.path
    assert len(index) + len(files) == len(paragraphs)


def test_0_9_same_as_names_a_file_of_the_same_rule_text() -> None:
    """A mapped paragraph's scenario is the target file's, give or take hyphens and verbs."""
    paragraphs = paragraphs_0_9()
    targets = {(s.protocol, s.spec_ref): s for s in load_all() if s.scenario is not None}
    for entry in load_index():
        target = targets[(entry.protocol, entry.same_as)]
        (paragraph,) = [p for p in paragraphs if _index_matches(entry, p)]
        ours = set(_words(paragraph.scenario))
        theirs = set(_words(target.scenario or ""))
        assert len(ours & theirs) >= 0.6 * len(ours), (entry, target.path)


def _words(text: str) -> list[str]:
    return [w.strip(".,()\"'").lower().replace("-", "") for w in text.split()]


def test_0_9_on_failure_is_the_documents() -> None:
    paragraphs = paragraphs_0_9()
    for scenario in _scenario_files("0-9"):
        (paragraph,) = [p for p in paragraphs if _file_matches(scenario, p)]
        if paragraph.on_failure is not None:
            assert scenario.on_failure == paragraph.on_failure, scenario.path


# -- 0-10 -------------------------------------------------------------------------------------


def test_every_0_10_scenario_sentence_has_a_file_per_place() -> None:
    text = text_0_10()
    files = _scenario_files("0-10")
    sentences = scenario_sentences_0_10()
    assert sentences, "the 0-10 preview names some scenarios"
    for sentence in sentences:
        assert any(sentence in normalise(s.scenario or "") for s in files), sentence
    quoted = Counter(normalise(s.scenario or "") for s in files)
    for scenario_text, count in quoted.items():
        assert text.count(scenario_text) == count, scenario_text
    for scenario in files:
        assert normalise(scenario.rule) in text
    # the preview's basic class is not in the final 0-10: its scenario alone cannot run
    assert {s.name for s in files if not s.runnable} == {"basic.priority-levels"}


@pytest.mark.parametrize("protocol", ["0-9-1", "0-9", "0-10"])
def test_not_runnable_files_are_few_and_say_why(protocol: str) -> None:
    scenarios = load_all(protocol)
    idle = [s for s in scenarios if not s.runnable]
    for scenario in idle:
        assert scenario.not_runnable_reason
        assert scenario.not_runnable_reason.startswith("Not runnable")
    if protocol != "0-10":
        assert len(idle) <= len(scenarios) // 10
