"""The 1.0 family's object for the driving layer (:data:`FAMILY`)."""

from __future__ import annotations

from ..family import Programs, ScenarioPlayer, Serving
from .driver import Amqp10Driver

__all__ = ["FAMILY", "Amqp10Family"]


class Amqp10Family:
    """A raw 1.0 client over our codec for cases and scenarios, python-qpid-proton for stateful programs."""

    name = "amqp10"

    @property
    def serving(self) -> Serving:
        # imported when first asked for: only client campaigns play the server
        from .serving import SERVING

        return SERVING

    def driver(self, protocol: str) -> Amqp10Driver:
        return Amqp10Driver(protocol)

    @property
    def player(self) -> ScenarioPlayer:
        # imported when first asked for: a campaign never plays a scenario file
        from .scenarios import PLAYER

        return PLAYER

    @property
    def programs(self) -> Programs:
        # imported when first asked for: python-qpid-proton and Hypothesis's state machines
        # load only where programs run
        from .programs import PROGRAMS

        return PROGRAMS


FAMILY = Amqp10Family()
