"""The aiormq client shim: the shim contract in fuzzer/clients/shims/__init__.py.

What aiormq cannot show: before 7.0 it tells no one of a consumer the server cancelled (its
channels have no cancel callbacks), so those versions never say ``cancelled``."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiormq
import aiormq.abc
import aiormq.exceptions
from pamqp import commands as spec
from shim_common import (  # type: ignore[import-not-found]
    CONNECT_TIMEOUT,
    PROPERTY_NAMES,
    QUEUE,
    Options,
    cases,
    emit,
    error_class,
    options,
    properties,
    strings,
    text,
)
from yarl import URL

NAME = "aiormq"


class Connection(aiormq.Connection):
    """Remembers the server's connection.close: aiormq raises it as an error class of its
    code, the same classes it raises for errors of its own."""

    closed_by_server: tuple[int | None, str] | None = None

    async def _Connection__handle_close(self, frame: spec.Connection.Close) -> None:
        self.closed_by_server = (frame.reply_code, frame.reply_text)
        handle = super()._Connection__handle_close  # type: ignore[misc]
        await handle(frame)


def message(case: int, via: str, msg: aiormq.abc.DeliveredMessage) -> None:
    found = msg.header.properties
    delivery = msg.delivery
    emit(
        "message",
        case,
        via=via,
        channel=msg.channel.number,
        delivery_tag=getattr(delivery, "delivery_tag", None),
        redelivered=getattr(delivery, "redelivered", None),
        exchange=msg.exchange,
        routing_key=msg.routing_key,
        body=bytes(msg.body).hex(),
        properties=properties({name: getattr(found, name, None) for name in PROPERTY_NAMES}),
    )


async def session(opts: Options, case: int, connection: Connection) -> None:
    """Steps 2 to 9; returns when --linger passed with the connection open."""
    await asyncio.wait_for(connection.connect(), CONNECT_TIMEOUT)
    emit("connected", case, server_properties=strings(connection.server_properties))
    # aiormq opens the channel and selects confirms in one call
    channel = await connection.channel(publisher_confirms=True, on_return_raises=False)
    emit("channel", case, channel=channel.number)
    declared = await channel.queue_declare(QUEUE, durable=False, exclusive=False, auto_delete=False)
    emit(
        "declared",
        case,
        queue=declared.queue,
        message_count=declared.message_count,
        consumer_count=declared.consumer_count,
    )

    async def delivered(msg: aiormq.abc.DeliveredMessage) -> None:
        message(case, "deliver", msg)
        tag = getattr(msg.delivery, "delivery_tag", None)
        if tag is not None:
            await msg.channel.basic_ack(tag)

    def returned(msg: aiormq.abc.DeliveredMessage) -> None:
        message(case, "return", msg)

    def cancelled(frame: Any) -> None:
        emit("cancelled", case, tag=frame.consumer_tag)

    channel.on_return_callbacks.add(returned)
    cancels = getattr(channel, "on_consumer_cancel_callbacks", None)  # (from 7.0 on)
    if cancels is not None:
        cancels.add(cancelled)
    consuming = await channel.basic_consume(QUEUE, delivered, no_ack=False)
    emit("consuming", case, tag=consuming.consumer_tag)
    headers: dict[str, Any] = {"shim": NAME}
    props = spec.Basic.Properties(content_type="text/plain", delivery_mode=1, headers=headers)
    body = f"amqpfuzz-shim-{case}".encode("ascii")
    confirmed = await channel.basic_publish(
        body, exchange="", routing_key=QUEUE, properties=props, mandatory=True
    )
    # a returned message resolves the publish before its basic.ack comes
    emit("confirm", case, ack=not isinstance(confirmed, spec.Basic.Nack))
    got = await channel.basic_get(QUEUE, no_ack=False)
    if isinstance(got.delivery, spec.Basic.GetOk):
        message(case, "get", got)
        if got.delivery.delivery_tag is not None:
            await channel.basic_ack(got.delivery.delivery_tag)
    else:
        emit("get-empty", case)
    deadline = time.monotonic() + opts.linger
    ends = {connection.closing, channel.closing}
    done, _ = await asyncio.wait(ends, timeout=max(deadline - time.monotonic(), 0))
    for end in done:
        end.result()  # raises what closed it


async def run_case(opts: Options, case: int) -> None:
    emit("connecting", case)
    url = URL.build(
        scheme="amqp",
        host=opts.host,
        port=opts.port,
        user=opts.user,
        password=opts.password,
        path="/" + opts.vhost,
    ).with_query(heartbeat=0)
    connection = Connection(url)
    try:
        await session(opts, case, connection)
        await connection.close()
        emit("closed", case, by="client", code=None, text=None)
    except aiormq.exceptions.AMQPError as exc:
        if connection.closed_by_server is not None:
            reply_code, reply = connection.closed_by_server
            emit("closed", case, by="server", code=reply_code, text=text(reply))
        else:
            code = exc.args[0] if len(exc.args) == 2 and isinstance(exc.args[0], int) else None
            emit("error", case, **{"class": error_class(exc)}, code=code, message=repr(exc))
    except (OSError, EOFError) as exc:
        emit("closed", case, by="socket", code=None, text=text(exc))
    finally:
        await connection.close()


async def main() -> None:
    opts = options()
    for case in cases(opts):
        await run_case(opts, case)


if __name__ == "__main__":
    asyncio.run(main())
