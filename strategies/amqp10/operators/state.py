"""Operators that send frames out of the connection's order (transport 2.4 connections): a
frame before open, a second open, a frame after close."""

from __future__ import annotations

from ...source import Source
from ..operator import Built, Context
from .common import operator

__all__: list[str] = []


@operator(
    "before-open",
    "a frame before the open frame (transport 2.4.1: each peer MUST send open before any "
    "other frame; no reaction is named: a peer may close, must stay up)",
    "sends a begin as the first frame after the protocol header, then the open",
    ("not-allowed", "illegal-state", "framing-error"),
    "connection",
    "state",
    or_reply=True,
)
def before_open(src: Source, ctx: Context) -> Built:
    steps = (ctx.wire(ctx.begin(), channel=0), ctx.wire(ctx.open(src), channel=0))
    return Built(steps, "begin", "before open", placement="start")


@operator(
    "open-twice",
    "a second open on a connection already open (transport 2.4.1: open is sent once; no "
    "reaction is named: a peer may close, must stay up)",
    "sends open again once the connection is open",
    ("not-allowed", "illegal-state", "framing-error"),
    "connection",
    "state",
    or_reply=True,
)
def open_twice(src: Source, ctx: Context) -> Built:
    return Built((ctx.wire(ctx.open(src), channel=0),), "open", "a second open", "none")
