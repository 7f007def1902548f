"""Playing one scenario file against one target: every step executed, every expectation checked.

A :class:`Player` runs the steps of a :class:`~amqpfuzz.scenarios.Scenario` in order on raw
connections (:mod:`.transport`, sorted by :mod:`.mailbox`), so that a step can send what a
client library would refuse. The first expectation that does not hold stops the scenario with
:class:`StepFailed`, which names the step's line, what was expected and what came. Whatever the
ending, :meth:`Player.play` closes the connections and deletes the queues and exchanges the
scenario declared (only names it made).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from amqpfuzz.scenarios import Scenario, Step
from amqpfuzz.scenarios.steps import EXTENSIONS
from amqpfuzz.spec import AmqpfuzzError
from amqpfuzz.spec.amqp091 import Spec, load
from amqpfuzz.spec.amqp091.codec import Frame, MethodFrame, ProtocolHeader, codec_for

from .brokers import Broker
from .mailbox import Mailbox, Message
from .targets import Target
from .transport import Connection, Outcome

__all__ = ["Played", "Player", "StepFailed", "codec_protocol"]

_VARIABLE = re.compile(r"\$\{([^}]*)\}")
# A scenario's connections are a plain client's: no extension announced (RabbitMQ would send
# basic.cancel notifications that the specification's scenarios do not expect).
PLAIN_CLIENT = {"product": "amqpfuzz scenarios"}


def codec_protocol(protocol: str) -> str:
    """The model a scenario's connections speak: the protocol's, or its extension's (0-9-1
    files may use RabbitMQ's basic.nack and confirm.select)."""
    return EXTENSIONS.get(protocol, protocol)


def observed(
    outcome: str,
    reply_code: int | None = None,
    class_id: int | None = None,
    method_id: int | None = None,
    reply: str | None = None,
) -> dict[str, Any]:
    """An expected or observed reaction, in the record contract's shape (plus the reply)."""
    return {
        "outcome": outcome,
        "reply_code": reply_code,
        "class_id": class_id,
        "method_id": method_id,
        "reply": reply,
    }


def describe(reaction: Mapping[str, Any]) -> str:
    """``channel-close 404``, ``reply queue.declare-ok``: a reaction in a few words."""
    words = [str(reaction["outcome"])]
    if reaction.get("reply"):
        words.append(str(reaction["reply"]))
    if reaction.get("reply_code") is not None:
        words.append(str(reaction["reply_code"]))
    return " ".join(words)


def _of(outcome: Outcome) -> dict[str, Any]:
    return observed(outcome.kind, outcome.reply_code, outcome.class_id, outcome.method_id)


def _of_message(message: Message) -> dict[str, Any]:
    frame = message.frame
    if isinstance(frame, MethodFrame) and frame.name in ("channel.close", "connection.close"):
        return _of(Outcome.closed_by(frame))
    if isinstance(frame, ProtocolHeader):
        return observed("protocol-header", reply=repr(frame))
    return observed("reply", reply=message.name)


class StepFailed(Exception):
    """An expectation of a step that did not hold."""

    def __init__(
        self, step: Step, message: str, expected: dict[str, Any], seen: dict[str, Any]
    ) -> None:
        super().__init__(message)
        self.step = step
        self.message = message
        self.expected = expected
        self.observed = seen


@dataclass
class Played:
    """How one scenario went on one target.

    ``status`` is ``pass``, ``fail`` (an expectation did not hold; ``line`` and ``step`` say
    where) or ``error`` (the runner could not go on: an unreachable target). ``expected`` and
    ``observed`` are the last expectation checked (the failing one for a failure); ``notes``
    what the scenario records (a count, a greeting).
    """

    status: str
    message: str = ""
    line: int | None = None
    step: str | None = None
    expected: dict[str, Any] = field(default_factory=lambda: observed("reply"))
    observed: dict[str, Any] = field(default_factory=lambda: observed("reply"))
    notes: dict[str, Any] = field(default_factory=dict)
    duration: float = 0.0


