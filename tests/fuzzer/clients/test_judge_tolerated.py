"""The reaction oracle takes the closes a server-side operator tolerates beside the reaction it
requires: another close the specification's text names for the same case."""

from __future__ import annotations

import pytest

from amqpfuzz.fuzzer.clients.judge import judge
from amqpfuzz.fuzzer.protocols.served import Exchange
from amqpfuzz.spec.amqp091.loader import load as load091
from amqpfuzz.spec.amqp10 import load as load10
from amqpfuzz.spec.amqp10.codec import codec_for
from amqpfuzz.strategies.amqp091 import serving as serving091
from amqpfuzz.strategies.amqp10 import serving as serving10


def _script091(name: str) -> object:
    (op,) = [o for o in serving091.OPERATORS if o.name == name]
    build = serving091.script_builder(load091("0-9-1-rabbit"), (op,), serving091.POINTS, 0.0)
    return build(bytes(serving091.SCRIPT_BLOB))


def _script10(name: str) -> object:
    (op,) = [o for o in serving10.OPERATORS if o.name == name]
    build = serving10.script_builder(load10("1.0"), codec_for("1.0"), (op,), serving10.POINTS, 0.0)
    return build(bytes(serving10.SCRIPT_BLOB))


def _signature(script: object, ex: Exchange, close_code: int | str) -> str:
    events = [{"event": "closed", "by": "client"}]
    judged = judge("c", script, ex, events, True, None, 0, 1 << 30, close_code)  # type: ignore[arg-type]
    return judged.signature


@pytest.mark.parametrize(
    ("ex", "signature"),
    [
        # 2.2.4: before connection.open, the socket closed without a word
        (Exchange(struck="tune on channel 7", ended="socket"), ""),
        # 4.2.3: "MUST signal a connection exception with reply code 503 (command invalid)"
        (Exchange(struck="tune on channel 7", client_close=(503, "", 10, 30), ended="client-close"), ""),
        (
            Exchange(struck="tune on channel 7", client_close=(504, "", 10, 30), ended="client-close"),
            "reaction:c:tune-on-channel:socket-close->connection-close/N",
        ),
    ],
)  # fmt: skip
def test_connection_tune_on_a_channel_is_refused_either_way_the_text_says(
    ex: Exchange, signature: str
) -> None:
    assert _signature(_script091("tune-on-channel"), ex, 320) == signature


@pytest.mark.parametrize(
    ("ex", "signature"),
    [
        (Exchange(struck="attach", closes=[("session-close", "amqp:session:handle-in-use")],
                  ended="socket"), ""),
        # transport 2.7.3: "an immediate close carrying a Handle-in-use session-error"
        (Exchange(struck="attach", client_close=("amqp:session:handle-in-use", "", 0, 0),
                  ended="client-close"), ""),
        (Exchange(struck="attach", client_close=("amqp:invalid-field", "", 0, 0),
                  ended="client-close"),
         "reaction:c:handle-in-use:session-close/amqp:session:handle-in-use"
         "->connection-close/amqp:invalid-field"),
    ],
)  # fmt: skip
def test_handle_in_use_may_be_carried_by_the_close_of_the_connection(
    ex: Exchange, signature: str
) -> None:
    assert _signature(_script10("handle-in-use"), ex, "amqp:connection:forced") == signature


def test_an_operator_whose_strike_never_came_is_judged_as_the_valid_exchange() -> None:
    """amqp091-go 1.5.0 refuses a valid server-properties table (502) before any operator's
    point: that failure is the valid exchange's, not the operator's it was drawn with."""
    refused = Exchange(client_close=(502, "", 10, 11), ended="client-close")
    assert _signature(_script091("tune-on-channel"), refused, 320) == (
        "reaction:c:valid:reply->connection-close/N"
    )
    struck = Exchange(
        struck="tune on channel 7", client_close=(502, "", 10, 30), ended="client-close"
    )
    assert _signature(_script091("tune-on-channel"), struck, 320).startswith(
        "reaction:c:tune-on-channel:"
    )
