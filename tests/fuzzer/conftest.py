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


@pytest.fixture(scope="session")
def broker_j() -> Iterator[Broker]:
    """Qpid Broker-J from Maven Central (make setup fetches it): every AMQP version of the seeds;
    JaCoCo's agent in its JVM measures its 0-8 family plugin (``broker.coverage_port``)."""
    with throwaway("qpid-broker-j", coverage="amqp091") as broker:
        yield broker


@pytest.fixture(scope="session")
def artemis() -> Iterator[Broker]:
    """ActiveMQ Artemis from Maven Central (make setup fetches it): AMQP 1.0."""
    with throwaway("artemis") as broker:
        yield broker
