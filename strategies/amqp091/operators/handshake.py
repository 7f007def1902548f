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
mechanism it did not propose (``connection.start-ok/mechanism/validity``) and for tune-ok
values above its own (``connection.tune-ok/*/upper-limit``). Where the XML names no reaction,
each operator says how it reads the text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, TypeVar

from amqpfuzz.spec import OutcomeKind, Scope
from amqpfuzz.spec.amqp091 import Spec
from amqpfuzz.spec.amqp091.asserts import violation
from amqpfuzz.spec.amqp091.codec import ProtocolHeader

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
# RabbitMQ's extension: a client that announces it is told why its login was refused
_TOLD = {"product": "amqpfuzz", "capabilities": {"authentication_failure_close": True}}
# names no server proposes as its mechanism: not the proposed PLAIN's case or spelling, a list,
# RabbitMQ's demonstration mechanism (never offered unless configured)
_MECHANISMS = ("plain", "PLAIN AMQPLAIN", "PLAIN ", "RABBIT-CR-DEMO")


@dataclass(frozen=True)
class _Closing(Operator):
    """An operator whose case the server must answer by closing the socket, not with a
    negotiated close: after its own protocol header (``header``), or without sending anything
    more; ``accepted``: or by speaking what was sent; ``told``: or after a connection.close
    with one of these codes saying why."""

    header: bool = False
    accepted: bool = False
    told: tuple[str, ...] = ()

    def reaction(self, spec: Any, names: tuple[str, ...] = ()) -> Reaction:
        return _closing(self, spec)


@functools.cache
def _closing(op: _Closing, spec: Spec) -> Reaction:
    told = tuple(
        ErrorCode(c.name, c.value, Scope.CONNECTION) for c in (spec.constant(n) for n in op.told)
    )
    return Reaction(
        OutcomeKind.SOCKET_CLOSE,
        responses=("protocol header",) if op.header else (),
        or_reply=op.accepted,
        tolerated=told,
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
    told: tuple[str, ...] = (),
    rule: str | None = None,
) -> Callable[[_Build], _Build]:
    """Like ``operator``, for a case the server must answer by closing the socket."""

    def register(build: _Build) -> _Build:
        scope, codes = Special.SOCKET, ()
        closes = _Closing(name, description, breaks, codes, level, build, CODES, scope, rule=rule)
        OPERATORS.append(replace(closes, header=header, accepted=accepted, told=told))
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


def _known(spec: Spec, *names: str) -> tuple[str, ...]:
    """The codes of ``names`` the spec defines (0-8 and 0-9 have no unexpected-frame)."""
    defined = CODES.names(spec)
    return tuple(n for n in names if n in defined)


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
    "login (a server closes the socket on a failed login, as it must for a mechanism it does "
    "not know; it may say why first: connection.close with access-refused, which RabbitMQ "
    "sends a client that announces authentication_failure_close)",
    "logs in with PLAIN as a user made for the case, or as guest with a password made for it",
    "rule",
    Stage.START,
    told=("access-refused",),
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
    return Built(steps, "connection.start-ok", note, placement=Placement.START)


@closing(
    "malformed-response",
    "PLAIN's response ([authzid] NUL authcid NUL passwd, RFC 4616; the start-ok response "
    "is notnull): one that is not of that form is a failed login (the socket closed, or a "
    "connection.close with access-refused or syntax-error first)",
    "answers connection.start with PLAIN and a response that is not PLAIN's",
    "rule",
    Stage.START,
    told=("access-refused", "syntax-error"),
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
    steps = (_start_ok(ctx, response),)
    return Built(steps, "connection.start-ok", f"PLAIN response: {note}", Placement.START)


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


@staged(Stage.TUNE)
@operator(
    "out-of-order",
    "method order (the grammar's open-connection: C:OPEN follows C:TUNE-OK; anything else "
    "there is an invalid sequence, a frame on a channel one that was not expected)",
    "sends, after a valid tune-ok, a handshake method again or a channel's, not connection.open",
    ("command-invalid", "channel-error"),
    "sequence",
)
def out_of_order(src: Source, ctx: Context) -> Built:
    way = src.below(5)
    codes: tuple[str, ...] = ("command-invalid", "channel-error")
    if way == 1:
        wrong = _tune_ok(ctx)
    elif way == 2:
        wrong = _method(ctx, "connection.secure-ok", response=_login(src, ctx))
    elif way == 3:
        wrong = _method(ctx, "connection.close-ok")
    elif way == 4:
        wrong = _method(ctx, "channel.open", 1)
        codes = (*codes, "unexpected-frame")
    else:
        wrong = _start_ok(ctx, _login(src, ctx))
    name = wrong.label.split("(")[0]
    steps = (_tune_ok(ctx), wrong)
    return Built(
        steps, name, f"{name} in connection.open's place", Placement.START,
        codes=_known(ctx.spec, *codes),
    )  # fmt: skip


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
