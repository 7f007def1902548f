"""Checking values against the ``<assert>`` elements of the specification.

A field inherits its domain's asserts and may add its own:

* ``notnull`` (not zero, not empty) and ``null`` (zero or empty: a field kept for later);
* ``length`` (at most so many octets), ``regexp`` (the whole value matches) and ``syntax`` (a
  named grammar of the specification's prose, where we can state it as a pattern);
* ``ne`` (not this value) and ``enum`` (one of the named values, numbered from 0);
* ``le`` compares with another method's field, which only a live connection knows: not checked.

A value that breaks an assert is a ``syntax-error`` to the peer that receives it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import SyntaxFieldError
from .codec.frames import Frame, MethodFrame
from .model import Assert

__all__ = ["SYNTAXES", "Limits", "assert_limits", "check_frame", "limits", "violation"]

# The grammars that ``syntax`` asserts name and that can be written as a regular expression.
SYNTAXES = {"path": r"/[a-zA-Z0-9_./-]*"}


@dataclass(frozen=True, slots=True)
class Limits:
    """What a field's asserts allow, gathered."""

    notnull: bool = False
    null: bool = False
    max_length: int | None = None
    pattern: str | None = None
    forbidden: frozenset[int] = frozenset()
    choices: int | None = None  # an enum: values 0 .. choices - 1


def limits(asserts: Sequence[Assert]) -> Limits:
    lengths = [int(a.value) for a in asserts if a.check == "length" and a.value is not None]
    patterns = [_anchorless(a.value) for a in asserts if a.check == "regexp" and a.value]
    patterns += [SYNTAXES[a.rule] for a in asserts if a.check == "syntax" and a.rule in SYNTAXES]
    enums = [len(a.values) for a in asserts if a.check == "enum" and a.values]
    return Limits(
        notnull=any(a.check == "notnull" for a in asserts),
        null=any(a.check == "null" for a in asserts),
        max_length=min(lengths) if lengths else None,
        pattern=patterns[0] if patterns else None,
        forbidden=frozenset(int(a.value) for a in asserts if a.check == "ne" and a.value),
        choices=min(enums) if enums else None,
    )


def assert_limits(asserts: Sequence[Assert]) -> tuple[bool, int | None, str | None]:
    """(notnull, maximum length in octets, pattern) that ``asserts`` put on a value."""
    found = limits(asserts)
    return found.notnull, found.max_length, found.pattern


def _anchorless(pattern: str) -> str:
    """The regexps are written ``^...$``; we always match whole values."""
    return pattern.removeprefix("^").removesuffix("$")


def violation(asserts: Sequence[Assert], value: Any) -> str | None:
    """The assert ``value`` breaks (as a short phrase), or None if it breaks none."""
    found = limits(asserts)
    empty = not isinstance(value, bool) and value in (0, "", b"")
    if found.notnull and empty:
        return "notnull: must not be empty or zero"
    if found.null and not empty and not isinstance(value, bool):
        return "null: must be empty or zero"
    if isinstance(value, int) and not isinstance(value, bool):
        if value in found.forbidden:
            return f"ne: must not be {value}"
        if found.choices is not None and not 0 <= value < found.choices:
            return f"enum: {value} is not one of 0..{found.choices - 1}"
    if isinstance(value, str | bytes):
        size = len(value.encode("utf-8", "surrogatepass")) if isinstance(value, str) else len(value)
        if found.max_length is not None and size > found.max_length:
            return f"length: {size} octets exceed {found.max_length}"
        if (
            found.pattern is not None
            and isinstance(value, str)
            and not re.fullmatch(found.pattern, value)
        ):
            return f"regexp: {value!r} does not match {found.pattern}"
    return None


def check_frame(frame: Frame) -> None:
    """Raise SyntaxFieldError if a method frame's argument breaks its field's asserts."""
    if not isinstance(frame, MethodFrame):
        return
    for fld, value in zip(frame.method.fields, frame.values, strict=False):
        problem = violation(fld.asserts, value) if fld.asserts else None
        if problem:
            raise SyntaxFieldError(f"{frame.name} field {fld.name!r}: {problem}", 0)
