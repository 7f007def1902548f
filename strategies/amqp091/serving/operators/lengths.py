"""Server-side 0-8/0-9/0-9-1 operators on every length a client reads, and on nesting: each
length, size and count the grammar puts in what the peer is about to send lies in one direction,
a table nests past any sane depth, connection.tune's limits sit at the edges of their domains.

**Sites.** Where a length is is read from the grammar, never from a list of methods: the struck
frames are walked by their method's fields (``<field domain>`` types: a ``shortstr`` has a
1-octet length, a ``longstr`` and a ``table`` a 4-octet one, section 4.2.5.3), a content
header's properties by its class's ``<field>``s and property flags (4.2.6.1), and every table
by its values' type codes (4.2.5.5: the lengths of long strings ``S``, byte arrays ``x``,
nested tables ``F`` and arrays ``A``, and of those arrays' items). The size field of each frame
(4.2.3) is a site where a frame-max was agreed. A new method or field in the XML is a site with
no code change. Which site a case breaks is read from its bytes, so Hypothesis shrinks across
them.

**Directions**, one operator each and at each point (the handshake's connection.start, any
reply, a delivery): ``length-past-frame`` (past the frame's end, the frame well formed
otherwise), ``length-negative`` (its top bit set: 2^31..2^32-1, or 0x80..0xFF for an octet where
that runs past the end), ``length-edge`` (2^31-1, 2^31, 2^32-1; 0x7F, 0x80, 0xFF for an octet),
``length-absurd`` (2^28..2^31-1: a decoder that allocates before it reads). Every value is a
lie: it runs past the end of the frame (a frame's size field: past the frame-max agreed).

**Reaction.** A length running past the frame is "a malformed frame that the recipient could not
decode": 501 frame-error, the constant's own definition; a frame larger than frame-max is 501 too
(4.2.3: "A peer that receives an oversized frame MUST signal a connection exception with reply
code 501"). A client that reads the value, not the framing, as wrong may say 502 syntax-error
("the sender sent a frame that contained illegal values for one or more fields"): tolerated.
Before connection.open the registration asks for the socket closed without a word (2.2.4).

``body-size-lies`` breaks the one length that is no frame's: a content header's body-size
(4.2.6.1, a longlong), as absurd, negative as signed or at the edges; the method and a body
frame with no header follow, as ``body-size-larger``'s, which 4.2.6 answers with 505 whether the
client waits for the body or takes the content as over.

**Nesting.** ``nested-server-properties`` sends connection.start's table field (4.2.5.5: a
table's value may be a table or an array) nested as deep as frame-min-size allows (the frame
every peer accepts before connection.tune): some 550 tables or 800 arrays. The grammar sets no
depth limit, so a client may take it and log in; a client with a depth limit of its own closes
the socket without a word, as for any error before connection.open (2.2.4): either is
conformant (a crash, a hang, a stack overflow is the failure). (A delivery's headers nested
instead would be judged as a message never validly sent where a client takes it.)

**Limits.** ``tune-limit-edges`` sends connection.tune's integer fields at the edges of their
domains: 0 (no limit), the width's largest (65535, 2^32-1) and 2^31-1/2^31 for 32 bits. They are
valid values (connection.tune: "zero means ... no limit"), which the client must accept
(``ignore``). Only the edges that the peer's own agreement (frame-max and channel-max, which it
holds the client's tune-ok to) leaves valid are sent; the script's value otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from amqpfuzz.spec.amqp091.codec import ContentBody, ContentHeader, MethodFrame, raw
from amqpfuzz.spec.amqp091.codec.tables import DIALECTS
from amqpfuzz.spec.amqp091.model import Method

from ....lies import DIRECTIONS, has_lie, lie
from ....operator import Built, Operator, Special
from ...source import Source
from ...wire import WireFrame
from ..script import BEFORE_OPEN, Point, Strike
from .common import serving, struck_content, wired

__all__ = ["DIRECTIONS", "OPERATORS", "Site", "direction_value", "sites"]

OPERATORS: list[Operator] = []
server = serving(OPERATORS)

SIZE = -1  # a site's offset where it is the frame's size field
_WIDTHS = {"octet": 1, "short": 2, "long": 4, "longlong": 8, "timestamp": 8}
# a table value's octets after its type code, by kind (4.2.5.5)
_TABLE_FIXED = {
    "bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4,
    "int64": 8, "uint64": 8, "float": 4, "double": 8, "timestamp": 8, "decimal": 5, "void": 0,
}  # fmt: skip
_PREFIXED = {"longstr": 4, "bytes": 4, "shortstr": 1}


@dataclass(frozen=True)
class Site:
    """A length the client reads: in the ``frame``-th frame struck, at ``offset`` of its payload
    (:data:`SIZE`: the frame's size field), ``width`` octets; ``room`` is the largest value that
    runs past nothing (the octets after it to the frame's end, or frame-max less the header)."""

    frame: int
    offset: int
    width: int
    room: int
    what: str


_has = has_lie
direction_value = lie  # (the lying value a direction gives a site: lies.py)


# -- the sites --------------------------------------------------------------------------------


def sites(strike: Strike, frames: Sequence[WireFrame]) -> list[Site]:
    """Every length the client reads in ``frames`` (the strike's, as wire frames), by the
    grammar: method fields, content header properties, table entries, frame sizes."""
    out: list[Site] = []
    kinds = DIALECTS[strike.codec.dialect]
    for index, wire in enumerate(frames):
        source = wire.source
        if isinstance(source, MethodFrame):
            _method_sites(source.method, wire.payload, index, kinds, out)
        elif isinstance(source, ContentHeader):
            _header_sites(strike, source, wire.payload, index, kinds, out)
        if strike.frame_max:
            out.append(Site(index, SIZE, 4, strike.frame_max - 8, f"frame {index} size"))
    return out


def _method_sites(
    method: Method, payload: bytes, index: int, kinds: dict[str, str], out: list[Site]
) -> None:
    o, bits = 4, 0
    for fld in method.fields:
        if fld.type == "bit":
            bits += 1
            continue
        o, bits = o + (bits + 7) // 8, 0
        o = _field_sites(fld.type, payload, o, index, f"{method.full_name}/{fld.name}", kinds, out)


def _header_sites(
    strike: Strike,
    header: ContentHeader,
    payload: bytes,
    index: int,
    kinds: dict[str, str],
    out: list[Site],
) -> None:
    cls = next(c for c in strike.spec.classes if c.index == header.class_id)
    o, present = 12, []
    while True:  # property flags: 15 a word, the lowest bit saying another word follows
        word = int.from_bytes(payload[o : o + 2], "big")
        present += [bool(word & (1 << (15 - b))) for b in range(15)]
        o += 2
        if not word & 1:
            break
    for prop, there in zip(cls.properties, present, strict=False):
        if there:
            o = _field_sites(prop.type, payload, o, index, f"{cls.name}/{prop.name}", kinds, out)


def _field_sites(
    kind: str, buf: bytes, o: int, index: int, what: str, kinds: dict[str, str], out: list[Site]
) -> int:
    if kind in _WIDTHS:
        return o + _WIDTHS[kind]
    if kind == "content":  # 0-9's: an octet, then a long string
        return _value_sites("longstr", buf, o + 1, index, what, kinds, out)
    return _value_sites(kind, buf, o, index, what, kinds, out)


def _value_sites(
    kind: str, buf: bytes, o: int, index: int, what: str, kinds: dict[str, str], out: list[Site]
) -> int:
    if kind in _TABLE_FIXED:
        return o + _TABLE_FIXED[kind]
    width = _PREFIXED.get(kind, 4)
    out.append(Site(index, o, width, len(buf) - o - width, what))
    size = int.from_bytes(buf[o : o + width], "big")
    stop = o + width + size
    o += width
    if kind == "table":
        while o < stop:
            key = buf[o + 1 : o + 1 + buf[o]].decode("utf-8", "replace")
            o += 1 + buf[o]
            o = _value_sites(kinds[chr(buf[o])], buf, o + 1, index, f"{what}.{key}", kinds, out)
    elif kind == "array":
        item = 0
        while o < stop:
            o = _value_sites(kinds[chr(buf[o])], buf, o + 1, index, f"{what}[{item}]", kinds, out)
            item += 1
    return stop


def _lie(frames: Sequence[WireFrame], site: Site, value: int) -> tuple[WireFrame, ...]:
    wire = frames[site.frame]
    if site.offset == SIZE:
        broken = wire._replace(size=value, note=f"with size {value}")
    else:
        data = wire.payload
        lying = value.to_bytes(site.width, "big")
        payload = data[: site.offset] + lying + data[site.offset + site.width :]
        broken = wire._replace(payload=payload, note=f"{site.what} length {value}")
    return (*frames[: site.frame], broken, *frames[site.frame + 1 :])


def _lengths(direction: str, point: Point) -> Callable[[Source, Strike], Built]:
    def build(src: Source, strike: Strike) -> Built:
        frames = tuple(wired(strike, f) for f in strike.frames)
        if not frames:  # nothing struck (a late strike at its point): a reply of our own
            raise AssertionError(f"{direction} at {point} struck no frame")
        probe = [s for s in sites(strike, frames) if _has(direction, s)]
        if not probe:  # no length in these frames (a reply of no fields, no frame-max agreed)
            return _cut_short(src, strike, frames)
        site = probe[src.below(len(probe))]
        value = direction_value(direction, site, src)
        assert value is not None
        first = frames[0].source
        note = f"{site.what} {value} ({direction.removeprefix('length-')}, room {site.room})"
        return Built(_lie(frames, site, value), site.what, note, frames=(first,))

    return build


def _cut_short(src: Source, strike: Strike, frames: Sequence[WireFrame]) -> Built:
    """Frames with no length to lie (a reply of no arguments with no frame-max agreed): the
    method's arguments, or its ids, cut short instead: a frame the client cannot decode, 501."""
    wire = frames[0]
    room = len(wire.payload) - 4
    cut = src.between(1, room) if room > 0 else 2
    payload = wire.payload[:-cut] if room > 0 else wire.payload[:2]
    broken = wire._replace(payload=payload, note=f"no length: cut by {cut} octets")
    first = wire.source
    name = first.name if isinstance(first, MethodFrame) else "frame"
    return Built((broken, *frames[1:]), name, f"no length site: {name} cut short", frames=(first,))


for _point, _prefix in ((Point.START, "start"), (Point.REPLY, "reply"), (Point.DELIVER, "deliver")):
    for _direction, (_, _how) in DIRECTIONS.items():
        _early = _point in BEFORE_OPEN
        server(
            _point,
            f"{_prefix}-{_direction}",
            "length",
            f"gives {_how} to one length, size or count the grammar puts in what the server "
            f"sends at {_prefix}",
            ("frame-error",) if not _early else ("frame-error", "syntax-error"),
            "frame",
            **({} if _early else {"tolerate": ("syntax-error",)}),
        )(_lengths(_direction, _point))


# -- body-size ----------------------------------------------------------------------------------

_BODY_EDGES = ((1 << 31) - 1, 1 << 31, (1 << 32) - 1, (1 << 63) - 1, 1 << 63, (1 << 64) - 1)


@server(
    Point.DELIVER,
    "body-size-lies",
    "content size",
    "declares a body-size absurd (2^28..2^31), negative as signed (2^63..2^64-1) or at an edge "
    "of 32 or 64 bits, then the method and a body frame",
    ("unexpected-frame",),
    "sequence",
)
def body_size_lies(src: Source, strike: Strike) -> Built:
    method, header, bodies = struck_content(strike)
    way = src.below(3)
    if way == 0:
        size = src.between(1 << 28, (1 << 31) - 1)
    elif way == 1:
        size = src.between(1 << 63, (1 << 64) - 1)
    else:
        size = int(src.pick(_BODY_EDGES))
    lying = ContentHeader(header.channel, header.class_id, size, header.properties)
    after = MethodFrame(method.channel, method.method, method.values)
    orphan = ContentBody(header.channel, src.take(src.between(1, 32)))
    steps = (
        wired(strike, method),
        wired(strike, lying)._replace(note=f"body-size {size}"),
        *(wired(strike, b) for b in bodies),
        wired(strike, after),
        wired(strike, orphan),
    )
    return Built(steps, f"{method.name}/body-size", f"body-size {size}", frames=(method,))


# -- nesting ----------------------------------------------------------------------------------

_LEVEL = {"F": 7, "A": 5}  # octets a level costs: (key,) type code and length


def _nested(depth: int, shape: int) -> bytes:
    """A field table (with its length) of one entry holding tables (``shape`` 0), arrays (1)
    or both in turn (2) ``depth`` levels deep, each level holding the next alone."""
    value = b"F" + raw.long(0)  # the innermost value: an empty table
    for level in range(depth):
        if shape == 1 or (shape == 2 and level % 2):
            value = b"A" + raw.long(len(value)) + value
        else:
            entry = b"\x01k" + value
            value = b"F" + raw.long(len(entry)) + entry
    entry = b"\x01k" + value
    return raw.long(len(entry)) + entry


@server(
    Point.START,
    "nested-server-properties",
    "field table",
    "nests connection.start's table field hundreds of tables or arrays deep, as deep as "
    "frame-min-size allows",
    (),
    "frame",
    scope=Special.SILENT,  # a depth limit's refusal before connection.open (2.2.4)
    or_reply=True,  # no depth limit in the grammar: taking it is as conformant
)
def nested_server_properties(src: Source, strike: Strike) -> Built:
    start = strike.frames[0]
    assert isinstance(start, MethodFrame)
    least = int(strike.spec.constant("frame-min-size").value)
    empty = [raw.Raw(raw.long(0)) if f.type == "table" else v
             for f, v in zip(start.method.fields, start.values, strict=True)]  # fmt: skip
    others = len(raw.arguments(start.method, empty)) + 4  # what the method holds besides
    shape = src.below(3)
    room = least - 8 - others - 16  # within frame-min-size: accepted before connection.tune
    deepest = room // _LEVEL["F" if shape != 1 else "A"]
    depth = src.between(deepest * 3 // 4, deepest)
    table = _nested(depth, shape)
    values = [
        raw.Raw(table) if f.type == "table" else v
        for f, v in zip(start.method.fields, start.values, strict=True)
    ]
    payload = raw.method_payload(
        start.method.class_index, start.method.index, raw.arguments(start.method, values)
    )
    kind = ("tables", "arrays", "tables and arrays")[shape]
    note = f"table field nested {depth} {kind} deep"
    step = WireFrame(strike.codec.frame_method, 0, payload, note=note, source=start)
    return Built((step,), f"{start.name}/table", note, frames=(start,))


# -- the negotiated limits --------------------------------------------------------------------

# the limits the serving peer holds the client's tune-ok to (its agreement, in the fuzzer's
# serving peer): an edge above the script's own value would make a valid tune-ok a violation
AGREED = ("frame-max", "channel-max")


@server(
    Point.TUNE,
    "tune-limit-edges",
    "connection.tune",
    "sends connection.tune's integer fields at the edges of their domains: 0 (no limit), "
    "65535, 2^31-1, 2^31, 2^32-1",
    (),
    "rule",
    scope=Special.IGNORE,  # valid values: the client accepts them and carries on
)
def tune_limit_edges(src: Source, strike: Strike) -> Built:
    tune = strike.frames[0]
    assert isinstance(tune, MethodFrame)
    least = int(strike.spec.constant("frame-min-size").value)
    values, notes = [], []
    for fld, ours in zip(tune.method.fields, tune.values, strict=True):
        width = _WIDTHS.get(fld.type)
        if width is None or fld.reserved:
            values.append(ours)
            continue
        bits = 8 * width
        edges = {0, (1 << bits) - 1} | ({(1 << 31) - 1, 1 << 31} if bits == 32 else set())
        if fld.name in AGREED and ours:  # only what the agreement leaves valid
            edges = {e for e in edges if 0 < e <= ours}
        if fld.name == "frame-max":
            edges = {e for e in edges if e == 0 or e >= least}
        chosen = int(src.pick(tuple(sorted(edges)))) if edges else int(ours)
        values.append(chosen)
        notes.append(f"{fld.name} {chosen}")
    frame = MethodFrame(0, tune.method, tuple(values))
    note = ", ".join(notes)
    return Built((wired(strike, frame)._replace(note=note),), tune.name, note, frames=(frame,))
