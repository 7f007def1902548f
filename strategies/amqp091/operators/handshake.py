"""Operators on the connection itself: its protocol header, the login, the tuning, the virtual
host, the channel numbers it allows, and handshake methods where the handshake is not.

Every other operator runs on a connection amqpfuzz has already opened; these run on one of their
own, prepared only as far as the case needs (its :data:`STAGES`): nothing sent yet (``header``),
the protocol header answered with ``connection.start`` (``start``), logged in with the target's
credentials and ``connection.tune`` received (``tune``), or open with a channel-max of
:data:`NARROW` and channel 1 open (``narrow``). A case never holds the target's credentials: the
stages past the login are the driver's, and a case that logs in itself uses names made for it.

What the specification requires here is often the close of the socket, not a negotiated close:
the server's own protocol header and then the socket closed, for a header it cannot serve
(``connection.start/protocol-name``); the socket closed without any further data, for a
mechanism it did not propose (``connection.start-ok/mechanism/validity``), for tune-ok values
above its own (``connection.tune-ok/*/upper-limit``) and for any error it detects before
connection.open: 0-9-1 section 2.2.4, "There is no hand-shaking for errors on connections that
are not fully open. Following successful protocol header negotiation [...] and prior to sending
or receiving Open or Open-Ok, a peer that detects an error MUST close the socket without sending
any further data" (a failed login, a method out of order). A connection.close there is tolerated
only where the case's own start-ok asked for one (RabbitMQ's authentication failure
notification). An error in connection.open itself (an unknown virtual host) is one the server
detects after receiving Open: its connection.close is the reply. Where the XML names no reaction,
each operator says how it reads the text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, TypeVar

from amqpfuzz.spec import OutcomeKind, Scope
from amqpfuzz.spec.amqp091 import Spec
from amqpfuzz.spec.amqp091.asserts import violation
from amqpfuzz.spec.amqp091.codec import MethodFrame, ProtocolHeader

from ...cases import ErrorCode, Placement, Reaction
from ...operator import Built, Operator, Special, registrar
from ..context import CODES, Context
from ..source import Source
from ..wire import WireFrame, wire_frame

__all__ = ["HEADERS", "NARROW", "OPERATORS", "STAGES", "Stage"]

OPERATORS: list[Operator] = []
operator = registrar(OPERATORS, CODES)
_Build = TypeVar("_Build", bound=Callable[[Source, Context], Built])


class Stage(StrEnum):
    """How far the driver prepares a case's connection before the case's bytes go."""

    HEADER = "header"  # connected, nothing sent: the case sends the protocol header
    START = "start"  # the header sent, connection.start received: the case sends start-ok
    TUNE = "tune"  # logged in (the target's credentials), connection.tune received
    NARROW = "narrow"  # open with channel-max NARROW, channel 1 (the control channel) open


# the channel-max a ``narrow`` connection negotiates (channel 1 is open on it already)
NARROW = 2
STAGES: dict[str, Stage] = {}  # each operator's stage, by the operator's name

# The protocol header of each AMQP version (0-8's as its XML has it and as amqp.org printed it;
# 1.0's for each of its layers, transport 2.2 and security 5.1, 5.2).
HEADERS: dict[str, bytes] = {
    "0-8": b"AMQP\x01\x01\x08\x00",
    "0-8 as amqp.org printed it": b"AMQP\x01\x01\x09\x01",
    "0-9": b"AMQP\x01\x01\x00\x09",
    "0-9-1": b"AMQP\x00\x00\x09\x01",
    "0-10": b"AMQP\x01\x01\x00\x0a",
    "1.0": b"AMQP\x00\x01\x00\x00",
    "1.0 TLS": b"AMQP\x02\x01\x00\x00",
    "1.0 SASL": b"AMQP\x03\x01\x00\x00",
}
# headers no AMQP version has: another protocol's name (the rule's scenario), 2.0 (the
# server-support scenario's), versions and a 1.0 protocol id that do not exist, no version at
# all, and an HTTP request
_NOT_HEADERS = (
    b"AMQX\x00\x00\x09\x01",
    b"AMQP\x00\x02\x00\x00",
    b"AMQP\x00\x00\x09\x02",
    b"AMQP\x01\x01\x00\x0b",
    b"AMQP\x09\x01\x00\x00",
    b"AMQP\x00\x00\x00\x00",
    b"GET / HTTP/1.1\r\n\r\n",
)
_PROPERTIES = {"product": "amqpfuzz"}
# RabbitMQ's extension (its "authentication failure notifications"): a client that announces
# this capability in start-ok's client-properties is sent connection.close access-refused for a
# refused login, before the socket closes; without it, the socket closes silently (2.2.4)
_FAILURE_CLOSE = "authentication_failure_close"
_TOLD = {"product": "amqpfuzz", "capabilities": {_FAILURE_CLOSE: True}}
# names no server proposes as its mechanism: not the proposed PLAIN's case or spelling, a list,
# RabbitMQ's demonstration mechanism (never offered unless configured)
_MECHANISMS = ("plain", "PLAIN AMQPLAIN", "PLAIN ", "RABBIT-CR-DEMO")


@dataclass(frozen=True)
class _Closing(Operator):
    """An operator whose case the server must answer by closing the socket, not with a
    negotiated close: after its own protocol header (``header``), or without sending anything
    more; ``accepted``: or by speaking what was sent. A case that asked to be told why (its
    start-ok) carries the close it may be told with itself (:attr:`Built.tolerated`)."""

    header: bool = False
    accepted: bool = False

    def reaction(self, spec: Any, names: tuple[str, ...] = ()) -> Reaction:
        return _closing(self, spec)


@functools.cache
def _closing(op: _Closing, spec: Spec) -> Reaction:
    return Reaction(
        OutcomeKind.SOCKET_CLOSE,
        responses=("protocol header",) if op.header else (),
        or_reply=op.accepted,
    )


def closing(
    name: str,
    description: str,
    breaks: str,
    level: str,
    stage: Stage,
    *,
    header: bool = False,
    accepted: bool = False,
    rule: str | None = None,
) -> Callable[[_Build], _Build]:
    """Like ``operator``, for a case the server must answer by closing the socket."""

    def register(build: _Build) -> _Build:
        scope, codes = Special.SOCKET, ()
        closes = _Closing(name, description, breaks, codes, level, build, CODES, scope, rule=rule)
        OPERATORS.append(replace(closes, header=header, accepted=accepted))
        STAGES[name] = stage
        return build

    return register


def staged(stage: Stage) -> Callable[[_Build], _Build]:
    """Records the stage of the operator ``operator`` has just defined (put above it)."""

    def register(build: _Build) -> _Build:
        STAGES[OPERATORS[-1].name] = stage
        return build

    return register


def _ref(spec: Spec, rule: str) -> str:
    """``rule`` where the spec's file has it (0-8's and 0-9's have no rules), else the field
    or method it is about."""
    try:
        spec.rule(rule)
    except KeyError:
        return rule.rsplit("/", 1)[0]
    return rule


def _raw(data: bytes, note: str) -> WireFrame:
    return WireFrame(0, 0, b"", note=note, verbatim=data)


def _method(ctx: Context, name: str, channel: int = 0, **arguments: Any) -> WireFrame:
    return ctx.wire(ctx.codec.method(name, channel, **arguments))


def _frame_min(ctx: Context) -> int:
    return int(ctx.spec.constant("frame-min-size").value)


def _tune_ok(ctx: Context, channel_max: int = 1, frame_max: int | None = None) -> WireFrame:
    """A tune-ok any server must accept, unless told otherwise: one channel, frames of
    frame-min-size (every peer accepts those), no heartbeat."""
    frame_max = _frame_min(ctx) if frame_max is None else frame_max
    return _method(
        ctx, "connection.tune-ok", channel_max=channel_max, frame_max=frame_max, heartbeat=0
    )


def _start_ok(
    ctx: Context, response: bytes, mechanism: str = "PLAIN", told: bool = False
) -> WireFrame:
    return _method(
        ctx,
        "connection.start-ok",
        client_properties=_TOLD if told else _PROPERTIES,
        mechanism=mechanism,
        response=response,
        locale="en_US",
    )


def _asks_to_be_told(ctx: Context, steps: Sequence[WireFrame]) -> bool:
    """Whether the case's own start-ok (its bytes, read back) announces the
    authentication_failure_close capability in its client-properties."""
    reader = ctx.codec.reader(check_asserts=False)
    reader.feed(ctx.spec.protocol_header)
    for frame in reader.feed(b"".join(step.render(0) for step in steps)):
        if isinstance(frame, MethodFrame) and frame.name == "connection.start-ok":
            capabilities = frame.arguments["client_properties"].get("capabilities")
            return isinstance(capabilities, Mapping) and capabilities.get(_FAILURE_CLOSE) is True
    return False


def _told(ctx: Context, steps: Sequence[WireFrame]) -> tuple[ErrorCode, ...]:
    """The close a failed login may be answered with before the socket closes: connection.close
    access-refused, where the case's start-ok asked for it; none otherwise (2.2.4: the socket
    closed without any further data)."""
    if not _asks_to_be_told(ctx, steps):
        return ()
    refused = ctx.spec.constant("access-refused")
    return (ErrorCode(refused.name, refused.value, Scope.CONNECTION),)


def _vhost(src: Source, ctx: Context) -> str:
    """A virtual host nobody made, that connection.open's asserts allow (0-8's and 0-9's
    ``^[a-zA-Z0-9/-_]+$`` and their path syntax, which starts with "/"), so that its being
    unknown is all that is wrong with it."""
    name = ctx.fresh_name(src, "vhost-")
    fld = next(f for f in ctx.spec.method("connection.open").fields if f.name == "virtual-host")
    if violation(fld.asserts, name) is None:
        return name
    return "/" + re.sub(r"[^a-zA-Z0-9_]", "_", name)


def _login(src: Source, ctx: Context) -> bytes:
    """A PLAIN response nobody can log in with: a user made for the case (its password too)."""
    user = ctx.fresh_name(src, "user-").encode()
    return b"\0" + user + b"\0" + ctx.fresh_name(src, "password-").encode()


# -- the protocol header -------------------------------------------------------------------------


@closing(
    "bad-protocol-header",
    "protocol header (connection.start/protocol-name: a server that cannot support the "
    "protocol MUST answer with a valid protocol header and then close the socket)",
    "opens the connection with a header no AMQP version has, or with no header at all",
    "frame",
    Stage.HEADER,
    header=True,
)
def bad_protocol_header(src: Source, ctx: Context) -> Built:
    known = set(HEADERS.values())
    way = src.below(3)
    if way == 1:  # "AMQP" and a version nobody defined
        data = b"AMQP" + src.take(4)
        while data in known:
            data = b"AMQP" + bytes(((data[4] + 1) % 256,)) + data[5:]
    elif way == 2:  # eight octets that do not start as a header
        data = src.take(8)
        if data.startswith(b"AMQP"):
            data = b"XMQP" + data[4:]
    else:
        data = src.pick(_NOT_HEADERS)
    wire = (
        wire_frame(ctx.codec, ProtocolHeader(data))
        if data.startswith(b"AMQP")
        else _raw(data, f"not a protocol header: {data!r}")
    )
    ref = _ref(ctx.spec, "connection.start/protocol-name")
    return Built((wire,), ref, f"header {data[:8]!r}", placement=Placement.HEADER)


@closing(
    "other-protocol-header",
    "protocol header (connection.start/protocol-name and server-support: a server speaks the "
    "version asked for, or answers with a header of its own and closes the socket)",
    "opens the connection with another AMQP version's header (0-8, 0-9, 0-9-1, 0-10, 1.0 and "
    "its TLS and SASL layers)",
    "frame",
    Stage.HEADER,
    header=True,
    accepted=True,
)
def other_protocol_header(src: Source, ctx: Context) -> Built:
    own = ctx.spec.protocol_header
    version, data = src.pick(tuple((k, v) for k, v in HEADERS.items() if v != own))
    wire = wire_frame(ctx.codec, ProtocolHeader(data))
    ref = _ref(ctx.spec, "connection.start/server-support")
    return Built((wire,), ref, f"the {version} header", placement=Placement.HEADER)


# -- the login -------------------------------------------------------------------------------


@closing(
    "unknown-mechanism",
    "security mechanism (connection.start-ok/mechanism/validity: one the server did not "
    "propose, and it MUST close the connection without sending any further data)",
    "answers connection.start with a mechanism no server proposes",
    "rule",
    Stage.START,
    rule="connection.start-ok/mechanism/validity",
)
def unknown_mechanism(src: Source, ctx: Context) -> Built:
    mechanism = src.pick(_MECHANISMS) if src.edge() else ctx.fresh_name(src, "mechanism-").upper()
    steps = (_start_ok(ctx, _login(src, ctx), mechanism),)
    ref = _ref(ctx.spec, "connection.start-ok/mechanism/validity")
    return Built(steps, ref, f"mechanism {mechanism!r}", placement=Placement.START)


@closing(
    "refused-login",
    "login (0-9-1 section 2.2.4: an error before Open or Open-Ok closes the socket without "
    "any further data; a case whose start-ok announces authentication_failure_close, RabbitMQ's "
    "extension, may be told why first: connection.close with access-refused)",
    "logs in with PLAIN as a user made for the case, or as guest with a password made for it",
    "rule",
    Stage.START,
)
def refused_login(src: Source, ctx: Context) -> Built:
    way = src.below(3)
    password = ctx.fresh_name(src, "password-").encode()
    if way == 1:
        response, note = b"\0guest\0" + password, "guest with a wrong password"
    elif way == 2:  # RFC 4616's authorization identity first
        user = ctx.fresh_name(src, "user-").encode()
        response, note = user + b"\0" + user + b"\0" + password, "an unknown user, as itself"
    else:
        user = ctx.fresh_name(src, "user-").encode()
        response, note = b"\0" + user + b"\0" + password, "an unknown user"
    told = src.byte() % 4 != 0  # mostly: RabbitMQ is quick to say why, slow to say nothing
    steps = (_start_ok(ctx, response, told=told),)
    note += ", told why" if told else ""
    return Built(
        steps, "connection.start-ok", note, placement=Placement.START, tolerated=_told(ctx, steps)
    )


@closing(
    "malformed-response",
    "PLAIN's response ([authzid] NUL authcid NUL passwd, RFC 4616; the start-ok response "
    "is notnull): one that is not of that form is a failed login (0-9-1 section 2.2.4: the "
    "socket closed without any further data; connection.close access-refused first only for "
    "a case whose start-ok announces authentication_failure_close)",
    "answers connection.start with PLAIN and a response that is not PLAIN's",
    "rule",
    Stage.START,
)
def malformed_response(src: Source, ctx: Context) -> Built:
    user = ctx.fresh_name(src, "user-").encode()
    password = ctx.fresh_name(src, "password-").encode()
    response, note = src.pick(
        (
            (b"", "empty"),
            (user + b" " + password, "no NUL"),
            (b"\0" + user, "one field"),
            (b"\0" + user + b"\0" + password + b"\0" + user, "four fields"),
            (b"\0\0", "empty identity and password"),
        )
    )
    told = src.byte() % 4 != 0  # as refused-login's: announced, mostly
    steps = (_start_ok(ctx, response, told=told),)
    note = f"PLAIN response: {note}" + (", told why" if told else "")
    return Built(
        steps, "connection.start-ok", note, placement=Placement.START, tolerated=_told(ctx, steps)
    )


@closing(
    "login-skipped",
    "method order (a method in start-ok's place selects no mechanism: read as "
    "connection.start-ok/mechanism/validity, the socket closed without any further data)",
    "answers connection.start with a later handshake method or a channel's, not start-ok",
    "sequence",
    Stage.START,
)
def login_skipped(src: Source, ctx: Context) -> Built:
    way = src.below(4)
    if way == 1:
        steps = (_method(ctx, "connection.open", virtual_host="/"),)
    elif way == 2:
        steps = (_method(ctx, "channel.open", 1),)
    elif way == 3:
        steps = (_method(ctx, "connection.secure-ok", response=_login(src, ctx)),)
    else:
        steps = (_tune_ok(ctx),)
    name = steps[0].label.split("(")[0]
    return Built(steps, name, f"{name} in start-ok's place", placement=Placement.START)


# -- tuning and opening ----------------------------------------------------------------------


@closing(
    "tune-out-of-range",
    "tune-ok values (connection.tune-ok/*/upper-limit: above the server's, it MUST close the "
    "connection without a negotiated close; frame-max/minimum: below frame-min-size, and "
    "channel-max's notnull assert, read the same way). A server that proposed no limit (0) "
    "takes the values above as valid",
    "answers connection.tune with a frame-max or channel-max above any limit, a frame-max "
    "below frame-min-size, or a channel-max of 0",
    "rule",
    Stage.TUNE,
)
def tune_out_of_range(src: Source, ctx: Context) -> Built:
    way = src.below(4)
    if way == 1:
        low = src.between(1, _frame_min(ctx) - 1)
        steps = (_tune_ok(ctx, frame_max=low),)
        rule, note = "connection.tune-ok/frame-max/minimum", f"frame-max {low}"
    elif way == 2:
        steps = (_tune_ok(ctx, channel_max=0xFFFF),)
        rule, note = "connection.tune-ok/channel-max/upper-limit", "channel-max 65535"
    elif way == 3:  # notnull: no channel at all
        steps = (_tune_ok(ctx, channel_max=0),)
        rule, note = "connection.tune-ok/channel-max/notnull", "channel-max 0"
    else:
        steps = (_tune_ok(ctx, frame_max=0xFFFFFFFF),)
        rule, note = "connection.tune-ok/frame-max/upper-limit", "frame-max 4294967295"
    return Built(steps, _ref(ctx.spec, rule), note, placement=Placement.START)


@staged(Stage.TUNE)
@operator(
    "unknown-vhost",
    "virtual host (invalid-path: the client tried to work with an unknown virtual host)",
    "opens a virtual host nobody made, after a valid tune-ok",
    ("invalid-path",),
    "rule",
)
def unknown_vhost(src: Source, ctx: Context) -> Built:
    vhost = _vhost(src, ctx)
    steps = (_tune_ok(ctx), _method(ctx, "connection.open", virtual_host=vhost))
    return Built(
        steps, "connection.open/virtual-host", "a virtual host nobody made", Placement.START
    )


@closing(
    "out-of-order",
    "method order (the grammar's open-connection: C:OPEN follows C:TUNE-OK; an error before "
    "Open or Open-Ok, 0-9-1 section 2.2.4: the socket closed without any further data)",
    "sends, after a valid tune-ok, a handshake method again or a channel's, not connection.open",
    "sequence",
    Stage.TUNE,
)
def out_of_order(src: Source, ctx: Context) -> Built:
    way = src.below(5)
    if way == 1:
        wrong = _tune_ok(ctx)
    elif way == 2:
        wrong = _method(ctx, "connection.secure-ok", response=_login(src, ctx))
    elif way == 3:
        wrong = _method(ctx, "connection.close-ok")
    elif way == 4:
        wrong = _method(ctx, "channel.open", 1)
    else:
        wrong = _start_ok(ctx, _login(src, ctx))
    name = wrong.label.split("(")[0]
    steps = (_tune_ok(ctx), wrong)
    return Built(steps, name, f"{name} in connection.open's place", Placement.START)


# -- an open connection ----------------------------------------------------------------------


@staged(Stage.NARROW)
@operator(
    "channel-above-max",
    "channel-max (connection.tune: usable channel numbers are 1..channel-max; tune-ok: the "
    "most channels the client will use)",
    "opens a channel numbered above the negotiated channel-max, or one more than it allows",
    ("channel-error", "resource-error", "not-allowed"),
    "rule",
)
def channel_above_max(src: Source, ctx: Context) -> Built:
    way = src.below(3)
    if way == 1:  # a number above it, the count within it
        numbers: tuple[int, ...] = (src.between(NARROW + 1, 0xFFFF),)
        note = f"channel {numbers[0]} of {NARROW}"
    elif way == 2:
        numbers, note = (0xFFFF,), f"channel 65535 of {NARROW}"
    else:  # every number it allows, then the next
        numbers = tuple(range(2, NARROW + 2))
        note = f"{len(numbers) + 1} channels of {NARROW}"
    steps = tuple(_method(ctx, "channel.open", n) for n in numbers)
    return Built(steps, "connection.tune/channel-max", note, Placement.NONE)


@operator(
    "handshake-again",
    "method order (the grammar: the handshake's methods open the connection once; "
    "connection.close/stability: once the server has sent close, it discards what comes but "
    "a close, which it answers with close-ok)",
    "sends a handshake method on an open connection, and then, or not, closes the connection "
    "or sends the method again",
    ("command-invalid", "channel-error"),
    "sequence",
)
def handshake_again(src: Source, ctx: Context) -> Built:
    way = src.below(4)
    if way == 1:
        again = _tune_ok(ctx)
    elif way == 2:
        again = _method(ctx, "connection.open", virtual_host=_vhost(src, ctx))
    elif way == 3:
        again = _method(ctx, "connection.secure-ok", response=_login(src, ctx))
    else:
        again = _start_ok(ctx, _login(src, ctx))
    name = again.label.split("(")[0]
    steps: tuple[WireFrame, ...] = (again,)
    then = src.below(3)
    if then == 1:  # crossing the server's close
        close = ctx.codec.method("connection.close", 0, reply_code=200, reply_text="amqpfuzz")
        steps += (ctx.wire(close),)
    elif then == 2:  # to be discarded
        steps += (again,)
    note = f"{name} again" + ("", ", then connection.close", ", twice")[then]
    return Built(steps, name, note, Placement.NONE)
