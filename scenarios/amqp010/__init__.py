"""The 0-10 family's scenario files: their step language (:mod:`.language`), its checker
(:mod:`.checker`), and :data:`FAMILY` (:mod:`.family`)."""

from __future__ import annotations

from .checker import Amqp010Checker
from .family import FAMILY, Amqp010Scenarios
from .language import HEADERS, LANGUAGE

__all__ = ["FAMILY", "HEADERS", "LANGUAGE", "Amqp010Checker", "Amqp010Scenarios"]
