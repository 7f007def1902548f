"""The serving peer: a listening 0-9-1 endpoint on a free loopback port that plays the broker.

Each connection a client makes plays one :class:`~amqpfuzz.strategies.amqp091.serving.Script`
(:meth:`Peer.play`): the handshake, then the broker in miniature (:mod:`.model`) answering the
client's methods; once the client goes quiet, the script's own deliveries, the operator's
strike where it has not struck yet, and at last ``connection.close`` with ``connection-forced``
("the case is over"), which a client answers with ``close-ok``. What happened is an
:class:`Exchange`: what was sent, what the client sent back and how the connection ended.
"""

from __future__ import annotations

import contextlib
import socket
import time

from amqpfuzz.spec.amqp091 import Spec
from amqpfuzz.spec.amqp091.codec import (
    Codec,
    ContentHeader,
    Frame,
    MethodFrame,
    ProtocolHeader,
    codec_for,
)
from amqpfuzz.strategies.amqp091.serving import Delivery, Point, Script, Strike

from ...served import Exchange
from ...serving import ANSWER, Conversation, Ended, Heard, Listener, ServingError
from .model import Model, Sent

__all__ = ["Exchange", "Peer", "ServingError"]

# Seconds without a word from the client: it waits for us. On loopback a client's next method
# follows the answer to its last within milliseconds; one slower only goes less deep.
QUIET = 0.05
# After a strike, how long the client has to react before the case goes on (a close it sends
# later, until the case's deadline, still counts: after our own close it is read too).
SETTLE = 0.15
CASE_OVER = "amqpfuzz: case over"


class Peer(Listener):
    """Listens on a free loopback port; serves one connection at a time."""

    def __init__(self, spec: Spec) -> None:
        super().__init__()
        self.spec = spec
        self.codec: Codec = codec_for(spec)
        # the code of the close that ends every case ("an operator intervened")
        self.case_over = int(spec.constant("connection-forced").value)

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/"

    @staticmethod
    def waits(event: dict[str, object]) -> bool:
        """A shim's event after which its application waits for the peer: the answer to its
        basic.get, the last thing the 0-9-1 shim contract has it do."""
        return event.get("event") == "get-empty" or (
            event.get("event") == "message" and event.get("via") == "get"
        )

    def play(
        self, conn: socket.socket, script: Script, timeout: float, heard: Heard | None = None
    ) -> Exchange:
        """Plays ``script`` on ``conn`` for at most ``timeout`` seconds, then closes it
        (``heard``: what the client's application reports, where someone hears it)."""
        started = time.monotonic()
        play = _Play(self, conn, script, started + timeout, heard)
        ex = self.played(play, started)
        ex.violations = play.model.violations
        return ex


