"""The AMQP 1.0 driving layer: a raw connection over our codec (:mod:`.connection`), the
engine's driver (:mod:`.driver`), the scenario player (:mod:`.scenarios`), stateful programs
through python-qpid-proton (:mod:`.programs`), and :data:`FAMILY`, what :mod:`..families`
lists."""

from __future__ import annotations

from .connection import Connection
from .driver import Amqp10Driver
from .family import FAMILY, Amqp10Family

__all__ = ["FAMILY", "Amqp10Driver", "Amqp10Family", "Connection"]
