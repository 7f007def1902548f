"""Server-side 0-8/0-9/0-9-1 operators on a delivery's content: body sizes, bodies and
headers alone, of another class or shorter than a header's fixed fields, frames over frame-max, header table types and property
flags, a method within content, a delivery on a channel not open.

Section 4.2.6 answers incomplete or badly formatted content ("missing content headers, wrong
class IDs in content headers, missing content body frames") with 505 unexpected-frame, and
4.2.6.1 a content header's wrong class-id with 501 frame-error. It also says that "any
non-content frame explicitly marks the end of the content", so that a sender may abort a
content: a method in the middle of a content is read either way, as an error or as an abort.
An operator that puts a method there follows it with a body frame, which has no header before
it by either reading: 505 whichever way the client reads the method."""

from __future__ import annotations

from collections.abc import Sequence

from amqpfuzz.spec.amqp091.codec import ContentBody, ContentHeader, MethodFrame, raw

from ....operator import Built, Operator
from ...operators.common import other_class, spare_flags
from ...source import Source
from ...wire import WireFrame
from ..script import Point, Strike
from .common import closed_channel, serving, struck_content, unknown_type, wired

__all__ = ["OPERATORS"]

OPERATORS: list[Operator] = []
server = serving(OPERATORS)


def _delivery(
    strike: Strike, method: MethodFrame, header: ContentHeader, bodies: Sequence[ContentBody]
) -> tuple[WireFrame, ...]:
    return (wired(strike, method), wired(strike, header), *(wired(strike, b) for b in bodies))


@server(
    Point.DELIVER,
    "body-size-larger",
    "content size",
    "declares a body larger than the bodies that follow, then a method and a body frame",
    ("unexpected-frame",),
    "sequence",
)
def body_size_larger(src: Source, strike: Strike) -> Built:
    method, header, bodies = struck_content(strike)
    extra = src.between(1, 1 << 20)
    lying = ContentHeader(
        header.channel, header.class_id, header.body_size + extra, header.properties
    )
    after = MethodFrame(method.channel, method.method, method.values)
    # the method ends the content, or aborts it; the body frame after it has no header: 505
    orphan = ContentBody(header.channel, src.take(src.between(1, 32)))
    steps = (*_delivery(strike, method, lying, bodies), wired(strike, after), wired(strike, orphan))
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
    method, header, bodies = struck_content(strike)
    extra = ContentBody(header.channel, src.take(src.between(1, 32)))
    steps = (*_delivery(strike, method, header, bodies), wired(strike, extra))
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
    method, header, _ = struck_content(strike)
    body = ContentBody(header.channel, src.take(src.between(1, 64)))
    return Built((wired(strike, body),), "content", "body with no header", frames=(method,))


@server(
    Point.DELIVER,
    "header-alone",
    "content order",
    "sends a content header with no method before it",
    ("unexpected-frame",),
    "sequence",
)
def header_alone(src: Source, strike: Strike) -> Built:
    method, header, bodies = struck_content(strike)
    steps = (wired(strike, header), *(wired(strike, b) for b in bodies))
    return Built(steps, "content", "content header with no method", frames=(method,))


@server(
    Point.DELIVER,
    "header-class",
    "content header",
    "gives the header another class than its method",
    ("frame-error",),  # 4.2.6.1
    "sequence",
    also=("unexpected-frame",),  # 4.2.6: "wrong class IDs in content headers" (0-9-1 only)
)
def header_class(src: Source, strike: Strike) -> Built:
    method, header, bodies = struck_content(strike)
    other = other_class(src, header.class_id)
    wire = wired(strike, header)
    broken = wire._replace(payload=raw.short(other) + wire.payload[2:], note=f"with class {other}")
    steps = (wired(strike, method), broken, *(wired(strike, b) for b in bodies))
    return Built(steps, method.name, f"header class {other}", frames=(method,))


