"""The error of a throwaway broker, which everything that starts one may raise."""

from __future__ import annotations

from amqpfuzz.spec import AmqpfuzzError

__all__ = ["BrokerError"]


class BrokerError(AmqpfuzzError):
    """A throwaway broker could not be started (or died): says why, with its last log lines."""
