"""The AMQP 1.0 family: a raw connection over our codec (:mod:`.connection`) and the engine's
driver (:mod:`.driver`)."""

from __future__ import annotations

from .connection import Connection
from .driver import Amqp10Driver

__all__ = ["Amqp10Driver", "Connection", "driver"]


def driver(protocol: str) -> Amqp10Driver:
    """The registry's entry point."""
    return Amqp10Driver(protocol)
