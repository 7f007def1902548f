"""Valid 0-10 cases: one command a server implements, with values drawn for its fields, sent
with the sync bit on the case's session.

The sync bit asks the peer for a prompt ``session.completed``, which is the reply every valid
case requires; a command whose definition names a result is answered by ``execution.result``
too. Arguments drawn at random may well name a queue that does not exist or a transaction never
selected: an ``execution.exception`` with any code of the execution class's error domain is
then a refusal the specification allows, except the three that say the command itself was
broken or the peer was (:data:`NOT_REFUSALS`). The connection must stay open and the session
attached.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from amqpfuzz.spec import Scope
from amqpfuzz.spec.amqp010.codec import Header

from ..cases import Case, ErrorCode, Placement, Reaction
from ..source import Source
from .context import ANSWERS, Context, error_codes

__all__ = ["NOT_REFUSALS", "case_commands", "connection_frames", "valid_builder"]

# execution error codes that say a well-formed command was not: never a valid case's refusal
NOT_REFUSALS = ("command-invalid", "illegal-argument", "internal-error")


def case_commands(ctx: Context) -> tuple[str, ...]:
    """The commands valid cases are drawn from, in the XML's order."""
    return tuple(c for c in ctx.server_commands if c not in ANSWERS)


def refusals(ctx: Context) -> tuple[ErrorCode, ...]:
    return tuple(
        c
        for c in error_codes(ctx.spec).values()
        if c.scope == Scope.EXECUTION and c.name not in NOT_REFUSALS
    )


def valid_builder(ctx: Context, names: tuple[str, ...]) -> Callable[[Source], Case]:
    """Reads a valid case of one of ``names`` from a source; zeros read as the first."""
    tolerated = refusals(ctx)

    def build(src: Source) -> Case:
        name = src.pick(names)
        item = ctx.drawn(name, src)
        responses: tuple[str, ...] = ("session.completed",)
        if ctx.spec.command(name).result is not None:
            responses += ("execution.result",)
        return Case(
            steps=(ctx.wire(item),),
            expected=Reaction.reply(responses, tolerated),
            spec_ref=name,
            placement=Placement.OPEN,
            note="values drawn for its fields, sync set",
            blob=src.data,
        )

    return build


def connection_frames(src: Source, ctx: Context, mechanism: str) -> list[bytes]:
    """A client's side of a whole valid connection, one item per protocol header or control or
    command: the header, start-ok, tune-ok, open, a session attached at command 0, commands
    drawn (some with header entries and a body), detach and close."""
    codec = ctx.codec
    response = b"\x00guest\x00guest" if mechanism == "PLAIN" else b""
    out = [
        Header().encode(),
        codec.encode_control(
            "connection.start-ok",
            client_properties={"product": "amqpfuzz"},
            mechanism=mechanism,
            response=response,
            locale="en_US",
        ),
        codec.encode_control(
            "connection.tune-ok", channel_max=16, max_frame_size=ctx.max_frame_size, heartbeat=0
        ),
        codec.encode_control("connection.open", virtual_host="/"),
    ]
    name = ctx.name(src, "session").encode()
    out.append(codec.encode_control("session.attach", channel=1, name=name))
    out.append(
        codec.encode_control("session.command-point", channel=1, command_id=0, command_offset=0)
    )
    for _ in range(1 + src.below(4)):
        item = ctx.drawn(src.pick(case_commands(ctx)), src)
        out.append(codec.encode(dataclasses.replace(item, channel=1), ctx.max_frame_size))
    out.append(codec.encode_control("session.detach", channel=1, name=name))
    out.append(codec.encode_control("connection.close", reply_code="normal"))
    return out