class Player:
    """Plays one scenario on one target; ``broker`` (a throwaway broker) makes restarts
    possible. ``prefix`` starts every name the scenario creates."""

    def __init__(
        self,
        scenario: Scenario,
        target: Target,
        *,
        prefix: str,
        timeout: float = 5.0,
        broker: Broker | None = None,
    ) -> None:
        self.scenario = scenario
        self.target = target
        self.prefix = prefix
        self.timeout = timeout
        self.broker = broker
        self.protocol = codec_protocol(scenario.protocol)
        self.spec: Spec = load(self.protocol)
        # frames are built and encoded with the model the file names them in (the protocol's
        # own, or for what only the extension has, the extension's); replies are decoded with
        # the extension's, a superset
        self.base = codec_for(scenario.protocol)
        self.extended = codec_for(self.protocol)
        self.extended_only = {m.full_name for m in self.extended.spec.methods} - {
            m.full_name for m in self.base.spec.methods
        }
        self.connections: dict[str, Mailbox] = {}
        self.variables: dict[str, Any] = {
            "prefix": prefix,
            "plain": f"\0{target.user}\0{target.password}",
        }
        self.queues: set[str] = set()
        self.exchanges: set[str] = set()
        self.cursors: dict[tuple[str, int], int] = {}
        self.expected = observed("reply")
        self.observed = observed("reply")
        self.notes: dict[str, Any] = {}
        self._steps: Mapping[str, Callable[[Step, Mapping[str, Any]], None]] = {
            name.removeprefix("_step_"): getattr(self, name)
            for name in dir(self)
            if name.startswith("_step_")
        }

    # -- the whole scenario ----------------------------------------------------------------

    def play(self) -> Played:
        started = time.monotonic()
        try:
            self.run(self.scenario.steps)
            played = Played("pass", self.scenario.outcome)
        except StepFailed as failed:
            played = Played(
                "fail",
                failed.message,
                failed.step.line,
                failed.step.kind,
                failed.expected,
                failed.observed,
            )
        except AmqpfuzzError as exc:
            played = Played("error", str(exc))
        except Exception as exc:  # a defect of ours: this scenario errs, the run goes on
            played = Played("error", f"internal error: {type(exc).__name__}: {exc}")
        finally:
            self.close()
        if played.status == "pass":
            played.expected, played.observed = self.expected, self.observed
        played.notes = self.notes
        played.duration = time.monotonic() - started
        return played

    def run(self, steps: tuple[Step, ...]) -> None:
        for step in steps:
            self._steps[step.kind](step, self.resolve(step.args))

    def close(self) -> None:
        """Close every connection, then delete what the scenario declared."""
        for mailbox in self.connections.values():
            mailbox.connection.close(timeout=1.0)
        self.connections.clear()
        ours = (
            [q for q in self.queues if self._ours(q)],
            [e for e in self.exchanges if self._ours(e)],
        )
        if not any(ours):
            return
        try:
            connection = Connection.open(self.target, protocol=self.protocol, timeout=self.timeout)
        except AmqpfuzzError as exc:
            self.notes["not_deleted"] = sorted(ours[0] + ours[1])
            self.notes["cleanup"] = str(exc)
            return
        left = connection.delete_entities(*ours, timeout=self.timeout)
        connection.close()
        if left:  # the broker refused or did not answer: said in the record, not hidden
            self.notes["not_deleted"] = left

    def _ours(self, name: str) -> bool:
        return name.startswith((self.prefix, "amq.gen"))

    # -- values ----------------------------------------------------------------------------

    def resolve(self, value: Any) -> Any:
        """``value`` with ``${name}`` variables substituted (a whole variable keeps its type),
        read-only mappings and tuples made plain dicts and lists."""
        if isinstance(value, str):
            whole = _VARIABLE.fullmatch(value)
            if whole and whole.group(1) in self.variables:
                return self.variables[whole.group(1)]
            return _VARIABLE.sub(lambda m: str(self.variables.get(m.group(1), m.group(0))), value)
        if isinstance(value, Mapping):
            return {str(k): self.resolve(v) for k, v in value.items()}
        if isinstance(value, tuple | list):
            return [self.resolve(v) for v in value]
        return value

    def _fail(
        self, step: Step, message: str, expected: dict[str, Any], seen: dict[str, Any]
    ) -> StepFailed:
        self.expected, self.observed = expected, seen
        return StepFailed(step, message, expected, seen)

    def _checked(self, expected: dict[str, Any], seen: dict[str, Any]) -> None:
        self.expected, self.observed = expected, seen

    def mailbox(self, step: Step, name: str) -> Mailbox:
        mailbox = self.connections.get(name)
        if mailbox is None:  # restarted broker: the connection is gone
            raise self._fail(
                step,
                f"connection {name!r} was lost (the broker restarted)",
                observed("reply"),
                observed("socket-close"),
            )
        return mailbox

    def _ended(self, mailbox: Mailbox) -> dict[str, Any]:
        return _of(mailbox.ended) if mailbox.ended else observed("timeout")

    def _send(self, mailbox: Mailbox, frames: list[Frame]) -> None:
        mailbox.connection.send(b"".join(self._encode(f) for f in frames))

    def _encode(self, frame: Frame) -> bytes:
        if isinstance(frame, MethodFrame) and frame.method.full_name in self.extended_only:
            return self.extended.encode(frame)
        return self.base.encode(frame)

    def _method(self, channel: int, name: str, arguments: Mapping[str, Any]) -> MethodFrame:
        codec = self.extended if name in self.extended_only else self.base
        if arguments.get("passive"):
            pass  # a passive declare creates nothing
        elif name == "queue.declare" and arguments.get("queue"):
            self.queues.add(str(arguments["queue"]))
        elif name == "exchange.declare" and arguments.get("exchange"):
            self.exchanges.add(str(arguments["exchange"]))
        return codec.method(name, channel, **arguments)

    def _content(
        self, mailbox: Mailbox, channel: int, args: Mapping[str, Any], class_name: str
    ) -> list[Frame]:
        body = args.get("body")
        data = body.encode() if isinstance(body, str) else b"x" * int(args.get("body_size", 0))
        return mailbox.connection.codec.content(
            channel,
            data,
            class_name=class_name,
            frame_max=mailbox.connection.frame_max,
            **args.get("properties", {}),
        )

    # -- connections and channels ----------------------------------------------------------

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

    # -- methods ---------------------------------------------------------------------------

    def _step_send(self, step: Step, args: Mapping[str, Any]) -> None:
        mailbox = self.mailbox(step, args["connection"])
        channel = args["channel"]
        arguments = dict(args.get("arguments", {}))
        frame = self._method(channel, args["method"], arguments)
        if "frame_size" in args:
            frame = self._padded(mailbox, frame, args["frame_size"], args["pad"])
        frames: list[Frame] = [frame]
        if frame.method.content:
            frames += self._content(mailbox, channel, args, frame.method.class_name)
        self._send(mailbox, frames)

    def _padded(self, mailbox: Mailbox, frame: MethodFrame, size: Any, pad: str) -> MethodFrame:
        """``frame`` with its field ``pad`` grown so that the frame is ``size`` octets."""
        codec = self.extended if frame.name in self.extended_only else self.base
        if isinstance(size, str):
            size = self.spec.constant(size).value
        for _ in range(3):  # a table's padding entry is added first, then sized
            missing = size - len(codec.encode(frame))
            if missing == 0:
                return frame
            value = frame[pad]
            if isinstance(value, dict):
                grown: Any = {**value, "padding": str(value.get("padding", "")) + "x" * missing}
            elif isinstance(value, bytes):
                grown = value + b"x" * missing
            else:
                grown = str(value) + "x" * missing
            if missing < 0:
                break
            frame = codec.method(frame.method, frame.channel, **{**frame.arguments, pad: grown})
        raise AmqpfuzzError(
            f"{self.scenario.path}: cannot pad {frame.name} to exactly {size} octets"
        )

    def _step_expect(self, step: Step, args: Mapping[str, Any]) -> None:
        mailbox = self.mailbox(step, args["connection"])
        if "reply" in args:
            message = self._reply(step, mailbox, args["channel"], args["reply"])
            self._fields(step, message, args.get("fields", {}))
            for name, variable in args.get("save", {}).items():
                self.variables[variable] = message[name]
        elif "close" in args:
            self._close(step, mailbox, args)
        else:
            self._nothing(step, mailbox, args.get("channel"), float(args["nothing"]))

    def _reply(self, step: Step, mailbox: Mailbox, channel: int, name: str) -> Message:
        expected = observed("reply", reply=name)
        message = mailbox.next_reply(channel, self.timeout)
        if message is None:
            seen = self._ended(mailbox)
            raise self._fail(
                step, f"expected {name} on channel {channel}, got {describe(seen)}", expected, seen
            )
        seen = _of_message(message)
        if message.name != name:
            raise self._fail(
                step, f"expected {name} on channel {channel}, got {message}", expected, seen
            )
        if name == "queue.declare-ok":
            self.queues.add(str(message["queue"]))
        self._checked(expected, seen)
        return message

    def _fields(self, step: Step, message: Message, fields: Mapping[str, Any]) -> None:
        for name, want in fields.items():
            value = message[name]
            if isinstance(value, bytes):
                value = value.decode("utf-8", "replace")
            problem = _mismatch(value, want)
            if problem:
                raise self._fail(
                    step,
                    f"{message.name} {name}: {problem}",
                    observed("reply", reply=message.name),
                    observed("reply", reply=message.name),
                )

    def _close(self, step: Step, mailbox: Mailbox, args: Mapping[str, Any]) -> None:
        kind = args["close"]
        code = args.get("code")
        value = self.spec.constant(code).value if code else None
        expected = observed(f"{kind}-close", value)
        channel = args.get("channel")
        if kind == "channel":
            message = mailbox.next_reply(args["channel"], self.timeout)
            seen = _of_message(message) if message is not None else self._ended(mailbox)
        else:
            seen = self._connection_closed(mailbox, channel)
        self._checked(expected, seen)
        wanted = f"{kind}-close" + (f" {value} {code}" if code else "")
        if seen["outcome"] != expected["outcome"]:
            raise self._fail(step, f"expected {wanted}, got {describe(seen)}", expected, seen)
        if value is not None and seen["reply_code"] != value:
            raise self._fail(step, f"expected {wanted}, got {describe(seen)}", expected, seen)

    def _connection_closed(self, mailbox: Mailbox, channel: int | None) -> dict[str, Any]:
        """Wait for the connection to end; a reply first (on ``channel``, or on any channel
        if none is given) is what came instead."""
        instead: list[Message] = []

        def done() -> bool:
            channels = [channel] if channel is not None else list(mailbox.replies)
            for number in channels:
                queue = mailbox.replies.get(number)
                if queue:
                    instead.append(queue.popleft())
            return mailbox.ended is not None or bool(instead)

        mailbox.wait_for(done, self.timeout)
        if instead and mailbox.ended is None:
            return _of_message(instead[0])
        return self._ended(mailbox)

    def _nothing(self, step: Step, mailbox: Mailbox, channel: int | None, seconds: float) -> None:
        expected = observed("nothing")
        before = mailbox.frames

        def arrived() -> bool:
            if channel is None:
                return mailbox.frames > before or mailbox.ended is not None
            return bool(mailbox.replies.get(channel)) or mailbox.ended is not None

        if mailbox.wait_for(arrived, seconds):
            pending = mailbox.replies.get(channel if channel is not None else 0)
            seen = _of_message(pending[0]) if pending else self._ended(mailbox)
            if mailbox.ended is None and not pending:
                seen = observed("frame")
            where = f"channel {channel}" if channel is not None else "the connection"
            raise self._fail(
                step,
                f"expected nothing on {where} for {seconds:g} s, got {describe(seen)}",
                expected,
                seen,
            )
        self._checked(expected, observed("nothing"))

    # -- protocol headers and sockets ------------------------------------------------------

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
        seen = _of_message(message)
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
            seen = _of_message(message)
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

    # -- messages --------------------------------------------------------------------------

    def _step_publish(self, step: Step, args: Mapping[str, Any]) -> None:
        mailbox = self.mailbox(step, args["connection"])
        channel = args["channel"]
        arguments = {
            "exchange": args.get("exchange", ""),
            "routing_key": args["routing_key"],
            "mandatory": bool(args.get("mandatory", False)),
            "immediate": bool(args.get("immediate", False)),
        }
        frame = self._method(channel, "basic.publish", arguments)
        self._send(mailbox, [frame, *self._content(mailbox, channel, args, "basic")])

    def _step_get(self, step: Step, args: Mapping[str, Any]) -> None:
        mailbox = self.mailbox(step, args["connection"])
        channel = args["channel"]
        arguments = {"queue": args["queue"], "no_ack": bool(args.get("no_ack", True))}
        self._send(mailbox, [self._method(channel, "basic.get", arguments)])
        want = args.get("expect")
        reply = "basic.get-empty" if want in (None, "empty") else "basic.get-ok"
        expected = observed("reply", reply=reply)
        message = mailbox.next_reply(channel, self.timeout)
        seen = _of_message(message) if message is not None else self._ended(mailbox)
        if message is None or message.name not in ("basic.get-ok", "basic.get-empty"):
            raise self._fail(step, f"expected {reply}, got {describe(seen)}", expected, seen)
        self.notes.setdefault("got", []).append(_summary(message))
        if want is None:
            self._checked(observed("reply", reply=message.name), seen)
            return
        if message.name != reply:
            raise self._fail(step, f"expected {reply}, got {message.name}", expected, seen)
        if isinstance(want, Mapping):
            problem = _message_mismatch(message, want)
            if problem:
                raise self._fail(step, f"basic.get-ok: {problem}", expected, seen)
        self._checked(expected, seen)

    def _step_consume(self, step: Step, args: Mapping[str, Any]) -> None:
        mailbox = self.mailbox(step, args["connection"])
        channel = args["channel"]
        arguments = {
            "queue": args["queue"],
            "consumer_tag": args["tag"],
            "no_ack": bool(args.get("no_ack", True)),
            "exclusive": bool(args.get("exclusive", False)),
            "no_local": bool(args.get("no_local", False)),
        }
        if "arguments" in args:
            arguments["arguments"] = args["arguments"]
        self._send(mailbox, [self._method(channel, "basic.consume", arguments)])
        self._reply(step, mailbox, channel, "basic.consume-ok")

    def _step_deliveries(self, step: Step, args: Mapping[str, Any]) -> None:
        mailbox = self.mailbox(step, args["connection"])
        channel, count, tag = args["channel"], args["count"], args.get("tag")
        key = (args["connection"], channel)
        start = self.cursors.get(key, 0)

        def new() -> list[Message]:
            arrived = mailbox.deliveries.get(channel, [])[start:]
            return [m for m in arrived if tag is None or m["consumer_tag"] == tag]

        within = float(args.get("within", 1.0))
        if count:
            mailbox.wait_for(lambda: len(new()) >= count, within)
        mailbox.wait_for(lambda: len(new()) > count, 0.1 if count else within)
        got = new()
        self.cursors[key] = len(mailbox.deliveries.get(channel, []))
        expected = observed("deliveries", reply=str(count))
        seen = observed("deliveries", reply=str(len(got)))
        self.notes.setdefault("delivered", []).append([_summary(m) for m in got])
        if len(got) != count:
            bodies = [m.body.decode("utf-8", "replace") for m in got]
            raise self._fail(
                step,
                f"expected {count} deliveries within {within:g} s, got {len(got)} {bodies}",
                expected,
                seen,
            )
        for key_name in ("bodies", "redelivered", "properties"):
            if key_name not in args:
                continue
            for index, (message, want) in enumerate(zip(got, args.get(key_name, ()), strict=True)):
                problem = _message_mismatch(message, {_SINGULAR[key_name]: want})
                if problem:
                    raise self._fail(step, f"delivery {index + 1}: {problem}", expected, seen)
        self._checked(expected, seen)

    def _tags(self, step: Step, mailbox: Mailbox, channel: int, delivery: Any) -> list[int]:
        received = mailbox.received.get(channel, [])
        if not received or (isinstance(delivery, int) and delivery > len(received)):
            raise self._fail(
                step,
                f"no delivery {delivery} to settle on channel {channel} ({len(received)} received)",
                observed("reply", reply="basic.deliver"),
                observed("nothing"),
            )
        if delivery == "all":
            return [int(m["delivery_tag"]) for m in received]
        message = received[-1] if delivery == "last" else received[delivery - 1]
        return [int(message["delivery_tag"])]

    def _step_ack(self, step: Step, args: Mapping[str, Any]) -> None:
        self._settle(step, args, "basic.ack", {"multiple": bool(args.get("multiple", False))})

    def _step_reject(self, step: Step, args: Mapping[str, Any]) -> None:
        self._settle(step, args, "basic.reject", {"requeue": bool(args.get("requeue", False))})

    def _step_nack(self, step: Step, args: Mapping[str, Any]) -> None:
        extra = {
            "requeue": bool(args.get("requeue", False)),
            "multiple": bool(args.get("multiple", False)),
        }
        self._settle(step, args, "basic.nack", extra)

    def _settle(
        self, step: Step, args: Mapping[str, Any], method: str, extra: dict[str, Any]
    ) -> None:
        mailbox = self.mailbox(step, args["connection"])
        channel, delivery = args["channel"], args["delivery"]
        tags = self._tags(step, mailbox, channel, delivery)
        if delivery == "all" and "multiple" in extra:  # one settlement of everything
            tags, extra = tags[-1:], {**extra, "multiple": True}
        frames: list[Frame] = [
            self._method(channel, method, {"delivery_tag": tag, **extra}) for tag in tags
        ]
        self._send(mailbox, frames)

    # -- the broker and control ------------------------------------------------------------

    def _step_restart_broker(self, step: Step, args: Mapping[str, Any]) -> None:
        if self.broker is None:
            raise AmqpfuzzError("restart_broker needs a throwaway broker")
        for mailbox in self.connections.values():
            mailbox.connection.abort()
        self.connections.clear()
        self.broker.restart()

    def _step_wait(self, step: Step, args: Mapping[str, Any]) -> None:
        time.sleep(float(args["seconds"]))

    def _step_repeat(self, step: Step, args: Mapping[str, Any]) -> None:
        for _ in self._rounds(int(args["times"])):
            self.run(step.steps)

    def _step_eventually(self, step: Step, args: Mapping[str, Any]) -> None:
        deadline = time.monotonic() + float(args.get("within", 2.0))
        while True:
            try:
                self.run(step.steps)
                return
            except StepFailed:
                if time.monotonic() >= deadline:
                    raise
            time.sleep(0.05)

    def _step_until_limit(self, step: Step, args: Mapping[str, Any]) -> None:
        most, least = int(args["max"]), int(args.get("at_least", 0))
        close = args.get("expect_close")
        done = 0
        for _ in self._rounds(most):
            try:
                self.run(step.steps)
            except StepFailed as failed:
                refused = failed.observed["outcome"] in ("channel-close", "connection-close")
                if close is not None:
                    code = close.get("code")
                    refused = refused and failed.observed["outcome"] == f"{close['close']}-close"
                    if code is not None:
                        refused = refused and (
                            failed.observed["reply_code"] == self.spec.constant(code).value
                        )
                if not refused:
                    raise
                self.notes["refused"] = describe(failed.observed)
                break
            done += 1
        self.notes["count"] = done
        expected = observed("count", reply=f">= {least}")
        seen = observed("count", reply=str(done))
        if done < least:
            raise self._fail(
                step,
                f"the broker refused after {done} rounds; at least {least} are required",
                expected,
                seen,
            )
        self._checked(expected, seen)

    def _rounds(self, count: int) -> Iterator[int]:
        outer = self.variables.get("i")
        try:
            for i in range(1, count + 1):
                self.variables["i"] = i
                yield i
        finally:
            if outer is None:
                self.variables.pop("i", None)
            else:
                self.variables["i"] = outer


