"""AMQP 0-8, 0-9 and 0-9-1 (and RabbitMQ's extensions of 0-9-1): model, loader, codec.

One model serves the whole family (:mod:`.model`), read from its XML by :mod:`.loader`; the
sans-I/O codec (:mod:`.codec`) is derived from it; :data:`FAMILY` is what the registry lists.

>>> from amqpfuzz.spec.amqp091 import load
>>> load("0-9-1").method("basic.publish").key
(60, 40)
"""

from __future__ import annotations

from .family import FAMILY, Amqp091Spec
from .loader import load, load_family_file
from .model import AmqpClass, Assert, Constant, Domain, Field, Method, Rule, Spec

__all__ = [
    "FAMILY",
    "Amqp091Spec",
    "AmqpClass",
    "Assert",
    "Constant",
    "Domain",
    "Field",
    "Method",
    "Rule",
    "Spec",
    "load",
    "load_family_file",
]
