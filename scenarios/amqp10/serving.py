"""The names of the 1.0 server-side operators, as data: what a client file's ``serve`` step
may name.

The operators themselves (:mod:`amqpfuzz.strategies.amqp10.serving`) are strategies, built on
Hypothesis; checking a file needs only their names, and the nightly report checks the files
when it counts them, so the names are kept here, in the catalogue's order.
``tests/scenarios/test_serving.py`` fails if they drift from the catalogue.
"""

from __future__ import annotations

__all__ = ["SERVING_OPERATORS"]

SERVING_OPERATORS: tuple[str, ...] = (
    "frame-size-small",
    "doff-small",
    "doff-past-end",
    "unknown-frame-type",
    "frame-over-max",
    "unknown-constructor",
    "list-size-lies",
    "list-count-lies",
    "unknown-descriptor",
    "invalid-utf8",
    "absurd-size",
    "bad-boolean",
    "mandatory-null",
    "header-version",
    "garbage-after-outcome",
    "sasl-auth-failed",
    "open-max-frame-small",
    "open-twice",
    "channel-over-max",
    "handle-over-max",
    "no-session",
    "handle-in-use",
    "unattached-handle",
    "detach-unattached",
    "flow-unattached",
    "beyond-credit",
    "delivery-id-gap",
    "unknown-disposition",
    "more-never-ends",
    "aborted-delivery",
    "settle-mode-changed",
    "attach-length-past-frame",
    "attach-length-negative",
    "attach-length-edge",
    "attach-length-absurd",
    "deliver-length-past-frame",
    "deliver-length-negative",
    "deliver-length-edge",
    "deliver-length-absurd",
    "nested-annotations",
)
