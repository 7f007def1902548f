"""Steps that control the run: restart the broker, wait, repeat, retry until a check holds,
repeat until the broker refuses."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from amqpfuzz.scenarios import Step, handles
from amqpfuzz.spec import AmqpfuzzError, OutcomeKind, Scope

from ...outcome import Outcome
from ...playing import StepFailed
from .state import PlayerState

__all__ = ["ControlSteps"]


class ControlSteps(PlayerState, part=True):
    @handles("serve", "expect_client")
    def _step_client(self, step: Step, args: Mapping[str, Any]) -> None:
        raise AmqpfuzzError(
            "a client scenario: amqpfuzz scenarios --client NAME plays it against a client library"
        )

    @handles("restart_broker")
    def _step_restart_broker(self, step: Step, args: Mapping[str, Any]) -> None:
        if self.broker is None:
            raise AmqpfuzzError("restart_broker needs a throwaway broker")
        for mailbox in self.connections.values():
            mailbox.connection.abort()
        self.connections.clear()
        self.broker.restart()

    @handles("wait")
    def _step_wait(self, step: Step, args: Mapping[str, Any]) -> None:
        time.sleep(float(args["seconds"]))

    @handles("repeat")
    def _step_repeat(self, step: Step, args: Mapping[str, Any]) -> None:
        for _ in self._rounds(int(args["times"])):
            self.run(step.steps)

    @handles("eventually")
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

    @handles("until_limit")
    def _step_until_limit(self, step: Step, args: Mapping[str, Any]) -> None:
        most, least = int(args["max"]), int(args.get("at_least", 0))
        close = args.get("expect_close")
        done = 0
        for _ in self._rounds(most):
            try:
                self.run(step.steps)
            except StepFailed as failed:
                closes = (OutcomeKind.CHANNEL_CLOSE, OutcomeKind.CONNECTION_CLOSE)
                refused = failed.observed.kind in closes
                if close is not None:
                    code = close.get("code")
                    refused = refused and failed.observed.kind == Scope(close["close"]).close
                    if code is not None:
                        refused = refused and (
                            failed.observed.reply_code == self.spec.constant(code).value
                        )
                if not refused:
                    raise
                self.notes["refused"] = failed.observed.described()
                break
            done += 1
        self.notes["count"] = done
        expected = Outcome(OutcomeKind.COUNT, reply=f">= {least}")
        seen = Outcome(OutcomeKind.COUNT, reply=str(done))
        if done < least:
            raise self.failed(
                step,
                f"the broker refused after {done} rounds; at least {least} are required",
                expected,
                seen,
            )
        self.checked(expected, seen)
