"""What the engine says as it runs: frozen events, and the emitter that hands them to handlers.

Campaigns, stateful programs and conformance runs never write a record or print a line: they
emit events. The record writer (:class:`~amqpfuzz.fuzzer.recording.RecordHandler`), the terminal
progress and summary (:mod:`amqpfuzz.fuzzer.cli`) and the pytest plugin are handlers of them. A
worker process forwards its events to the process that started it, so every event is plain,
picklable data.

Every event that becomes a record is a :class:`Judged`: its fields are the record contract's
(:mod:`amqpfuzz.fuzzer.records.contract`), so that a record is built in one place.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..coverage import ModuleCount, set_totals
from ..records import describe

if TYPE_CHECKING:
    from amqpfuzz.scenarios import Scenario

    from ..protocols import Played

__all__ = [
    "BrokerDown",
    "BrokerRestarted",
    "CaseJudged",
    "CorpusSaved",
    "CoverageReached",
    "CoverageSampled",
    "DivergenceFound",
    "Emitter",
    "Event",
    "FailureFound",
    "FailureShrunk",
    "Handler",
    "Judged",
    "ProgramJudged",
    "Progress",
    "RunFinished",
    "RunStarted",
    "ScenarioJudged",
    "TargetSummary",
    "TargetView",
    "new_record_id",
]


def new_record_id() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True, slots=True)
class TargetView:
    """A target as the records and the terminal show it (never with its password)."""

    label: str
    url: str
    product: str = ""
    version: str = ""
    protocol: str = ""

    def as_record(self) -> dict[str, str]:
        """The record contract's ``target`` field."""
        return {
            "label": self.label,
            "url": self.url,
            "product": self.product,
            "version": self.version,
            "protocol": self.protocol,
        }


@dataclass(frozen=True, slots=True)
class RunStarted:
    """A campaign, a stateful run or a conformance run starts on its targets."""

    run_id: str
    kind: str
    seed: str
    targets: tuple[TargetView, ...]


@dataclass(frozen=True)
class Judged:
    """Something judged, that becomes one record: the contract's fields, and ``extra`` ones
    (the case's text, the profile's reason, ...) that ride along."""

    kind: str
    target: TargetView
    spec_ref: str
    expected: Mapping[str, Any]
    observed: Mapping[str, Any]
    verdict: str
    seed: str
    duration_s: float = 0.0
    mutation: str | None = None
    failure: Mapping[str, str] | None = None
    reproducer: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    record_id: str = field(default_factory=new_record_id)

    @property
    def signature(self) -> str | None:
        return self.failure["signature"] if self.failure else None

    def record_fields(self) -> dict[str, Any]:
        """The fields of its record beyond the contract's core."""
        return dict(self.extra)


@dataclass(frozen=True)
class CaseJudged(Judged):
    """A fuzz case judged on one target. For a failure, ``case`` is its text (operator,
    frames, the reaction required), ``required`` and ``outcome`` the reaction the specification
    requires and what the broker did, in words (for other cases, the words cost more than
    running the case: ``case`` is its spec reference, the others empty). An xfail's ``extra``
    names the profile's entry and its reason (:meth:`~.verdicts.Verdict.known`)."""

    case: str = ""
    required: str = ""
    outcome: str = ""

    @property
    def deviation(self) -> str | None:
        """The profile's reason, for an xfail."""
        found = self.extra.get("deviation")
        return str(found) if found is not None else None

    def record_fields(self) -> dict[str, Any]:
        return {"case": self.case} | dict(self.extra)


@dataclass(frozen=True)
class DivergenceFound(Judged):
    """Targets that reacted differently to the same case: each one's reaction by label."""

    case: str = ""
    reactions: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    targets: tuple[TargetView, ...] = ()

    def record_fields(self) -> dict[str, Any]:
        return {
            "targets": [t.as_record() for t in self.targets],
            "reactions": {label: dict(r) for label, r in self.reactions.items()},
            "case": self.case,
        } | dict(self.extra)


@dataclass(frozen=True)
class ScenarioJudged(Judged):
    """A scenario file played (or skipped) on one target."""

    scenario: Scenario | None = None
    played: Played | None = None
    reason: str = ""  # why skipped, or the profile's reason for an xfail or an xpass
    profile: str | None = None  # the name of the target's profile

    def record_fields(self) -> dict[str, Any]:
        played, scenario = self.played, self.scenario
        return {
            "scenario": f"{scenario.protocol}/{scenario.name}" if scenario else None,
            "reason": self.reason or None,
            "step_line": played.line if played else None,
            "notes": played.notes if played else {},
            "expected_reply": self.expected.get("reply"),
            "observed_reply": self.observed.get("reply"),
        } | dict(self.extra)

    @property
    def cell(self) -> str:
        """The conformance table's cell: the verdict and what the broker did."""
        if self.played is None:
            return self.verdict
        return f"{self.verdict} · {describe(self.observed)}"

    @property
    def message(self) -> str:
        if self.played is None or self.played.status == "pass":
            return self.reason
        where = f"line {self.played.line}: " if self.played.line else ""
        return f"{where}{self.played.message}"


