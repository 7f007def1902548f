"""What one queue holds, as the stateful model expects it, and the judgement of each delivery.

Every message a program publishes gets a sequence number; a delivery (a get, or a consumer's
basic.deliver) is judged against the queue's ledger the moment it arrives: it must be a message
the queue holds (none invented, none delivered twice), carry the redelivered flag the model
expects, and come in the queue's order. Order is the queue's for a single consumer; several
consumers of one queue each see an increasing part of it; after several deliveries went back at
once (a consumer's connection died) their order is the broker's choice, so the ledger is *loose*
(any held message may come next) until the queue has drained.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

__all__ = ["Ledger", "Problem", "Stored"]


@dataclass
class Stored:
    """A message as the model keeps it: its body, whether it comes again, its place."""

    body: bytes
    redelivered: bool | None = False  # None: either (it may have been delivered, unseen)
    seq: int = 0


@dataclass(frozen=True)
class Problem:
    """A delivery that breaks an invariant: which, and what was seen."""

    invariant: str
    message: str


@dataclass
class Ledger:
    ready: deque[Stored] = field(default_factory=deque)
    loose: bool = False
    # a dead consumer the broker has not let go of yet may take what is published next
    lingering: bool = False

    def __len__(self) -> int:
        return len(self.ready)

    def append(self, message: Stored) -> None:
        if self.lingering:
            message.redelivered = None
            self.loose = True
        self.ready.append(message)

    def clear(self) -> None:
        self.ready.clear()
        self.loose = self.lingering = False

    def requeue(self, messages: list[Stored]) -> None:
        """Deliveries that were not acknowledged go back to their places, marked redelivered:
        before every message held that was published after them (RabbitMQ puts a requeued
        message where it was, so one requeued after another that was published later still
        comes first; the head is not enough)."""
        for message in messages:
            place = next(
                (i for i, held in enumerate(self.ready) if held.seq > message.seq),
                len(self.ready),
            )
            self.ready.insert(place, Stored(message.body, True, message.seq))
        if len(messages) > 1:
            self.loose = True

    def unsure(self, count: int) -> None:
        """The next ``count`` messages may have gone out to a connection that died before it
        read them: either flag will do for them, and their order is the broker's."""
        for message in list(self.ready)[:count]:
            message.redelivered = None
        self.loose = self.loose or count > 0

    def take(self, body: bytes, redelivered: bool, strict: bool = True) -> Stored | Problem:
        """Judge one delivery and take its message off the ledger. ``strict``: it must be the
        head (a single consumer); otherwise any message held may come (several consumers
        share the queue; the caller checks each consumer's own order)."""
        if not self.ready:
            return Problem("none invented", f"got {body!r} from a queue the model says is empty")
        if strict and not self.loose:
            head = self.ready[0]
            if body != head.body:
                held = any(m.body == body for m in self.ready)
                what = "a later message" if held else "a message the queue does not hold"
                return Problem(
                    "order" if held else "none invented",
                    f"got {body!r} ({what}), expected {head.body!r} next",
                )
            found = self.ready.popleft()
        else:
            same = [m for m in self.ready if m.body == body]
            if not same:
                return Problem(
                    "none invented", f"got {body!r}: not among the {len(self.ready)} held"
                )
            found = next((m for m in same if m.redelivered == redelivered), same[0])
            self.ready.remove(found)
        if not self.ready:
            self.loose = False
        if found.redelivered is not None and redelivered != found.redelivered:
            return Problem(
                "redelivered flag",
                f"{body!r} came with redelivered={redelivered}, expected {found.redelivered}",
            )
        return found
