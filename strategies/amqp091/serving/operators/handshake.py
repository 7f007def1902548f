"""Server-side 0-8/0-9/0-9-1 operators on the handshake: the protocol version offered,
``connection.start``'s tables, a start cut short, ``connection.tune``'s frame-max and channel.

Every one of them strikes before the client sends connection.open, where an error is answered
by closing the socket without sending any further data (0-9-1 section 2.2.4: "There is no
hand-shaking for errors on connections that are not fully open"; for a version the client
cannot handle, the rule ``connection.start/client-support`` says the same): their codes only
say what is wrong. The registration gives them that reaction (:data:`~..script.BEFORE_OPEN`)."""

from __future__ import annotations

from amqpfuzz.spec.amqp091.codec import MethodFrame, raw

from ....operator import Built, Operator, Special
from ...source import Source
from ...wire import WireFrame
from ..script import Point, Strike
from .common import serving, struck, unknown_type, wired

__all__ = ["OPERATORS"]

OPERATORS: list[Operator] = []
server = serving(OPERATORS)


def _start_with_table(strike: Strike, table: bytes, note: str) -> Built:
    start, _ = struck(strike)
    values = [
        raw.Raw(table) if f.type == "table" else v
        for f, v in zip(start.method.fields, start.values, strict=True)
    ]
    payload = raw.method_payload(
        start.method.class_index, start.method.index, raw.arguments(start.method, values)
    )
    step = WireFrame(strike.codec.frame_method, 0, payload, note=note, source=start)
    return Built((step,), f"{start.name}/server-properties", note, frames=(start,))


@server(
    Point.START,
    "start-version",
    "connection.start",
    "offers a protocol version the client did not ask for",
    (),
    "rule",
    scope=Special.SILENT,  # "MUST close the socket connection without sending any further data"
    rule="connection.start/client-support",
)
def start_version(src: Source, strike: Strike) -> Built:
    start, _ = struck(strike)
    major = src.pick((strike.spec.major + 1, 1, 9, 255))
    values = tuple(
        major if f.name == "version-major" else v
        for f, v in zip(start.method.fields, start.values, strict=True)
    )
    frame = MethodFrame(0, start.method, values)
    return Built(
        (wired(strike, frame)._replace(note=f"version {major}"),),
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
    "puts a type code neither the grammar nor the dialect defines in server-properties",
    ("syntax-error",),
    "frame",
)
def start_table_type(src: Source, strike: Strike) -> Built:
    code = unknown_type(strike, src)
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
    start, _ = struck(strike)
    wire = wired(strike, start)
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
    tune, _ = struck(strike)
    least = strike.spec.constant("frame-min-size").value
    small = src.pick((1, 8, 9, 512, least - 1))
    values = tuple(
        small if f.name == "frame-max" else v
        for f, v in zip(tune.method.fields, tune.values, strict=True)
    )
    frame = MethodFrame(0, tune.method, values)
    return Built(
        (wired(strike, frame)._replace(note=f"frame-max {small}"),),
        "connection.tune/frame-max/minimum",
        f"frame-max {small}",
        frames=(frame,),
    )


@server(
    Point.TUNE,
    "tune-on-channel",
    "channel zero",
    "sends connection.tune on a channel other than zero",
    ("command-invalid",),
    "sequence",
    # section 4.2.3 names this frame's code: "a non-zero channel number for one of these frames
    # MUST signal a connection exception with reply code 503"; before connection.open, 2.2.4
    # asks for the socket closed without a word: either is the specification's
    tolerate=("command-invalid",),
)
def tune_on_channel(src: Source, strike: Strike) -> Built:
    tune, _ = struck(strike)
    channel = src.between(1, 65535)
    step = wired(strike, tune)._replace(channel=channel, note=f"on channel {channel}")
    return Built((step,), tune.name, f"tune on channel {channel}", frames=(tune,))