class _Play(Conversation):
    def __init__(
        self,
        peer: Peer,
        conn: socket.socket,
        script: Script,
        deadline: float,
        heard: Heard | None = None,
    ) -> None:
        super().__init__(conn, deadline, peer.codec.reader(), heard)
        self.peer, self.script = peer, script
        self.codec = peer.codec
        self.spec = peer.spec
        self.model = Model(peer.spec, script)
        self.replies = 0
        self.pending = script.operator is not None
        self.closing = False

    # -- what the conversation needs ------------------------------------------------------------

    def _refuse(self, message: str) -> None:
        self.model.violations.append(message)

    def _pending(self) -> int:
        return int(self.reader.pending)

    def _speaks(self, frame: Frame) -> bool:
        """A close, or a header it answers: a client's acknowledgement or publish may have been
        on its way when the strike came (py-amqp's ack of an earlier delivery crossed an
        unknown frame type, where the socket must close without a word: a false failure)."""
        if isinstance(frame, MethodFrame):
            return frame.name.endswith(".close") or frame.name.endswith(".close-ok")
        return isinstance(frame, ProtocolHeader)

    # -- sending ----------------------------------------------------------------------------------

    def _frames(self, frames: list[Frame]) -> None:
        for frame in frames:
            self._send(self.codec.encode(frame), repr(frame))

    def _strike(self, frames: tuple[Frame, ...], channel: int, *, settle: bool = True) -> None:
        consumer = self.model.consumer()
        strike = Strike(
            self.spec,
            self.codec,
            self.model.frame_max,
            frames,
            channel,
            frozenset(self.model.channels),
            consumer[1] if consumer else "",
            consumer[2] if consumer else "",
        )
        built = self.script.built(strike)
        self.pending = False
        said = self._said()
        self.ex.struck = built.note
        self.ex.spec_ref = built.spec_ref
        for step in built.steps:
            self._send(step.render(channel), f"{step.label} [{self.script.label}]")
        if settle:  # in the handshake, the next method expected reads what the client does
            self._wait(SETTLE, settle=True, until=lambda heard: heard.said() > said)

    def _sent(self, sent: Sent) -> None:
        if sent.reply:
            if (
                self.pending
                and self.script.point is Point.REPLY
                and self.replies >= self.script.nth
            ):
                self.replies += 1
                first = sent.frames[0]
                self._strike(tuple(sent.frames), getattr(first, "channel", 0))
                return
            self.replies += 1
        if sent.message is not None:
            self.ex.messages.append(sent.message)
        self._frames(sent.frames)

    # -- receiving --------------------------------------------------------------------------------

    def _expect(self, name: str) -> MethodFrame:
        """The client's next method, which should be ``name`` (its answer to the peer's
        last: ``ANSWER`` seconds for it at most)."""
        until = min(self.deadline, time.monotonic() + ANSWER)
        while time.monotonic() < until:
            frames = self._read(until - time.monotonic())
            if frames is None:
                raise Ended
            for at, frame in enumerate(frames):
                if isinstance(frame, MethodFrame) and frame.name == "connection.close":
                    self._handle(frame)
                if isinstance(frame, MethodFrame) and frame.name == name:
                    self.backlog = frames[at + 1 :]
                    return frame
                if not isinstance(frame, ProtocolHeader):
                    self.model.violations.append(f"{frame!r} where {name} belongs")
        raise Ended

    def _handle(self, frame: Frame) -> None:
        if isinstance(frame, MethodFrame) and frame.name == "connection.close":
            args = frame.arguments
            self.ex.client_close = (
                int(args.get("reply_code", 0)),
                str(args.get("reply_text", "")),
                int(args.get("class_id", 0)),
                int(args.get("method_id", 0)),
            )
            with contextlib.suppress(Ended):
                self._frames([self.codec.method("connection.close-ok")])
            self.ex.ended = "client-close"
            raise Ended
        if isinstance(frame, MethodFrame) and frame.name == "connection.close-ok":
            self.ex.ended = "server-close" if self.closing else "client-close"
            raise Ended
        if self.closing:
            return  # after our close, everything but close and close-ok is discarded
        if isinstance(frame, MethodFrame) and frame.name == "channel.close":
            self.ex.channel_closes.append(
                (frame.channel, int(frame.arguments.get("reply_code", 0)))
            )
        for sent in self.model.receive(frame):
            self._sent(sent)

    # -- the connection ---------------------------------------------------------------------------

    def run(self) -> None:
        try:
            self._handshake()
            self._app()
        except Ended:
            return

    def _handshake(self) -> None:
        header = self._header()
        self.ex.header = header
        start = self.script.start
        if self.pending and self.script.point is Point.START:
            self._strike((start,), 0, settle=False)
        else:
            self._frames([start])
        self._expect("connection.start-ok")
        tune = self.script.tune
        if self.pending and self.script.point is Point.TUNE:
            self._strike((tune,), 0, settle=False)
        else:
            self._frames([tune])
        tune_ok = self._expect("connection.tune-ok")
        self._tuned(tune_ok)
        opened = self._expect("connection.open")
        self._sent(Sent([self.codec.method("connection.open-ok")], reply=True))
        del opened

    def _header(self) -> bytes:
        data = b""
        while len(data) < 8 and time.monotonic() < self.deadline:
            self.conn.settimeout(max(0.001, self.deadline - time.monotonic()))
            try:
                chunk = self.conn.recv(8 - len(data))
            except TimeoutError:
                break
            if not chunk:
                break
            data += chunk
        if len(data) < 8:
            self.ex.ended = "socket" if time.monotonic() < self.deadline else "timeout"
            raise Ended
        self.ex.received.append(f"protocol header {data!r}")
        return data

    def _tuned(self, tune_ok: MethodFrame) -> None:
        ours, theirs = self.script.tune, tune_ok.arguments
        frame_max, channel_max = int(ours["frame-max"]), int(ours["channel-max"])
        asked_frames, asked_channels = (
            int(theirs.get("frame_max", 0)),
            int(theirs.get("channel_max", 0)),
        )
        if frame_max and (asked_frames == 0 or asked_frames > frame_max):
            self.model.violations.append(
                f"tune-ok frame-max {asked_frames} above the server's {frame_max}"
            )
        if channel_max and (asked_channels == 0 or asked_channels > channel_max):
            self.model.violations.append(
                f"tune-ok channel-max {asked_channels} above the server's {channel_max}"
            )
        self.model.frame_max = (
            min(x for x in (frame_max, asked_frames) if x) if frame_max or asked_frames else 0
        )
        self.model.channel_max = (
            min(x for x in (channel_max, asked_channels) if x)
            if channel_max or asked_channels
            else 0
        )
        self.reader.frame_max = self.model.frame_max or None

    def _app(self) -> None:
        self._wait(QUIET, until=lambda heard: heard.waiting())
        said, delivered = self._said(), 0
        for delivery in self._deliveries():  # back to back: the client acknowledges them after
            consumer = self.model.consumer()
            if consumer is None:
                break
            number, tag, queue = consumer
            sent = self.model.delivery(number, tag, queue, self._header_of(delivery), delivery.body)
            if self.pending and self.script.point is Point.DELIVER:
                self._strike(tuple(sent.frames), number)
            else:
                self._sent(sent)
                delivered += 1
        if self.pending:
            self._strike(self._late(), self._channel())
        # (each delivery the client's application reported, and whatever the strike made it
        # report: the strike waited for that)
        self._wait(QUIET, until=lambda heard: heard.said() >= said + delivered)
        self.closing = True
        close = self.codec.method(
            "connection.close",
            reply_code=self.peer.case_over,
            reply_text=CASE_OVER,
        )
        self._frames([close])
        self._await_answer()

    def _deliveries(self) -> tuple[Delivery, ...]:
        if self.script.point is Point.DELIVER and self.pending and not self.script.deliveries:
            return (Delivery({}, b"amqpfuzz"),)
        return self.script.deliveries

    def _header_of(self, delivery: Delivery) -> ContentHeader:
        basic = self.spec.amqp_class("basic").index
        return ContentHeader(0, basic, len(delivery.body), dict(delivery.properties))

    def _channel(self) -> int:
        return min(self.model.channels, default=1)

    def _late(self) -> tuple[Frame, ...]:
        """What a strike that found no place of its own breaks: an answer the client asked
        for once more (a reply), a delivery to nobody (a delivery) or nothing (after)."""
        channel = self._channel()
        if self.script.point is Point.DELIVER:
            method = self.spec.method("basic.deliver")
            known = {"delivery-tag": 1, "routing-key": "amqpfuzz"}
            values = tuple(
                known.get(f.name, False if f.type == "bit" else "") for f in method.fields
            )
            return (MethodFrame(channel, method, values), *self.codec.content(channel, b"amqpfuzz"))
        if self.script.point is Point.REPLY:
            return (
                self.codec.method(
                    "channel.open-ok" if self.model.channels else "connection.open-ok",
                    channel if self.model.channels else 0,
                ),
            )
        return ()
