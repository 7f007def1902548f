"""A divergence's odd one out: the target that stands alone against others that agree."""

from __future__ import annotations

from typing import Any

import pytest

from amqpfuzz.fuzzer.engine.verdicts import odd_one_out


def reaction(outcome: str, code: int | None = None, condition: str | None = None) -> dict[str, Any]:
    return {"outcome": outcome, "reply_code": code, "condition": condition}


CLOSE_501 = reaction("connection-close", 501)
SOCKET = reaction("socket-close")


@pytest.mark.parametrize(
    ("reactions", "alone"),
    [
        ({"a": CLOSE_501, "b": CLOSE_501, "c": SOCKET}, "c"),
        ({"a": SOCKET, "b": CLOSE_501, "c": CLOSE_501, "d": CLOSE_501}, "a"),
        # the code counts, not only the outcome
        ({"a": CLOSE_501, "b": reaction("connection-close", 502), "c": CLOSE_501}, "b"),
        # the condition too (1.0)
        (
            {
                "a": reaction("connection-close", None, "amqp:decode-error"),
                "b": reaction("connection-close", None, "amqp:internal-error"),
                "c": reaction("connection-close", None, "amqp:decode-error"),
            },
            "b",
        ),
        # no majority: two targets, three answers, two against two
        ({"a": CLOSE_501, "b": SOCKET}, None),
        ({"a": CLOSE_501, "b": SOCKET, "c": reaction("reply")}, None),
        ({"a": CLOSE_501, "b": CLOSE_501, "c": SOCKET, "d": SOCKET}, None),
    ],
)
def test_the_odd_one_out(reactions: dict[str, dict[str, Any]], alone: str | None) -> None:
    assert odd_one_out(reactions) == alone
