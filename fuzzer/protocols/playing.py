"""What every protocol's scenario player shares: the failure of a step's expectation, and (for
the players of 1.0 and 0-10 files) the loop that plays a file's steps, each by the method named
after its kind, into a :class:`~.base.Played`."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from typing import Any

from amqpfuzz.scenarios import Scenario, Step
from amqpfuzz.spec import AmqpfuzzError

from ..brokers import Broker, Target
from .base import Played, reaction_record

__all__ = ["StepFailed", "StepPlayer"]


class StepFailed(Exception):
    """An expectation of a step that did not hold: the step, what was expected, what came."""

    def __init__(
        self, step: Step, message: str, expected: dict[str, Any], seen: dict[str, Any]
    ) -> None:
        super().__init__(message)
        self.step = step
        self.message = message
        self.expected = expected
        self.observed = seen


class StepPlayer(ABC):
    """Plays one scenario file on one target: ``_<kind>(step, args)`` for each step, then
    :meth:`close` (connections, and what the file created). ``expected`` and ``observed`` are
    the last expectation checked; ``notes`` what the file records."""

    def __init__(
        self,
        scenario: Scenario,
        target: Target,
        *,
        prefix: str,
        timeout: float,
        broker: Broker | None,
    ) -> None:
        self.scenario, self.target, self.prefix = scenario, target, prefix
        self.timeout, self.broker = timeout, broker
        self.saved: dict[str, Any] = {}
        self.notes: dict[str, Any] = {}
        self.expected = reaction_record("reply")
        self.observed = reaction_record("reply")

    def play(self) -> Played:
        started = time.monotonic()
        try:
            for step in self.scenario.steps:
                getattr(self, f"_{step.kind}")(step, step.args)
            played = Played("pass", self.scenario.outcome, expected=self.expected)
            played.observed = self.observed
            played.notes = self.notes
        except StepFailed as failed:
            played = Played(
                "fail", failed.message, failed.step.line, failed.step.kind,
                failed.expected, failed.observed,
            )  # fmt: skip
        except AmqpfuzzError as exc:
            played = Played("error", str(exc))
        finally:
            self.close()
        played.duration = time.monotonic() - started
        return played

    @abstractmethod
    def close(self) -> None:
        """End the file's connections and delete what it created."""
