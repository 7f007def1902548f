"""What a walk of valid traffic made, and the frames it sends (:class:`Model`): the queues,
exchanges, bindings, consumers and deliveries it knows of, how it chooses (names of the run's,
values from the blob, now and then the unusual), how a method's fields are filled from what it
made, how it declares queues and exchanges (its own, the run's shared ones, a broker's variants)
and deletes them at its end, and a message's content. What each step does to it is
:class:`~.traffic.Walk`'s."""

from __future__ import annotations

import functools
import hashlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from amqpfuzz.spec.amqp091 import Field, Method
from amqpfuzz.spec.amqp091.codec import ContentBody, ContentHeader, Frame, MethodFrame

from .context import Context
from .frames import ZERO, standard_types
from .profile import Pseudo, Traffic
from .source import Source, field_generator
from .wire import CASE_CHANNEL

__all__ = ["SHARED", "Model", "Queue"]

_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
SHARED = 8  # queues (and exchanges) a run's walks share


@dataclass
class Queue:
    name: str
    count: int | None = 0  # messages ready (None: not known)
    auto_delete: bool = False
    consumers: int = 0
    refuses: tuple[str, ...] = ()  # methods the broker refuses on it
    on: Mapping[str, Any] = field(default_factory=dict)  # field values it takes alone
    shared: bool = False  # one of the run's shared queues: it stays for the walks after