_SINGULAR = {"bodies": "body", "redelivered": "redelivered", "properties": "properties"}


def _summary(message: Message) -> dict[str, Any]:
    item: dict[str, Any] = {"method": message.name}
    if message.header is not None:
        item["body"] = message.body.decode("utf-8", "replace")
        item["redelivered"] = message["redelivered"] if message.name != "basic.return" else None
    return item


def _message_mismatch(message: Message, want: Mapping[str, Any]) -> str | None:
    """Why ``message`` does not match ``want`` (body, redelivered, properties,
    message_count), or None."""
    for key, value in want.items():
        if key == "body":
            body = message.body.decode("utf-8", "replace")
            if body != value:
                return f"body {body!r}, expected {value!r}"
        elif key == "properties":
            have = message.header.properties if message.header else {}
            for name, item in value.items():
                problem = _mismatch(have.get(name), item)
                if problem:
                    return f"property {name}: {problem}"
        else:
            problem = _mismatch(message[key], value)
            if problem:
                return f"{key}: {problem}"
    return None


def _mismatch(value: Any, want: Any) -> str | None:
    """Why a field's ``value`` does not match the expectation ``want`` (a literal or a
    matcher of :data:`amqpfuzz.scenarios.vocabulary.MATCHERS`), or None."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(want, Mapping) and len(want) == 1:
        ((matcher, argument),) = want.items()
        if matcher == "has_keys":
            missing = [k for k in argument if not isinstance(value, dict) or k not in value]
            return f"lacks keys {missing}" if missing else None
        if matcher == "contains":
            items = value.split() if isinstance(value, str) else list(value or ())
            return None if argument in items else f"{value!r} does not contain {argument!r}"
        if matcher == "not_in":
            return f"{value!r} is one of {argument!r}" if value in argument else None
    return None if value == want else f"{value!r}, expected {want!r}"
