"""The AMQP 0-10 driving layer: a raw connection over our codec (:mod:`.connection`), the
engine's driver (:mod:`.driver`), the scenario player (:mod:`.scenarios`), and :data:`FAMILY`,
what :mod:`..families` lists."""

from __future__ import annotations

from .connection import Connection, NotSpoken
from .driver import Amqp010Driver
from .family import FAMILY, Amqp010Family

__all__ = ["FAMILY", "Amqp010Driver", "Amqp010Family", "Connection", "NotSpoken"]
