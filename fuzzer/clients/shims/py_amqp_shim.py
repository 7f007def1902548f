"""The py-amqp client shim: the shim contract in fuzzer/clients/shims.py."""

from __future__ import annotations

import time
from typing import Any

import amqp  # type: ignore[import-untyped]
import amqp.exceptions  # type: ignore[import-untyped]
from shim_common import (  # type: ignore[import-not-found]
    CONNECT_TIMEOUT,
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

NAME = "py-amqp"


class Connection(amqp.Connection):  # type: ignore[misc]
    """Remembers the server's connection.close: py-amqp raises it as the error class of its
    code, the same classes it raises for errors of its own."""

    closed_by_server: tuple[int | None, str] | None = None

    def _on_close(self, reply_code: int, reply_text: str, *args: Any) -> None:
        self.closed_by_server = (reply_code, reply_text)
        super()._on_close(reply_code, reply_text, *args)


def message(case: int, via: str, channel: int, info: dict[str, Any], msg: Any) -> None:
    body = msg.body if isinstance(msg.body, bytes) else str(msg.body).encode()
    emit(
        "message",
        case,
        via=via,
        channel=channel,
        delivery_tag=info.get("delivery_tag"),
        redelivered=info.get("redelivered"),
        exchange=info.get("exchange"),
        routing_key=info.get("routing_key"),
        body=body.hex(),
        properties=properties(msg.properties),
    )


def session(opts: Options, case: int, connection: Connection) -> None:
    """Steps 2 to 9; returns when --linger passed with the connection open."""
    connection.connect()
    emit("connected", case, server_properties=strings(connection.server_properties))
    channel = connection.channel()
    number = channel.channel_id
    emit("channel", case, channel=number)
    channel.confirm_select()
    queue, count, consumers = channel.queue_declare(
        QUEUE, durable=False, exclusive=False, auto_delete=False
    )
    emit("declared", case, queue=queue, message_count=count, consumer_count=consumers)

    def delivered(msg: Any) -> None:
        message(case, "deliver", number, msg.delivery_info, msg)
        channel.basic_ack(msg.delivery_info["delivery_tag"])

    def returned(exc: Any, exchange: str, routing_key: str, msg: Any) -> None:
        info = {"exchange": exchange, "routing_key": routing_key}
        message(case, "return", number, info, msg)

    def cancelled(tag: str) -> None:
        emit("cancelled", case, tag=tag)

    channel.events["basic_return"].add(returned)
    tag = channel.basic_consume(QUEUE, no_ack=False, callback=delivered, on_cancel=cancelled)
    emit("consuming", case, tag=tag)
    body = f"amqpfuzz-shim-{case}".encode("ascii")
    msg = amqp.Message(
        body, content_type="text/plain", delivery_mode=1, application_headers={"shim": NAME}
    )
    try:
        channel.basic_publish(msg, exchange="", routing_key=QUEUE, mandatory=True)
        emit("confirm", case, ack=True)
    except amqp.exceptions.MessageNacked:
        emit("confirm", case, ack=False)
    got = channel.basic_get(QUEUE, no_ack=False)
    if got is None:
        emit("get-empty", case)
    else:
        message(case, "get", number, got.delivery_info, got)
        channel.basic_ack(got.delivery_info["delivery_tag"])
    deadline = time.monotonic() + opts.linger
    while (left := deadline - time.monotonic()) > 0:
        try:
            connection.drain_events(timeout=min(left, 0.25))
        except TimeoutError:  # nothing came in this slice
            continue


def run_case(opts: Options, case: int) -> None:
    emit("connecting", case)
    connection = Connection(
        host=f"{opts.host}:{opts.port}",
        userid=opts.user,
        password=opts.password,
        virtual_host=opts.vhost,
        connect_timeout=CONNECT_TIMEOUT,
        heartbeat=0,
    )
    try:
        session(opts, case, connection)
        connection.close()
        emit("closed", case, by="client", code=None, text=None)
    except (amqp.exceptions.AMQPError, amqp.exceptions.MessageNacked) as exc:
        if connection.closed_by_server is not None:
            reply_code, reply = connection.closed_by_server
            emit("closed", case, by="server", code=reply_code, text=text(reply))
        else:
            code = getattr(exc, "reply_code", None)
            emit("error", case, **{"class": error_class(exc)}, code=code, message=str(exc))
    except (OSError, EOFError) as exc:
        emit("closed", case, by="socket", code=None, text=text(exc))
    finally:
        connection.collect()  # the socket closed, no closing handshake


def main() -> None:
    opts = options()
    for case in cases(opts):
        run_case(opts, case)


if __name__ == "__main__":
    main()
