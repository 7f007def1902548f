"""The model of a scenario file: frozen :class:`Scenario` and :class:`Step`, and the error.

A scenario file turns one ``<doc type="scenario">`` of a specification (or a "Test scenario"
paragraph of the 0-9 document) into steps a runner executes. The loader (:mod:`.load`) checks a
file against the step vocabulary (:mod:`.vocabulary`) and the spec model before building these;
a runner can trust every name in them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from amqpfuzz.spec import AmqpfuzzError

__all__ = ["RULE_REF", "SameAs", "Scenario", "ScenarioError", "Step", "file_name", "normalise"]

# a rule's ref in a specification that has no model of its rules: class[.method][/field]/rule
RULE_REF = re.compile(r"^[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)?(/[a-z0-9][a-z0-9-]*)+$")


class ScenarioError(AmqpfuzzError):
    """A scenario file that cannot be loaded; the message starts with ``path:line:``."""

    def __init__(self, path: Path | str, line: int | None, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.message = message
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True, slots=True)
class Step:
    """One step: its kind (a key of :data:`.vocabulary.STEPS`) and its arguments as written.

    ``args`` holds the step's mapping with nested mappings made read-only and lists made
    tuples; for ``wait`` it is ``{"seconds": value}``. The nested steps of ``repeat`` and
    ``until_limit`` are in ``steps``, not in ``args``. ``line`` is the step's line in its file.
    """

    kind: str
    args: Mapping[str, object]
    line: int
    steps: tuple[Step, ...] = ()

    def walk(self) -> tuple[Step, ...]:
        """This step followed by its nested steps, depth first."""
        return (self, *(s for step in self.steps for s in step.walk()))


@dataclass(frozen=True, slots=True)
class Scenario:
    """One scenario file.

    ``scenario`` is the quoted scenario text, or ``None`` (1.0 has no scenario texts). A
    ``probe`` records a broker behaviour near a rule (the protocol-header files) rather than
    encoding a scenario of the specification. A file that is not ``runnable`` has no steps and
    gives its reason in ``interpretation``.
    """

    path: Path
    protocol: str
    spec_ref: str
    on_failure: str | None
    rule: str
    scenario: str | None
    interpretation: str
    capabilities: frozenset[str]
    steps: tuple[Step, ...]
    outcome: str
    runnable: bool = True
    probe: bool = False

    @property
    def for_client(self) -> bool:
        """Whether it is played against a client library (amqpfuzz being its peer), not a
        broker."""
        return "client" in self.capabilities

    @property
    def name(self) -> str:
        """The file's name without ``.yaml`` (``queue.declare.queue.reserved``)."""
        return self.path.name.removesuffix(".yaml")

    @property
    def not_runnable_reason(self) -> str | None:
        """Why the runner cannot execute this file (its interpretation), or ``None``."""
        return None if self.runnable else self.interpretation

    def walk(self) -> tuple[Step, ...]:
        """Every step, nested ones included, in order."""
        return tuple(s for step in self.steps for s in step.walk())

    @property
    def negotiates_only(self) -> bool:
        """Whether the file exchanges no more than protocol headers (a socket opened without
        a handshake, raw octets, the close expected): it runs on a target whatever protocol
        that speaks, the protocol's own rule on a header it does not support included."""
        plain = ("send_raw", "expect_closed")
        return bool(self.steps) and all(
            s.kind in plain or (s.kind == "connect" and s.args.get("handshake") is False)
            for s in self.walk()
        )


def file_name(spec_ref: str) -> str:
    """The file name a rule's ref gets: ``queue.declare/queue/reserved`` ->
    ``queue.declare.queue.reserved.yaml``; ``domain:redelivered/implementation`` ->
    ``domain-redelivered.implementation.yaml``."""
    return spec_ref.replace(":", "-").replace("/", ".") + ".yaml"


@dataclass(frozen=True, slots=True)
class SameAs:
    """A 0-9 "Test scenario" paragraph that another file already encodes (``0-9/index.yaml``).

    ``at`` is where the paragraph sits in the 0-9 document (``queue.bind``, or a class such as
    ``basic``); ``rule`` and ``paragraph`` are the first words of its guideline and of its
    scenario; ``same_as`` is the ref of the file of ``protocol`` that encodes it.
    """

    paragraph: str
    at: str
    rule: str
    same_as: str
    protocol: str = "0-9-1"
    note: str = ""
    line: int = 0


def normalise(text: str) -> str:
    """``text`` with every run of white space (no-break spaces included) made one space."""
    return " ".join(text.split())
