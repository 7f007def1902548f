"""The 1.0 family's scenario files: their step language (:mod:`.language`), its checker
(:mod:`.checker`), and :data:`FAMILY` (:mod:`.family`)."""

from __future__ import annotations

from .checker import Amqp10Checker
from .family import FAMILY, Amqp10Scenarios
from .language import CHECKS, LANGUAGE, OUTCOMES, SECTIONS

__all__ = [
    "CHECKS",
    "FAMILY",
    "LANGUAGE",
    "OUTCOMES",
    "SECTIONS",
    "Amqp10Checker",
    "Amqp10Scenarios",
]
