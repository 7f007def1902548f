"""Deleting the nodes a 1.0 run's cases made, and only those.

1.0 has no way to delete a node. A peer that also serves 0-9-1 on the same address (RabbitMQ,
whose 1.0 plugin makes a queue for an address it does not know) has them deleted as queues
over 0-9-1: the queue an address names (its own name, or ``/queue/<name>`` and
``/amq/queue/<name>``, the forms RabbitMQ reads; an exchange's or a topic's address names no
queue of the run's). Any other peer has each node drained over 1.0: a receiving link attached
to it, given credit, then detached. The Proton broker drops a node when its last receiver
leaves and nothing is left in it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from amqpfuzz.spec import OutcomeKind
from amqpfuzz.spec.amqp10.codec import Composite, UByte, UInt

from ...brokers import Target
from ..amqp091.driver import Amqp091Driver
from ..outcome import ConnectionFailed, Name, Outcome
from .connection import Connection

__all__ = ["delete_nodes", "queue_of"]

ROUND = 100  # links attached at once while draining
CREDIT = 10_000  # messages a drained node may hold


def delete_nodes(target: Target, names: Sequence[Name], timeout: float) -> list[Name]:
    """Delete the nodes ``names``; the names that could not be."""
    if not names:
        return []
    queues = Amqp091Driver("0-9-1")
    if queues.speaks(target, "0-9-1", timeout) is None:
        named = {name: queue_of(name) for name in names}
        left = queues.delete(
            target, [("queue", q) for q in named.values() if q is not None], timeout
        )
        return [name for name, queue in named.items() if queue is not None and queue in left]
    return _drain(target, [n for n in names if isinstance(n, str)], timeout) + [
        n for n in names if not isinstance(n, str)
    ]


def queue_of(address: Name) -> Name | None:
    """The queue a node's address names, in the forms RabbitMQ reads (None: an exchange's or a
    topic's, which names none)."""
    if not isinstance(address, str) or not address.startswith("/"):
        return address
    for form in ("/queue/", "/amq/queue/"):
        if address.startswith(form) and "/" not in address[len(form) :]:
            return address[len(form) :]
    return None


def _drain(target: Target, names: list[str], timeout: float) -> list[Name]:
    try:
        connection = Connection.open(target, timeout=timeout)
    except ConnectionFailed:
        return list(names)
    left: list[Name] = []
    try:
        if connection.open_session(1, timeout) is not None:
            return list(names)
        for start in range(0, len(names), ROUND):
            left += _drain_round(connection, names[start : start + ROUND], timeout)
            if not connection.alive:
                return left + names[start + ROUND :]
    finally:
        connection.close(timeout=1.0)
    return left


def _drain_round(connection: Connection, names: list[str], timeout: float) -> list[Name]:
    """Attach a receiver to each node, give it credit, then detach them all."""
    codec = connection.codec
    out = []
    for handle, name in enumerate(names):
        attach = codec.composite(
            "attach",
            name=f"amqpfuzz-drain-{handle}",
            handle=UInt(handle),
            role=True,
            snd_settle_mode=UByte(1),  # settled: the node lets go of what it sends
            source=codec.composite("source", address=name),
            target=codec.composite("target"),
        )
        flow = codec.composite(
            "flow",
            next_incoming_id=UInt(0),
            incoming_window=UInt(0x7FFFFFFF),
            next_outgoing_id=UInt(0),
            outgoing_window=UInt(0x7FFFFFFF),
            handle=UInt(handle),
            delivery_count=UInt(0),
            link_credit=UInt(CREDIT),
        )
        out += [codec.frame(attach, 1), codec.frame(flow, 1)]
    connection.send(b"".join(out))
    # what the nodes hold comes as transfers: wait until it stops coming
    while connection.pump(0.2):
        pass
    detach = b"".join(
        codec.frame(codec.composite("detach", handle=UInt(h), closed=True), 1)
        for h in range(len(names))
    )
    connection.send(detach)
    left: list[Name] = []
    deadline = time.monotonic() + timeout
    answered = 0
    while answered < len(names):
        reply = connection.wait(1, ("detach",), max(0.0, deadline - time.monotonic()))
        if isinstance(reply, Outcome):
            return list(names[answered:]) if reply.kind != OutcomeKind.LINK_CLOSE else left
        if isinstance(reply.body, Composite) and reply.body["error"] is not None:
            left.append(names[int(reply.body["handle"])])
        answered += 1
    return left
