"""The names of the 0-8/0-9/0-9-1 server-side operators, as data: what a client file's
``serve`` step may name.

The operators themselves (:mod:`amqpfuzz.strategies.amqp091.serving`) are strategies, built
on Hypothesis; checking a file needs only their names, and the nightly report checks the
files when it counts them, so the names are kept here, in the catalogue's order.
``tests/scenarios/test_serving.py`` fails if they drift from the catalogue.
"""

from __future__ import annotations

__all__ = ["SERVING_OPERATORS"]

SERVING_OPERATORS: tuple[str, ...] = (
    "start-version",
    "start-table-overrun",
    "start-table-negative",
    "start-table-type",
    "start-truncated",
    "tune-frame-max-small",
    "tune-on-channel",
    "frame-end",
    "size-larger",
    "size-smaller",
    "unknown-frame-type",
    "truncated-arguments",
    "reply-closed-channel",
    "reply-channel-zero",
    "unknown-method",
    "unknown-class",
    "client-method",
    "body-size-larger",
    "body-too-long",
    "body-alone",
    "header-alone",
    "header-class",
    "header-undersized",
    "above-frame-max",
    "headers-table-type",
    "property-flags",
    "method-in-content",
    "deliver-closed-channel",
    "heartbeat-channel",
    "heartbeat-payload",
    "unsolicited-reply",
    "start-length-past-frame",
    "start-length-negative",
    "start-length-edge",
    "start-length-absurd",
    "reply-length-past-frame",
    "reply-length-negative",
    "reply-length-edge",
    "reply-length-absurd",
    "deliver-length-past-frame",
    "deliver-length-negative",
    "deliver-length-edge",
    "deliver-length-absurd",
    "body-size-lies",
    "nested-server-properties",
    "tune-limit-edges",
)
