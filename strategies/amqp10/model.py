"""What a walk of valid 1.0 traffic made (:class:`Model`): the links it attached
(:class:`Planned`: handle, address, settle modes, what went on it), the messages it knows at
each node, its steps; how it chooses (names of the run's, settle modes the profile allows), how
it attaches links (addresses in the profile's forms, terminus options, link properties) and
how it makes messages and deliveries (sections the profile allows, annotations of every
primitive type, arrays as the peer reads them, bodies split over frames). What each action does
with them is :class:`~.traffic.Walk`'s."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from amqpfuzz.spec.amqp10.codec import Array, Composite, Described, Symbol, UByte, UInt

from ..cases import Step
from ..source import Source
from .context import Context
from .profile import Traffic
from .steps import Awaiting, Delivery

__all__ = ["PREFIX_HANDLE", "Model", "Planned"]

_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
PREFIX_HANDLE = 16  # a prefix's first handle: the operators' links use the first few
_BODIES = ("data", "amqp-sequence", "amqp-value")  # (a message has one kind of body)
_COMPOUND = ("list", "map", "array")


@dataclass
class Planned:
    """A link as the walk made it."""

    name: str
    handle: int
    receiver: bool
    address: str
    counted: bool  # its node keeps messages until taken (they can be awaited)
    snd: int  # snd-settle-mode asked
    rcv: int  # rcv-settle-mode asked
    attach: Composite | None = None  # what attached it (attached again the same way)
    attached: bool = True
    sent: int = 0  # deliveries planned on it (as sender)
    credited: bool = False  # (as receiver) credit was given


class Model:
    """A walk being drawn: the links it made, the messages it knows at each node, its steps."""

    def __init__(self, ctx: Context, src: Source, traffic: Traffic, prefix: bool = False) -> None:
        self.ctx, self.src, self.traffic, self.prefix = ctx, src, traffic, prefix
        self.codec = ctx.codec
        self.steps: list[Step] = []
        self.links: dict[str, Planned] = {}
        self.nodes: dict[str, int] = {}  # planned messages known at each counted node
        self.handle = PREFIX_HANDLE if prefix else 0
        self.made = 0
        self.did: list[str] = []
        self.closed = False  # a link was closed (its detach is due an answer)
        # each node's terminus durability, as first attached (a peer may make a node of it,
        # and refuse another durability for the same node: the walk keeps to one)
        self.durable: dict[str, Any] = {}

    # -- choosing -------------------------------------------------------------------------------

    @functools.cached_property
    def tag(self) -> str:
        """The blob's digest: names are unique across walks (the same blob, the same names)."""
        digest = int.from_bytes(hashlib.blake2b(self.src.data, digest_size=8).digest(), "big")
        return "".join(_ALPHABET[digest // 36**i % 36] for i in range(8))

    def name(self, what: str) -> str:
        self.made += 1
        return f"{self.ctx.prefix or 'amqpfuzz-'}{what}{self.made}-{self.tag}"

    def rare(self, odds: int) -> bool:
        """True one time in ``odds``, never for a zero byte."""
        return self.src.below(odds) == odds - 1

    def one(self, links: Sequence[Planned]) -> Planned:
        return links[self.src.below(len(links))]

    def mode(self, key: str, restricted: str, names: Sequence[str]) -> int:
        """A settle mode's value (the model's choice of ``restricted``): the first of
        ``names`` the profile allows for ``key`` two times in three, else any it allows."""
        choices = self.codec.types.choices_of(restricted)
        allowed = self.traffic.allowed(key, [n for n in names if n in choices]) or names[:1]
        picked = allowed[0] if not self.rare(3) else self.src.pick(tuple(allowed))
        return int(choices[picked])

    # -- addresses and links -----------------------------------------------------------------

    def address(self, counted: bool = True) -> tuple[str, bool]:
        """An address of a node the walk names (``@node`` in one of the profile's forms:
        counted, its messages stay until taken), or (not ``counted``) of any form the profile
        lists (``@key``: a name messages are routed by; none: a fixed address of the peer's),
        and whether it is counted."""
        forms = [f for f in self.traffic.addresses if "@node" in f] or ["@node"]
        if not counted:
            forms = list(self.traffic.addresses)
        form = forms[0] if self.prefix else self.src.pick(tuple(forms))
        if "@node" in form:
            return form.replace("@node", self.name("node")), True
        return form.replace("@key", self.name("key")), False

    def attach(
        self,
        receiver: bool,
        address: tuple[str, bool] | None = None,
        options: bool = False,
        modes: tuple[int, int] | None = None,
    ) -> Planned:
        """A link attached: its address (a new node by default), settle modes drawn (the
        profile's) or given, now and then terminus options and link properties."""
        name = self.name("link")
        where, counted = address or self.address()
        snd, rcv = modes or (
            self.mode("attach.snd-settle-mode", "sender-settle-mode", ("unsettled", "settled", "mixed")),
            self.mode("attach.rcv-settle-mode", "receiver-settle-mode", ("first", "second")),
        )  # fmt: skip
        link = Planned(name, self.handle, receiver, where, counted, snd, rcv)
        self.handle += 1
        terminus: dict[str, Any] = {"address": where}
        extra: dict[str, Any] = {}
        if options:
            terminus |= self.terminus(receiver)
            extra = self.link_options()
        terminus["durable"] = self.durable.setdefault(where, terminus.get("durable"))
        source = self.codec.composite("source", **(terminus if receiver else {}))
        target = self.codec.composite("target", **({} if receiver else terminus))
        initial = None
        if not receiver:
            initial = UInt(self.src.pick((0, 0, 0, 0xFFFFFFFE, 0x7FFFFFFF)) if self.rare(4) else 0)
        attach = self.codec.composite(
            "attach",
            name=name,
            handle=UInt(link.handle),
            role=receiver,
            snd_settle_mode=UByte(snd),
            rcv_settle_mode=UByte(rcv),
            source=source,
            target=target,
            initial_delivery_count=initial,
            **extra,
        )
        self.steps.append(self.ctx.wire(attach))
        link.attach = attach
        self.links[name] = link
        self.did.append(f"attach {'receiver' if receiver else 'sender'}")
        return link

    def terminus(self, receiver: bool) -> dict[str, Any]:
        """A few of a terminus' options, each a choice of its type."""
        types = self.codec.types
        found: dict[str, Any] = {}
        if self.rare(2):
            found["durable"] = UInt(
                int(self.src.pick(tuple(types.choices_of("terminus-durability").values())))
            )
        if self.rare(2):
            found["expiry_policy"] = Symbol(
                self.src.pick(tuple(types.choices_of("terminus-expiry-policy").values()))
            )
        if self.rare(3):
            found["timeout"] = UInt(self.src.pick((0, 1, 60)))
        if self.rare(3):
            found["capabilities"] = Symbol(self.src.pick(("queue", "topic", "shared")))
        if receiver and self.rare(2):
            found["distribution_mode"] = Symbol(
                self.src.pick(tuple(types.choices_of("std-dist-mode").values()))
            )
        if receiver and self.rare(2):
            outcomes = self.outcomes()
            allowed = self.traffic.allowed("source.outcomes", [o.name for o in outcomes])
            chosen = [o for o in outcomes if o.name in allowed]
            if chosen:
                found["default_outcome"] = self.codec.composite(
                    self.src.pick(tuple(c.name for c in chosen))
                )
                if self.rare(2):  # the outcomes it supports, by their descriptors
                    names = tuple(
                        Symbol(o.descriptor.name) for o in chosen if self.rare(2) or o is chosen[0]
                    )
                    found["outcomes"] = Array("symbol", names)
        return found

    def link_options(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        if self.rare(3):
            found["max_message_size"] = self.ctx.values.of("ulong")(self.src) or None
        if self.rare(3):
            found["properties"] = {Symbol(f"{self.ctx.prefix or 'amqpfuzz-'}p"): self.src.byte()}
        if self.rare(4):
            found["desired_capabilities"] = Symbol(self.src.pick(("queue", "topic")))
        return found

    @functools.cached_property
    def _outcomes(self) -> tuple[Any, ...]:
        spec = self.codec.spec
        names = self.codec.types.providers.get("outcome", ())
        return tuple(spec.type(n) for n in names if spec.type(n).part == "messaging")

    def outcomes(self) -> tuple[Any, ...]:
        """The outcomes of the messaging part (what provides ``outcome`` there)."""
        return self._outcomes

    def open(self, receiver: bool, counted: bool | None = None) -> list[Planned]:
        return [
            link for link in self.links.values()
            if link.attached and link.receiver == receiver
            and (counted is None or link.counted == counted)
        ]  # fmt: skip

    def sender(self) -> Planned:
        """A sending link with its credit awaited (one attached now if none is)."""
        found = self.open(False)
        if found:
            return self.one(found)
        link = self.attach(False, options=self.rare(4))
        self.await_("credit", link)
        return link

    def await_(self, kind: str, link: Planned) -> None:
        self.steps.append(Awaiting(kind, link.name, self.codec))

    # -- messages -----------------------------------------------------------------------------

    def message(self, big: bool = False, huge: bool = False) -> bytes:
        """A message of drawn sections, those the profile allows (a header's time to live,
        if any, long: a message must not expire before it is received); now and then a body
        of several data or amqp-sequence sections; ``big``, a large data body."""
        if big:
            size = self.src.pick((700, 1500, 3000, 9000, self.ctx.max_frame_size + 100))
            size = self.ctx.max_frame_size + 100 if huge else size
            return self.codec.message([Described("data", bytes([self.src.byte()]) * size)])
        names = [t.name for t in self.codec.spec.sections]
        allowed = set(self.traffic.allowed("message.sections", names))
        sections = []
        for section in self.ctx.values.message()(self.src):
            name = section.name if isinstance(section, Composite) else str(section.descriptor)
            if name not in allowed and name not in _BODIES:
                continue
            if name == "header" and section["ttl"] is not None:
                section = Composite("header", {**section.fields, "ttl": UInt(3_600_000)})
            if name == "message-annotations" and self.rare(2):
                section = Described(name, {**section.value, **self.annotations()})
            section = self.arrays(section)
            if isinstance(section, Composite):
                section = self.restricted(section)
            elif name == "amqp-value" and isinstance(section.value, list | tuple):
                kinds = self.traffic.allowed("amqp-value.types", ["list"])
                if not kinds:  # a list the peer does not read there: the same as a sequence
                    section = Described("amqp-sequence", list(section.value))
            sections.append(section)
            if name in ("data", "amqp-sequence") and self.rare(4):  # one or more of them
                sections.append(self.arrays(self.ctx.values.of(name)(self.src)))
        return self.codec.message(sections)

    def annotations(self) -> dict[Symbol, Any]:
        """Annotations (``x-opt-``: a peer need not know them) of values of every primitive
        type of the model, now and then an array of them (a peer that does not read an
        array's constructor gets the same values as a list: :meth:`arrays`)."""
        names = tuple(n for n in sorted(self.codec.types.encodings) if n not in _COMPOUND)
        found: dict[Symbol, Any] = {}
        for _ in range(1 + self.src.below(4)):
            name = self.src.pick(names)
            value = self.ctx.values.primitive(name)
            if self.rare(3):  # (its elements described, now and then)
                items = tuple(value(self.src) for _ in range(1 + self.src.below(3)))
                described = Symbol("x-opt-described") if self.rare(3) else None
                found[Symbol(f"x-opt-{name}-array")] = Array(name, items, described)
            else:
                found[Symbol(f"x-opt-{name}")] = value(self.src)
        return found

    def restricted(self, body: Composite) -> Composite:
        """``body`` with each field the profile restricts (``properties.user-id``) one of the
        values it lists (none, for an empty list)."""
        fields = dict(body.fields)
        for name, value in body.fields.items():
            wanted = self.traffic.fields.get(f"{body.name}.{name}")
            if wanted is not None and value is not None and value not in wanted:
                fields[name] = self.src.pick(tuple(wanted)) if wanted else None
        return Composite(body.name, fields)

    def arrays(self, value: Any) -> Any:
        """``value`` with each array whose elements' constructor the profile does not list
        (``array.constructors``) sent as a list of the same elements instead."""
        wanted = self.traffic.fields.get("array.constructors")
        if wanted is None:
            return value
        if isinstance(value, Array):
            constructor = self.codec.encoder.element(value)[0][-1]
            items = tuple(self.arrays(v) for v in value.items)
            return replace(value, items=items) if constructor in wanted else list(items)
        if isinstance(value, Described):
            return Described(value.descriptor, self.arrays(value.value))
        if isinstance(value, Composite):
            return Composite(value.name, {k: self.arrays(v) for k, v in value.fields.items()})
        if isinstance(value, list | tuple):
            return [self.arrays(v) for v in value]
        if isinstance(value, dict):
            return {k: self.arrays(v) for k, v in value.items()}
        return value

    def delivery(self, split: bool = False, huge: bool = False) -> Delivery:
        """A message to send; split over frames smaller than the peer's largest (``split``:
        a large data body over small frames, or over two of the largest), now and then;
        ``huge``: larger than the peer's frames."""
        most = self.ctx.max_frame_size
        frame = most
        if split:
            message = self.message(big=True, huge=huge)
            least = 4096 if len(message) > 9000 else 512  # (a hundred frames at most)
            frame = min(most, max(least, self.src.pick((512, 600, 1024, 4096, most))))
        else:
            message = self.message()
            if self.rare(6) and len(message) > 600:
                frame = 512
        rcv = None
        if self.rare(6):
            rcv = self.mode("transfer.rcv-settle-mode", "receiver-settle-mode", ("first", "second"))
        return Delivery(message, bool(self.src.byte() & 1), frame, self.rare(4), rcv)
