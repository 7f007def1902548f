"""Crash traffic kept and sent again: each connection prepared as far as its case's was (a case
placed before open gets a connection that is not open), and the stage kept in a reproducer."""

from __future__ import annotations

from typing import Any

from amqpfuzz.fuzzer.brokers import parse_target
from amqpfuzz.fuzzer.engine.runner import Sent
from amqpfuzz.fuzzer.engine.traffic import as_data, from_data, send

TRAFFIC = [
    Sent(0, False, None, b"lane opening"),
    Sent(0, False, 0, b"case 0"),
    Sent(1, True, 1, b"AMQP\x00\x01\x00\x00", "start"),
    Sent(2, True, 2, b"after the header", "header"),
    Sent(0, False, 3, b"case 3"),
]


class Spy:
    """What :func:`send` asks of a driver: one connection per number, at its stage."""

    def __init__(self) -> None:
        self.asked: list[str | None] = []
        self.sent: list[tuple[int, bytes]] = []

    def spare(self, target: Any, timeout: float, stage: str | None = None) -> Any:
        self.asked.append(stage)
        spy, number = self, len(self.asked) - 1

        class Wire:
            def send(self, data: bytes) -> None:
                spy.sent.append((number, data))

            def pump(self, seconds: float) -> None:
                pass

            def abort(self) -> None:
                pass

        return Wire()


def test_the_stage_survives_a_reproducer() -> None:
    assert from_data(as_data(TRAFFIC)) == TRAFFIC
    assert "stage" not in as_data(TRAFFIC)[0]  # (older reproducers: no stage, open)


def test_each_connection_is_prepared_as_its_case_had_it() -> None:
    spy = Spy()
    send(spy, parse_target("amqp://127.0.0.1:1"), TRAFFIC, 1.0)  # type: ignore[arg-type]
    assert spy.asked == [None, "start", "header"]
    assert spy.sent == [(0, b"lane opening"), (0, b"case 0"), (1, b"AMQP\x00\x01\x00\x00"),
                        (2, b"after the header"), (0, b"case 3")]  # fmt: skip
