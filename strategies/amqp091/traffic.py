"""Valid traffic in state: a fresh channel's walk of methods, each building on what came before.

A valid case (:mod:`.valid`) is one method with arguments drawn at random: the queue it names
may not exist, the delivery tag it acknowledges was never delivered, so most end in the close
the specification's rules name, and the broker's code past its checks is rarely entered.
Traffic is a walk on a channel of its own: each step a method a client may send, its fields
filled by their domains from what the walk made before (an ``exchange-name`` names an exchange
the walk declared, a ``queue-name`` a queue, a ``consumer-tag`` a consumer it started, a
``delivery-tag`` a delivery it received), so that messages are routed, fetched, consumed,
acknowledged, rejected and requeued, in and out of transactions, and queues and exchanges are
bound, purged and deleted while in use. A small model of what the walk made (:class:`Walk`:
how many messages each queue holds, which deliveries are unsettled, whether the channel is
transacted) says what is valid next; a step whose needs are not met has them made first (a
queue declared before it is consumed from). Methods the model knows nothing of (a method added
to the specification) get their fields by domain all the same.

What a broker accepts beyond the specification comes with its profile, as data
(:class:`Traffic`): values for the fields it refuses otherwise, the queue and binding arguments
it reads, message properties and headers it interprets. ``@exchange`` and ``@queue`` in those
values name one the walk made.

A walk's reaction is the reply, with the closes the rules of its methods name tolerated (as for
a valid case: a step drawn to be unusual, an argument value the broker refuses, may be refused
as the specification says). Its last steps delete what it declared. :func:`in_state` puts a
malformed case after a shorter walk, so that errors strike channels that hold consumers,
unsettled deliveries and transactions.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from amqpfuzz.spec.amqp091 import Field, Method
from amqpfuzz.spec.amqp091.codec import ContentBody, ContentHeader, Frame, MethodFrame

from ..arms import Arm
from ..cases import Case, Placement, Reaction
from .context import Context
from .frames import ZERO, standard_types
from .source import Source, field_generator
from .valid import tolerated
from .wire import CASE_CHANNEL

__all__ = ["Traffic", "Walk", "in_state", "traffic_arms"]

_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
# How many steps a walk takes (before the deletions that end it), and a prefix before a case.
STEPS = (3, 14)
PREFIX = (1, 6)
SHARED = 8  # queues (and exchanges) a run's walks share


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
class Walk:
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

    # -- choosing ----------------------------------------------------------------------------

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

    # -- steps ---------------------------------------------------------------------------------

    def step(self, method: Method) -> None:
        """One step of ``method``: its needs made first, its fields filled, the model updated.
        A method whose answer the broker wants before the next command ends the walk: what
        it declared is deleted first."""
        if method.full_name in self.traffic.awaits:
            if not self.prefix:
                self.end()
            self.over = True
        role = _ROLES.get(method.name)
        if role is not None:
            role(self, method)
        else:
            self.send(method, {})

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
            chosen[self.pick(list(known))] = _odd(self.src)  # the broker's checks refuse it
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
        the broker's (bounded in length, so that what piles up stays small), or the index's
        variant of another type."""
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
        it in use)."""
        deleting = {m.class_name: m for m in self.ctx.channel_methods if m.name == "delete"}
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

    # -- what a step does to the model ---------------------------------------------------------

    def publish(self, method: Method) -> None:
        exchange = self.exchange()
        kind = self.exchanges.get(exchange, "direct" if exchange in ("", "amq.direct") else "")
        keys = [k for p in self.traffic.pseudo for k in p.keys]
        if exchange == "" and keys and not self.prefix and self.rare(16):
            key = self.pick(keys)
        elif exchange == "" or (kind == "direct" and not self.keys.get(exchange)):
            key = self.queue() if exchange == "" else self.pick(list(self.queues)) or ""
        else:
            key = self.pick(self.keys.get(exchange, [])) or self.pick(["a", "a.b", "b.c.d"])
        self.send(method, {"exchange": exchange, "routing-key": key})
        self.frames += self.content(method)
        reached = [key] if exchange == "" and key in self.queues else []
        for queue in self.bound.get(exchange, ()):  # routed by bindings: counts unknown
            if queue in self.queues:
                self.queues[queue].count = None
        if self.transacted:
            self.pending += reached
        else:
            self._arrive(reached)

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
            found[self.pick(list(known))] = _odd(self.src)
        return found

    def get(self, method: Method) -> None:
        name = self.queue(method)
        no_ack = self.src.edge()
        self.send(method, {"queue": name, "no-ack": no_ack})
        queue = self.queues[name]
        if queue.count is None or self.next_tag is None:
            self.next_tag = None  # a delivery or none: the tags after it are not known
            return
        if queue.count > 0:
            queue.count -= 1
            if not no_ack:
                self.unsettled[self.next_tag] = name
            self.next_tag += 1

    def consume(self, method: Method) -> None:
        name = self.queue(method)
        tag = self.name("c")
        chosen: dict[str, Any] = {"queue": name, "consumer-tag": tag, "exclusive": False}
        if self._apart(method) and not self.prefix:  # (no answer to race: it may be cancelled)
            chosen["no-wait"] = self.rare(3)
        frame = self.send(method, chosen)
        if "no-wait" in {f.name for f in method.fields} and frame["no-wait"]:
            self.unanswered.add(tag)
        self.consumers.append(tag)
        self.owners[tag] = name
        pseudo = self._pseudo(name)
        if pseudo is not None:
            self.replies.append(pseudo)
            return
        self.queues[name].consumers += 1
        self.queues[name].count = None  # its consumer takes messages as they come
        self.next_tag = None  # deliveries come when they come

    def _apart(self, method: Method) -> bool:
        """Whether the broker cannot take ``basic.cancel`` pipelined behind the
        ``basic.consume`` of its tag (``method`` is either)."""
        pair = ("basic.consume", "basic.cancel")
        return method.full_name in pair and pair in self.traffic.apart

    def cancel(self, method: Method) -> None:
        served = [t for t in self.consumers if self._pseudo(self.owners.get(t, ""))]
        if served:  # a pseudo queue's consumer (no queue process: no race to lose)
            tag = self.pick(served)
            self.send(method, {"consumer-tag": tag})
            self.consumers.remove(tag)
            owner = self.owners.pop(tag)
            self.replies = [p for p in self.replies if p.queue != owner]
            return
        mine = self.consumers
        if self._apart(method):
            # only one started with no-wait, which the broker answers with nothing that could
            # arrive after the cancel; if there is none, a tag it never started
            mine = [t for t in self.consumers if t in self.unanswered]
            if not mine:
                self.send(method, {"consumer-tag": self.name("c")})
                return
        tag = self.pick(mine)
        if tag is None:
            self.consume(self.ctx.spec.method("basic.consume"))
            tag = self.consumers[-1]
        self.send(method, {"consumer-tag": tag})
        self.consumers.remove(tag)
        queue = self.queues.get(self.owners.pop(tag, ""))
        if queue is not None:
            queue.consumers -= 1
            if queue.auto_delete and not queue.consumers:  # its last consumer gone: so is it
                self.queues.pop(queue.name)

    def settle(self, method: Method) -> None:
        """ack, reject, nack: a known unsettled delivery (one is fetched first if none is),
        or all of them (``multiple`` with tag 0, where the method has it)."""
        names = {f.name for f in method.fields}
        every = "multiple" in names and (not self.unsettled or self.rare(3))
        if every:
            self.send(method, {"delivery-tag": 0, "multiple": True})
            self.unsettled.clear()
            return
        if not self.unsettled:
            self.fetch()
        if not self.unsettled:  # the tags are not known: settle all that there are
            if "multiple" in names:
                self.send(method, {"delivery-tag": 0, "multiple": True})
            return
        tag = self.pick(sorted(self.unsettled))
        queue = self.unsettled.pop(tag)
        chosen: dict[str, Any] = {"delivery-tag": tag, "multiple": False}
        frame = self.send(method, chosen)
        requeue = dict(zip((f.name for f in method.fields), frame.values, strict=True)).get(
            "requeue"
        )
        if requeue:
            self._arrive([queue])

    def fetch(self) -> None:
        """A message published to a queue of the walk and fetched, unsettled."""
        name = self.queue()
        self.publish_to(name)
        if self.next_tag is not None and self.queues[name].count:
            self.send(self.ctx.spec.method("basic.get"), {"queue": name, "no-ack": False})
            self.queues[name].count = (self.queues[name].count or 1) - 1
            self.unsettled[self.next_tag] = name
            self.next_tag += 1

    def publish_to(self, queue: str) -> None:
        method = self.ctx.spec.method("basic.publish")
        self.send(method, {"exchange": "", "routing-key": queue, "mandatory": False})
        self.frames += self.content(method)
        if self.transacted:
            self.pending.append(queue)
        else:
            self._arrive([queue])

    def bind(self, method: Method) -> None:
        if method.class_name == "exchange":  # (the extension's: an exchange to an exchange)
            self.bind_exchanges(method)
            return
        queue = self.queue(method)
        exchange = self.exchange(standard=False)
        kind = self.exchanges.get(exchange, "direct")
        key = self.pick(
            ["a", "a.b", "#", "*.b", "a.#"] if kind == "topic" else ["a", "b", queue, ""]
        )
        self.send(method, {"queue": queue, "exchange": exchange, "routing-key": key})
        if method.name == "bind":
            self.bound.setdefault(exchange, set()).add(queue)
            self.keys.setdefault(exchange, []).append(key)

    def bind_exchanges(self, method: Method) -> None:
        """An exchange bound to another (both the walk's, but where it made one only):
        what is routed to the source goes to the destination's queues too."""
        destination = self.exchange(standard=False)
        source = self.exchange(standard=False)
        kind = self.exchanges.get(source, "direct")
        key = self.pick(["a", "a.b", "#", "*.b"] if kind == "topic" else ["a", "b", ""])
        self.send(method, {"destination": destination, "source": source, "routing-key": key})
        if method.name == "bind":
            self.bound.setdefault(source, set()).update(self.bound.get(destination, set()))
            self.keys.setdefault(source, []).append(key)

    def purge(self, method: Method) -> None:
        name = self.queue(method)
        self.send(method, {"queue": name})
        if self.queues[name].count is not None:
            self.queues[name].count = 0

    def delete(self, method: Method) -> None:
        if method.class_name == "queue":
            name = self.queue(method)
            self.send(method, {"queue": name})
            for tag, owner in list(self.owners.items()):  # its consumers are cancelled
                if owner == name:
                    self.consumers.remove(tag)
                    del self.owners[tag]
            # its consumers are cancelled; an if-unused or if-empty may refuse: not known
            self.queues.pop(name, None)
        elif not self.prefix and self.unusual(24):  # a standard one: the broker refuses
            self.send(method, {"exchange": f"amq.{self.pick(self.types) or 'direct'}"})
        elif not self.prefix:  # (a prefix deletes no exchange: it has only amq.*)
            name = self.exchange(standard=False)
            self.send(method, {"exchange": name})
            self.exchanges.pop(name, None)
            self.bound.pop(name, None)

    def declare(self, method: Method) -> None:
        served = [p for p in self.traffic.pseudo if method.full_name in p.takes]
        if served and not self.prefix and self.rare(12):  # a queue the broker serves itself
            self.send(method, {"queue": self.pick(served).queue})
        elif method.class_name == "queue" and self.queues and self.rare(6):
            # one it declared, passively: the broker says what it holds
            name = self.pick(list(self.queues))
            self.send(method, {"queue": name, "passive": True, "no-wait": False, "arguments": {}})
            self.last_queue = name
        elif method.class_name == "queue":
            self.declare_queue(method)
        elif method.class_name == "exchange" and self.prefix:  # one every server has
            kind = self.pick(self.types) or "direct"
            self.send(method, {"exchange": f"amq.{kind}", "type": kind, "passive": True})
        elif method.class_name == "exchange":
            self.declare_exchange(method)
        else:
            self.send(method, {})

    def select(self, method: Method) -> None:
        self.send(method, {})
        if method.class_name == "tx":
            self.transacted = True
        elif method.class_name == "confirm":
            self.confirming = True

    def finish(self, method: Method) -> None:
        """tx.commit and tx.rollback (a transaction is begun first if none is)."""
        if not self.transacted:
            select = self.ctx.spec.method("tx.select")
            if self.traffic.excluded(select, self.sent):
                return
            self.select(select)
        self.send(method, {})
        if method.name == "commit":
            self._arrive(self.pending)
        elif self.unsettled or self.next_tag is None:
            self.unsettled.clear()  # the acknowledgements it rolled back: unsettled again
            self.next_tag = None
        self.pending = []

    def recover(self, method: Method) -> None:
        self.send(method, {})
        for queue in self.unsettled.values():  # requeued (and redelivered to consumers)
            if queue in self.queues:
                self.queues[queue].count = None
        self.unsettled.clear()
        self.next_tag = None


_ROLES: dict[str, Callable[[Walk, Method], None]] = {
    "declare": Walk.declare,
    "delete": Walk.delete,
    "bind": Walk.bind,
    "unbind": Walk.bind,
    "purge": Walk.purge,
    "publish": Walk.publish,
    "get": Walk.get,
    "consume": Walk.consume,
    "cancel": Walk.cancel,
    "ack": Walk.settle,
    "reject": Walk.settle,
    "nack": Walk.settle,
    "select": Walk.select,
    "commit": Walk.finish,
    "rollback": Walk.finish,
    "recover": Walk.recover,
    "recover-async": Walk.recover,
}


def _odd(src: Source) -> Any:
    """An argument value of some other type, or out of range: the broker's checks of its
    arguments refuse it."""
    return src.pick((-1, "x", True, False, 2**40, -(2**40), 1.5, [], {}, b"\x00", "", 0))


def walk(
    ctx: Context,
    src: Source,
    traffic: Traffic,
    focus: str | None,
    steps: tuple[int, int],
    prefix: bool = False,
) -> Walk:
    """A walk of ``steps`` methods (the least to the most), most of them of the ``focus``
    class (all classes: None); a ``prefix`` before a malformed case leaves nothing to delete
    and draws nothing to be refused. A walk (not a prefix) ends deleting what it declared."""
    found = Walk(ctx, src, traffic, prefix)
    methods = ctx.traffic_methods
    focused = tuple(m for m in methods if m.class_name == focus) or methods
    for _ in range(steps[0] + src.below(steps[1] - steps[0] + 1)):
        method = src.pick(focused) if src.below(4) else src.pick(methods)
        if prefix and method.full_name in traffic.awaits:
            continue  # the case behind it would be sent before its answer
        if prefix and method.name == "cancel":
            continue  # (and its consumers stay: the state the case meets)
        if traffic.excluded(method, found.sent):
            continue
        found.step(method)
        if found.over:
            return found
    if not prefix:
        found.end()
    return found


def _tolerated(ctx: Context, methods: frozenset[Method]) -> tuple[Any, ...]:
    return _codes(ctx.spec, methods)


@functools.lru_cache(maxsize=1024)
def _codes(spec: Any, methods: frozenset[Method]) -> tuple[Any, ...]:
    """The codes the rules of ``methods`` name (:func:`~.valid.tolerated`), each once."""
    codes = {c.name: c for m in methods for c in tolerated(spec, m)}
    return tuple(codes[n] for n in sorted(codes))


def traffic_arms(ctx: Context, traffic: Traffic) -> tuple[Arm, ...]:
    """One arm per class a client sends several methods of on a channel (walks most of whose
    steps are of that class), and one of walks over every class alike (``mixed``)."""
    counts: dict[str, int] = {}
    for method in ctx.traffic_methods:
        counts[method.class_name] = counts.get(method.class_name, 0) + 1
    classes = (*(c for c, n in counts.items() if n >= 3), None)

    def arm(focus: str | None) -> Arm:
        def build(src: Source) -> Case:
            found = walk(ctx, src, traffic, focus, STEPS)
            methods = frozenset(f.method for f in found.frames if isinstance(f, MethodFrame))
            names = [f.name for f in found.frames if isinstance(f, MethodFrame)]
            return Case(
                steps=tuple(ctx.wire(f) for f in found.frames),
                expected=Reaction.reply((), _tolerated(ctx, methods)),
                spec_ref=f"{focus or 'channel'}.*",  # (a mixed walk: the channel's)
                placement=Placement.FRESH,
                note=f"{len(names)} steps: {', '.join(names)}",
                frames=tuple(found.frames),
                blob=src.data,
            )

        return Arm(f"traffic {focus or 'mixed'}", build)

    return tuple(arm(c) for c in classes)


def in_state(ctx: Context, traffic: Traffic, src: Source, case: Case) -> Case:
    """``case`` after a short walk on its channel (a channel of its own, then): an error in a
    channel that holds queues, consumers, deliveries and a transaction. A case that needs no
    open channel, or breaks a rule whose precondition is the state itself, stays as it is."""
    if case.placement not in (Placement.OPEN, Placement.FRESH) or case.level == "rule":
        return case
    found = walk(ctx, src, traffic, None, PREFIX, prefix=True)
    if not found.frames:
        return case
    prefix = tuple(ctx.wire(f) for f in found.frames)
    names = ", ".join(f.name for f in found.frames if isinstance(f, MethodFrame))
    methods = frozenset(f.method for f in found.frames if isinstance(f, MethodFrame))
    # a refusal the specification allows the traffic before the case ends its channel first
    soft = tuple(c for c in _tolerated(ctx, methods) if c.is_soft_error)
    return replace(
        case,
        steps=prefix + case.steps,
        expected=replace(case.expected, tolerated=(*case.expected.tolerated, *soft)),
        frames=(*found.frames, *case.frames),
        placement=Placement.FRESH,
        note=f"{case.note} (after {names})" if case.note else f"after {names}",
    )
