"""A throwaway broker whose free port someone else took before it bound it starts on other
ports; a port the user gave is never moved."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from amqpfuzz.fuzzer.brokers import BrokerError
from amqpfuzz.fuzzer.brokers.processes import BROKERS

pytestmark = pytest.mark.slow  # each test starts a broker


@contextmanager
def taken(port: int) -> Iterator[None]:
    """Another process's listener on ``port``, on every address."""
    with socket.socket(socket.AF_INET6) as holder:
        holder.bind(("::", port))
        holder.listen()
        yield


@pytest.mark.parametrize("kind", ["rabbitmq", "garagemq"])
def test_a_chosen_port_taken_before_the_broker_binds_it_is_chosen_again(kind: str) -> None:
    broker = BROKERS[kind]()
    first = broker.port
    try:
        with taken(first):
            broker.start()
            assert broker.port != first
            with socket.create_connection(("127.0.0.1", broker.port), timeout=5):
                pass
        restarted = broker.port
        broker.restart()  # once it has served, its port is the one its URL names
        assert broker.port == restarted
    finally:
        broker.remove()


def test_a_port_the_user_gave_is_not_moved() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    broker = BROKERS["garagemq"](port)
    try:
        with taken(port), pytest.raises(BrokerError, match="while starting"):
            broker.start()
        assert broker.port == port
    finally:
        broker.remove()