@server(
    Point.DELIVER,
    "header-undersized",
    "content header",
    "cuts a content header frame short of its fixed fields (class, weight, body size, flags), "
    "its size field telling the truth",
    ("frame-error",),  # a frame the client cannot decode: the constant's own definition
    "frame",
)
def header_undersized(src: Source, strike: Strike) -> Built:
    method, header, bodies = struck_content(strike)
    wire = wired(strike, header)
    kept = src.between(0, 13)  # (class 2, weight 2, body-size 8, flags 2: 14 octets at least)
    broken = wire._replace(payload=wire.payload[:kept], note=f"header of {kept} octets")
    steps = (wired(strike, method), broken, *(wired(strike, b) for b in bodies))
    return Built(steps, method.name, f"content header of {kept} octets", frames=(method,))


@server(
    Point.DELIVER,
    "above-frame-max",
    "frame size",
    "sends a body frame larger than the frame-max agreed",
    ("frame-error",),
    "frame",
)
def above_frame_max(src: Source, strike: Strike) -> Built:
    method, header, _ = struck_content(strike)
    if not strike.frame_max:  # no frame-max agreed: no frame is oversized (connection.tune)
        return _undecodable(src, strike, method, header)
    limit = strike.frame_max
    size = limit - 8 + src.between(1, 4096)
    body = ContentBody(header.channel, bytes(size))
    sized = ContentHeader(header.channel, header.class_id, size, header.properties)
    steps = (wired(strike, method), wired(strike, sized), wired(strike, body))
    return Built(
        steps,
        method.name,
        f"a body frame of {size + 8} octets over frame-max {limit}",
        frames=(method,),
    )


def _undecodable(src: Source, strike: Strike, method: MethodFrame, header: ContentHeader) -> Built:
    """Where the client and the server agreed no frame-max (both said 0: "no specific limit"),
    the delivery's method cut short instead: a frame the client cannot decode, 501 too."""
    wire = wired(strike, method)
    cut = src.between(1, len(wire.payload) - 4)
    broken = wire._replace(payload=wire.payload[:-cut], note=f"cut by {cut} octets")
    steps = (broken, wired(strike, header))
    note = f"no frame-max agreed: {method.name} {cut} octets short"
    return Built(steps, method.name, note, frames=(method,))


@server(
    Point.DELIVER,
    "headers-table-type",
    "field table",
    "puts a type code neither the grammar nor the dialect defines in the headers property",
    ("syntax-error",),
    "frame",
)
def headers_table_type(src: Source, strike: Strike) -> Built:
    method, header, bodies = struck_content(strike)
    cls = strike.spec.amqp_class(method.method.class_name)
    names = [p.name for p in cls.properties]
    if "headers" not in names:
        return header_class(src, strike)
    index = names.index("headers")
    flags = 1 << (15 - index)
    table = raw.table([raw.TableEntry(b"x", unknown_type(strike, src), src.take(src.below(9)))])
    payload = raw.content_header(header.class_id, header.body_size, flags, table)
    step = WireFrame(
        strike.codec.frame_header, header.channel, payload, note="headers with an unknown type code"
    )
    steps = (wired(strike, method), step, *(wired(strike, b) for b in bodies))
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
    method, header, bodies = struck_content(strike)
    flags = spare_flags(src, len(strike.spec.amqp_class(method.method.class_name).properties))
    payload = raw.content_header(header.class_id, header.body_size, flags)
    step = WireFrame(
        strike.codec.frame_header, header.channel, payload, note=f"flags 0x{flags:04x}"
    )
    steps = (wired(strike, method), step, *(wired(strike, b) for b in bodies))
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
    method, header, bodies = struck_content(strike)
    if not bodies:  # an empty body is complete with its header: give it one to interrupt
        body = ContentBody(header.channel, src.take(src.between(1, 32)))
        header = ContentHeader(
            header.channel, header.class_id, len(body.payload), header.properties
        )
        bodies = (body,)
    steps = (
        wired(strike, method),
        wired(strike, header),
        wired(strike, method),
        *(wired(strike, b) for b in bodies),
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
    method, header, bodies = struck_content(strike)
    channel = closed_channel(strike, src)
    steps = tuple(w._replace(channel=channel) for w in _delivery(strike, method, header, bodies))
    return Built(steps, method.name, f"a delivery on channel {channel}, not open", frames=(method,))
