"""The AMQP 1.0 family: a raw connection over our codec (:mod:`.connection`); the engine's
driver comes next, so :func:`driver` says that amqpfuzz cannot fuzz 1.0 yet."""

from __future__ import annotations

from ..base import Driver, UnsupportedProtocol
from .connection import Connection

__all__ = ["Connection", "driver"]


def driver(protocol: str) -> Driver:
    """The registry's entry point: no 1.0 driver yet (one clear line for the user)."""
    raise UnsupportedProtocol(
        f"amqpfuzz cannot drive AMQP {protocol} yet: its connection is written, its driver is not"
    )
