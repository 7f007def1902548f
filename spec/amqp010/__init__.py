"""AMQP 0-10: the model of its XML (types, domains, structs, controls, commands, segments), its
codec (:mod:`.codec`) and :data:`FAMILY`, what the registry lists."""

from __future__ import annotations

from .family import FAMILY, Amqp010Spec
from .model import Spec010, load, load_0_10

__all__ = ["FAMILY", "Amqp010Spec", "Spec010", "load", "load_0_10"]
