"""Server-side 1.0 operators on every size and count a client decodes, and on nesting (types
1.2 to 1.6; transport 2.3.1).

**Sites.** Where a size or count is comes from the type system the XML defines, never from a
list of performatives: the struck frame's performative is walked by its constructors' format
codes (types 1.2: each code's category and width, as the model has them): the size of every
variable-width value (str8/str32, sym8/sym32, vbin8/vbin32, types 1.6.19 to 1.6.21), the size
and count of every compound (list8/list32, map8/map32, 1.6.22/1.6.23) and array
(array8/array32, 1.6.24: and its elements', each without its constructor), a described value's
descriptor and value alike (1.2). The frame header's SIZE and DOFF are sites too (transport
2.3.1). A new composite, field or encoding in the XML is a site with no code change. Which site
a case breaks is read from its bytes, so Hypothesis shrinks across them.

**Directions**, one operator each, at an attach answer and at a delivery's transfer:
``length-past-frame`` (past the frame's end, the frame well formed otherwise),
``length-negative`` (negative as signed 32-bit, 2^31..2^32-1; 0x80..0xFF for an octet where that
runs past the end), ``length-edge`` (2^31-1, 2^31, 2^32-1; 0x7F, 0x80, 0xFF), ``length-absurd``
(2^28..2^31-1: a decoder that allocates before it reads). Every value runs past the frame's end
(a count: more values than octets are left; SIZE: over the max-frame-size the client announced;
DOFF: past the frame's last octet).

**Reaction**, as the neighbours reason it: a value whose size or count overruns what holds it
cannot be decoded, the connection error ``amqp:decode-error`` (2.8.15, as ``absurd-size`` and
``list-size-lies``); a SIZE over max-frame-size is ``amqp:connection:framing-error`` (2.7.1
open: "a peer that receives an oversized frame MUST close the connection with the
framing-error"), as is a DOFF past the end (``doff-past-end``). A frame's site is drawn with
the others, so each operator accepts either condition on a close of the connection.

**Nesting.** ``nested-annotations`` sends a delivery's message-annotations (3.2.3, a map) holding
lists and maps nested thousands deep, split over transfers as max-frame-size asks; the message's
other sections (its message-id, its body) are as the script drew them. The type system sets no
depth limit: taking the message is conformant, as is closing with decode-error (or ending the
session or link with it); a crash, a hang, a stack overflow is the failure (``or_reply``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from amqpfuzz.spec.amqp10.codec import raw
from amqpfuzz.spec.amqp10.codec.types import TypeSystem

from ....lies import DIRECTIONS, has_lie, lie
from ....operator import Built, Operator
from ....source import Source
from ...operators.common import Parts
from ...wire import Wire
from ..script import Point, Strike
from .common import NotApplicable, serving, struck

__all__ = ["DIRECTIONS", "OPERATORS", "Site", "direction_value", "sites"]

OPERATORS: list[Operator] = []
server = serving(OPERATORS)
CODES = ("decode-error", "framing-error")


@dataclass(frozen=True)
class Site:
    """A size or count at ``offset`` of a frame, ``width`` octets; ``room`` is the largest value
    that runs past nothing."""

    offset: int
    width: int
    room: int
    what: str


_has = has_lie
direction_value = lie  # (the lying value a direction gives a site: lies.py)


# -- the sites --------------------------------------------------------------------------------


def sites(types: TypeSystem, frame: bytes, max_frame_size: int) -> list[Site]:
    """Every size and count the client decodes in ``frame``'s performative (the first value of
    its body: a transfer's payload, the message, is not walked), and its SIZE and DOFF."""
    out = [
        Site(0, 4, max_frame_size, "SIZE"),
        Site(4, 1, len(frame) // 4, "DOFF"),
    ]
    body = frame[4] * 4
    _walk(types, frame, body, len(frame), out, "performative")
    return out


def _walk(
    types: TypeSystem, buf: bytes, o: int, end: int, out: list[Site], what: str,
    code: int | None = None,
) -> int:  # fmt: skip
    """Records the sites of the value at ``o`` (its constructor ``code`` already read, for an
    array's element); returns the offset after it."""
    if code is None:
        code, o = buf[o], o + 1
        if code == 0x00:  # a described value: its descriptor, then the value
            o = _walk(types, buf, o, end, out, f"{what} descriptor")
            return _walk(types, buf, o, end, out, what)
    kind = types.constructors[code]
    if kind.category == "fixed":
        return o + kind.width
    width = kind.width
    size = int.from_bytes(buf[o : o + width], "big")
    out.append(Site(o, width, end - o - width, f"{what} {kind.type} size"))
    stop = o + width + size
    if kind.category == "variable":
        return stop
    count = int.from_bytes(buf[o + width : o + 2 * width], "big")
    o += 2 * width
    if kind.category == "compound":
        out.append(Site(o - width, width, end - o, f"{what} {kind.type} count"))
        for item in range(count):
            o = _walk(types, buf, o, end, out, f"{what}[{item}]")
        return stop
    element, o = buf[o], o + 1  # an array: one constructor for all its elements
    if element == 0x00:
        o = _walk(types, buf, o, end, out, f"{what} element descriptor")
        element, o = buf[o], o + 1
    inner = types.constructors[element]
    if inner.category != "fixed" or inner.width:  # elements of no octets: no count overruns
        out.append(Site(o - 1 - width, width, end - o, f"{what} {kind.type} count"))
    for item in range(count):
        o = _walk(types, buf, o, end, out, f"{what}[{item}]", element)
    return stop


def _lie(frame: bytes, site: Site, value: int) -> bytes:
    return (
        frame[: site.offset] + value.to_bytes(site.width, "big") + frame[site.offset + site.width :]
    )


def _frames(strike: Strike) -> list[bytes]:
    """What the peer was about to send, a delivery's transfers split to the client's limit."""
    body, data = struck(strike)
    if body.name == "transfer":
        limit = min(strike.max_frame_size, 1 << 20)
        return strike.codec.transfer_frames(strike.channel, body, strike.payload, limit)
    return [raw.frame(data, channel=strike.channel)]


def _as_list32(strike: Strike, frame: bytes) -> bytes:
    """``frame`` with its performative's field list encoded as list32 (an encoding the type
    system allows for any list: the same performative), whatever payload follows kept."""
    body, _ = struck(strike)
    start = frame[4] * 4
    end = _walk(strike.codec.types, frame, start, len(frame), [], "performative")
    wide = Parts(strike.codec, body).body(code=0xD0)
    channel = int.from_bytes(frame[6:8], "big")
    return raw.frame(wide + frame[end:], channel=channel)


def _lengths(direction: str) -> Callable[[Source, Strike], Built]:
    def build(src: Source, strike: Strike) -> Built:
        frames = _frames(strike)
        body, _ = struck(strike)
        found = sites(strike.codec.types, frames[0], strike.max_frame_size)
        reachable = [s for s in found if _has(direction, s)]
        if not reachable:  # one-octet sizes only, no limit on SIZE: the same fields as list32
            frames[0] = _as_list32(strike, frames[0])
            found = sites(strike.codec.types, frames[0], strike.max_frame_size)
            reachable = [s for s in found if _has(direction, s)]
        if not reachable:
            raise NotApplicable(f"no size or count of {body.name} has a {direction} value")
        site = reachable[src.below(len(reachable))]
        value = direction_value(direction, site, src)
        assert value is not None
        note = f"{body.name} {site.what} {value} ({direction.removeprefix('length-')})"
        data = _lie(frames[0], site, value) + b"".join(frames[1:])
        return Built((Wire(data, note, strike.channel),), f"{body.name} {site.what}", note)

    return build


for _point, _prefix in ((Point.ATTACH, "attach"), (Point.DELIVER, "deliver")):
    for _direction, (_, _how) in DIRECTIONS.items():
        server(
            _point,
            f"{_prefix}-{_direction}",
            f"{_how} (types 1.6.19 to 1.6.24: sizes and counts; transport 2.3.1: SIZE, DOFF)",
            f"gives one size or count the type system puts in the peer's {_prefix} frame "
            f"{_how.removeprefix('a size or count ')}",
            CODES,
            "connection",
            "encoding",
        )(_lengths(_direction))


# -- nesting ----------------------------------------------------------------------------------


@server(
    Point.DELIVER,
    "nested-annotations",
    "a message-annotations map holding lists and maps nested thousands deep (messaging 3.2.3; "
    "types 1.6.22, 1.6.23 set no depth limit: taking it is conformant)",
    "sends a delivery whose message-annotations nest lists or maps 1000 to 4000 deep",
    ("decode-error",),
    "connection",
    "encoding",
    or_reply=True,
    tolerate=(("decode-error", "session"), ("decode-error", "link")),
)
def nested_annotations(src: Source, strike: Strike) -> Built:
    body, _ = struck(strike)
    types = strike.codec.types
    depth = src.between(1000, 4000)
    shape = src.below(3)  # lists, maps, or both in turn
    value = b"\x40"
    for level in range(depth):
        if shape == 0 or (shape == 2 and level % 2):
            value = raw.compound(0xD0, [value])
        else:
            value = raw.compound(0xD1, [raw.variable(0xA3, b"k"), value])
    key = raw.variable(0xA3, b"x-amqpfuzz-nested")
    code = next(
        k for k, v in types.described.items() if v == "message-annotations" and isinstance(k, int)
    )
    section = raw.described(
        raw.fixed(0x80, code.to_bytes(8, "big")), raw.compound(0xD1, [key, value])
    )
    payload = _with_annotations(types, strike.payload, section)
    limit = min(strike.max_frame_size, 1 << 20)
    frames = strike.codec.transfer_frames(strike.channel, body, payload, limit)
    kind = ("lists", "maps", "lists and maps")[shape]
    note = f"message-annotations nested {depth} {kind} deep"
    return Built((Wire(b"".join(frames), note, strike.channel),), "message-annotations", note)


def _with_annotations(types: TypeSystem, payload: bytes, section: bytes) -> bytes:
    """``payload``'s sections with ``section`` in the place of its message-annotations: after
    the header and delivery-annotations, before the rest (messaging 3.2)."""
    before: list[bytes] = []
    after: list[bytes] = []
    o = 0
    while o < len(payload):
        start = o
        o = _walk(types, payload, o, len(payload), [], "section")
        name = _section_name(types, payload, start)
        if name == "message-annotations":
            continue
        (before if name in ("header", "delivery-annotations") and not after else after).append(
            payload[start:o]
        )
    return b"".join(before) + section + b"".join(after)


def _section_name(types: TypeSystem, payload: bytes, start: int) -> str:
    code = payload[start + 1]
    if code in (0x53, 0x80):
        width = 1 if code == 0x53 else 8
        number = int.from_bytes(payload[start + 2 : start + 2 + width], "big")
        return str(types.described.get(number, ""))
    if code in (0xA3, 0xB3):
        width = 1 if code == 0xA3 else 4
        size = int.from_bytes(payload[start + 2 : start + 2 + width], "big")
        symbol = payload[start + 2 + width : start + 2 + width + size].decode("ascii", "replace")
        return str(types.described.get(symbol, ""))
    return ""
