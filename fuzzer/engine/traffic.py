"""Traffic: what a batch sent, sent again, and whether the broker survives it.

A crash that no single case brings about alone needs the traffic that was in flight: every
byte the batch sent after each connection's handshake, connection by connection, in the order
it went out (:class:`~.runner.Sent`). :func:`send` opens as many connections again and sends
the same bytes in the same order (a connection prepared only so far for its case, as the
driver's stage says, prepared so far again); :func:`survives` says whether the broker still accepts a
connection afterwards. :func:`minimize` finds, by delta debugging over the cases the traffic
belongs to, a small set of cases whose traffic still brings the broker down.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from amqpfuzz.spec import AmqpfuzzError

from ..brokers import Target
from ..brokers.control import AnyBroker
from ..protocols import Connection, Driver
from ..records.reproducers import pack, unpack
from .runner import Sent

__all__ = ["as_data", "from_data", "minimize", "send", "survives"]


def send(driver: Driver, target: Target, traffic: Sequence[Sent], timeout: float) -> None:
    """Open a connection for each one of ``traffic`` and send its bytes, all in their order;
    then give the broker a moment with them. A connection that cannot be opened (the broker
    already down) ends the sending."""
    connections: dict[int, Connection] = {}
    try:
        for sent in traffic:
            connection = connections.get(sent.connection)
            if connection is None:
                try:  # prepared as far as the case's was (a case before open: not open)
                    connection = driver.spare(target, timeout, sent.stage)
                    connections[sent.connection] = connection
                except AmqpfuzzError:
                    return
            connection.send(sent.data)
            connection.pump(0)  # what already came: closes are answered
        deadline = time.monotonic() + 0.5
        for connection in connections.values():
            connection.pump(max(0.0, deadline - time.monotonic()))
    finally:
        for connection in connections.values():
            connection.abort()


def survives(driver: Driver, target: Target, timeout: float, broker: AnyBroker | None) -> bool:
    """Whether the broker still accepts a connection (and, a throwaway one, still runs)."""
    if broker is not None and broker.crashed:
        return False
    try:
        driver.spare(target, timeout).abort()
    except AmqpfuzzError:
        return False
    return not (broker is not None and broker.crashed)


def minimize(
    traffic: Sequence[Sent],
    crashes: Callable[[list[Sent]], bool | None],
    budget: float,
) -> list[int]:
    """The cases (their indexes) of a small part of ``traffic`` that still crashes the broker,
    found by delta debugging (Zeller's ddmin) within ``budget`` seconds. Bytes of no case (a
    lane's channel openings) always go along. ``crashes`` answers None when it can go on no
    more (the broker will not come back): the smallest set so far stands."""
    cases = sorted({s.case for s in traffic if s.case is not None})
    deadline = time.monotonic() + budget

    def test(chosen: list[int]) -> bool | None:
        wanted = set(chosen)
        return crashes([s for s in traffic if s.case is None or s.case in wanted])

    parts = 2
    while len(cases) >= 2 and time.monotonic() < deadline:
        size = -(-len(cases) // parts)
        chunks = [cases[i : i + size] for i in range(0, len(cases), size)]
        complements = [[c for c in cases if c not in chunk] for chunk in chunks]
        found: tuple[list[int], int] | None = None
        # a part alone first (then split in two again), else all but a part (one part fewer)
        for subset, after in [(c, 2) for c in chunks] + [
            (c, max(2, parts - 1)) for c in complements
        ]:
            if not subset or len(subset) == len(cases):
                continue
            outcome = test(subset)
            if outcome is None:
                return cases
            if outcome:
                found = subset, after
                break
            if time.monotonic() >= deadline:
                return cases
        if found is not None:
            cases, parts = found
        elif parts >= len(cases):
            break
        else:
            parts = min(len(cases), parts * 2)
    return cases


def as_data(traffic: Sequence[Sent]) -> list[dict[str, Any]]:
    """The traffic as a reproducer keeps it."""
    return [
        {"connection": s.connection, "own": s.own, "case": s.case, **pack(s.data)}
        | ({"stage": s.stage} if s.stage is not None else {})
        for s in traffic
    ]


def from_data(items: Sequence[dict[str, Any]]) -> list[Sent]:
    """The traffic a reproducer kept (KeyError, TypeError or ValueError if it is not)."""
    return [
        Sent(
            int(i["connection"]),
            bool(i["own"]),
            i["case"],
            unpack(i),
            None if i.get("stage") is None else str(i["stage"]),
        )
        for i in items
    ]
