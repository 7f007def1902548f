"""Steps on connections, channels and the socket: connect, open and close, raw bytes, protocol
headers, greetings, the socket closing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from amqpfuzz.scenarios import Step, handles
from amqpfuzz.spec import AmqpfuzzError, OutcomeKind
from amqpfuzz.spec.amqp091.codec import MethodFrame, ProtocolHeader

from ...outcome import Outcome
from ..connection import Connection, HeaderAnswer
from .mailbox import Mailbox, Message
from .state import (
    PLAIN_CLIENT,
    PlayerState,
    reaction_of_message,
)

__all__ = ["ConnectionSteps"]


class ConnectionSteps(PlayerState, part=True):
    @handles("connect")
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
                # a header answered with a header: what follows is in the protocol it names
                connection.reader = HeaderAnswer(connection.codec, connection.frame_max)
        except AmqpfuzzError as exc:
            raise self.failed(
                step,
                f"cannot connect: {exc}",
                Outcome(OutcomeKind.REPLY, reply="connection.open-ok"),
                Outcome(OutcomeKind.SOCKET_CLOSE),
            ) from None
        self.connections[name] = Mailbox(connection)

    @handles("close_connection")
    def _step_close_connection(self, step: Step, args: Mapping[str, Any]) -> None:
        mailbox = self.mailbox(step, args["connection"])
        self._send(mailbox, [self._method(0, "connection.close", {"reply_code": 200})])
        self._reply(step, mailbox, 0, "connection.close-ok")
        mailbox.connection.abort()
        del self.connections[args["connection"]]

    @handles("open_channel")
    def _step_open_channel(self, step: Step, args: Mapping[str, Any]) -> None:
        mailbox = self.mailbox(step, args["connection"])
        channel = args["channel"]
        mailbox.reset(channel)
        self._send(mailbox, [self._method(channel, "channel.open", {})])
        self._reply(step, mailbox, channel, "channel.open-ok")

    @handles("close_channel")
    def _step_close_channel(self, step: Step, args: Mapping[str, Any]) -> None:
        mailbox = self.mailbox(step, args["connection"])
        channel = args["channel"]
        self._send(mailbox, [self._method(channel, "channel.close", {"reply_code": 200})])
        self._reply(step, mailbox, channel, "channel.close-ok")

    @handles("send_raw")
    def _step_send_raw(self, step: Step, args: Mapping[str, Any]) -> None:
        self.mailbox(step, args["connection"]).connection.send(bytes.fromhex(args["hex"]))

    @handles("send_header")
    def _step_send_header(self, step: Step, args: Mapping[str, Any]) -> None:
        header = args.get("name", "AMQP").encode("ascii") + bytes(args["version"])
        mailbox = self.mailbox(step, args["connection"])
        mailbox.sent_header = header
        mailbox.connection.send(header)

    def _header(self, step: Step, mailbox: Mailbox, expected: Outcome) -> Message:
        message = mailbox.next_reply(0, self.timeout)
        if message is None:
            seen = self._ended(mailbox)
            raise self.failed(step, f"expected a greeting, got {seen.described()}", expected, seen)
        return message

    @handles("expect_header")
    def _step_expect_header(self, step: Step, args: Mapping[str, Any]) -> None:
        mailbox = self.mailbox(step, args["connection"])
        version = tuple(args["version"]) if "version" in args else None
        expected = Outcome(
            OutcomeKind.PROTOCOL_HEADER, reply=f"AMQP {version}" if version else None
        )
        message = self._header(step, mailbox, expected)
        seen = reaction_of_message(message)
        frame = message.frame
        if not isinstance(frame, ProtocolHeader) or (version and frame.version != version):
            raise self.failed(step, f"expected a protocol header, got {message}", expected, seen)
        self.checked(expected, seen)

    @handles("expect_greeting")
    def _step_expect_greeting(self, step: Step, args: Mapping[str, Any]) -> None:
        mailbox = self.mailbox(step, args["connection"])
        expected = Outcome(OutcomeKind.GREETING)
        message = self._header(step, mailbox, expected)
        frame = message.frame
        if isinstance(frame, ProtocolHeader) and frame.data == mailbox.sent_header:
            # the header asked for, answered in kind: the server speaks that protocol too (a
            # 0-10 server's handshake opens with its header), and goes on in it
            seen = Outcome(OutcomeKind.PROTOCOL_HEADER, reply=repr(frame))
            self.notes["greeting"] = f"{frame!r}: the protocol asked for, spoken"
            self.notes["octets"] = frame.data.hex()
        elif isinstance(frame, ProtocolHeader):
            closed = mailbox.wait_for(lambda: mailbox.ended is not None, self.timeout)
            seen = Outcome(OutcomeKind.PROTOCOL_HEADER, reply=repr(frame))
            self.notes["greeting"] = f"{frame!r}, then {'the socket closed' if closed else 'open'}"
            self.notes["octets"] = frame.data.hex()
            if not closed:
                raise self.failed(
                    step, f"answered {frame!r} but kept the socket open", expected, seen
                )
        elif message.name == "connection.start":
            assert isinstance(frame, MethodFrame)
            seen = Outcome(OutcomeKind.REPLY, reply="connection.start")
            major, minor = frame["version_major"], frame["version_minor"]
            self.notes["greeting"] = f"connection.start (version {major}-{minor})"
        else:
            seen = reaction_of_message(message)
            raise self.failed(step, f"expected a greeting, got {message}", expected, seen)
        self.checked(expected, seen)

    @handles("expect_closed")
    def _step_expect_closed(self, step: Step, args: Mapping[str, Any]) -> None:
        mailbox = self.mailbox(step, args["connection"])
        expected = Outcome(OutcomeKind.SOCKET_CLOSE)
        before = mailbox.frames
        mailbox.wait_for(lambda: mailbox.ended is not None, float(args.get("within", 5.0)))
        seen = self._ended(mailbox)
        if mailbox.ended is None:
            raise self.failed(step, "the socket stayed open", expected, seen)
        if args.get("no_frames") and mailbox.frames > before:
            pending = mailbox.pending()
            what = str(pending[0]) if pending else seen.described()
            raise self.failed(
                step, f"expected the socket to close with no frame, got {what}", expected, seen
            )
        self.checked(expected, seen)
