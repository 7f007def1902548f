"""Confirmation: a failure is replayed from its reproducer before it is reported.

A failure amqpfuzz reports is a claim about someone else's software, so the engine first replays
it (:func:`confirm`) the way ``amqpfuzz replay`` would: the reproducer's own bytes (or steps, or
script), on a fresh connection, a few times. One that fails with the same signature every time is
a failure. One that does not is ``flaky``, with its rate (k of n) and what each replay saw, so
that whoever reads it knows why it did not come back (Hypothesis raises ``Flaky`` for the same
reason; AFL reports a stability figure).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from amqpfuzz.spec import AmqpfuzzError

from .replay import Replay

__all__ = ["Confirmation", "Decided", "Decisions", "confirm", "unconfirmed"]


@dataclass(frozen=True)
class Confirmation:
    """How the replays of a failure went: ``reproduced`` of ``runs`` failed with its signature;
    ``seen`` says what each one observed (its reaction, or the other failure it met)."""

    runs: int
    reproduced: int
    found: str  # what the run saw, that made it a failure
    seen: tuple[str, ...] = ()

    @property
    def flaky(self) -> bool:
        return self.reproduced < self.runs

    @property
    def rate(self) -> str:
        return f"{self.reproduced}/{self.runs}"

    def as_record(self) -> dict[str, Any]:
        """The record contract's ``confirmation`` (and a reproducer's)."""
        return {
            "runs": self.runs,
            "reproduced": self.reproduced,
            "rate": self.rate,
            "found": self.found,
            "replays": list(self.seen),
        }

    def in_words(self) -> str:
        """The rate and the reactions that differed, for a summary or a pytest report."""
        if self.seen and all(s.startswith("not replayed: ") for s in self.seen):
            return self.seen[0]
        if not self.flaky:
            return f"reproduced {self.rate}"
        seen = "; ".join(dict.fromkeys(self.seen)) or "nothing"
        return f"reproduced {self.rate} (found: {self.found}; replays saw: {seen})"


def unconfirmed(found: str, why: str) -> Confirmation:
    """A failure that could not be replayed here, and why (it counts as seen once)."""
    return Confirmation(1, 1, found, (f"not replayed: {why}",))


def confirm(
    again: Callable[[], Replay],
    runs: int,
    found: str,
    *,
    together: bool = False,
) -> Confirmation:
    """Replay a failure ``runs`` times (``again``: one replay of its reproducer) and count
    those that failed with its signature. ``together`` runs them side by side, each on its own
    connection: a hang costs one timeout then, not one per replay. A replay that cannot be
    made (the broker refused the connection) counts neither way, its reason kept; where none
    could be made, the failure stands as it was seen (:func:`unconfirmed`). The run's time
    does not cut them short: a failure is never reported unreplayed for want of it."""

    def once(_: int) -> tuple[bool | None, str]:
        try:
            done = again()
        except AmqpfuzzError as exc:
            return None, f"not replayed: {exc}"
        if done.reproduced:
            return True, done.observed
        if done.now is not None:
            return False, f"{done.observed} (another failure: {done.now})"
        return False, done.observed

    if together and runs > 1:
        with ThreadPoolExecutor(max_workers=runs, thread_name_prefix="amqpfuzz-confirm") as pool:
            outcomes = list(pool.map(once, range(runs)))
    else:
        outcomes = [once(i) for i in range(runs)]
    made = [(hit, seen) for hit, seen in outcomes if hit is not None]
    if not made:  # the peer could not be reached at all: the failure stands as seen
        return unconfirmed(found, outcomes[0][1].removeprefix("not replayed: "))
    return Confirmation(
        len(made), sum(1 for hit, _ in made if hit), found, tuple(seen for _, seen in outcomes)
    )


@dataclass
class Decided:
    """What the replays decided of a failure signature: its confirmation, the record whose
    replays decided it, and how many of its cases were replayed."""

    confirmation: Confirmation
    record_id: str
    tries: int = 1

    @property
    def verdict(self) -> str:
        return "flaky" if self.confirmation.flaky else "fail"

    def said(self) -> dict[str, Any]:
        """What a reproducer of the signature says of it."""
        return {
            "verdict": self.verdict,
            "confirmation": self.confirmation.as_record() | {"record_id": self.record_id},
        }


class Decisions:
    """The verdict of each failure signature (by a key: the target and the signature) as its
    replays decided it: the first case's decide it; a flaky one is tried again on up to
    ``tries`` of its cases, and becomes a failure as soon as one reproduces every time."""

    def __init__(self, tries: int) -> None:
        self.tries = tries
        self._known: dict[Any, Decided] = {}

    def get(self, key: Any) -> Decided | None:
        return self._known.get(key)

    def wanted(self, key: Any, again: bool = True) -> bool:
        """Whether a case of ``key`` is to be replayed: nothing is known, or only that it is
        flaky and it may be tried ``again`` (the run's time is not up)."""
        known = self._known.get(key)
        if known is None:
            return True
        return again and known.confirmation.flaky and known.tries < self.tries

    def decide(self, key: Any, confirmation: Confirmation, record_id: str) -> Decided:
        known = self._known.get(key)
        if known is None or not confirmation.flaky:
            tries = known.tries + 1 if known is not None else 1
            known = self._known[key] = Decided(confirmation, record_id, tries)
        else:
            known.tries += 1
        return known
