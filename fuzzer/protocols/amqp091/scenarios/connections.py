"""Steps on connections, channels and the socket: connect, open and close, raw bytes, protocol
headers, greetings, the socket closing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from amqpfuzz.scenarios import Step
from amqpfuzz.spec import AmqpfuzzError
from amqpfuzz.spec.amqp091.codec import MethodFrame, ProtocolHeader

from ...base import describe
from ...base import reaction_record as observed
from ..connection import Connection
from .mailbox import Mailbox, Message
from .state import (
    PLAIN_CLIENT,
    PlayerState,
    reaction_of_message,
)

__all__ = ["ConnectionSteps"]


class ConnectionSteps(PlayerState):
    def _step_connect(self, step: Step, args: Mapping[str, Any]) -> None:
        name = args["as"]
        old = self.connections.pop(name, None)
        if old is not None:
            old.connection.close(timeout=1.0)
        try:
            if args.get("handshake", True):
                connection = Connection.open(
                    self.target,
                    protocol=self.protocol,
                    timeout=self.timeout,
                    client_properties=PLAIN_CLIENT,
                )
            else:
                connection = Connection.connect(
                    self.target, protocol=self.protocol, timeout=self.timeout
                )
        except AmqpfuzzError as exc:
            raise self._fail(
                step,
                f"cannot connect: {exc}",
                observed("reply", reply="connection.open-ok"),
                observed("socket-close"),
            ) from None
        self.connections[name] = Mailbox(connection)

    def _step_close_connection(self, step: Step, args: Mapping[str, Any]) -> None:
        mailbox = self.mailbox(step, args["connection"])
        self._send(mailbox, [self._method(0, "connection.close", {"reply_code": 200})])
        self._reply(step, mailbox, 0, "connection.close-ok")
        mailbox.connection.abort()
        del self.connections[args["connection"]]

    def _step_open_channel(self, step: Step, args: Mapping[str, Any]) -> None:
        mailbox = self.mailbox(step, args["connection"])
        channel = args["channel"]
        mailbox.reset(channel)
        self._send(mailbox, [self._method(channel, "channel.open", {})])
        self._reply(step, mailbox, channel, "channel.open-ok")

    def _step_close_channel(self, step: Step, args: Mapping[str, Any]) -> None:
        mailbox = self.mailbox(step, args["connection"])
        channel = args["channel"]
        self._send(mailbox, [self._method(channel, "channel.close", {"reply_code": 200})])
        self._reply(step, mailbox, channel, "channel.close-ok")

    def _step_send_raw(self, step: Step, args: Mapping[str, Any]) -> None:
        self.mailbox(step, args["connection"]).connection.send(bytes.fromhex(args["hex"]))

    def _step_send_header(self, step: Step, args: Mapping[str, Any]) -> None:
        header = args.get("name", "AMQP").encode("ascii") + bytes(args["version"])
        self.mailbox(step, args["connection"]).connection.send(header)

    def _header(self, step: Step, mailbox: Mailbox, expected: dict[str, Any]) -> Message:
        message = mailbox.next_reply(0, self.timeout)
        if message is None:
            seen = self._ended(mailbox)
            raise self._fail(step, f"expected a greeting, got {describe(seen)}", expected, seen)
        return message

    def _step_expect_header(self, step: Step, args: Mapping[str, Any]) -> None:
        mailbox = self.mailbox(step, args["connection"])
        version = tuple(args["version"]) if "version" in args else None
        expected = observed("protocol-header", reply=f"AMQP {version}" if version else None)
        message = self._header(step, mailbox, expected)
        seen = reaction_of_message(message)
        frame = message.frame
        if not isinstance(frame, ProtocolHeader) or (version and frame.version != version):
            raise self._fail(step, f"expected a protocol header, got {message}", expected, seen)
        self._checked(expected, seen)

    def _step_expect_greeting(self, step: Step, args: Mapping[str, Any]) -> None:
        mailbox = self.mailbox(step, args["connection"])
        expected = observed("greeting")
        message = self._header(step, mailbox, expected)
        frame = message.frame
        if isinstance(frame, ProtocolHeader):
            closed = mailbox.wait_for(lambda: mailbox.ended is not None, self.timeout)
            seen = observed("protocol-header", reply=repr(frame))
            self.notes["greeting"] = f"{frame!r}, then {'the socket closed' if closed else 'open'}"
            self.notes["octets"] = frame.data.hex()
            if not closed:
                raise self._fail(
                    step, f"answered {frame!r} but kept the socket open", expected, seen
                )
        elif message.name == "connection.start":
            assert isinstance(frame, MethodFrame)
            seen = observed("reply", reply="connection.start")
            major, minor = frame["version_major"], frame["version_minor"]
            self.notes["greeting"] = f"connection.start (version {major}-{minor})"
        else:
            seen = reaction_of_message(message)
            raise self._fail(step, f"expected a greeting, got {message}", expected, seen)
        self._checked(expected, seen)

    def _step_expect_closed(self, step: Step, args: Mapping[str, Any]) -> None:
        mailbox = self.mailbox(step, args["connection"])
        expected = observed("socket-close")
        before = mailbox.frames
        mailbox.wait_for(lambda: mailbox.ended is not None, float(args.get("within", 5.0)))
        seen = self._ended(mailbox)
        if mailbox.ended is None:
            raise self._fail(step, "the socket stayed open", expected, seen)
        if args.get("no_frames") and mailbox.frames > before:
            pending = mailbox.pending()
            what = str(pending[0]) if pending else describe(seen)
            raise self._fail(
                step, f"expected the socket to close with no frame, got {what}", expected, seen
            )
        self._checked(expected, seen)
