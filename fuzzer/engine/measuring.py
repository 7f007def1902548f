"""The broker's coverage in a campaign: sampled after each batch (or each round of one, with
feedback), and a point of it every few seconds, from any thread (a ticker of its own keeps the
points coming while a broker restarts or a crash is pinned)."""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Iterator

from ..coverage import Measure
from .events import CoverageSampled, Emitter
from .state import CampaignSettings, Stats, TargetRun

__all__ = ["Measuring"]


class Measuring:
    """The coverage of ``targets`` whose code is measured."""

    def __init__(
        self, targets: list[TargetRun], config: CampaignSettings, stats: Stats, emit: Emitter
    ) -> None:
        self.targets, self.config, self.stats, self.emit = targets, config, stats, emit
        self._sampled = -math.inf  # when the last point of the coverage was emitted
        self._lock = threading.Lock()  # samples and points, from any thread

    @property
    def any(self) -> bool:
        return any(run.measure is not None for run in self.targets)

    def sample(self, but: TargetRun | None = None) -> None:
        """Each measured target's new lines since the last sample (None: none taken); ``but``
        was sampled already, round by round."""
        for run in self.targets:
            if run is not but:
                run.gained = self.take(run.measure) if run.measure is not None else None

    def take(self, measure: Measure) -> int | None:
        with self._lock:  # (the rounds' samples are taken in the sending thread)
            return measure.take()

    def point(self, force: bool = False) -> None:
        """A point of each measured target's coverage, every ``coverage_every`` seconds."""
        with self._lock:
            now = time.monotonic()
            if not force and now - self._sampled < self.config.coverage_every:
                return
            self._sampled = now
            points = [
                (run.view(), run.measure.probe.plan.how, run.measure.counts())
                for run in self.targets
                if run.measure is not None
            ]
        seed, elapsed = str(self.config.seed), self.stats.elapsed
        for view, how, counts in points:
            self.emit(CoverageSampled(view, seed, elapsed, how, counts))

    @contextlib.contextmanager
    def ticking(self) -> Iterator[None]:
        """Points every few seconds from a thread of its own while the block runs (none where
        nothing is measured)."""
        if not self.any:
            yield
            return
        stopped = threading.Event()

        def tick() -> None:
            while not stopped.wait(min(1.0, self.config.coverage_every)):
                self.point()

        ticker = threading.Thread(target=tick, daemon=True, name="amqpfuzz-coverage")
        ticker.start()
        try:
            yield
        finally:
            stopped.set()
            ticker.join()
