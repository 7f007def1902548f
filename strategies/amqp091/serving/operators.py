"""Server-side operators: what a hostile broker breaks, and what the client must do about it.

Each operator strikes at one :class:`~.script.Point` of a connection and breaks the valid
frames the peer was about to send there (:class:`~.script.Strike`), or adds frames of its own
once the client is quiet; it carries the reaction the specification requires of the client, by
the reply-code constants it names (a hard error: the client closes the connection with that
code), or ``socket`` where a rule says the client closes the socket without a word. The
catalogue's order is the order Hypothesis shrinks towards.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from amqpfuzz.spec.amqp091.codec import ContentBody, ContentHeader, MethodFrame, raw
from amqpfuzz.spec.amqp091.codec.tables import DIALECTS

from ...operator import Built, Operator, Special, registrar
from ..context import CODES
from ..operators.common import (
    bytes_except,
    other_class,
    spare_flags,
    with_end,
    with_larger_size,
    with_smaller_size,
)
from ..source import Source
from ..wire import WireFrame, wire_frame
from .script import Point, Strike

__all__ = ["OPERATORS", "POINTS"]

OPERATORS: list[Operator] = []
POINTS: dict[str, Point] = {}
_register = registrar(OPERATORS, CODES)


def server(
    point: Point, name: str, breaks: str, how: str, codes: Sequence[str], level: str, **options: Any
) -> Callable[[Callable[[Source, Strike], Built]], Callable[[Source, Strike], Built]]:
    """Registers a server-side operator striking at ``point``."""
    POINTS[name] = point
    return _register(name, breaks, how, codes, level, **options)


def _wire(strike: Strike, frame: Any) -> WireFrame:
    return wire_frame(strike.codec, frame)


def _first(strike: Strike) -> tuple[MethodFrame, tuple[WireFrame, ...]]:
    """The method frame struck, and the rest of what went with it (its content)."""
    method = strike.frames[0]
    assert isinstance(method, MethodFrame)
    return method, tuple(_wire(strike, f) for f in strike.frames[1:])


def _content(strike: Strike) -> tuple[MethodFrame, ContentHeader, tuple[ContentBody, ...]]:
    method, *rest = strike.frames
    assert isinstance(method, MethodFrame) and isinstance(rest[0], ContentHeader)
    return method, rest[0], tuple(f for f in rest[1:] if isinstance(f, ContentBody))


def _closed_channel(strike: Strike, src: Source) -> int:
    free = [n for n in range(1, 64) if n not in strike.channels]
    return free[src.below(len(free))]


def _unknown_type(strike: Strike, src: Source) -> bytes:
    known = frozenset(ord(c) for c in DIALECTS[strike.codec.dialect])
    return bytes((src.pick(bytes_except(known)),))


def _start_with_table(strike: Strike, table: bytes, note: str) -> Built:
    start, _ = _first(strike)
    values = [
        raw.Raw(table) if f.type == "table" else v
        for f, v in zip(start.method.fields, start.values, strict=True)
    ]
    payload = raw.method_payload(
        start.method.class_index, start.method.index, raw.arguments(start.method, values)
    )
    step = WireFrame(strike.codec.frame_method, 0, payload, note=note, source=start)
    return Built((step,), f"{start.name}/server-properties", note, frames=(start,))


# -- the handshake ---------------------------------------------------------------------------


@server(
    Point.START,
    "start-version",
    "connection.start",
    "offers a protocol version the client did not ask for",
    (),
    "rule",
    scope=Special.SOCKET,
    rule="connection.start/client-support",
)
def start_version(src: Source, strike: Strike) -> Built:
    start, _ = _first(strike)
    major = src.pick((strike.spec.major + 1, 1, 9, 255))
    values = tuple(
        major if f.name == "version-major" else v
        for f, v in zip(start.method.fields, start.values, strict=True)
    )
    frame = MethodFrame(0, start.method, values)
    return Built(
        (_wire(strike, frame)._replace(note=f"version {major}"),),
        "connection.start/client-support",
        f"version-major {major}",
        frames=(frame,),
    )


@server(
    Point.START,
    "start-table-overrun",
    "field table",
    "declares server-properties longer than the frame",
    ("frame-error",),
    "frame",
)
def start_table_overrun(src: Source, strike: Strike) -> Built:
    length = src.between(4096, 1 << 20)
    return _start_with_table(
        strike, raw.long(length), f"server-properties length {length}, no entries"
    )


@server(
    Point.START,
    "start-table-negative",
    "field table",
    "declares server-properties of a length past 2^31",
    ("frame-error", "syntax-error"),
    "frame",
)
def start_table_negative(src: Source, strike: Strike) -> Built:
    length = src.between(1 << 31, (1 << 32) - 1)
    return _start_with_table(
        strike, raw.long(length), f"server-properties length {length} (negative as signed)"
    )


@server(
    Point.START,
    "start-table-type",
    "field table",
    "puts a type code the dialect does not define in server-properties",
    ("syntax-error",),
    "frame",
)
def start_table_type(src: Source, strike: Strike) -> Built:
    code = _unknown_type(strike, src)
    table = raw.table([raw.TableEntry(b"product", code, src.take(src.below(9)))])
    return _start_with_table(strike, table, f"server-properties entry of type code {code!r}")


@server(
    Point.START,
    "start-truncated",
    "method arguments",
    "cuts connection.start's arguments short",
    ("frame-error", "syntax-error"),
    "frame",
)
def start_truncated(src: Source, strike: Strike) -> Built:
    start, _ = _first(strike)
    wire = _wire(strike, start)
    cut = src.between(1, len(wire.payload) - 5)
    broken = wire._replace(payload=wire.payload[:-cut], note=f"cut by {cut} octets")
    return Built((broken,), start.name, f"arguments {cut} octets short", frames=(start,))


@server(
    Point.TUNE,
    "tune-frame-max-small",
    "connection.tune",
    "sets a frame-max below the minimum the specification allows",
    ("syntax-error", "not-allowed"),
    "rule",
    rule="connection.tune/frame-max/minimum",
)
def tune_frame_max_small(src: Source, strike: Strike) -> Built:
    tune, _ = _first(strike)
    least = strike.spec.constant("frame-min-size").value
    small = src.pick((1, 8, 9, 512, least - 1))
    values = tuple(
        small if f.name == "frame-max" else v
        for f, v in zip(tune.method.fields, tune.values, strict=True)
    )
    frame = MethodFrame(0, tune.method, values)
    return Built(
        (_wire(strike, frame)._replace(note=f"frame-max {small}"),),
        "connection.tune/frame-max/minimum",
        f"frame-max {small}",
        frames=(frame,),
    )


@server(
    Point.TUNE,
    "tune-on-channel",
    "channel zero",
    "sends connection.tune on a channel other than zero",
    ("command-invalid", "channel-error"),
    "sequence",
)
def tune_on_channel(src: Source, strike: Strike) -> Built:
    tune, _ = _first(strike)
    channel = src.between(1, 65535)
    step = _wire(strike, tune)._replace(channel=channel, note=f"on channel {channel}")
    return Built((step,), tune.name, f"tune on channel {channel}", frames=(tune,))


# -- any reply --------------------------------------------------------------------------------


@server(
    Point.REPLY,
    "frame-end",
    "frame-end octet",
    "replaces the 0xCE that ends a reply",
    ("frame-error",),
    "frame",
)
def frame_end(src: Source, strike: Strike) -> Built:
    method, tail = _first(strike)
    broken, end = with_end(src, _wire(strike, method))
    return Built((broken, *tail), method.name, f"frame-end 0x{end:02x}", frames=(method,))


@server(
    Point.REPLY,
    "size-larger",
    "frame size field",
    "declares more payload than follows",
    ("frame-error",),
    "frame",
)
def size_larger(src: Source, strike: Strike) -> Built:
    method, tail = _first(strike)
    broken, extra = with_larger_size(src, _wire(strike, method))
    return Built((broken, *tail), method.name, f"size field {extra} larger", frames=(method,))


@server(
    Point.REPLY,
    "size-smaller",
    "frame size field",
    "declares less payload than follows",
    ("frame-error",),
    "frame",
)
def size_smaller(src: Source, strike: Strike) -> Built:
    method, tail = _first(strike)
    broken, cut = with_smaller_size(src, _wire(strike, method))
    return Built((broken, *tail), method.name, f"size field {cut} smaller", frames=(method,))


@server(
    Point.REPLY,
    "unknown-frame-type",
    "frame type",
    "gives a reply a frame type the specification does not define",
    ("frame-error",),
    "frame",
)
def unknown_frame_type(src: Source, strike: Strike) -> Built:
    method, tail = _first(strike)
    codec = strike.codec
    known = {codec.frame_method, codec.frame_header, codec.frame_body, codec.frame_heartbeat}
    kind = int(src.pick(bytes_except(frozenset(known))))
    broken = _wire(strike, method)._replace(frame_type=kind, note=f"as frame type {kind}")
    return Built((broken, *tail), method.name, f"frame type {kind}", frames=(method,))


@server(
    Point.REPLY,
    "truncated-arguments",
    "method arguments",
    "cuts a reply's arguments short",
    ("frame-error", "syntax-error"),
    "frame",
)
def truncated_arguments(src: Source, strike: Strike) -> Built:
    method, tail = _first(strike)
    wire = _wire(strike, method)
    room = len(wire.payload) - 4
    if room <= 0:  # nothing but the ids: cut into them
        broken = wire._replace(payload=wire.payload[:2], note="ids cut short")
        return Built((broken, *tail), method.name, "method ids cut short", frames=(method,))
    cut = src.between(1, room)
    broken = wire._replace(payload=wire.payload[:-cut], note=f"cut by {cut} octets")
    return Built((broken, *tail), method.name, f"arguments {cut} octets short", frames=(method,))


@server(
    Point.REPLY,
    "reply-closed-channel",
    "channel state",
    "answers on a channel the client has not opened",
    ("channel-error",),
    "sequence",
)
def reply_closed_channel(src: Source, strike: Strike) -> Built:
    method, tail = _first(strike)
    channel = _closed_channel(strike, src)
    steps = tuple(w._replace(channel=channel) for w in (_wire(strike, method), *tail))
    return Built(
        steps, method.name, f"{method.name} on channel {channel}, not open", frames=(method,)
    )


@server(
    Point.REPLY,
    "reply-channel-zero",
    "channel zero",
    "answers a channel's method on channel zero",
    ("command-invalid", "channel-error"),
    "sequence",
)
def reply_channel_zero(src: Source, strike: Strike) -> Built:
    method, tail = _first(strike)
    if method.method.class_name == "connection":  # already on channel zero: move it off
        steps = tuple(w._replace(channel=1 + src.below(8)) for w in (_wire(strike, method), *tail))
        return Built(steps, method.name, f"{method.name} off channel zero", frames=(method,))
    steps = tuple(w._replace(channel=0) for w in (_wire(strike, method), *tail))
    return Built(steps, method.name, f"{method.name} on channel zero", frames=(method,))


@server(
    Point.REPLY,
    "unknown-method",
    "method id",
    "answers with a method id its class does not define",
    ("command-invalid", "not-implemented"),
    "frame",
)
def unknown_method(src: Source, strike: Strike) -> Built:
    method, _ = _first(strike)
    cls = strike.spec.amqp_class(method.method.class_name)
    known = {m.index for m in cls.methods}
    index = src.pick(tuple(i for i in range(1, 256) if i not in known))
    payload = raw.method_payload(cls.index, index, src.take(src.below(16)))
    step = WireFrame(
        strike.codec.frame_method,
        strike.channel if cls.name != "connection" else 0,
        payload,
        note=f"method {cls.index}/{index}",
    )
    return Built((step,), cls.name, f"{cls.name} method id {index}", frames=(method,))


@server(
    Point.REPLY,
    "unknown-class",
    "class id",
    "answers with a class id the specification does not define",
    ("command-invalid", "not-implemented"),
    "frame",
)
def unknown_class(src: Source, strike: Strike) -> Built:
    method, _ = _first(strike)
    known = {c.index for c in strike.spec.classes}
    class_id = src.pick(tuple(i for i in range(1, 256) if i not in known))
    payload = raw.method_payload(class_id, src.between(1, 100), src.take(src.below(16)))
    step = WireFrame(strike.codec.frame_method, strike.channel, payload, note=f"class {class_id}")
    return Built((step,), "class", f"class id {class_id}", frames=(method,))


@server(
    Point.REPLY,
    "client-method",
    "chassis",
    "answers with a method only a client sends",
    ("command-invalid", "not-implemented"),
    "sequence",
)
def client_method(src: Source, strike: Strike) -> Built:
    method, _ = _first(strike)
    candidates = tuple(
        m for m in strike.client_methods if m.class_name not in ("connection",) and not m.content
    )
    chosen = candidates[src.below(len(candidates))]
    values = tuple(_plain(f) for f in chosen.fields)
    payload = raw.method_payload(chosen.class_index, chosen.index, raw.arguments(chosen, values))
    step = WireFrame(
        strike.codec.frame_method,
        strike.channel,
        payload,
        note=f"{chosen.full_name} from the server",
    )
    return Built(
        (step,), f"{chosen.full_name}", f"{chosen.full_name} sent by the server", frames=(method,)
    )


def _plain(fld: Any) -> Any:
    return {"bit": False, "table": {}, "shortstr": "", "longstr": b""}.get(fld.type, 0)


# -- deliveries -------------------------------------------------------------------------------


def _delivery(
    strike: Strike, method: MethodFrame, header: ContentHeader, bodies: Sequence[ContentBody]
) -> tuple[WireFrame, ...]:
    return (_wire(strike, method), _wire(strike, header), *(_wire(strike, b) for b in bodies))


@server(
    Point.DELIVER,
    "body-size-larger",
    "content size",
    "declares a body larger than the bodies that follow, then a method",
    ("unexpected-frame",),
    "sequence",
)
def body_size_larger(src: Source, strike: Strike) -> Built:
    method, header, bodies = _content(strike)
    extra = src.between(1, 1 << 20)
    lying = ContentHeader(
        header.channel, header.class_id, header.body_size + extra, header.properties
    )
    after = MethodFrame(method.channel, method.method, method.values)
    steps = (*_delivery(strike, method, lying, bodies), _wire(strike, after))
    return Built(steps, method.name, f"body-size {extra} larger than sent", frames=(method,))


@server(
    Point.DELIVER,
    "body-too-long",
    "content size",
    "sends more body bytes than the header declared",
    ("unexpected-frame",),
    "sequence",
)
def body_too_long(src: Source, strike: Strike) -> Built:
    method, header, bodies = _content(strike)
    extra = ContentBody(header.channel, src.take(src.between(1, 32)))
    steps = (*_delivery(strike, method, header, bodies), _wire(strike, extra))
    return Built(
        steps, method.name, f"{len(extra.payload)} body bytes more than declared", frames=(method,)
    )


@server(
    Point.DELIVER,
    "body-alone",
    "content order",
    "sends a body frame with no header before it",
    ("unexpected-frame",),
    "sequence",
)
def body_alone(src: Source, strike: Strike) -> Built:
    method, header, _ = _content(strike)
    body = ContentBody(header.channel, src.take(src.between(1, 64)))
    return Built((_wire(strike, body),), "content", "body with no header", frames=(method,))


@server(
    Point.DELIVER,
    "header-alone",
    "content order",
    "sends a content header with no method before it",
    ("unexpected-frame",),
    "sequence",
)
def header_alone(src: Source, strike: Strike) -> Built:
    method, header, bodies = _content(strike)
    steps = (_wire(strike, header), *(_wire(strike, b) for b in bodies))
    return Built(steps, "content", "content header with no method", frames=(method,))


@server(
    Point.DELIVER,
    "header-class",
    "content header",
    "gives the header another class than its method",
    ("frame-error",),
    "sequence",
)
def header_class(src: Source, strike: Strike) -> Built:
    method, header, bodies = _content(strike)
    other = other_class(src, header.class_id)
    wire = _wire(strike, header)
    broken = wire._replace(payload=raw.short(other) + wire.payload[2:], note=f"with class {other}")
    steps = (_wire(strike, method), broken, *(_wire(strike, b) for b in bodies))
    return Built(steps, method.name, f"header class {other}", frames=(method,))


@server(
    Point.DELIVER,
    "above-frame-max",
    "frame size",
    "sends a body frame larger than the frame-max agreed",
    ("frame-error",),
    "frame",
)
def above_frame_max(src: Source, strike: Strike) -> Built:
    method, header, _ = _content(strike)
    limit = strike.frame_max or 131072
    size = limit - 8 + src.between(1, 4096)
    body = ContentBody(header.channel, bytes(size))
    sized = ContentHeader(header.channel, header.class_id, size, header.properties)
    steps = (_wire(strike, method), _wire(strike, sized), _wire(strike, body))
    return Built(
        steps,
        method.name,
        f"a body frame of {size + 8} octets over frame-max {limit}",
        frames=(method,),
    )


@server(
    Point.DELIVER,
    "headers-table-type",
    "field table",
    "puts a type code the dialect does not define in the headers property",
    ("syntax-error",),
    "frame",
)
def headers_table_type(src: Source, strike: Strike) -> Built:
    method, header, bodies = _content(strike)
    cls = strike.spec.amqp_class(method.method.class_name)
    names = [p.name for p in cls.properties]
    if "headers" not in names:
        return header_class(src, strike)
    index = names.index("headers")
    flags = 1 << (15 - index)
    table = raw.table([raw.TableEntry(b"x", _unknown_type(strike, src), src.take(src.below(9)))])
    payload = raw.content_header(header.class_id, header.body_size, flags, table)
    step = WireFrame(
        strike.codec.frame_header, header.channel, payload, note="headers with an unknown type code"
    )
    steps = (_wire(strike, method), step, *(_wire(strike, b) for b in bodies))
    return Built(
        steps, f"{method.name}/headers", "headers entry of an unknown type", frames=(method,)
    )


@server(
    Point.DELIVER,
    "property-flags",
    "content header",
    "sets property flags the class does not define",
    ("syntax-error", "frame-error"),
    "frame",
)
def property_flags(src: Source, strike: Strike) -> Built:
    method, header, bodies = _content(strike)
    flags = spare_flags(src, len(strike.spec.amqp_class(method.method.class_name).properties))
    payload = raw.content_header(header.class_id, header.body_size, flags)
    step = WireFrame(
        strike.codec.frame_header, header.channel, payload, note=f"flags 0x{flags:04x}"
    )
    steps = (_wire(strike, method), step, *(_wire(strike, b) for b in bodies))
    return Built(steps, method.name, f"property flags 0x{flags:04x}", frames=(method,))


@server(
    Point.DELIVER,
    "method-in-content",
    "content order",
    "sends a method before the content is complete",
    ("unexpected-frame",),
    "sequence",
)
def method_in_content(src: Source, strike: Strike) -> Built:
    method, header, bodies = _content(strike)
    steps = (
        _wire(strike, method),
        _wire(strike, header),
        _wire(strike, method),
        *(_wire(strike, b) for b in bodies),
    )
    return Built(steps, method.name, f"{method.name} again inside its content", frames=(method,))


@server(
    Point.DELIVER,
    "deliver-closed-channel",
    "channel state",
    "delivers on a channel the client has not opened",
    ("channel-error",),
    "sequence",
)
def deliver_closed_channel(src: Source, strike: Strike) -> Built:
    method, header, bodies = _content(strike)
    channel = _closed_channel(strike, src)
    steps = tuple(w._replace(channel=channel) for w in _delivery(strike, method, header, bodies))
    return Built(steps, method.name, f"a delivery on channel {channel}, not open", frames=(method,))


# -- frames of the server's own ------------------------------------------------------------------


@server(
    Point.AFTER,
    "heartbeat-channel",
    "heartbeat",
    "sends a heartbeat on a channel other than zero",
    ("unexpected-frame", "command-invalid"),
    "frame",
)
def heartbeat_channel(src: Source, strike: Strike) -> Built:
    channel = strike.channel or 1
    step = WireFrame(
        strike.codec.frame_heartbeat, channel, b"", note=f"heartbeat on channel {channel}"
    )
    return Built((step,), "heartbeat", f"heartbeat on channel {channel}")


@server(
    Point.AFTER,
    "heartbeat-payload",
    "heartbeat",
    "sends a heartbeat with a payload",
    ("frame-error",),
    "frame",
)
def heartbeat_payload(src: Source, strike: Strike) -> Built:
    payload = src.take(src.between(1, 64))
    step = WireFrame(
        strike.codec.frame_heartbeat, 0, payload, note=f"heartbeat with {len(payload)} octets"
    )
    return Built((step,), "heartbeat", f"heartbeat with a {len(payload)}-octet payload")


@server(
    Point.AFTER,
    "unsolicited-reply",
    "method order",
    "answers a synchronous method the client never sent",
    ("command-invalid", "unexpected-frame", "channel-error"),
    "sequence",
)
def unsolicited_reply(src: Source, strike: Strike) -> Built:
    candidates = tuple(
        m
        for m in strike.server_methods
        if not m.responses and not m.content and m.class_name not in ("connection", "channel")
    )
    chosen = candidates[src.below(len(candidates))]
    values = tuple(_plain(f) for f in chosen.fields)
    payload = raw.method_payload(chosen.class_index, chosen.index, raw.arguments(chosen, values))
    step = WireFrame(
        strike.codec.frame_method,
        strike.channel or 1,
        payload,
        note=f"{chosen.full_name} nobody asked for",
    )
    return Built((step,), chosen.full_name, f"{chosen.full_name} unasked")
