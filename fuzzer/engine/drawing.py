"""A campaign's batches: blobs drawn, steered, read as cases, at the targets' pace.

Each batch is ``batch`` blobs from Hypothesis's generator (steered by what the campaign reached:
:mod:`.feedback`), read as cases as far as the pace and the steering away from known crashes and
hangs let them go. Cases of an operator (or method) that take seconds on connections of their
own are held back and sent together every few batches, so that one slow case does not hold up
every batch it is in.
"""

from __future__ import annotations

import random
import time

from amqpfuzz.spec import AmqpfuzzError
from amqpfuzz.strategies import Case, Chooser, family_for

from .feedback import Feedback
from .judging import steering_key
from .runner import Result
from .state import CampaignSettings
from .targets import TargetState

__all__ = ["HELD", "HOLD", "SLOW", "Drawing"]

SLOW = 1.0  # seconds: an operator whose cases take longer has them held back and sent together
HELD = 48  # at most this many held (more are let go: drawn again another time)
HOLD = 12  # batches between two sendings of the held ones
SLOW_PACE = 10  # cases a second a slow broker runs, before a campaign has measured its pace


class Drawing:
    """What a campaign sends next: :attr:`build` reads a blob as a case (given once the
    targets' frame-max is known), :attr:`feedback` steers; :attr:`avoided` holds the steering
    keys behind a known crash or hang."""

    def __init__(self, config: CampaignSettings) -> None:
        self.config = config
        self.build: Chooser | None = None
        self.feedback: Feedback | None = None
        self.avoided: set[str] = set()
        # a broker that goes down: smaller batches, fewer suspects each time (calm: full again)
        self.batch = config.batch
        self._smallest = min(config.batch, 16)
        # as many as ran in ``batch_seconds`` at the last batch's pace (the first: full; a
        # smaller first batch runs fewer cases before a crashing broker's first crash, and
        # finds fewer signatures in a run's first seconds), but no more than a short budget
        # runs at a slow broker's pace: a full first batch of cases that hang took 45 s of a
        # 10 s budget on the Proton broker
        self.paced = config.batch
        if config.duration is not None:
            fits = int(config.duration * SLOW_PACE)
            self.paced = max(self._smallest, min(config.batch, fits))
        self._dice = random.Random(config.seed)  # which avoided cases run all the same
        self.slow: dict[str, float] = {}  # seconds an operator's (a method's) cases take
        self.held: list[Case] = []  # slow cases drawn, to go together
        self._since = 0  # batches since the held ones went
        self.releasing = False  # the batch being drawn sends them

    def draw(self, rnd: random.Random, deadline: float) -> list[Case]:
        """A batch: ``batch`` blobs from Hypothesis's generator (steered by what the campaign
        reached: :mod:`.feedback`), read as cases as far as the pace and steering away from
        known crashes let them go."""
        size = family_for(self.config.protocol).blob
        blobs = [rnd.randbytes(size) for _ in range(self.config.batch)]
        if self.feedback is not None:
            blobs = self.feedback.steer(blobs, rnd)
        wanted = min(self.batch, self.paced)
        cases: list[Case] = []
        for blob in blobs:
            for case in self.steer([self.read(blob)]):
                if self.slow.get(steering_key(case), 0.0) > SLOW:
                    if len(self.held) < HELD:  # (past that many, drawn again later)
                        self.held.append(case)
                else:
                    cases.append(case)
            if len(cases) >= wanted:
                break
        self._since += 1
        ending = bool(self.config.max_examples) or time.monotonic() > deadline - 5.0
        self.releasing = bool(self.held) and (self._since >= HOLD or ending)
        if self.releasing:
            cases += self.held  # the slow ones together: their wait is paid once
            self.held, self._since = [], 0
        return cases

    def read(self, blob: bytes) -> Case:
        """The case ``blob`` reads as; a blob the strategies cannot read is a defect of
        amqpfuzz's own, said with the blob that shows it."""
        assert self.build is not None, "a campaign draws once it has started"
        try:
            return self.build(blob)
        except Exception as exc:
            raise AmqpfuzzError(
                f"amqpfuzz could not read a case from blob {blob.hex()} "
                f"({type(exc).__name__}: {exc}); please report it"
            ) from exc

    def timed(self, results: list[Result], target: TargetState) -> None:
        """How long the cases of each operator (or method) take on connections of their own:
        those that take seconds (a broker that waits before it closes a connection whose login
        failed) are held back and sent together every few batches, so that one slow case does
        not hold up every batch it is in."""
        driver = target.driver
        for result in results:
            if not driver.needs_own_connection(result.case):
                continue  # (a lane's case waits for its whole group: its time is theirs)
            key = steering_key(
                result.case
            )  # (the slowest lately: one slow case in a few holds all)
            self.slow[key] = max(result.duration_s, 0.95 * self.slow.get(key, 0.0))

    def steer(self, cases: list[Case]) -> list[Case]:
        """Spend the budget elsewhere than on what is known to crash or hang the broker: a
        case of an operator (or, valid, of a method) behind such a failure runs once in
        ``avoid`` times."""
        if not self.avoided:
            return cases
        chosen = self.config.operators
        valid = self.config.valid_share + self.config.traffic_share
        if chosen and not valid and self.avoided >= set(chosen):
            return cases  # nothing else to spend it on
        return [
            c
            for c in cases
            if steering_key(c) not in self.avoided or self._dice.randrange(self.config.avoid) == 0
        ]

    def paced_at(self, cases: int, seconds: float) -> None:
        """The next batches' size from how long ``cases`` took (held slow cases say nothing
        of the pace)."""
        if not self.releasing:
            pace = cases * self.config.batch_seconds / max(seconds, 1e-3)
            self.paced = max(self._smallest, min(self.config.batch, int(pace)))

    def crashed(self, down: bool) -> None:
        """Smaller batches while the broker goes down, back towards full ones when calm."""
        if down:
            self.batch = max(self._smallest, self.batch // 2)
        else:
            self.batch = min(self.config.batch, self.batch * 2)
