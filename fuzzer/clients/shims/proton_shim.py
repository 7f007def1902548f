"""The Qpid Proton client shim (python-qpid-proton's Container and MessagingHandler): the AMQP
1.0 shim contract in fuzzer/clients/shims/__init__.py.

One Container per case, run until it has nothing left (the transport closed, no timer). The
connect timeout and --linger are the reactor's timers. MessagingHandler's own reactions are
kept where they are what an application gets (its credit window of 10 topped up, its accept of
each message, its settling of what the peer settled, its closing of what the peer closed), and
overridden where they only log or close the whole connection over a link's or a session's end.

What Proton cannot show: absent header fields and a group-sequence of 0 read as their defaults
(the header is always shown whole; group-sequence only when not 0); absolute-expiry-time and
creation-time come as float seconds (shown as integer milliseconds, 0 taken as absent), and an
absent content-type or content-encoding as the symbol "None" (read from Proton's C core
instead); the body is one section as Proton decodes it (of several data or amqp-sequence
sections it keeps one), and a body Proton cannot decode reads as an empty message, not an
error. A connection closed with ``amqp:connection:forced`` is, to Proton, a transport that
ended: shown as a server close all the same, since the close frame did arrive. A transport
error is ``closed`` by socket when it says the input ended (Proton's I/O conditions, or
"connection aborted"), else ``error`` (class ``proton.Transport``, its condition).
"""

from __future__ import annotations

import uuid
from typing import Any

import cproton
from proton import Array, Delivery, Described, Endpoint, Link, Message
from proton.handlers import MessagingHandler
from proton.reactor import Container
from shim_common import (  # type: ignore[import-not-found]
    ADDRESS,
    CONNECT_TIMEOUT,
    Options,
    cases,
    emit,
    jsonable,
    options,
    sasl_user,
    strings,
)

NAME = "proton"
OUTCOMES = {
    Delivery.ACCEPTED: "accepted",
    Delivery.REJECTED: "rejected",
    Delivery.RELEASED: "released",
    Delivery.MODIFIED: "modified",
}
# transport conditions that say the socket ended (or never opened), not that Proton refused
# what came: its I/O's own, or one that says "connection aborted" (its input ended early)
SOCKET_ENDS = ("proton:io", "proton.pythonio")
ABORTED = "connection aborted"


def value(found: Any) -> Any:
    """A decoded AMQP value as JSON: shim_common's conversion, with Proton's own types."""
    if isinstance(found, uuid.UUID):
        return str(found)
    if isinstance(found, Described):
        return {"descriptor": value(found.descriptor), "value": value(found.value)}
    if isinstance(found, Array):
        return [value(element) for element in found.elements]
    if isinstance(found, dict):
        return {str(value(k)): value(v) for k, v in found.items()}
    if isinstance(found, list | tuple):
        return [value(v) for v in found]
    return jsonable(found)


def milliseconds(seconds: float) -> int | None:
    return round(seconds * 1000) if seconds else None


def body_of(msg: Message) -> dict[str, Any]:
    """The body as Proton gives it: an inferred binary was a data section, an inferred list an
    amqp-sequence; anything else an amqp-value."""
    found = msg.body
    if msg.inferred and isinstance(found, bytes | memoryview):
        return {"data": [bytes(found).hex()]}
    if msg.inferred and isinstance(found, list):
        return {"sequence": [value(found)]}
    return {"value": value(found)}


def properties_of(msg: Message) -> dict[str, Any]:
    found = {
        "message-id": value(msg.id),
        "user-id": msg.user_id.hex() if msg.user_id else None,
        "to": msg.address,
        "subject": msg.subject,
        "reply-to": msg.reply_to,
        "correlation-id": value(msg.correlation_id),
        # Message.content_type and content_encoding read an absent one as the symbol "None"
        "content-type": cproton.pn_message_get_content_type(msg._msg),
        "content-encoding": cproton.pn_message_get_content_encoding(msg._msg),
        "absolute-expiry-time": milliseconds(msg.expiry_time),
        "creation-time": milliseconds(msg.creation_time),
        "group-id": msg.group_id,
        "group-sequence": msg.group_sequence or None,
        "reply-to-group-id": msg.reply_to_group_id,
    }
    return {name: v for name, v in found.items() if v is not None}


