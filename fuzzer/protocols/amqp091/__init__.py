"""The AMQP 0-8/0-9/0-9-1 driving layer: a raw connection over our codec (:mod:`.connection`),
the engine's seam (:mod:`.driver`), the entities a case creates (:mod:`.names`), scenario
playing (:mod:`.scenarios`), stateful programs through pika (:mod:`.programs`), and
:data:`FAMILY`, what :mod:`..families` lists."""

from __future__ import annotations

from .connection import Connection, closed_by
from .driver import Amqp091Driver
from .family import FAMILY, Amqp091Family

__all__ = ["FAMILY", "Amqp091Driver", "Amqp091Family", "Connection", "closed_by"]