@dataclass
class Model:
    """A walk being drawn: what it made, and its frames."""

    ctx: Context
    src: Source
    traffic: Traffic
    # a prefix before a malformed case: its queues exclusive (they go with the connection),
    # no exchange of its own (nothing is left to delete), nothing drawn to be refused
    prefix: bool = False
    exchanges: dict[str, str] = field(default_factory=dict)  # name -> type
    queues: dict[str, Queue] = field(default_factory=dict)
    bound: dict[str, set[str]] = field(default_factory=dict)  # exchange -> queues
    keys: dict[str, list[str]] = field(default_factory=dict)  # exchange -> binding keys
    consumers: list[str] = field(default_factory=list)
    owners: dict[str, str] = field(default_factory=dict)  # consumer tag -> its queue
    unanswered: set[str] = field(default_factory=set)  # consumers started with no-wait
    unsettled: dict[int, str] = field(default_factory=dict)  # delivery tag -> its queue
    next_tag: int | None = 1  # the next delivery's tag (None: not known)
    transacted: bool = False
    confirming: bool = False  # publishes are confirmed (the extension's confirm.select)
    last_queue: str = ""  # the last queue declared on the channel (an empty name means it)
    replies: list[Pseudo] = field(default_factory=list)  # pseudo queues consumed from
    shared: set[str] = field(default_factory=set)  # the run's shared exchanges it declared
    sent: set[str] = field(default_factory=set)  # the methods the walk sent, by full name
    pending: list[str] = field(default_factory=list)  # queues a transacted publish reaches
    frames: list[Frame] = field(default_factory=list)
    made: int = 0
    over: bool = False  # a step whose answer the broker wants first ended it

    # -- choosing ------------------------------------------------------------------------------

    def name(self, what: str) -> str:
        """A name of the run's, unique in the walk (its number) and across walks (the
        blob's digest: the same blob, the same names; it reads nothing from the blob, whose
        bytes may have run out)."""
        self.made += 1
        return f"{self.ctx.prefix or 'amqpfuzz-'}{what}{self.made}-{self.tag}"

    @functools.cached_property
    def tag(self) -> str:
        digest = int.from_bytes(hashlib.blake2b(self.src.data, digest_size=8).digest(), "big")
        return "".join(_ALPHABET[digest // 36**i % 36] for i in range(8))

    def pick(self, options: Sequence[Any]) -> Any:
        return options[self.src.below(len(options))] if options else None

    def resolve(self, value: Any) -> Any:
        """A profile value, with ``@exchange`` and ``@queue`` naming one the walk made (the
        default exchange, or no queue, when it made none yet)."""
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if value == "@queue":
            return self.pick(list(self.queues)) or ""
        if value == "@exchange":
            return self.pick(list(self.exchanges)) or ""
        return value

    def _pseudo(self, name: str) -> Pseudo | None:
        return next((p for p in self.traffic.pseudo if p.queue == name), None)

    def queue(self, method: Method | None = None) -> str:
        """A queue the walk declared that takes ``method`` (one declared now if none does);
        now and then a pseudo queue the broker serves that ``method`` may name."""
        if method is not None and not self.prefix and self.rare(12):
            served = [p for p in self.traffic.pseudo if method.full_name in p.takes]
            if served:
                return str(self.pick(served).queue)
        fit = [
            q for q in self.queues.values() if method is None or method.full_name not in q.refuses
        ]
        found = self.pick(fit)
        return found.name if found is not None else self.declare_queue(refusing=method)

    def exchange(self, standard: bool = True) -> str:
        """An exchange the walk declared, or (``standard``) one every server has (a prefix's
        always: the default exchange for a publish, else ``amq.`` and a standard type)."""
        choice = self.src.below(4)
        if self.prefix:
            return "" if standard and choice == 0 else f"amq.{self.pick(self.types) or 'direct'}"
        if standard and choice == 0:
            return ""
        if standard and choice == 1:
            return f"amq.{self.pick(self.types) or 'direct'}"
        return self.pick(list(self.exchanges)) or self.declare_exchange()

    def rare(self, odds: int) -> bool:
        """True one time in ``odds``, never for a zero byte (a blob read to its end reads
        zeros: the plain path)."""
        return self.src.below(odds) == odds - 1

    def unusual(self, odds: int = 8) -> bool:
        """True one time in ``odds`` (never in a prefix, where a refusal would hide the
        case): a flag set, an argument of a type the broker refuses."""
        return not self.prefix and self.rare(odds)

    @property
    def types(self) -> tuple[str, ...]:
        return standard_types(self.ctx.spec).get("exchange", ("direct",))

    # -- sending, declaring, deleting -----------------------------------------------------------

    def send(self, method: Method, chosen: Mapping[str, Any]) -> MethodFrame:
        """``method`` with the fields ``chosen`` (by name) and the others filled by domain
        (but those the queue it names takes alone). A queue it names that is the last the
        channel declared is now and then named by the empty name, which means it (the queue
        field's rule ``queue-known``)."""
        named = chosen.get("queue", "")
        queue = self.queues.get(named) or self._pseudo(named)
        if queue is not None and queue.on:
            head = f"{method.full_name}."
            alone = {k.removeprefix(head): v for k, v in queue.on.items() if k.startswith(head)}
            chosen = {**chosen, **alone}
        if named and named == self.last_queue and method.name != "declare" and self.rare(6):
            chosen = {**chosen, "queue": ""}
        values = []
        for fld in method.fields:
            if fld.name in chosen:
                values.append(chosen[fld.name])
            else:
                values.append(self.value(method, fld))
        frame = MethodFrame(CASE_CHANNEL, method, tuple(values))
        self.frames.append(frame)
        self.sent.add(method.full_name)
        return frame

    def value(self, method: Method, fld: Field) -> Any:
        fixed = self.traffic.fields.get(f"{method.full_name}.{fld.name}")
        if fld.reserved:
            return ZERO[fld.type]
        if fixed:
            return self.resolve(self.pick(list(fixed)))
        if fld.domain == "queue-name":
            return self.queue(method)
        if fld.domain == "exchange-name":
            return self.exchange()
        if fld.domain == "consumer-tag":
            return self.pick(self.consumers) or ""
        if fld.domain == "delivery-tag":
            return 0
        if fld.name == "no-wait":
            return not self.prefix and self.rare(16)
        if fld.type == "bit":
            return self.unusual()
        if fld.type == "table":
            return self.arguments(method)
        if fld.type in ("octet", "short"):
            return self.src.below(12)
        return field_generator(fld, self.ctx.codec.dialect)(self.src)

    def arguments(self, method: Method) -> dict[str, Any]:
        """A few of the arguments the broker reads for ``method``; now and then one with a
        value drawn at random, which it may refuse."""
        known = self.traffic.arguments.get(method.full_name, {})
        chosen: dict[str, Any] = {}
        for key in known:
            if not self.rare(4):
                continue
            needs = [k for k in self.traffic.requires.get(key, ()) if k in known]
            for needed in [*needs, key]:
                if needed not in chosen:
                    chosen[needed] = self.resolve(self.pick(list(known[needed])))
        if known and self.unusual(6):  # one of them of another type or out of its range:
            chosen[self.pick(list(known))] = _odd(self.src, self.traffic.odd_without)  # refused
        return chosen

    def declare_exchange(self, method: Method | None = None) -> str:
        """A new exchange (where the broker speaks the extension, with its declare, whose
        reserved bits are auto-delete and internal: set now and then); now and then one of
        the run's shared exchanges, which outlive the walk (:meth:`shared_name`)."""
        method = method or self.ctx.declarers["exchange-name"]
        if self.ctx.extended is not None:
            method = self.ctx.extended.spec.method(method.full_name)
        if not self.prefix and self.rare(5):
            index = self.src.below(SHARED)
            name = self.shared_name("x", index)
            kind = self.types[index % len(self.types)] if self.types else "direct"
            self.send(method, {"exchange": name, "type": kind, "passive": False, "durable": False,
                               "auto-delete": False, "internal": False, "arguments": {}})  # fmt: skip
            self.exchanges[name] = kind
            self.shared.add(name)
            return name
        name = self.name("x")
        kind = self.pick(self.types) or "direct"
        self.send(method, {"exchange": name, "type": kind, "passive": False})
        self.exchanges[name] = kind
        return name

    def shared_name(self, what: str, index: int) -> str:
        """One of the run's few shared queues or exchanges: walks declare them again (always
        with the same fields and arguments, which come from the index alone) and leave them
        for the walks after, so that a walk meets what others left (messages piled up,
        bindings, consumers of other channels); they go when the run ends."""
        return f"{self.ctx.prefix or 'amqpfuzz-'}shared-{what}{index}"

    def shared_queue(self, method: Method) -> str:
        """A shared queue (:meth:`shared_name`): its arguments drawn once for its index from
        the broker's (bounded in length where its profile names x-max-length, so that what
        piles up stays small), or the index's variant of another type. A broker whose profile
        names no arguments gets none: Broker-J refuses one it does not know (542)."""
        index = self.src.below(SHARED)
        name = self.shared_name("q", index)
        draw = random.Random(f"shared-{index}")
        known = self.traffic.arguments.get(method.full_name, {})
        variants = self.traffic.variants_of(method)
        extra = index - (SHARED - len(variants))
        if extra >= 0:
            variant = variants[extra]
            arguments = {**variant.when, **{k: v[0] for k, v in variant.arguments.items()}}
            fields = dict(variant.fields)
            refuses, on = variant.refuses, variant.on
        else:
            arguments = {k: draw.choice(list(v)) for k, v in known.items() if draw.random() < 0.3}
            for key in list(arguments):
                for needed in self.traffic.requires.get(key, ()):
                    if needed in known:
                        arguments.setdefault(needed, draw.choice(list(known[needed])))
            if "x-max-length" in known:  # bounded where the broker reads a bound (RabbitMQ)
                arguments["x-max-length"] = draw.choice((1, 10, 100))
            fields, refuses, on = {}, (), {}
        for key, value in list(arguments.items()):
            if value == "@exchange":
                arguments[key] = self.shared_name("x", draw.randrange(SHARED))
            elif value == "@queue":
                arguments[key] = self.shared_name("q", draw.randrange(SHARED))
        chosen = {"queue": name, "passive": False, "durable": False, "exclusive": False,
                  "auto-delete": False, "no-wait": False, **fields, "arguments": arguments}  # fmt: skip
        self.send(method, chosen)
        self.queues[name] = Queue(name, None, False, 0, tuple(refuses), on, shared=True)
        self.last_queue = name
        return name

    def declare_queue(self, method: Method | None = None, refusing: Method | None = None) -> str:
        """A new queue, exclusive to the connection (it goes with it) but now and then; now
        and then of another kind the broker has (one of its profile's variants, one that
        takes ``refusing``)."""
        method = method or self.ctx.declarers["queue-name"]
        if not self.prefix and refusing is None and self.rare(5):
            return self.shared_queue(method)
        name = self.name("q")
        exclusive = self.prefix or not self.rare(8)
        chosen: dict[str, Any] = {"queue": name, "passive": False, "exclusive": exclusive}
        variants = [
            v for v in self.traffic.variants_of(method)
            if refusing is None or refusing.full_name not in v.refuses
        ]  # fmt: skip
        refuses: tuple[str, ...] = ()
        on: Mapping[str, Any] = {}
        if variants and not self.prefix and self.rare(10):
            variant = self.pick(variants)
            refuses, on = variant.refuses, variant.on
            arguments = dict(variant.when)
            for key, values in variant.arguments.items():
                if self.rare(3):
                    arguments[key] = self.resolve(self.pick(list(values)))
            chosen |= dict(variant.fields) | {"arguments": arguments}
        frame = self.send(method, chosen)
        values = dict(zip((f.name for f in method.fields), frame.values, strict=True))
        # arguments that expire, drop or move messages: how many it holds is not known
        count = None if values.get("arguments") else 0
        self.queues[name] = Queue(name, count, bool(values.get("auto-delete")), 0, refuses, on)
        self.last_queue = name
        return name

    def end(self) -> None:
        """Delete what the walk declared (queues first: a queue bound to an exchange keeps
        it in use), with the delete methods the broker implements (GarageMQ never answers
        exchange.delete: its profile's traffic has none; what is left the run deletes)."""
        deleting = {m.class_name: m for m in self.ctx.traffic_methods if m.name == "delete"}
        for name in [q.name for q in self.queues.values() if not q.shared]:
            if "queue" in deleting:
                self.send(
                    deleting["queue"],
                    {"queue": name, "if-unused": False, "if-empty": False, "no-wait": False},
                )
        for name in [x for x in self.exchanges if x not in self.shared]:
            if "exchange" in deleting:
                self.send(
                    deleting["exchange"], {"exchange": name, "if-unused": False, "no-wait": False}
                )
        self.queues.clear()
        self.exchanges.clear()

    # -- messages ------------------------------------------------------------------------------

    def _arrive(self, queues: list[str]) -> None:
        for name in queues:
            queue = self.queues.get(name)
            if queue is not None and queue.count is not None:
                queue.count += 1

    def content(self, method: Method) -> list[Frame]:
        """A content header with a few properties (the broker's values where its profile
        has them) and a body, mostly short, now and then over several frames."""
        amqp_class = self.ctx.spec.amqp_class(method.class_name)
        src, dialect = self.src, self.ctx.codec.dialect
        chunk = self.ctx.frame_max - 8
        size = src.pick((4096, chunk + 1)) if self.rare(8) else src.below(64)
        chosen = src.uint(len(amqp_class.properties))
        properties: dict[str, Any] = {}
        for i, prop in enumerate(amqp_class.properties):
            if prop.reserved or prop.name.startswith("reserved") or not chosen >> i & 1:
                continue
            values = self.traffic.properties.get(prop.name)
            answers = [p.queue for p in self.replies if p.property == prop.name]
            if answers and self.rare(2):
                properties[prop.attr] = self.pick(answers)
            elif values is not None:
                if values:
                    properties[prop.attr] = self.resolve(self.pick(list(values)))
            elif prop.type == "table":
                properties[prop.attr] = self.headers()
            else:
                properties[prop.attr] = field_generator(prop, dialect)(src)
        body = bytes([src.byte()]) * size
        header = ContentHeader(CASE_CHANNEL, amqp_class.index, size, properties)
        return [
            header,
            *(ContentBody(CASE_CHANNEL, body[i : i + chunk]) for i in range(0, size, chunk)),
        ]

    def headers(self) -> dict[str, Any]:
        """Headers the broker reads (now and then one of another type: it may refuse it)."""
        known = self.traffic.headers
        found = {k: self.resolve(self.pick(list(v))) for k, v in known.items() if self.rare(2)}
        if known and self.unusual(12):
            found[self.pick(list(known))] = _odd(self.src, self.traffic.odd_without)
        return found


ODD: tuple[Any, ...] = (-1, "x", True, False, 2**40, -(2**40), 1.5, [], {}, b"\x00", "", 0)
# the kinds a profile's ``odd_without`` may leave out, by the field-table type a value is sent as
ODD_KINDS = {bool: "boolean", int: "integer", float: "float", str: "string", bytes: "bytes",
             list: "array", dict: "table"}  # fmt: skip


def _odd(src: Source, without: tuple[str, ...] = ()) -> Any:
    """An argument value of some other type, or out of range: the broker's checks of its
    arguments refuse it. ``without``: kinds not sent (a profile's ``odd_without``: those that
    meet a defect of the broker's decoder already recorded, which would end every walk)."""
    return src.pick(tuple(v for v in ODD if ODD_KINDS[type(v)] not in without))
