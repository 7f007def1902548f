"""The uamqp client shim (Azure's uAMQP-C core with its Python face: Connection, Session,
MessageReceiver, MessageSender): the AMQP 1.0 shim contract in fuzzer/clients/shims/__init__.py.

Runs under the system's Python (Debian's python3-uamqp), so it imports nothing of amqpfuzz's
virtual environment: only shim_common and the standard library beside uamqp.

uamqp's Python face speaks TLS (or WebSockets over TLS) only, while the C core under it has a
plain socket I/O: the shim hands that one to the C core in place of its default TLS I/O (a
``TLSIOConfig`` starts with the socket I/O's hostname and port, and the interface description
is swapped by ctypes, checked first). uamqp drives everything by polling ``Connection.work()``;
the shim polls every few milliseconds. Its close is uamqp's own: ``destroy()`` sends the close
frame and ends the socket at once, without waiting for the peer's close.

What uamqp cannot show, or shows otherwise:
* ``connected`` carries no container-id nor properties of the peer (uamqp keeps neither: null
  and {}), and says only that the connection reached OPENED;
* no ``session`` event: uamqp neither reports a begin answered nor lets one be asked for apart
  from a link (the C core begins the session with the first link), and no ``ended`` event (a
  peer's end is not reported; the links stop);
* ``receiving`` and ``sending`` wait for the link to be open to uamqp: an attach answered with a
  null terminus (as RabbitMQ's 1.0 plugin answers a receiver's target) is to the C core a
  refusal whose detach it waits for, and nothing follows;
* ``detached`` has no ``closed`` flag (uamqp reports every detach alike);
* ``confirm``: accepted is uamqp's send result OK; otherwise uamqp hands over the delivery
  state's fields without their descriptor, so rejected is told by its error (with its
  ``condition`` and ``description``), modified by its flags, and an empty state is
  ``not-accepted`` (released, or rejected or modified without fields); a send uamqp gives up
  (settled without an outcome, or the link or the connection ended first) is ``error``;
* a message's ``settled`` is null (uamqp keeps no settled flag of a transfer); receiving in
  receiver-settle-mode first, uamqp offers no accept, so the shim accepts through the C core's
  receiver (``settle_accepted_message``);
* values are read from the C core's typed values (uamqp's Python values give strings, symbols
  and binaries all as bytes), but application-properties and message-annotations only through
  uamqp's ``.map`` copies (its ``.value`` there frees the C value twice: a heap corruption), so
  their bytes are text where they are UTF-8, else ``"hex:..."``, and their described values
  lose their descriptor; a uuid is its string; timestamps integer milliseconds;
* the header shows priority, ttl and delivery-count, not durable nor first-acquirer: uamqp reads
  those booleans wrong (a false, even an absent one, may read true);
* a SASL failure, a wrong protocol header, garbage and a socket's end all reach the connection
  as END or ERROR without a close: ``closed`` by socket (uamqp's ConnectionClose of
  amqp:unknown-error, "Connection in an unexpected error state.");
* uamqp catches every exception of the shim's message callback (settling the message as
  modified) and Cython prints and drops those of the others, so a Python error there cannot
  kill the shim: a crash is the C core's own (a signal).

A case's end: the peer's close is ``closed`` by server (uamqp's ConnectionClose); END or ERROR
without a close is ``closed`` by socket; any other uamqp error (``uamqp.errors.AMQPError``, e.g.
a refused connection failing the receiver's open) is ``error``.
"""

from __future__ import annotations

import ctypes
import json
import logging
import time
import uuid
from typing import Any

import uamqp
from shim_common import (  # type: ignore[import-not-found]
    ADDRESS,
    CONNECT_TIMEOUT,
    Options,
    cases,
    emit,
    error_class,
    jsonable,
    options,
    sasl_user,
)
from uamqp import c_uamqp, constants, errors
from uamqp.address import Source, Target
from uamqp.authentication import SASLAnonymous, SASLPlain
from uamqp.authentication.common import _SASLClient

NAME = "uamqp"
POLL = 0.005  # seconds between two Connection.work() calls
ENDED = (c_uamqp.ConnectionState.END, c_uamqp.ConnectionState.ERROR)
RECEIVER_OPEN = constants.MessageReceiverState.Open
SENDER_OPEN = constants.MessageSenderState.Open
STRING_PROPERTIES = (
    "to",
    "subject",
    "reply_to",
    "content_type",
    "content_encoding",
    "group_id",
    "reply_to_group_id",
)


