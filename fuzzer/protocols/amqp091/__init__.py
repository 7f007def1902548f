"""The AMQP 0-8/0-9/0-9-1 driver: a raw connection over our codec (:mod:`.connection`), the
engine's seam (:mod:`.driver`), the entities a case creates (:mod:`.names`), scenario playing
(:mod:`.scenarios`) and stateful programs through pika (:mod:`.programs`)."""

from __future__ import annotations

from .connection import Connection, closed_by
from .driver import Amqp091Driver

__all__ = ["Amqp091Driver", "Connection", "closed_by", "driver"]


def driver(protocol: str) -> Amqp091Driver:
    """The driver of one protocol of the family (the registry's entry point)."""
    return Amqp091Driver(protocol)
