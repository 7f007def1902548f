"""Throwaway brokers for the fuzzer's tests: started here, on free ports, by the test run itself.

A broker that cannot start fails the tests that need it (BrokerError), it never skips them.
One of each per pytest-xdist worker, for the whole session.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from amqpfuzz.fuzzer.brokers import Broker, throwaway


@pytest.fixture(scope="session")
def rabbitmq() -> Iterator[Broker]:
    with throwaway("rabbitmq") as broker:
        yield broker


@pytest.fixture(scope="session")
def garagemq() -> Iterator[Broker]:
    with throwaway("garagemq") as broker:
        yield broker


@pytest.fixture
def fresh_garagemq() -> Iterator[Broker]:
    """A GarageMQ of the test's own, for tests that may bring it down."""
    with throwaway("garagemq") as broker:
        yield broker