# -- plain TCP under uamqp -------------------------------------------------------------------


def socket_io() -> Any:
    """An IOInterfaceDescription of the C core's socket I/O (its default TLS one, swapped)."""
    described = c_uamqp.get_default_tlsio()
    core = ctypes.CDLL(c_uamqp.__file__)
    core.platform_get_default_tlsio.restype = ctypes.c_void_p
    core.socketio_get_interface_description.restype = ctypes.c_void_p
    # the Cython object: PyObject_HEAD (2 pointers), its vtable, then the C pointer
    slot = ctypes.c_void_p.from_address(id(described) + 3 * ctypes.sizeof(ctypes.c_void_p))
    if slot.value != core.platform_get_default_tlsio():
        raise RuntimeError("uamqp's IOInterfaceDescription is not laid out as expected")
    slot.value = core.socketio_get_interface_description()
    return described


class PlainIO:
    """uamqp's authentication classes over the socket I/O instead of TLS."""

    sasl: Any

    def set_tlsio(self, hostname: bytes, port: int) -> None:
        config = c_uamqp.TLSIOConfig()  # hostname, port, NULL: a SOCKETIO_CONFIG's fields
        config.hostname = hostname
        config.port = int(port)
        self._io_config = config
        self.sasl_client = _SASLClient(c_uamqp.xio_from_tlsioconfig(socket_io(), config), self.sasl)
        self.consumed = False


class PlainAnonymous(PlainIO, SASLAnonymous):  # type: ignore[misc]
    pass


class PlainSASL(PlainIO, SASLPlain):  # type: ignore[misc]
    pass


# -- values ------------------------------------------------------------------------------------


def value(found: Any) -> Any:
    """A decoded Python value as JSON: shim_common's conversion, with uuids as strings."""
    if isinstance(found, uuid.UUID):
        return str(found)
    if isinstance(found, dict):
        return {key(k): value(v) for k, v in found.items()}
    if isinstance(found, list | tuple):
        return [value(v) for v in found]
    return jsonable(found)


def typed(found: Any) -> Any:
    """One of the C core's typed values (uamqp's ``AMQPValue``) as JSON: its Python ``.value``
    gives strings, symbols and binaries all as bytes, the typed value tells them apart."""
    if found is None:
        return None
    kind = type(found).__name__
    if kind in ("StringValue", "SymbolValue"):
        return bytes(found.value).decode("utf-8", "replace")
    if kind == "BinaryValue":
        return "hex:" + bytes(found.value).hex()
    if kind == "DictValue":
        return {key(typed(k)): typed(v) for k, v in (found.get(i) for i in range(found.size))}
    if kind in ("ListValue", "ArrayValue"):
        return [typed(found[i]) for i in range(found.size)]
    if kind == "DescribedValue":
        return {"descriptor": typed(found.description), "value": typed(found.data)}
    return value(found.value)  # numbers, booleans, null, chars, uuids, timestamps (ms)


def section(found: Any) -> Any:
    """A map section (application-properties, message-annotations) as JSON, read through
    uamqp's ``.map`` (a copy: its ``.value`` shares the C value, which is then freed twice, a
    heap corruption): its strings, symbols and binaries all come as bytes, shown as text where
    they are UTF-8, else ``"hex:..."``."""
    if found is None:
        return {}
    return loose(found.map)


def loose(found: Any) -> Any:
    if isinstance(found, bytes):
        try:
            return found.decode("utf-8")
        except UnicodeDecodeError:
            return "hex:" + found.hex()
    if isinstance(found, dict):
        return {key(loose(k)): loose(v) for k, v in found.items()}
    if isinstance(found, list | tuple):
        return [loose(v) for v in found]
    return value(found)


def key(found: Any) -> str:
    """A map's key as a string."""
    if isinstance(found, bytes):
        return found.decode("utf-8", "replace")
    return found if isinstance(found, str) else json.dumps(found)


def text(found: Any) -> Any:
    """A string field uamqp gives as bytes (or as a typed value), as a string."""
    if isinstance(found, bytes):
        return found.decode("utf-8", "replace")
    if isinstance(found, c_uamqp.AMQPValue):
        return typed(found)
    return value(found)


