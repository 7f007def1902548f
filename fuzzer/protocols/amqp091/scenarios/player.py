"""Playing one scenario file against one target: every step executed, every expectation checked.

A :class:`Player` runs the steps of a :class:`~amqpfuzz.scenarios.Scenario` in order on raw
connections (sorted by :mod:`.mailbox`), so that a step can send what a client library would
refuse; a handler per step kind (in :mod:`.connections`, :mod:`.methods`, :mod:`.messages` and
:mod:`.control`) executes it. Whatever the ending, :meth:`~...playing.StepPlayer.play` closes the
connections and deletes the queues and exchanges the scenario declared (only names it made).
"""

from __future__ import annotations

from amqpfuzz.spec import AmqpfuzzError

from ...playing import Playing
from ..connection import Connection
from ..names import ours as ours_
from .connections import ConnectionSteps
from .control import ControlSteps
from .messages import MessageSteps
from .methods import MethodSteps

__all__ = ["PLAYER", "Player"]


class Player(ConnectionSteps, MethodSteps, MessageSteps, ControlSteps):
    """Plays one scenario on one target; ``broker`` (a throwaway broker) makes restarts
    possible. ``prefix`` starts every name the scenario creates."""

    def close(self) -> None:
        """Close every connection, then delete what the scenario declared."""
        for mailbox in self.connections.values():
            mailbox.connection.close(timeout=1.0)
        self.connections.clear()
        ours = (
            sorted({q for q in self.queues if ours_(q, self.prefix)} | self.given),
            sorted(e for e in self.exchanges if ours_(e, self.prefix)),
        )
        if not any(ours):
            return
        try:
            connection = Connection.open(self.target, protocol=self.protocol, timeout=self.timeout)
        except AmqpfuzzError as exc:
            self.notes["not_deleted"] = sorted(ours[0] + ours[1])
            self.notes["cleanup"] = str(exc)
            return
        left = connection.delete_entities(*ours, timeout=self.timeout)
        connection.close()
        if left:  # the broker refused or did not answer: said in the record, not hidden
            self.notes["not_deleted"] = left


PLAYER = Playing(Player)
