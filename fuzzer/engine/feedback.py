"""Feedback that steers a campaign: what its cases reach decides what it sends next.

The signal is the broker's own code, where it is measured: the new lines each *round* of a
batch reached (the runner sends a batch in rounds, a group per lane; the broker's coverage is
sampled after each, in some twenty milliseconds). Where the code is not measured (a URL, a
GarageMQ), it is what the broker shows: new reactions, each case's own. A reaction is a case's
``(operator, method, outcome)`` triple (AFLNet's response codes as states; MQueez's response-
driven energy) and the transitions between the replies it got, one to the next.

A round's new lines are the work of a few of its cases: those that also showed a reaction new
to the run share them, by how much they showed; a round that reached new lines with nothing
new to see credits its cases of the arms least tried. What a case is credited with

* keeps its blob as a seed (:class:`~.corpus.Corpus`), and what a mutant of a seed reaches
  is credited to the seed too;
* counts for its *arm* (a method, a traffic shape, a mutation operator: the blob's head reads
  as one, :class:`~amqpfuzz.strategies.Chooser`): arms earn weight by the lines (or reactions)
  they brought per case they ran, counts that fade batch by batch, so that an arm whose vein
  ran out gives way (MOpt's operator scheduling, in small).

A batch is then, blob by blob: a seed mutated or spliced (a share), a fresh blob aimed at an
arm drawn by weight (a share), or a fresh blob as Hypothesis drew it (the rest, so that the
campaign keeps exploring). Seeds loaded from a corpus on disk are sent first, as they are.
Every choice is read from the batch's own random generator, which Hypothesis seeds: the same
seed and the same signal give the same campaign.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from amqpfuzz.spec import OutcomeKind
from amqpfuzz.strategies import Case, Chooser

from ..protocols import Outcome
from .corpus import Corpus, Seed, digest, mutate, splice

__all__ = ["Feedback", "Round", "reactions"]

FADE = 0.97  # what an arm's counts keep from one batch to the next
MUTANTS = 0.5  # of a batch's blobs: a seed mutated or spliced (when there are seeds)
AIMED = 0.25  # a fresh blob aimed at an arm drawn by weight
SPLICE = 0.2  # of the mutants: spliced with another seed of the same arm
RAREST = 2  # cases of a round credited when it reached lines but showed nothing new
_NUMBERS = re.compile(r"\d+")


@dataclass(frozen=True, slots=True)
class Round:
    """Cases the runner finished together (their indices in the batch) and the lines of the
    broker's code they reached that none before had (None: not measured)."""

    cases: tuple[int, ...]
    lines: int | None


def reactions(case: Case, outcome: Outcome) -> set[tuple[str, ...]]:
    """What the broker showed of a case: its (operator, method, outcome) triple, and each
    transition from one reply to the next (from the start, to how it ended)."""
    what = case.operator or "valid"
    ending = f"{outcome.kind.value}:{outcome.code}" if outcome.code is not None else outcome.kind
    # (numbers out: an unknown class's id, drawn at random, is not a new reaction each time)
    method = _NUMBERS.sub("#", case.spec_ref)
    found: set[tuple[str, ...]] = {("triple", what, method, str(ending))}
    before = "^"
    if outcome.kind == OutcomeKind.REPLY:
        for frame in outcome.frames:
            name = str(getattr(frame, "name", type(frame).__name__))
            if name != before:
                found.add(("next", before, name))
            before = name
    found.add(("next", before, str(ending)))
    return found


@dataclass
class Arm:
    tried: float = 0.0
    brought: float = 0.0

    @property
    def rate(self) -> float:
        return (self.brought + 0.1) / (self.tried + 10.0)