def condition_of(error: Any) -> dict[str, Any]:
    if error is None:
        return {"condition": None, "description": None}
    return {"condition": text(error.condition), "description": text(error.description)}


def body_of(message: Any) -> dict[str, Any]:
    """The body of a received message (its C core's message): data sections' bytes as hex,
    amqp-sequence sections' lists, or the amqp-value."""
    kind = message.body_type
    if kind == c_uamqp.MessageBodyType.DataType:
        count = message.count_body_data()
        return {"data": [bytes(message.get_body_data(i)).hex() for i in range(count)]}
    if kind == c_uamqp.MessageBodyType.SequenceType:
        count = message.count_body_sequence()
        return {"sequence": [typed(message.get_body_sequence(i)) for i in range(count)]}
    if kind == c_uamqp.MessageBodyType.ValueType:
        return {"value": typed(message.get_body_value())}
    return {}


def properties_of(message: Any) -> dict[str, Any]:
    found = message.properties
    if found is None:
        return {}
    shown = {
        "message-id": typed(found.message_id),
        "user-id": bytes(found.user_id).hex() if found.user_id is not None else None,
        "correlation-id": typed(found.correlation_id),
        "absolute-expiry-time": found.absolute_expiry_time,
        "creation-time": found.creation_time,
        "group-sequence": found.group_sequence,
    }
    for name in STRING_PROPERTIES:
        shown[name.replace("_", "-")] = text(getattr(found, name))
    return {name: v for name, v in shown.items() if v is not None}


def header_of(message: Any) -> dict[str, Any]:
    found = message.header
    if found is None:
        return {}
    shown = {  # not durable nor first-acquirer: uamqp reads them wrong (the module says)
        "priority": found.priority,
        "ttl": found.time_to_live,
        "delivery-count": found.delivery_count,
    }
    return {name: v for name, v in shown.items() if v is not None}


def outcome_of(result: Any, state: Any) -> dict[str, Any]:
    """The confirm's fields from uamqp's send result and the delivery state's fields it hands
    over (without their descriptor: the outcome is told by its fields)."""
    if constants.MessageSendResult(result) == constants.MessageSendResult.Ok:
        return {"outcome": "accepted"}
    if not isinstance(state, list):
        return {"outcome": "error"}  # no outcome: abandoned, or settled without one
    if state and (state[0] is None or isinstance(state[0], list)):
        error = (state[0] or []) + [None, None]
        return {"outcome": "rejected", "condition": text(error[0]), "description": text(error[1])}
    if state and isinstance(state[0], bool):
        return {"outcome": "modified"}
    return {"outcome": "not-accepted"}  # released, or rejected or modified without fields


# -- the case ----------------------------------------------------------------------------------


