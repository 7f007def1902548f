"""Server-side 0-8/0-9/0-9-1 operators on any reply: its frame (end octet, size, type), its
arguments cut short, its channel (closed, or zero), its class and method (unknown, or the
client's).

A frame-end that is not 0xCE (where a lying size field puts another octet) or a frame type none
of the defined is "a fatal protocol error": the client closes the connection "without sending
any further data on it" (0-9-1 section 4.2.3), not with connection.close 501. A frame that
cannot be decoded (arguments cut short) is 501 frame-error, the constant's own definition ("a
malformed frame that the recipient could not decode"); no section names another code."""

from __future__ import annotations

from amqpfuzz.spec.amqp091.codec import raw

from ....operator import Built, Operator, Special
from ...operators.common import bytes_except, with_end, with_larger_size, with_smaller_size
from ...operators.framing import frame_types
from ...source import Source
from ...wire import WireFrame
from ..script import Point, Strike
from .common import closed_channel, plain, serving, struck, wired

__all__ = ["OPERATORS"]

OPERATORS: list[Operator] = []
server = serving(OPERATORS)


@server(
    Point.REPLY,
    "frame-end",
    "frame-end octet",
    "replaces the 0xCE that ends a reply",
    ("frame-error",),
    "frame",
    scope=Special.SILENT,
)
def frame_end(src: Source, strike: Strike) -> Built:
    method, tail = struck(strike)
    broken, end = with_end(src, wired(strike, method))
    return Built((broken, *tail), method.name, f"frame-end 0x{end:02x}", frames=(method,))


@server(
    Point.REPLY,
    "size-larger",
    "frame size field",
    "declares more payload than follows",
    ("frame-error",),
    "frame",
    scope=Special.SILENT,
)
def size_larger(src: Source, strike: Strike) -> Built:
    method, tail = struck(strike)
    broken, extra = with_larger_size(src, wired(strike, method))
    return Built((broken, *tail), method.name, f"size field {extra} larger", frames=(method,))


@server(
    Point.REPLY,
    "size-smaller",
    "frame size field",
    "declares less payload than follows",
    ("frame-error",),
    "frame",
    scope=Special.SILENT,
)
def size_smaller(src: Source, strike: Strike) -> Built:
    method, tail = struck(strike)
    broken, cut = with_smaller_size(src, wired(strike, method))
    return Built((broken, *tail), method.name, f"size field {cut} smaller", frames=(method,))


@server(
    Point.REPLY,
    "unknown-frame-type",
    "frame type",
    "gives a reply a frame type the specification does not define (0-8's and 0-9's out-of-band "
    "and trace frames, 4 to 7, and the 0-9-1 text's heartbeat type 4 are defined)",
    ("frame-error",),
    "frame",
    scope=Special.SILENT,
)
def unknown_frame_type(src: Source, strike: Strike) -> Built:
    method, tail = struck(strike)
    kind = int(src.pick(bytes_except(frame_types(strike.spec))))
    broken = wired(strike, method)._replace(frame_type=kind, note=f"as frame type {kind}")
    return Built((broken, *tail), method.name, f"frame type {kind}", frames=(method,))


@server(
    Point.REPLY,
    "truncated-arguments",
    "method arguments",
    "cuts a reply's arguments short",
    ("frame-error",),
    "frame",
)
def truncated_arguments(src: Source, strike: Strike) -> Built:
    method, tail = struck(strike)
    wire = wired(strike, method)
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
    # the reply struck may be connection.open-ok: a connection method on a channel other than
    # 0, which section 4.2.3 answers with 503 command-invalid
    tolerate=("command-invalid",),
)
def reply_closed_channel(src: Source, strike: Strike) -> Built:
    method, tail = struck(strike)
    channel = closed_channel(strike, src)
    steps = tuple(w._replace(channel=channel) for w in (wired(strike, method), *tail))
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
    method, tail = struck(strike)
    if method.method.class_name == "connection":  # already on channel zero: move it off
        steps = tuple(w._replace(channel=1 + src.below(8)) for w in (wired(strike, method), *tail))
        return Built(steps, method.name, f"{method.name} off channel zero", frames=(method,))
    steps = tuple(w._replace(channel=0) for w in (wired(strike, method), *tail))
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
    method, _ = struck(strike)
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
    method, _ = struck(strike)
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
    # struck in place of connection.open-ok, the method goes on channel 0: a channel's method
    # there, which is 504 channel-error as much as a method in the wrong direction
    tolerate=("channel-error",),
)
def client_method(src: Source, strike: Strike) -> Built:
    method, _ = struck(strike)
    candidates = tuple(
        m for m in strike.client_methods if m.class_name not in ("connection",) and not m.content
    )
    chosen = candidates[src.below(len(candidates))]
    values = tuple(plain(f) for f in chosen.fields)
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