@dataclass(frozen=True)
class ProgramJudged(Judged):
    """A round of stateful programs on one target; a failure is its smallest program's."""

    programs: int = 0
    steps: tuple[Mapping[str, Any], ...] = ()

    def record_fields(self) -> dict[str, Any]:
        return {"programs": self.programs} | dict(self.extra)


@dataclass(frozen=True, slots=True)
class FailureFound:
    """A failure outside the profile, with its reproducer (``flaky``: its replays did not all
    fail with its signature)."""

    target: str
    signature: str
    case: str
    reproducer: str
    flaky: bool = False


@dataclass(frozen=True, slots=True)
class FailureShrunk:
    """A failure's reproducer rewritten with the smallest case that still fails."""

    target: str
    signature: str
    case: str
    reproducer: str


@dataclass(frozen=True, slots=True)
class BrokerDown:
    """A target stopped serving; a throwaway broker is restarted (``restarting``)."""

    target: str
    log: str
    restarting: bool


@dataclass(frozen=True, slots=True)
class BrokerRestarted:
    target: str


@dataclass(frozen=True, slots=True)
class CoverageSampled:
    """The broker's code covered so far in the run (lines, per module of the plan): a point
    of the run's coverage over time, every few seconds."""

    target: TargetView
    seed: str
    elapsed: float
    how: str  # erlang-cover, coverage.py
    modules: tuple[ModuleCount, ...]

    def sets(self) -> dict[str, tuple[int, int]]:
        """Covered and relevant lines per named set."""
        return set_totals(self.modules)


@dataclass(frozen=True, slots=True)
class CoverageReached:
    """The broker's code covered when a campaign ends: the lines themselves (so that the
    workers of one run are joined), and the functions no sample showed entered."""

    target: TargetView
    seed: str
    elapsed: float
    how: str
    modules: tuple[ModuleCount, ...]
    lines: Mapping[str, tuple[int, ...]]
    unreached: Mapping[str, tuple[tuple[str, int], ...]]  # function and its relevant lines

    def sets(self) -> dict[str, tuple[int, int]]:
        return set_totals(self.modules)


@dataclass(frozen=True, slots=True)
class CorpusSaved:
    """The seeds a campaign kept for what they reached, written to ``directory`` (``seeds``
    there now), and what its steering did (:meth:`~.feedback.Feedback.summary`)."""

    directory: str
    seeds: int
    steering: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Progress:
    """Totals so far, after each batch or round."""

    cases: int
    failures: int
    xfails: int
    programs: int = 0
    flaky: int = 0  # failures whose replays did not all reproduce them


@dataclass(frozen=True)
class TargetSummary:
    """What a run came to on one target."""

    label: str
    cases: int = 0
    programs: int = 0
    failures: int = 0
    xfails: int = 0
    divergences: int = 0
    elapsed: float = 0.0
    signatures: Mapping[str, int] = field(default_factory=dict)
    reproducers: Mapping[str, str] = field(default_factory=dict)
    broker_down: str = ""
    restarts: int = 0
    first_seen: Mapping[str, float] = field(default_factory=dict)  # seconds into the run
    flaky: int = 0  # failures that did not happen again every time they were replayed
    flaky_signatures: Mapping[str, int] = field(default_factory=dict)
    # a flaky signature's replays: its rate and what each saw (Confirmation.as_record)
    confirmations: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # a divergence's odd one out, by signature (three targets or more, the others agreeing)
    alone: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RunFinished:
    run_id: str
    kind: str
    targets: tuple[TargetSummary, ...]
    interrupted: bool = False


Event = (
    RunStarted
    | Judged
    | FailureFound
    | FailureShrunk
    | BrokerDown
    | BrokerRestarted
    | CoverageSampled
    | CoverageReached
    | CorpusSaved
    | Progress
    | RunFinished
)
Handler = Callable[[Any], None]


class Emitter:
    """Hands each event to every handler, in the order they were added, one event at a time
    (conformance runs play several scenarios at once, from threads)."""

    def __init__(self, *handlers: Handler) -> None:
        self.handlers = list(handlers)
        self._lock = threading.RLock()

    def add(self, handler: Handler) -> None:
        self.handlers.append(handler)

    def __call__(self, event: Any) -> None:
        with self._lock:
            for handler in self.handlers:
                handler(event)
