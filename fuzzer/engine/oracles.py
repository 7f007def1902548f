"""The oracles: small registered checks that judge what a broker did with a case.

Each check looks at one :class:`Observation` (the case, what the broker did, whether it still
answers) and raises :class:`Failure` when the broker broke the specification. A failure carries
a *signature*: a readable key, stable across runs and machines, that two occurrences of the
same defect share (:mod:`.signatures`), so that reports collapse them and profiles can list
them. The checks know no protocol: they read the case's required reaction and the outcome.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from amqpfuzz.spec import OutcomeKind
from amqpfuzz.strategies import Case

from ..protocols import Outcome
from .signatures import fuzz as signature

__all__ = ["CHECKS", "Failure", "Observation", "check", "judge"]


class Failure(Exception):
    """A broker broke the specification: which oracle saw it, its signature, what happened."""

    def __init__(self, oracle: str, signature: str, message: str) -> None:
        super().__init__(message)
        self.oracle = oracle
        self.signature = signature
        self.message = message

    def as_record(self) -> dict[str, str]:
        return {"oracle": self.oracle, "signature": self.signature, "message": self.message}


@dataclass(frozen=True)
class Observation:
    """One case as run: what was required, what happened, and whether the broker lives."""

    case: Case
    outcome: Outcome
    alive: bool = True  # a new connection was accepted after the case (or not yet checked)
    crashed: bool = False  # a throwaway broker's process ended


Check = Callable[[Observation], None]
CHECKS: dict[str, Check] = {}


def check(name: str) -> Callable[[Check], Check]:
    """Register an oracle under ``name``; checks run in registration order."""

    def register(fn: Check) -> Check:
        CHECKS[name] = fn
        return fn

    return register


@check("liveness")
def liveness(seen: Observation) -> None:
    """After every case the broker must still accept a connection."""
    if seen.crashed or not seen.alive or seen.outcome.kind == OutcomeKind.BROKER_DOWN:
        down = Outcome(OutcomeKind.BROKER_DOWN, text=seen.outcome.text)
        raise Failure(
            "liveness",
            signature("liveness", seen.case, down),
            f"the broker stopped accepting connections after this case ({seen.outcome})",
        )


@check("decoding")
def decoding(seen: Observation) -> None:
    """Whatever a broker sends must be AMQP our decoder can read."""
    if seen.outcome.kind == OutcomeKind.BAD_FRAME:
        raise Failure(
            "decoding",
            signature("decoding", seen.case, seen.outcome),
            f"the broker sent bytes that are not AMQP: {seen.outcome.text}",
        )


@check("hang")
def hang(seen: Observation) -> None:
    """A synchronous method gets its reply, or a close, within the timeout."""
    if seen.outcome.kind == OutcomeKind.TIMEOUT:
        raise Failure(
            "hang",
            signature("hang", seen.case, seen.outcome),
            f"no reply and no close: {seen.outcome.text}; expected {seen.case.expected}",
        )


@check("reaction")
def reaction(seen: Observation) -> None:
    """The broker reacts as the specification requires: the reply, or the close with the
    code the specification names (hard errors close the connection, soft ones the channel)."""
    expected, outcome = seen.case.expected, seen.outcome
    if expected.accepts(outcome.kind, outcome.code):
        return
    raise Failure(
        "reaction",
        signature("reaction", seen.case, outcome),
        f"expected {expected}, observed {outcome}",
    )


def judge(seen: Observation) -> Failure | None:
    """The first failure any oracle finds, or None: the broker did what the spec requires."""
    for fn in CHECKS.values():
        try:
            fn(seen)
        except Failure as failure:
            return failure
    return None