@dataclass
class Feedback:
    """A campaign's steering for cases read by ``chooser`` from blobs of ``size`` bytes."""

    chooser: Chooser
    size: int
    corpus: Corpus = field(default_factory=Corpus)
    seen: set[tuple[str, ...]] = field(default_factory=set)
    arms: dict[str, Arm] = field(default_factory=dict)
    parents: dict[str, str] = field(default_factory=dict)  # a mutant's digest: its seed's
    pending: list[Seed] = field(default_factory=list)  # loaded seeds not yet sent
    mutants: int = 0  # blobs made of seeds
    aimed: int = 0  # fresh blobs aimed at an arm
    signal: str = "reactions"  # or "lines", once a round was measured

    def load(self, seeds: Sequence[Seed]) -> None:
        """Seeds of a corpus on disk: sent first as they are, then kept as any other."""
        for seed in seeds:
            if self.corpus.add(seed):
                seed.used = self.chooser.used(seed.blob)
                self.pending.append(seed)

    # -- what a batch sends ----------------------------------------------------------------

    def steer(self, fresh: list[bytes], rnd: random.Random) -> list[bytes]:
        """The blobs to send instead of ``fresh`` (as many): seeds loaded and not yet sent,
        then blob by blob a mutant of a seed, a fresh blob aimed at an arm, or ``fresh``'s."""
        out: list[bytes] = []
        while self.pending and len(out) < len(fresh):
            out.append(self.pending.pop(0).blob)
        keys = list(self.arms)
        weights = self._weights(keys)
        for blob in fresh[len(out) :]:
            dice = rnd.random()
            if len(self.corpus) and dice < MUTANTS:
                out.append(self._mutant(rnd))
            elif keys and dice < MUTANTS + AIMED:
                out.append(self.chooser.aim(blob, rnd.choices(keys, weights=weights)[0]))
                self.aimed += 1
            else:
                out.append(blob)
        return out

    def _mutant(self, rnd: random.Random) -> bytes:
        seed = self.corpus.pick(rnd)
        if len(self.corpus) > 1 and rnd.random() < SPLICE:
            other = self.corpus.pick(rnd, seed.arm)
            blob = splice(seed.blob, other.blob, rnd)
        else:
            blob = mutate(seed.blob, rnd, used=seed.used)
        self.mutants += 1
        if len(self.parents) > 100_000:  # (the mutants of long ago: let them go)
            self.parents.clear()
        self.parents[digest(blob)] = seed.name
        return blob

    def _weights(self, keys: list[str]) -> list[float]:
        """Half by the lines (or reactions) an arm brought per case, half alike for all."""
        if not keys:
            return []
        rates = [self.arms[k].rate for k in keys]
        total = sum(rates)
        return [0.5 / len(keys) + 0.5 * r / total for r in rates]

    # -- what came of it -------------------------------------------------------------------

    def learn(
        self,
        cases: Sequence[Case],
        outcomes: Sequence[Outcome],
        rounds: Sequence[Round],
        avoid: set[int],
        elapsed: float,
    ) -> float:
        """Credit what a batch reached to its cases, their arms and their seeds; keep the cases
        credited as seeds (but those in ``avoid``: a crash, a hang). What the batch brought
        (lines, or new reactions where nothing was measured)."""
        new = []
        for case, outcome in zip(cases, outcomes, strict=True):
            shown = reactions(case, outcome) - self.seen
            self.seen |= shown
            new.append(len(shown))
        keys = [self.chooser.arm_of(c.blob) if c.blob else "" for c in cases]
        credit = [0.0] * len(cases)
        measured = [r for r in rounds if r.lines is not None]
        if measured:
            self.signal = "lines"
            for found in measured:
                self._share(found, new, keys, credit)
        else:
            credit = [float(n) for n in new]
        for arm in self.arms.values():
            arm.tried *= FADE
            arm.brought *= FADE
        for key, gain in zip(keys, credit, strict=True):
            if key:
                arm = self.arms.setdefault(key, Arm())
                arm.tried += 1
                arm.brought += gain
        for index, (case, gain) in enumerate(zip(cases, credit, strict=True)):
            if gain <= 0 or not case.blob or len(case.blob) != self.size:
                continue
            parent = self.parents.get(digest(case.blob))
            if parent is not None:
                self.corpus.credit(parent, gain)
            if index not in avoid:
                seed = Seed(case.blob, keys[index], gain, round(elapsed, 3))
                if self.corpus.add(seed):
                    seed.used = self.chooser.used(case.blob)
        return sum(credit)

    def _share(self, found: Round, new: list[int], keys: list[str], credit: list[float]) -> None:
        """A round's new lines, shared by its cases that showed something new (by how much),
        else by its cases of the arms least tried."""
        if not found.lines or not found.cases:
            return
        showing = [i for i in found.cases if new[i]]
        if not showing:

            def tried(i: int) -> float:
                arm = self.arms.get(keys[i])
                return arm.tried if arm is not None else 0.0

            showing = sorted(found.cases, key=lambda i: (tried(i), i))[:RAREST]
            for i in showing:
                credit[i] += found.lines / len(showing)
            return
        total = sum(new[i] for i in showing)
        for i in showing:
            credit[i] += found.lines * new[i] / total

    def summary(self) -> dict[str, Any]:
        """What steering did, for the run's summary."""
        best = sorted(self.arms.items(), key=lambda kv: -kv[1].rate)[:5]
        return {
            "signal": self.signal,
            "seeds": len(self.corpus),
            "seeds_kept": self.corpus.added,
            "mutants": self.mutants,
            "aimed": self.aimed,
            "reactions": len(self.seen),
            "best_arms": [k for k, _ in best],
        }
