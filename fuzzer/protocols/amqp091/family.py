"""The 0-8/0-9/0-9-1 family's object for the driving layer (:data:`FAMILY`)."""

from __future__ import annotations

from ..family import Programs, ScenarioPlayer, Serving
from .driver import Amqp091Driver
from .serving import SERVING

__all__ = ["FAMILY", "Amqp091Family"]


class Amqp091Family:
    """A raw 0-8/0-9/0-9-1 client over our codec for cases and scenarios, pika for stateful
    programs."""

    name = "amqp091"
    serving: Serving | None = SERVING

    def driver(self, protocol: str) -> Amqp091Driver:
        return Amqp091Driver(protocol)

    @property
    def player(self) -> ScenarioPlayer:
        # imported when first asked for: a campaign never plays a scenario file
        from .scenarios import PLAYER

        return PLAYER

    @property
    def programs(self) -> Programs:
        # imported when first asked for: pika and Hypothesis's state machines load only
        # where programs run
        from .programs import PROGRAMS

        return PROGRAMS


FAMILY = Amqp091Family()
