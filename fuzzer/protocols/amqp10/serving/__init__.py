"""amqpfuzz as the 1.0 peer a client library connects to (:mod:`.peer`), to test client
libraries: the family's server side."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from hypothesis.errors import InvalidArgument

from amqpfuzz.spec.amqp10 import Spec100, load
from amqpfuzz.spec.amqp10.codec import FrameReader, codec_for
from amqpfuzz.strategies.amqp10.serving import (
    OPERATORS,
    POINTS,
    SCRIPT_BLOB,
    Script,
    script_builder,
)
from amqpfuzz.strategies.operator import selected

from .peer import Peer, ServingError

__all__ = ["SERVING", "Peer", "ServingError"]


class Amqp10Serving:
    """The family's server side (:class:`~amqpfuzz.fuzzer.protocols.family.Serving`)."""

    def sends(self, protocol: str) -> tuple[str, ...]:
        """Every performative and SASL frame: in 1.0 either end sends each (but sasl-init and
        sasl-response, which only the client's side sends)."""
        codec = codec_for(protocol)
        return tuple(
            name
            for name in codec.types.composites
            if codec.types.provides(name, ("frame",))
            or (
                codec.types.provides(name, ("sasl-frame",))
                and name not in ("sasl-init", "sasl-response")
            )
        )

    def reader(self, protocol: str) -> FrameReader:
        return codec_for(protocol).reader()

    def operators(self, protocol: str) -> tuple[str, ...]:
        spec = _spec(protocol)
        return tuple(op.name for op in OPERATORS if op.applies_to(spec))

    def scripts(
        self, protocol: str, operators: Sequence[str] | None, valid_share: float
    ) -> tuple[int, Callable[[bytes], Script]]:
        spec = _spec(protocol)
        usable = [op for op in OPERATORS if op.applies_to(spec)]
        try:
            chosen = selected(usable, operators, protocol)
        except InvalidArgument as exc:
            raise ServingError(str(exc)) from None
        build = script_builder(spec, codec_for(protocol), tuple(chosen), POINTS, valid_share)
        return SCRIPT_BLOB, build

    def peer(self, protocol: str) -> Peer:
        return Peer(_spec(protocol), codec_for(protocol))

    def scripted(
        self, protocol: str, operator: str | None, served: Mapping[str, Any], blob: bytes
    ) -> Script:
        """(``served``: the peer's ``open`` and ``begin`` fields.)"""
        names = [operator] if operator is not None else None
        script = self.scripts(protocol, names, 0.0 if operator else 1.0)[1](blob)
        opened = {**script.open_fields, **dict(served.get("open") or {})}
        return replace(script, open_fields=opened, begin_fields=dict(served.get("begin") or {}))

    def code(self, protocol: str, name: str) -> str:
        return str(_spec(protocol).error_conditions()[name][0])


def _spec(protocol: str) -> Spec100:
    return load(protocol)


SERVING = Amqp10Serving()
