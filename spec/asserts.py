"""Checking values against the ``<assert>`` elements of the specification.

A field inherits its domain's asserts and may add its own: ``notnull`` (not zero, not empty),
``length`` (at most so many octets), ``regexp`` (the whole value matches), ``syntax`` (a named
grammar of the specification's prose, where we can state it exactly) and ``le`` (compared with
another method's field, which only a live connection knows: not checked here). A value that
breaks an assert is a ``syntax-error`` to the peer that receives it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .codec.frames import Frame, MethodFrame
from .errors import SyntaxFieldError
from .model import Assert

__all__ = ["SYNTAXES", "assert_limits", "check_frame", "violation"]

# The grammars that ``syntax`` asserts name and that can be written as a regular expression.
SYNTAXES = {"path": r"/[a-zA-Z0-9_./-]*"}


def assert_limits(asserts: Sequence[Assert]) -> tuple[bool, int | None, str | None]:
    """(notnull, maximum length in octets, pattern) that ``asserts`` put on a value."""
    notnull = any(a.check == "notnull" for a in asserts)
    lengths = [int(a.value) for a in asserts if a.check == "length" and a.value is not None]
    patterns = [_anchorless(a.value) for a in asserts if a.check == "regexp" and a.value]
    patterns += [SYNTAXES[a.rule] for a in asserts if a.check == "syntax" and a.rule in SYNTAXES]
    return notnull, (min(lengths) if lengths else None), (patterns[0] if patterns else None)


def _anchorless(pattern: str) -> str:
    """The regexps are written ``^...$``; we always match whole values."""
    return pattern.removeprefix("^").removesuffix("$")


def violation(asserts: Sequence[Assert], value: Any) -> str | None:
    """The assert ``value`` breaks (as a short phrase), or None if it breaks none."""
    notnull, max_length, pattern = assert_limits(asserts)
    if notnull and not isinstance(value, bool) and value in (0, "", b""):
        return "notnull: must not be empty or zero"
    if isinstance(value, str | bytes):
        size = len(value.encode("utf-8", "surrogatepass")) if isinstance(value, str) else len(value)
        if max_length is not None and size > max_length:
            return f"length: {size} octets exceed {max_length}"
        if pattern is not None and isinstance(value, str) and not re.fullmatch(pattern, value):
            return f"regexp: {value!r} does not match {pattern}"
    return None


def check_frame(frame: Frame) -> None:
    """Raise SyntaxFieldError if a method frame's argument breaks its field's asserts."""
    if not isinstance(frame, MethodFrame):
        return
    for fld, value in zip(frame.method.fields, frame.values, strict=False):
        problem = violation(fld.asserts, value) if fld.asserts else None
        if problem:
            raise SyntaxFieldError(f"{frame.name} field {fld.name!r}: {problem}", 0)
