"""``-k`` expressions: choose scenarios by words of their names, as pytest's ``-k`` does.

An expression is words joined by ``and``, ``or``, ``not`` and parentheses; a word matches a
scenario when it is a case-insensitive substring of any of its names (file name, spec
reference, protocol). ``-k "queue.declare and not passive"``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from amqpfuzz.spec import AmqpfuzzError

from .model import Scenario

__all__ = ["SelectError", "select"]

_TOKEN = re.compile(r"\s*(\(|\)|[^\s()]+)")


class SelectError(AmqpfuzzError):
    """A ``-k`` expression that does not parse."""


def select(expression: str | None, scenarios: Iterable[Scenario]) -> list[Scenario]:
    """The scenarios ``expression`` matches (all of them if it is empty)."""
    if not expression or not expression.strip():
        return list(scenarios)
    tokens = _TOKEN.findall(expression)
    return [
        s
        for s in scenarios
        if _Parser(tokens, (s.name, s.spec_ref, s.protocol, f"{s.protocol}/{s.name}")).parse()
    ]


class _Parser:
    """Recursive descent over ``or`` / ``and`` / ``not`` / atoms."""

    def __init__(self, tokens: list[str], names: tuple[str, ...]) -> None:
        self.tokens = tokens
        self.at = 0
        self.names = tuple(n.lower() for n in names)

    def parse(self) -> bool:
        value = self._or()
        if self.at != len(self.tokens):
            raise SelectError(f"-k: unexpected {self.tokens[self.at]!r}")
        return value

    def _peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def _or(self) -> bool:
        value = self._and()
        while self._peek() == "or":
            self.at += 1
            right = self._and()
            value = value or right
        return value

    def _and(self) -> bool:
        value = self._not()
        while self._peek() == "and":
            self.at += 1
            right = self._not()
            value = value and right
        return value

    def _not(self) -> bool:
        if self._peek() == "not":
            self.at += 1
            return not self._not()
        return self._atom()

    def _atom(self) -> bool:
        token = self._peek()
        if token is None or token in ("and", "or", ")"):
            raise SelectError(f"-k: expected a word {'at the end' if token is None else token!r}")
        self.at += 1
        if token == "(":
            value = self._or()
            if self._peek() != ")":
                raise SelectError("-k: a '(' is not closed")
            self.at += 1
            return value
        word = token.lower()
        return any(word in name for name in self.names)
