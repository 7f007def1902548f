"""Valid traffic in state: a fresh channel's walk of methods, each building on what came before.

A valid case (:mod:`.valid`) is one method with arguments drawn at random: the queue it names
may not exist, the delivery tag it acknowledges was never delivered, so most end in the close
the specification's rules name, and the broker's code past its checks is rarely entered.
Traffic is a walk on a channel of its own: each step a method a client may send, its fields
filled by their domains from what the walk made before (an ``exchange-name`` names an exchange
the walk declared, a ``queue-name`` a queue, a ``consumer-tag`` a consumer it started, a
``delivery-tag`` a delivery it received), so that messages are routed, fetched, consumed,
acknowledged, rejected and requeued, in and out of transactions, and queues and exchanges are
bound, purged and deleted while in use. A small model of what the walk made (:class:`~.model.Model`:
how many messages each queue holds, which deliveries are unsettled, whether the channel is
transacted) says what is valid next; a step whose needs are not met has them made first (a
queue declared before it is consumed from). Methods the model knows nothing of (a method added
to the specification) get their fields by domain all the same.

What a broker accepts beyond the specification comes with its profile, as data
(:class:`~.profile.Traffic`): values for the fields it refuses otherwise, the queue and binding arguments
it reads, message properties and headers it interprets. ``@exchange`` and ``@queue`` in those
values name one the walk made.

A walk's reaction is the reply, with the closes the rules of its methods name tolerated (as for
a valid case: a step drawn to be unusual, an argument value the broker refuses, may be refused
as the specification says). Its last steps delete what it declared. :func:`in_state` puts a
malformed case after a shorter walk, so that errors strike channels that hold consumers,
unsettled deliveries and transactions.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from amqpfuzz.spec.amqp091 import Method
from amqpfuzz.spec.amqp091.codec import MethodFrame

from ..arms import Arm
from ..cases import Case, Placement, Reaction
from .context import Context
from .model import Model
from .profile import Traffic
from .source import Source
from .valid import tolerated

__all__ = ["Walk", "in_state", "traffic_arms"]

# How many steps a walk takes (before the deletions that end it), and a prefix before a case.
STEPS = (3, 14)
PREFIX = (1, 6)


class Walk(Model):
    """A walk being drawn, step by step: what each method does to what it made."""

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
        apart = self._apart(method)
        if apart:  # only one started with no-wait, which the broker answers with nothing that
            # could arrive after the cancel
            mine = [t for t in self.consumers if t in self.unanswered]
        consume = self.ctx.spec.method("basic.consume")
        if not mine and (apart or not self.traffic.implements(consume)):
            # none it may cancel, and none it may start first: a tag it never started
            self.send(method, {"consumer-tag": self.name("c")})
            return
        tag = self.pick(mine)
        if tag is None:
            self.consume(consume)
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
