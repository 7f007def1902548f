"""Checking the steps of one scenario file, the same walk for every family.

A :class:`Checker` walks the steps in order, as a runner would, so that it can say that a
connection is used before it is opened, a channel or session before it is, a name before the
step that binds it. Each step's shape is checked against the family's language (its kind, its
keys, the capability it needs, the variables in its strings); then the family's handler of the
kind (:func:`~.language.handles`) checks what is particular to it and gives the steps nested
in it. Every error names the file and the line of the offending key.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType
from typing import Any, NoReturn

from .language import Dispatching, freeze
from .model import ScenarioError, Step
from .yamlfile import Located

__all__ = ["IDENTIFIER", "NUMBER", "Checker", "is_a", "whole_variable"]

NUMBER = (int, float)
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_VARIABLE = re.compile(r"\$\{([^}]*)\}")


def is_a(value: object, kind: type | tuple[type, ...]) -> bool:
    """isinstance, except that a bool is never a number."""
    return isinstance(value, kind) and not (isinstance(value, bool) and kind is not bool)


def whole_variable(value: object) -> str | None:
    """The name of the variable ``value`` is, if it is one whole ``${name}``."""
    if isinstance(value, str):
        match = _VARIABLE.fullmatch(value)
        if match:
            return match.group(1)
    return None


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


class Checker(Dispatching, part=True):
    """Checks one file's steps in order; :attr:`needs` collects the capabilities they need
    (with the line of the first step needing each). A family's checker has a handler per step
    kind, ``handler(value) -> nested steps``; ``value`` is the step's mapping, with the line
    of each key."""

    scalars = False  # a scalar kind's number is taken as it is

    def __init__(self, path: Path) -> None:
        self.path = path
        self.needs: dict[str, int] = {}
        # connection name -> what is open on it (channels, sessions), in the order opened
        self.opened: dict[str, set[int]] = {}
        self.variables = {"prefix"}  # the runner's, and those bound by a step
        self.loops = 0
        self.connections_opened = 0

    def fail(self, line: int | None, message: str) -> NoReturn:
        raise ScenarioError(self.path, line, message)

    def need(self, capability: str, line: int) -> None:
        self.needs.setdefault(capability, line)

    # -- the walk ----------------------------------------------------------------------------

    def steps(self, items: object, line: int) -> tuple[Step, ...]:
        if not isinstance(items, list):
            self.fail(line, "steps is a list of steps (`steps: []` if there are none)")
        return tuple(self.step(item, line) for item in items)

    def step(self, item: object, line: int) -> Step:
        if not isinstance(item, Located) or len(item) != 1:
            where = item.line if isinstance(item, Located) else line
            self.fail(where, "a step is a mapping of one step kind to its arguments")
        ((kind, value),) = item.items()
        line = item.line
        steps = self.language.steps
        known = steps.get(str(kind))
        if known is None:
            self.fail(line, f"unknown step kind {kind!r}; known: {', '.join(steps)}")
        if known.scalar:
            if not is_a(value, NUMBER) or value <= 0:
                self.fail(line, f"{kind} takes a number of seconds > 0, not {value!r}")
            return Step(known.name, MappingProxyType({"seconds": value}), line)
        if value is None:
            value = Located()
            value.line, value.key_lines = line, {}
        if not isinstance(value, Located):
            self.fail(line, f"{kind} takes a mapping of {', '.join(sorted(known.keys)) or '{}'}")
        self.keys(known.name, value, known.required, known.keys)
        if self.language.variables:
            self._variables(value)
        if known.capability:
            self.need(known.capability, line)
        nested: tuple[Step, ...] = self.handler(known.name)(value)
        args = {str(key): freeze(item) for key, item in value.items() if key != "steps"}
        return Step(known.name, MappingProxyType(args), line, nested)

    def keys(
        self, what: str, value: Located, required: tuple[str, ...], allowed: frozenset[str]
    ) -> None:
        for key in value:
            if key not in allowed:
                known = ", ".join(sorted(allowed)) or "nothing"
                self.fail(value.line_of(str(key)), f"{what} has no key {key!r}; it takes {known}")
        for key in required:
            if key not in value:
                self.fail(value.line, f"{what} needs `{key}`")

    def _variables(self, value: Located) -> None:
        for key, item in value.items():
            if key == "steps":  # a loop's steps are checked one by one, with ${i} known
                continue
            for text in _strings(item):
                for name in _VARIABLE.findall(text):
                    if name in self.variables or (name == "i" and self.loops):
                        continue
                    hint = " (only inside repeat or until_limit)" if name == "i" else ""
                    self.fail(value.line_of(str(key)), f"unknown variable ${{{name}}}{hint}")

    # -- what handlers share -------------------------------------------------------------------

    def typed(self, value: Located, key: str, kind: type | tuple[type, ...], what: str) -> Any:
        """``value[key]`` if present (None if not), failing unless it is of ``kind``."""
        if key not in value:
            return None
        item = value[key]
        if not is_a(item, kind):
            self.fail(value.line_of(key), f"{key} is {what}, not {item!r}")
        return item

    def seconds(self, value: Located, key: str) -> None:
        item = self.typed(value, key, NUMBER, "a number of seconds")
        if item is not None and item <= 0:
            self.fail(value.line_of(key), f"{key} is a number of seconds > 0")

    def connects(self, value: Located, key: str = "as") -> str:
        """A step that opens a connection named by ``value[key]``; a second connection needs
        its capability."""
        name = value[key]
        if not isinstance(name, str) or not IDENTIFIER.match(name):
            self.fail(value.line_of(key), f"a connection is named by an identifier, not {name!r}")
        self.connections_opened += 1
        if self.connections_opened > 1:
            self.need("second-connection", value.line)
        self.opened[name] = set()
        return name

    def connection(self, value: Located) -> str:
        """The step's connection, opened by an earlier step."""
        name = value["connection"]
        if name not in self.opened:
            self.fail(
                value.line_of("connection"),
                f"connection {name!r} is used before `connect: {{as: {name}}}`",
            )
        return str(name)

    def opens(self, value: Located, what: str = "channel") -> int:
        """A step that opens ``value[what]`` on its connection (a channel, a session)."""
        connection = self.connection(value)
        number = value[what]
        if not is_a(number, int) or not 0 <= number <= 0xFFFF:
            self.fail(value.line_of(what), f"{what} is a number 0..65535, not {number!r}")
        self.opened[connection].add(number)
        return int(number)

    def bind(self, value: Located, key: str = "save") -> None:
        """A step that binds a name (``save``) to what it got."""
        if key in value:
            self.variables.add(str(value[key]))

    def bound(self, value: Located, key: str, what: str = "an earlier step's save") -> str:
        """The name ``value[key]`` (its first dotted part), bound by an earlier step."""
        name = str(value[key]).split(".", 1)[0]
        if name not in self.variables:
            self.fail(value.line_of(key), f"{name!r} is not bound by {what}")
        return name
