"""pika, the real 0-9-1 client, where a normal client is right: connection parameters made in
one place from a :class:`~amqpfuzz.fuzzer.brokers.Target` (its credentials, virtual host and,
for ``amqps://``, its TLS context)."""

from __future__ import annotations

from typing import Any

import pika

from ...brokers import Target

__all__ = ["pika_connection", "pika_parameters"]


def pika_parameters(target: Target, **options: Any) -> pika.ConnectionParameters:
    """Parameters for ``target``; ``options`` are pika's own (``heartbeat``, timeouts)."""
    context = target.ssl_context()
    return pika.ConnectionParameters(
        host=target.host,
        port=target.port,
        virtual_host=target.vhost,
        credentials=pika.PlainCredentials(target.user, target.password),
        ssl_options=pika.SSLOptions(context, target.host) if context is not None else None,
        **options,
    )


def pika_connection(target: Target, **options: Any) -> pika.BlockingConnection:
    """A ``pika.BlockingConnection`` to ``target``."""
    return pika.BlockingConnection(pika_parameters(target, **options))
