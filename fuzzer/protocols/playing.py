"""What every family's scenario player shares: the failure of a step's expectation, and the loop
that plays a file's steps, each by its handler (:func:`~amqpfuzz.scenarios.handles`), into a
:class:`~.family.Played`."""

from __future__ import annotations

import re
import time
from abc import abstractmethod
from collections.abc import Mapping
from typing import Any

from amqpfuzz.scenarios import Dispatching, Scenario, Step
from amqpfuzz.spec import AmqpfuzzError, OutcomeKind

from ..brokers import Broker, Target
from .family import Played
from .outcome import Outcome

__all__ = ["Playing", "StepFailed", "StepPlayer"]

_VARIABLE = re.compile(r"\$\{([^}]*)\}")


class StepFailed(Exception):
    """An expectation of a step that did not hold: the step, what was expected, what came."""

    def __init__(self, step: Step, message: str, expected: Outcome, seen: Outcome) -> None:
        super().__init__(message)
        self.step = step
        self.message = message
        self.expected = expected
        self.observed = seen


class StepPlayer(Dispatching, part=True):
    """Plays one scenario file on one target: each step by the handler of its kind
    (``handler(step, args)``, the step's arguments with their variables filled in), then
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
        self.variables: dict[str, Any] = {"prefix": prefix}
        self.expected = Outcome(OutcomeKind.REPLY)
        self.observed = Outcome(OutcomeKind.REPLY)

    def play(self) -> Played:
        started = time.monotonic()
        try:
            self.run(self.scenario.steps)
            played = Played("pass", self.scenario.outcome)
            played.expected, played.observed = self.expected, self.observed
        except StepFailed as failed:
            played = Played(
                "fail", failed.message, failed.step.line, failed.step.kind,
                failed.expected, failed.observed,
            )  # fmt: skip
        except AmqpfuzzError as exc:
            played = Played("error", str(exc))
        except Exception as exc:  # a defect of ours: this scenario errs, the run goes on
            played = Played("error", f"internal error: {type(exc).__name__}: {exc}")
        finally:
            self.close()
        played.notes = self.notes  # (what closing the file noted too)
        played.duration = time.monotonic() - started
        return played

    def run(self, steps: tuple[Step, ...]) -> None:
        for step in steps:
            self.handler(step.kind)(step, self.resolve(step.args))

    def resolve(self, value: Any) -> Any:
        """``value`` with ``${name}`` variables substituted (a whole variable keeps its type),
        read-only mappings and tuples made plain dicts and lists."""
        if isinstance(value, str):
            whole = _VARIABLE.fullmatch(value)
            if whole and whole.group(1) in self.variables:
                return self.variables[whole.group(1)]
            return _VARIABLE.sub(lambda m: str(self.variables.get(m.group(1), m.group(0))), value)
        if isinstance(value, Mapping):
            return {str(k): self.resolve(v) for k, v in value.items()}
        if isinstance(value, tuple | list):
            return [self.resolve(v) for v in value]
        return value

    def checked(self, expected: Outcome, seen: Outcome) -> None:
        """The expectation just checked, and what came."""
        self.expected, self.observed = expected, seen

    def failed(self, step: Step, message: str, expected: Outcome, seen: Outcome) -> StepFailed:
        """The failure of ``step``'s expectation (the last checked)."""
        self.checked(expected, seen)
        return StepFailed(step, message, expected, seen)

    @abstractmethod
    def close(self) -> None:
        """End the file's connections and delete what it created."""


class Playing:
    """A family's :class:`~.family.ScenarioPlayer`: each file played by a fresh ``player``."""

    def __init__(self, player: type[StepPlayer]) -> None:
        self.player = player

    def play(
        self,
        scenario: Scenario,
        target: Target,
        *,
        prefix: str,
        timeout: float,
        broker: Broker | None,
    ) -> Played:
        return self.player(scenario, target, prefix=prefix, timeout=timeout, broker=broker).play()
