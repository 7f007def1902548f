"""The 0-9 "Test scenario" paragraphs that 0-9-1's (or another 0-9) file already encodes in
other words: ``0-9/index.yaml``, read and checked (:func:`load_index`)."""

from __future__ import annotations

from pathlib import Path

from ..load import INDEX, SCENARIOS, load_all
from ..model import SameAs, ScenarioError
from ..yamlfile import Located, read_yaml
from .family import QUOTED

__all__ = ["load_index"]

_INDEXED = "0-9"  # the protocol whose paragraphs the index lists
_REQUIRED = ("paragraph", "at", "rule", "same_as")
_OPTIONAL = ("protocol", "note")


def load_index() -> tuple[SameAs, ...]:
    """The 0-9 "Test scenario" paragraphs that are another file's scenario in other words."""
    path = SCENARIOS / _INDEXED / INDEX
    entries = read_yaml(path)
    if not isinstance(entries, list):
        raise ScenarioError(path, 1, "the index is a list of {paragraph, at, rule, same_as}")
    refs = {
        name: {s.spec_ref for s in load_all(name) if s.scenario is not None}
        for name in (QUOTED, _INDEXED)
    }
    return tuple(_same_as(path, entry, refs) for entry in entries)


def _same_as(path: Path, entry: object, refs: dict[str, set[str]]) -> SameAs:
    if not isinstance(entry, Located):
        raise ScenarioError(path, None, "an index entry is a mapping")
    for key in entry:
        if key not in _REQUIRED + _OPTIONAL:
            raise ScenarioError(path, entry.line_of(str(key)), f"unknown key {key!r}")
    for key in _REQUIRED:
        if not isinstance(entry.get(key), str) or not entry[key]:
            raise ScenarioError(path, entry.line, f"an index entry needs `{key}` (a string)")
    protocol = entry.get("protocol", QUOTED)
    if protocol not in refs:
        raise ScenarioError(path, entry.line_of("protocol"), "protocol is 0-9-1 or 0-9")
    if entry["same_as"] not in refs[protocol]:
        raise ScenarioError(
            path, entry.line_of("same_as"), f"no {protocol} scenario file has {entry['same_as']}"
        )
    return SameAs(
        paragraph=entry["paragraph"],
        at=entry["at"],
        rule=entry["rule"],
        same_as=entry["same_as"],
        protocol=protocol,
        note=str(entry.get("note", "")),
        line=entry.line,
    )
