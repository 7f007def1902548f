"""The pika connections stateful programs share: a publisher and a consumer, opened once and
handed from one program to the next for as long as they are healthy, so that deliveries,
acknowledgements and channels pile up on long-lived connections as they do in production.
A program that breaks an invariant, or whose step was cut for want of an answer, gives its
connections up; the next program opens new ones."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from ....brokers import Target
from ..clients import pika_connection

__all__ = ["Clients"]

OPTIONS = {"heartbeat": 0, "blocked_connection_timeout": 10, "socket_timeout": 10}


@dataclass
class Clients:
    target: Target
    publisher: Any = None
    consumer: Any = None
    programs: int = 0  # programs these connections have served
    deliveries: int = 0  # deliveries the consumer connection has had
    opened: int = 0  # pairs of connections opened

    def take(self) -> tuple[Any, Any]:
        """The publisher and consumer connections, opened now if there are none healthy."""
        if not (self.healthy(self.publisher) and self.healthy(self.consumer)):
            self.close()
            self.publisher = pika_connection(self.target, **OPTIONS)
            self.consumer = pika_connection(self.target, **OPTIONS)
            self.opened += 1
            self.programs = self.deliveries = 0
        self.programs += 1
        return self.publisher, self.consumer

    @staticmethod
    def healthy(connection: Any) -> bool:
        return connection is not None and bool(connection.is_open)

    def open(self, **options: Any) -> Any:
        """A connection of a step's own (a consumer that will die, a confirming publisher)."""
        return pika_connection(self.target, **{**OPTIONS, **options})

    def close(self) -> None:
        for connection in (self.publisher, self.consumer):
            if self.healthy(connection):
                with contextlib.suppress(Exception):  # a broker gone mid-close: nothing to keep
                    connection.close()
        self.publisher = self.consumer = None

    def __enter__(self) -> Clients:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
