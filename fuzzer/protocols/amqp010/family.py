"""The 0-10 family's object for the driving layer (:data:`FAMILY`)."""

from __future__ import annotations

from ..family import Programs, ScenarioPlayer, Serving
from .driver import Amqp010Driver

__all__ = ["FAMILY", "Amqp010Family"]


class Amqp010Family:
    """A raw 0-10 client over our codec for cases and scenarios."""

    name = "amqp010"
    serving: Serving | None = None

    def driver(self, protocol: str) -> Amqp010Driver:
        return Amqp010Driver(protocol)

    @property
    def player(self) -> ScenarioPlayer:
        # imported when first asked for: a campaign never plays a scenario file
        from .scenarios import PLAYER

        return PLAYER

    programs: Programs | None = None  # (no 0-10 client library here to run them through)


FAMILY = Amqp010Family()
