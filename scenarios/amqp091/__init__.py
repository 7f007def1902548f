"""The 0-8/0-9/0-9-1 family's scenario files: their step language (:mod:`.language`), its
checker (:mod:`.checker`), the checks of a file's head and :data:`FAMILY` (:mod:`.family`), and
the index of 0-9 paragraphs other files encode (:mod:`.index`)."""

from __future__ import annotations

from .checker import Amqp091Checker
from .family import FAMILY, Amqp091Scenarios
from .language import EXTENSIONS, LANGUAGE, MATCHERS, NAME_DOMAINS, STEPS, VARIABLES

__all__ = [
    "EXTENSIONS",
    "FAMILY",
    "LANGUAGE",
    "MATCHERS",
    "NAME_DOMAINS",
    "STEPS",
    "VARIABLES",
    "Amqp091Checker",
    "Amqp091Scenarios",
]
