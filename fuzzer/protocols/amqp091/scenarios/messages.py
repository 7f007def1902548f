"""Steps on messages: publish, get, consume, the deliveries that arrive, and settling them."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from amqpfuzz.scenarios import Step, handles
from amqpfuzz.spec import OutcomeKind
from amqpfuzz.spec.amqp091.codec import Frame

from ...outcome import Outcome
from .mailbox import Mailbox, Message
from .state import (
    SINGULAR,
    PlayerState,
    message_mismatch,
    reaction_of_message,
    summary_of,
)

__all__ = ["MessageSteps"]


class MessageSteps(PlayerState, part=True):
    @handles("publish")
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

    @handles("get")
    def _step_get(self, step: Step, args: Mapping[str, Any]) -> None:
        mailbox = self.mailbox(step, args["connection"])
        channel = args["channel"]
        arguments = {"queue": args["queue"], "no_ack": bool(args.get("no_ack", True))}
        want = args.get("expect")
        reply = "basic.get-empty" if want in (None, "empty") else "basic.get-ok"
        expected = Outcome(OutcomeKind.REPLY, reply=reply)
        until = time.monotonic() + float(args.get("within", 1.0))
        while True:  # a message expected may be on its way: asked for again until `within`
            self._send(mailbox, [self._method(channel, "basic.get", arguments)])
            message = mailbox.next_reply(channel, self.timeout)
            empty = message is not None and message.name == "basic.get-empty"
            if not (empty and reply == "basic.get-ok" and time.monotonic() < until):
                break
            time.sleep(0.02)
        seen = reaction_of_message(message) if message is not None else self._ended(mailbox)
        if message is None or message.name not in ("basic.get-ok", "basic.get-empty"):
            raise self.failed(step, f"expected {reply}, got {seen.described()}", expected, seen)
        self.notes.setdefault("got", []).append(summary_of(message))
        if want is None:
            self.checked(Outcome(OutcomeKind.REPLY, reply=message.name), seen)
            return
        if message.name != reply:
            raise self.failed(step, f"expected {reply}, got {message.name}", expected, seen)
        if isinstance(want, Mapping):
            problem = message_mismatch(message, want)
            if problem:
                raise self.failed(step, f"basic.get-ok: {problem}", expected, seen)
        self.checked(expected, seen)

    @handles("consume")
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

    @handles("deliveries")
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
        expected = Outcome(OutcomeKind.DELIVERIES, reply=str(count))
        seen = Outcome(OutcomeKind.DELIVERIES, reply=str(len(got)))
        self.notes.setdefault("delivered", []).append([summary_of(m) for m in got])
        if len(got) != count:
            bodies = [m.body.decode("utf-8", "replace") for m in got]
            raise self.failed(
                step,
                f"expected {count} deliveries within {within:g} s, got {len(got)} {bodies}",
                expected,
                seen,
            )
        for key_name in ("bodies", "redelivered", "properties"):
            if key_name not in args:
                continue
            for index, (message, want) in enumerate(zip(got, args.get(key_name, ()), strict=True)):
                problem = message_mismatch(message, {SINGULAR[key_name]: want})
                if problem:
                    raise self.failed(step, f"delivery {index + 1}: {problem}", expected, seen)
        self.checked(expected, seen)

    def _tags(self, step: Step, mailbox: Mailbox, channel: int, delivery: Any) -> list[int]:
        received = mailbox.received.get(channel, [])
        if not received or (isinstance(delivery, int) and delivery > len(received)):
            raise self.failed(
                step,
                f"no delivery {delivery} to settle on channel {channel} ({len(received)} received)",
                Outcome(OutcomeKind.REPLY, reply="basic.deliver"),
                Outcome(OutcomeKind.NOTHING),
            )
        if delivery == "all":
            return [int(m["delivery_tag"]) for m in received]
        message = received[-1] if delivery == "last" else received[delivery - 1]
        return [int(message["delivery_tag"])]

    @handles("ack")
    def _step_ack(self, step: Step, args: Mapping[str, Any]) -> None:
        self._settle(step, args, "basic.ack", {"multiple": bool(args.get("multiple", False))})

    @handles("reject")
    def _step_reject(self, step: Step, args: Mapping[str, Any]) -> None:
        self._settle(step, args, "basic.reject", {"requeue": bool(args.get("requeue", False))})

    @handles("nack")
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
