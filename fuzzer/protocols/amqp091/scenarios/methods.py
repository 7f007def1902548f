"""Steps that send methods and check what comes back: a reply (and its fields), a close with
its code, or nothing at all."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from amqpfuzz.scenarios import Step, handles
from amqpfuzz.spec import AmqpfuzzError, OutcomeKind, Scope
from amqpfuzz.spec.amqp091.codec import Frame, MethodFrame

from ...outcome import Outcome
from .mailbox import Mailbox, Message
from .state import (
    PlayerState,
    mismatch,
    reaction_of_message,
)

__all__ = ["MethodSteps"]


class MethodSteps(PlayerState, part=True):
    @handles("send")
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

    @handles("expect")
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

    def _fields(self, step: Step, message: Message, fields: Mapping[str, Any]) -> None:
        for name, want in fields.items():
            value = message[name]
            if isinstance(value, bytes):
                value = value.decode("utf-8", "replace")
            problem = mismatch(value, want)
            if problem:
                raise self.failed(
                    step,
                    f"{message.name} {name}: {problem}",
                    Outcome(OutcomeKind.REPLY, reply=message.name),
                    Outcome(OutcomeKind.REPLY, reply=message.name),
                )

    def _close(self, step: Step, mailbox: Mailbox, args: Mapping[str, Any]) -> None:
        kind = args["close"]
        code = args.get("code")
        value = self.spec.constant(code).value if code else None
        expected = Outcome(Scope(kind).close, value)
        channel = args.get("channel")
        if kind == "channel":
            message = mailbox.next_reply(args["channel"], self.timeout)
            seen = reaction_of_message(message) if message is not None else self._ended(mailbox)
        else:
            seen = self._connection_closed(mailbox, channel)
        self.checked(expected, seen)
        wanted = f"{Scope(kind).close}" + (f" {value} {code}" if code else "")
        if seen.kind != expected.kind:
            raise self.failed(step, f"expected {wanted}, got {seen.described()}", expected, seen)
        if value is not None and seen.reply_code != value:
            raise self.failed(step, f"expected {wanted}, got {seen.described()}", expected, seen)

    def _connection_closed(self, mailbox: Mailbox, channel: int | None) -> Outcome:
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
            return reaction_of_message(instead[0])
        return self._ended(mailbox)

    def _nothing(self, step: Step, mailbox: Mailbox, channel: int | None, seconds: float) -> None:
        expected = Outcome(OutcomeKind.NOTHING)
        before = mailbox.frames

        def arrived() -> bool:
            if channel is None:
                return mailbox.frames > before or mailbox.ended is not None
            return bool(mailbox.replies.get(channel)) or mailbox.ended is not None

        if mailbox.wait_for(arrived, seconds):
            pending = mailbox.replies.get(channel if channel is not None else 0)
            seen = reaction_of_message(pending[0]) if pending else self._ended(mailbox)
            if mailbox.ended is None and not pending:
                seen = Outcome(OutcomeKind.FRAME)
            where = f"channel {channel}" if channel is not None else "the connection"
            raise self.failed(
                step,
                f"expected nothing on {where} for {seconds:g} s, got {seen.described()}",
                expected,
                seen,
            )
        self.checked(expected, Outcome(OutcomeKind.NOTHING))
