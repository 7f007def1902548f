"""The AMQP 0-10 family: a raw connection over our codec (:mod:`.connection`), the engine's
driver (:mod:`.driver`) and the scenario player (:mod:`.scenarios`)."""

from __future__ import annotations

from .connection import Connection, NotSpoken
from .driver import Amqp010Driver

__all__ = ["Amqp010Driver", "Connection", "NotSpoken", "driver"]


def driver(protocol: str) -> Amqp010Driver:
    """The registry's entry point."""
    return Amqp010Driver(protocol)
