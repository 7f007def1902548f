"""What a campaign keeps: its settings, its totals, and each target's run.

The parts of a campaign (:mod:`.drawing`, :mod:`.judging`, :mod:`.crashes`, :mod:`.measuring`)
share these: plain data, no behaviour beyond counting.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from amqpfuzz.spec import DEFAULT_PROTOCOL

from ..coverage import Measure
from .feedback import Round
from .runner import Result, Runner
from .targets import TargetState

__all__ = ["CampaignSettings", "Ran", "Stats", "Tally", "TargetRun"]


@dataclass
class CampaignSettings:
    duration: float | None = 60.0
    max_examples: int | None = None  # cases, all targets together counted once
    seed: int = 0
    batch: int = 400
    # a batch holds about as many cases as the targets ran in this long (at most ``batch``):
    # a slow target's batches stay short, so that the run ends close to its budget
    batch_seconds: float = 2.0
    valid_share: float = 0.15  # valid cases of one method
    traffic_share: float = 0.3  # valid traffic in state (families that have it)
    state_share: float = 0.2  # malformed cases after valid traffic (families that have it)
    operators: tuple[str, ...] | None = None
    timeout: float = 5.0
    in_flight: int = 32
    protocol: str = DEFAULT_PROTOCOL
    shrink: bool = True
    shrink_budget: float = 30.0  # seconds per failure signature
    shrink_total: float | None = None  # seconds for them all (None: a quarter of the budget)
    # times a throwaway broker is restarted after going down (None: for as long as the budget
    # lasts; a broker that will not come back after a few tries ends the campaign)
    restarts: int | None = None
    minimize_budget: float = 30.0  # seconds to cut a crash's traffic down, per crash
    triage_budget: float = 30.0  # seconds to pin a batch's crashes on cases
    avoid: int = 8  # a case like one behind a known crash or hang runs once in this many
    coverage_every: float = 5.0  # seconds between two points of the broker's coverage
    feedback: bool = True  # steer by new coverage (or, unmeasured, new reactions)
    corpus: str | None = None  # a corpus directory whose seeds the campaign starts from
    # this worker's share of those seeds (its index, the workers): each is sent by one
    corpus_part: tuple[int, int] = (0, 1)
    # replays of a new failure, from its reproducer, before it is reported: one that does not
    # happen again every time is ``flaky`` (0: reported as found, unconfirmed)
    confirm: int = 3
    # distinct cases of a flaky signature tried before it stays flaky for the run
    confirm_tries: int = 3
    # a new hang is replayed on the throwaway broker restarted first (only where the campaign
    # has it to itself): what earlier cases left on it (a lock still held, a queue) is not the
    # hang's, and ``amqpfuzz replay FILE`` meets a fresh broker too
    fresh_hangs: bool = False


@dataclass(frozen=True)
class Ran:
    """What came of a batch on every target (by label) and, with feedback, the rounds of the
    first measured target."""

    results: dict[str, list[Result]]
    rounds: tuple[Round, ...] = ()


@dataclass
class Tally:
    """What a campaign found on one target: confirmed failures and flaky ones apart."""

    failures: int = 0
    xfails: int = 0
    flaky: int = 0
    divergences: int = 0
    signatures: dict[str, int] = field(default_factory=dict)
    flaky_signatures: dict[str, int] = field(default_factory=dict)
    reproducers: dict[str, str] = field(default_factory=dict)
    # a flaky signature's confirmation (its rate and what each replay saw)
    confirmations: dict[str, dict[str, Any]] = field(default_factory=dict)
    # a divergence's odd one out (three targets or more, all others agreeing), by signature
    alone: dict[str, str] = field(default_factory=dict)


@dataclass
class TargetRun(TargetState):
    """One target of a campaign: its runner, restarts, and what was found on it."""

    runner: Runner | None = None
    restarts: int = 0
    tally: Tally = field(default_factory=Tally)
    # crashes recorded once each: signature -> (its event, how many times it happened)
    crashes: dict[str, list[Any]] = field(default_factory=dict)
    measure: Measure | None = None  # the broker's coverage over the run, where it is measured
    gained: int | None = None  # lines the last batch reached that none before had


@dataclass
class Stats:
    """A campaign's totals, all targets together."""

    cases: int = 0
    failures: int = 0
    xfails: int = 0
    flaky: int = 0
    divergences: int = 0
    signatures: dict[str, int] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    broker_down: str = ""
    first_seen: dict[str, float] = field(default_factory=dict)  # signature -> seconds in

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started
