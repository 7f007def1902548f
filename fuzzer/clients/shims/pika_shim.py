"""The pika client shim (BlockingConnection): the shim contract in fuzzer/clients/shims.py."""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any

import pika
import pika.exceptions
from pika.adapters.blocking_connection import BlockingChannel
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

NAME = "pika"


class Swallowed(logging.Handler):
    """pika reports any exception its frame decoding raises as a StreamLostError (a socket's
    end) and logs it: kept here, so that the shim dies of it instead (a crash)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.error: BaseException | None = None

    def emit(self, record: logging.LogRecord) -> None:
        found = record.exc_info[1] if record.exc_info else None
        decoding = str(record.msg).startswith("protocol.data_received() failed")
        if decoding and not isinstance(found, OSError | pika.exceptions.AMQPError | None):
            self.error = found


SWALLOWED = Swallowed()


def message(case: int, via: str, channel: int, method: Any, props: Any, body: bytes) -> None:
    emit(
        "message",
        case,
        via=via,
        channel=channel,
        delivery_tag=getattr(method, "delivery_tag", None),
        redelivered=getattr(method, "redelivered", None),
        exchange=method.exchange,
        routing_key=method.routing_key,
        body=body.hex(),
        properties=properties(vars(props)),
    )


def session(opts: Options, case: int, held: list[pika.BlockingConnection]) -> None:
    """Steps 2 to 9; returns when --linger passed with the connection open."""
    parameters = pika.ConnectionParameters(
        host=opts.host,
        port=opts.port,
        virtual_host=opts.vhost,
        credentials=pika.PlainCredentials(opts.user, opts.password),
        heartbeat=0,
        connection_attempts=1,
        socket_timeout=CONNECT_TIMEOUT,
        stack_timeout=CONNECT_TIMEOUT,
    )
    connection = pika.BlockingConnection(parameters)
    held.append(connection)
    server = strings(getattr(connection._impl, "server_properties", None))
    emit("connected", case, server_properties=server)
    channel = connection.channel()
    number = channel.channel_number
    emit("channel", case, channel=number)
    channel.confirm_delivery()
    declared = channel.queue_declare(QUEUE, durable=False, exclusive=False, auto_delete=False)
    emit(
        "declared",
        case,
        queue=declared.method.queue,
        message_count=declared.method.message_count,
        consumer_count=declared.method.consumer_count,
    )

    def delivered(ch: BlockingChannel, method: Any, props: Any, body: bytes) -> None:
        message(case, "deliver", number, method, props, body)
        ch.basic_ack(method.delivery_tag)

    def returned(ch: BlockingChannel, method: Any, props: Any, body: bytes) -> None:
        message(case, "return", number, method, props, body)

    def cancelled(frame: Any) -> None:
        emit("cancelled", case, tag=frame.method.consumer_tag)

    channel.add_on_return_callback(returned)
    channel.add_on_cancel_callback(cancelled)
    tag = channel.basic_consume(QUEUE, delivered, auto_ack=False)
    emit("consuming", case, tag=tag)
    props = pika.BasicProperties(content_type="text/plain", delivery_mode=1, headers={"shim": NAME})
    body = f"amqpfuzz-shim-{case}".encode("ascii")
    try:
        channel.basic_publish("", QUEUE, body, props, mandatory=True)
        emit("confirm", case, ack=True)
    except pika.exceptions.UnroutableError as exc:  # returned, then acked
        for back in exc.messages:
            message(case, "return", number, back.method, back.properties, back.body)
        emit("confirm", case, ack=True)
    except pika.exceptions.NackError:
        emit("confirm", case, ack=False)
    method, got, content = channel.basic_get(QUEUE, auto_ack=False)
    if method is None:
        emit("get-empty", case)
    else:
        message(case, "get", number, method, got, content)
        channel.basic_ack(method.delivery_tag)
    deadline = time.monotonic() + opts.linger
    while (left := deadline - time.monotonic()) > 0:
        connection.process_data_events(time_limit=min(left, 0.25))
        reason = channel._closing_reason  # a broker's channel.close, kept by pika
        if channel.is_closed and isinstance(reason, pika.exceptions.AMQPError):
            raise reason


def abort(held: list[pika.BlockingConnection]) -> None:
    """The socket closed at once, with no closing handshake."""
    for connection in held:
        transport = getattr(connection._impl, "_transport", None)
        if connection.is_open and transport is not None:
            transport.abort()
            with contextlib.suppress(pika.exceptions.AMQPError):
                connection.process_data_events(0)


def run_case(opts: Options, case: int) -> None:
    emit("connecting", case)
    held: list[pika.BlockingConnection] = []
    try:
        session(opts, case, held)
        held[0].close()
        emit("closed", case, by="client", code=None, text=None)
    except pika.exceptions.AMQPError as exc:
        if SWALLOWED.error is not None:  # not pika's error: its decoding crashed
            raise SWALLOWED.error from exc
        if isinstance(exc, pika.exceptions.ConnectionClosedByBroker):
            emit("closed", case, by="server", code=exc.reply_code, text=text(exc.reply_text))
        elif isinstance(exc, pika.exceptions.StreamLostError):
            emit("closed", case, by="socket", code=None, text=text(exc))
        else:
            code = getattr(exc, "reply_code", None)
            emit("error", case, **{"class": error_class(exc)}, code=code, message=str(exc))
            abort(held)
    except (OSError, EOFError) as exc:
        emit("closed", case, by="socket", code=None, text=text(exc))
        abort(held)


def main() -> None:
    logging.getLogger("pika.adapters.utils.io_services_utils").addHandler(SWALLOWED)
    logging.getLogger("pika").addHandler(logging.NullHandler())  # quiet otherwise
    opts = options()
    for case in cases(opts):
        run_case(opts, case)


if __name__ == "__main__":
    main()
