"""What a broker takes beyond the specification in valid traffic, as data: its profile's
``[traffic]`` table (:class:`Traffic`), the other kinds of what a method declares
(:class:`Variant`) and the queues it serves without a declaration (:class:`Pseudo`). A walk
(:mod:`.traffic`) reads them; ``@exchange`` and ``@queue`` in their values name one the walk
made."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from amqpfuzz.spec.amqp091 import Method

__all__ = ["Pseudo", "Traffic", "Variant"]


@dataclass(frozen=True)
class Traffic:
    """What a broker accepts beyond the specification (its profile's ``traffic`` table):
    ``fields`` by ``class.method.field`` (values to pick from), ``arguments`` by method (each
    key's values), message ``properties`` (an empty list leaves one out) and ``headers``;
    ``awaits``, the methods whose answer the broker wants before the channel's next command
    (a walk ends with one); ``apart``, pairs of methods the broker cannot take pipelined on
    the same thing (a walk does not send the second for what it made with the first, but
    for what it made with no-wait: no answer then races the second);
    ``requires``, the arguments an argument needs beside it; ``variants``, other kinds of
    what a method declares, drawn now and then."""

    fields: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    arguments: Mapping[str, Mapping[str, Sequence[Any]]] = field(default_factory=dict)
    properties: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    headers: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    awaits: tuple[str, ...] = ()
    apart: tuple[tuple[str, str], ...] = ()
    requires: Mapping[str, Sequence[str]] = field(default_factory=dict)
    variants: tuple[Variant, ...] = ()
    extension: bool = False  # the broker speaks the protocol's extension (its methods too)
    excludes: tuple[tuple[str, str], ...] = ()  # methods one channel cannot take both of
    pseudo: tuple[Pseudo, ...] = ()  # queues the broker serves without a declaration
    without: tuple[str, ...] = ()  # methods it does not implement (shell-style patterns)
    # kinds of odd argument value not sent (model.ODD_KINDS: "table", "array", ...)
    odd_without: tuple[str, ...] = ()

    @classmethod
    def of(cls, data: Mapping[str, Any] | None) -> Traffic:
        data = data or {}
        return cls(
            dict(data.get("fields", {})),
            {k: dict(v) for k, v in data.get("arguments", {}).items()},
            dict(data.get("properties", {})),
            dict(data.get("headers", {})),
            tuple(data.get("awaits", ())),
            tuple((str(a), str(b)) for a, b in data.get("apart", ())),
            dict(data.get("requires", {})),
            tuple(
                Variant(
                    str(v["method"]),
                    dict(v.get("when", {})),
                    dict(v.get("fields", {})),
                    dict(v.get("arguments", {})),
                    tuple(v.get("refuses", ())),
                    dict(v.get("on", {})),
                )
                for v in data.get("variants", ())
            ),
            bool(data.get("extension", False)),
            tuple((str(a), str(b)) for a, b in data.get("excludes", ())),
            tuple(
                Pseudo(
                    str(p["queue"]),
                    tuple(p.get("takes", ())),
                    dict(p.get("on", {})),
                    str(p.get("property", "")),
                    tuple(p.get("keys", ())),
                )
                for p in data.get("pseudo", ())
            ),
            tuple(str(p) for p in data.get("without", ())),
            tuple(str(k) for k in data.get("odd_without", ())),
        )

    def implements(self, method: Method) -> bool:
        """Whether the broker implements ``method`` (its profile names none it does not)."""
        return not any(fnmatch.fnmatchcase(method.full_name, p) for p in self.without)

    def excluded(self, method: Method, sent: set[str]) -> bool:
        """Whether a channel that was sent ``sent`` cannot take ``method`` (a confirmed
        channel a transaction, and the other way round)."""
        name = method.full_name
        return any((a == name and b in sent) or (b == name and a in sent) for a, b in self.excludes)

    def variants_of(self, method: Method) -> tuple[Variant, ...]:
        return tuple(v for v in self.variants if v.method == method.full_name)


@dataclass(frozen=True)
class Variant:
    """Another kind of what ``method`` declares (a queue of another type): the arguments
    that make it one (``when``), the fields it needs, its own arguments, and the methods
    the broker refuses on it (traffic sends them to other queues) and the field values it
    takes on it alone (``on``: ``class.method.field`` -> value)."""

    method: str
    when: Mapping[str, Any]
    fields: Mapping[str, Any]
    arguments: Mapping[str, Sequence[Any]]
    refuses: tuple[str, ...] = ()
    on: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Pseudo:
    """A queue the broker serves without a declaration (RabbitMQ's direct reply-to): the
    methods that may name it (``takes``), the field values it takes alone (``on``), the message
    property that names it once a walk consumes from it, and routing keys of the default
    exchange that it reads as its own."""

    queue: str
    takes: tuple[str, ...] = ()
    on: Mapping[str, Any] = field(default_factory=dict)
    property: str = ""
    keys: tuple[str, ...] = ()
