"""AMQP 1.0: the model of its five parts (types, transport, messaging, security, transactions),
its codec (:mod:`.codec`), its MUST sentences (:mod:`.sentences`) and :data:`FAMILY`, what the
registry lists."""

from __future__ import annotations

from .family import FAMILY, Amqp10Spec, performatives
from .model import Spec100, load, load_1_0

__all__ = ["FAMILY", "Amqp10Spec", "Spec100", "load", "load_1_0", "performatives"]