def condition_of(endpoint: Any) -> tuple[str | None, str | None]:
    condition = endpoint.remote_condition
    if condition is None:
        return None, None
    return condition.name, condition.description


def closed(by: str, condition: str | None, description: str | None) -> dict[str, Any]:
    return {"event": "closed", "by": by, "condition": condition, "description": description}


def error(kind: str, condition: str | None, message: str | None) -> dict[str, Any]:
    return {"event": "error", "class": kind, "condition": condition, "message": message}


class Timer:
    """A reactor timer's handler: calls ``action`` when it fires."""

    def __init__(self, action: Any) -> None:
        self.action = action

    def on_timer_task(self, event: Any) -> None:
        self.action()


class Case(MessagingHandler):
    def __init__(self, opts: Options, case: int) -> None:
        super().__init__(prefetch=10, auto_accept=True, auto_settle=True)
        self.opts = opts
        self.case = case
        self.container: Any = None
        self.connection: Any = None
        self.names = (f"amqpfuzz-shim-receiver-{case}", f"amqpfuzz-shim-sender-{case}")
        self.began = False
        self.sender: Any = None
        self.sent = False
        self.opened = False
        self.final: dict[str, Any] | None = None  # the case's last event, once known
        self.server: tuple[str | None, str | None] | None = None
        self.transport: tuple[str | None, str | None] | None = None
        self.timers: list[Any] = []

    # -- the steps -----------------------------------------------------------------------

    def on_start(self, event: Any) -> None:
        self.container = event.container
        user = sasl_user(self.opts)
        credentials: dict[str, Any] = {"allowed_mechs": "ANONYMOUS"}
        if user is not None:
            credentials = {"allowed_mechs": "PLAIN", "user": user[0], "password": user[1]}
        self.connection = self.container.connect(
            url=f"amqp://{self.opts.host}:{self.opts.port}",
            reconnect=False,
            heartbeat=None,  # no idle-timeout of ours
            sasl_enabled=True,
            allow_insecure_mechs=True,
            **credentials,
        )
        self.timers.append(self.container.schedule(CONNECT_TIMEOUT, Timer(self.connect_timeout)))

    def connect_timeout(self) -> None:
        if not self.opened and self.final is None:
            message = f"no open from the peer in {CONNECT_TIMEOUT:g} s"
            self.final = error("TimeoutError", None, message)
            self.abort()

    def on_connection_remote_open(self, event: Any) -> None:
        self.opened = True
        connection = event.connection
        emit(
            "connected",
            self.case,
            container_id=connection.remote_container,
            properties=strings(value(connection.remote_properties)),
        )
        self.timers.append(self.container.schedule(self.opts.linger, Timer(self.lingered)))
        connection.session().open()

    def on_session_opened(self, event: Any) -> None:
        if self.began:
            return  # a session the peer began itself: MessagingHandler answered it
        self.began = True
        emit("session", self.case)
        receiver = event.session.receiver(self.names[0])
        receiver.source.address = ADDRESS
        receiver.rcv_settle_mode = Link.RCV_FIRST
        receiver.snd_settle_mode = Link.SND_UNSETTLED
        receiver.open()

    def on_link_opened(self, event: Any) -> None:
        link = event.link
        if link.is_receiver and link.name == self.names[0] and self.sender is None:
            emit("receiving", self.case, link=link.name)
            self.sender = link.session.sender(self.names[1])
            self.sender.target.address = ADDRESS
            self.sender.snd_settle_mode = Link.SND_UNSETTLED
            self.sender.rcv_settle_mode = Link.RCV_FIRST
            self.sender.open()
        elif link.is_sender and link.name == self.names[1]:
            emit("sending", self.case, link=link.name)
        # else a link the peer attached itself: MessagingHandler answered it

    def on_sendable(self, event: Any) -> None:
        if self.sent or event.link.name != self.names[1]:
            return
        self.sent = True
        name = f"amqpfuzz-shim-{self.case}"
        msg = Message(
            body=name,
            id=name,
            content_type="text/plain",
            properties={"shim": NAME},
        )
        msg.inferred = False  # an amqp-value
        self.sender.send(msg)

    def on_delivery(self, event: Any) -> None:
        delivery = event.delivery
        if delivery.link.is_sender and delivery.updated:
            state = delivery.remote_state
            outcome = OUTCOMES.get(state)
            if outcome is None and not delivery.settled:
                return  # received: not an outcome
            # settled without an outcome: null; any other state: Proton's name, or its number
            named = getattr(state, "name", state)
            fields: dict[str, Any] = {"outcome": outcome or (str(named).lower() if state else None)}
            if state == Delivery.REJECTED:
                condition = delivery.remote.condition
                fields["condition"] = None if condition is None else condition.name
                fields["description"] = None if condition is None else condition.description
            emit("confirm", self.case, **fields)

    def on_message(self, event: Any) -> None:
        msg = event.message
        emit(
            "message",
            self.case,
            body=body_of(msg),
            properties=properties_of(msg),
            application_properties=value(msg.properties or {}),
            annotations=value(msg.annotations or {}),
            header={
                "durable": msg.durable,
                "priority": msg.priority,
                "ttl": milliseconds(msg.ttl) or 0,
                "first-acquirer": msg.first_acquirer,
                "delivery-count": msg.delivery_count,
            },
            settled=event.delivery.settled,
        )
        # MessagingHandler accepts it after this returns

    def lingered(self) -> None:
        if self.final is not None:
            return
        if self.server is not None:  # closed, but the peer keeps the socket: the case is over
            self.abort()
            return
        self.final = closed("client", None, None)
        self.connection.close()

    # -- what the peer ends --------------------------------------------------------------

    def on_link_remote_close(self, event: Any) -> None:
        self.detached(event.link, closed=True)

    def on_link_remote_detach(self, event: Any) -> None:
        self.detached(event.link, closed=False)

    def detached(self, link: Any, closed: bool) -> None:
        condition, description = condition_of(link)
        emit(
            "detached",
            self.case,
            link=link.name,
            closed=closed,
            condition=condition,
            description=description,
        )

    def on_session_remote_close(self, event: Any) -> None:
        condition, description = condition_of(event.session)
        emit("ended", self.case, condition=condition, description=description)

    def on_connection_remote_close(self, event: Any) -> None:
        if self.server is None:
            self.server = condition_of(event.connection)
        # MessagingHandler answers every close but a forced one (it waits to reconnect)
        if event.connection.state & Endpoint.LOCAL_ACTIVE:
            event.connection.close()

    def on_transport_error(self, event: Any) -> None:
        condition = event.transport.condition
        if self.transport is None and condition is not None:
            self.transport = (condition.name, condition.description)

    def on_transport_closed(self, event: Any) -> None:
        for timer in self.timers:
            timer.cancel()
        self.container.stop()  # at once: not after the reactor's next idle wait

    # MessagingHandler's defaults log these and close the connection: the shim only reports
    def on_link_error(self, event: Any) -> None:
        pass

    def on_session_error(self, event: Any) -> None:
        pass

    def on_connection_error(self, event: Any) -> None:
        pass

    # -- the end -------------------------------------------------------------------------

    def abort(self) -> None:
        """The socket closed at once, with no closing handshake."""
        transport = self.connection.transport
        if transport is not None:
            transport.close_tail()
            transport.close_head()

    def ending(self) -> dict[str, Any]:
        """The case's final event, once the container has nothing left to do."""
        if self.final is not None:
            return self.final
        if self.server is not None:
            return closed("server", *self.server)
        name, description = self.transport or (None, None)
        aborted = description == ABORTED or (description or "").endswith(f"({ABORTED})")
        if name is None or name in SOCKET_ENDS or aborted:
            return closed("socket", None, description)
        return error("proton.Transport", name, description)


def run_case(opts: Options, case: int) -> None:
    emit("connecting", case)
    handler = Case(opts, case)
    Container(handler).run()
    final = handler.ending()
    emit(final.pop("event"), case, **final)


def main() -> None:
    opts = options()
    for case in cases(opts):
        run_case(opts, case)


if __name__ == "__main__":
    main()