class Connection(uamqp.Connection):  # type: ignore[misc]
    """uamqp's Connection, keeping what the shim reports: its state, the peer's close."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.state = c_uamqp.ConnectionState.UNKNOWN
        self.server: dict[str, Any] | None = None
        super().__init__(*args, **kwargs)

    def _state_changed(self, previous_state: int, new_state: int) -> None:
        try:
            self.state = c_uamqp.ConnectionState(new_state)
        except ValueError:
            self.state = c_uamqp.ConnectionState.UNKNOWN
        super()._state_changed(previous_state, new_state)

    def _close_received(self, error: Any) -> None:
        if self.server is None:
            self.server = condition_of(error)
        super()._close_received(error)


class Links:
    """The receiver and the sender of one case, and the events they raise."""

    def __init__(self, case: int, session: uamqp.Session) -> None:
        self.case = case
        self.session = session
        self.states: dict[str, Any] = {}
        receiver = f"amqpfuzz-shim-receiver-{case}"
        self.receiver = uamqp.MessageReceiver(
            session,
            Source(ADDRESS),
            receiver.encode(),
            on_message_received=self.message,
            name=receiver,
            receive_settle_mode=constants.ReceiverSettleMode.ReceiveAndDelete,  # first
            send_settle_mode=constants.SenderSettleMode.Unsettled,
            prefetch=10,
        )
        self.watch(self.receiver, "receiver")
        self.sender: Any = None
        self.sent: Any = None

    def watch(self, link: Any, which: str) -> None:
        self.states[which] = None
        link.on_state_changed = lambda _, new: self.states.__setitem__(which, new)
        detached = link._detach_received

        def detach_received(error: Any) -> None:
            emit("detached", self.case, link=link.name.decode(), **condition_of(error))
            detached(error)

        link._detach_received = detach_received

    def destroy(self) -> None:
        for link in (self.receiver, self.sender):
            if link is not None:
                link.destroy()
        self.session.destroy()

    def open_sender(self) -> None:
        sender = f"amqpfuzz-shim-sender-{self.case}"
        self.sender = uamqp.MessageSender(
            self.session,
            sender.encode(),
            Target(ADDRESS),
            name=sender,
            send_settle_mode=constants.SenderSettleMode.Unsettled,
            receive_settle_mode=constants.ReceiverSettleMode.ReceiveAndDelete,
        )
        self.watch(self.sender, "sender")
        self.sender.open()

    def send(self) -> None:
        name = f"amqpfuzz-shim-{self.case}"
        message = uamqp.Message(
            body=name,
            body_type=constants.MessageBodyType.Value,
            properties=uamqp.message.MessageProperties(message_id=name, content_type="text/plain"),
            application_properties={"shim": NAME},
        )
        self.sent = message  # the C core holds it by a bare pointer until its disposition
        self.sender.send(message, self.confirm)

    def confirm(self, _message: Any, result: Any, delivery_state: Any = None) -> None:
        emit("confirm", self.case, **outcome_of(result, delivery_state))

    def message(self, message: uamqp.Message) -> None:
        core = message._message  # the C core's message: its typed values
        emit(
            "message",
            self.case,
            body=body_of(core),
            properties=properties_of(core),
            application_properties=section(core.application_properties),
            annotations=section(core.message_annotations),
            header=header_of(core),
            settled=None,
        )
        self.receiver._receiver.settle_accepted_message(message.delivery_no)


def session(opts: Options, case: int, connection: Connection, links: Links) -> bool:
    """Steps 2 to 8: True when --linger passed with the connection open, False when the peer
    never opened it within the connect timeout."""
    links.receiver.open()
    opened = sending = False
    deadline = time.monotonic() + CONNECT_TIMEOUT
    while time.monotonic() < deadline:
        connection.work()
        if not opened and connection.state == c_uamqp.ConnectionState.OPENED:
            opened = True
            emit("connected", case, container_id=None, properties={})
            deadline = time.monotonic() + opts.linger
        if links.sender is None and links.states["receiver"] == RECEIVER_OPEN:
            emit("receiving", case, link=links.receiver.name.decode())
            links.open_sender()
        if not sending and links.states.get("sender") == SENDER_OPEN:
            sending = True
            emit("sending", case, link=links.sender.name.decode())
            links.send()
        time.sleep(POLL)
    return opened


def run_case(opts: Options, case: int) -> None:
    emit("connecting", case)
    user = sasl_user(opts)
    if user is None:
        auth: Any = PlainAnonymous(opts.host, port=opts.port)
    else:
        auth = PlainSASL(opts.host, user[0], user[1], port=opts.port)
    connection = Connection(opts.host, auth, container_id=f"amqpfuzz-shim-uamqp-{case}")
    links = Links(case, uamqp.Session(connection))
    final: dict[str, Any]
    try:
        if session(opts, case, connection, links):
            final = {"event": "closed", "by": "client", "condition": None, "description": None}
        else:
            message = f"no open from the peer in {CONNECT_TIMEOUT:g} s"
            final = {"event": "error", "class": "TimeoutError", "condition": None}
            final["message"] = message
    except errors.AMQPError as exc:
        if connection.server is not None:
            final = {"event": "closed", "by": "server", **connection.server}
        elif isinstance(exc, errors.ConnectionClose) and connection.state in ENDED:
            final = {"event": "closed", "by": "socket", "condition": None}
            final["description"] = text(exc.description)
        else:
            condition = getattr(exc, "condition", None)
            final = {
                "event": "error",
                "class": error_class(exc),
                "condition": text(getattr(condition, "value", condition)),
                "message": str(exc),
            }
    # uamqp's close (its clients' order): the links, the session, then the connection (its
    # close frame and at once its socket's end, without waiting for the peer's close)
    links.destroy()
    connection.destroy()
    emit(final.pop("event"), case, **final)


def main() -> None:
    logging.getLogger("uamqp").addHandler(logging.NullHandler())  # quiet
    logging.getLogger("uamqp").propagate = False
    opts = options()
    for case in cases(opts):
        run_case(opts, case)


if __name__ == "__main__":
    main()
