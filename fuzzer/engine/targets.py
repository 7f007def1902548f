"""A target as a run knows it: where it is, which protocol it is spoken to in, what it says it
is, the profile that goes with that, and the throwaway broker behind it (if amqpfuzz started it).

Campaigns and conformance runs extend :class:`TargetState` with what they keep per target;
what a target is (its announcement, its profile, how records name it) is decided here only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from amqpfuzz.spec import DEFAULT_PROTOCOL, family_of

from ..brokers import Target
from ..brokers.control import AnyBroker
from ..brokers.profiles import Deviation, Profile, find_profile
from ..coverage import Probe
from ..protocols import Announced, Driver
from ..protocols.families import driver_for
from .events import TargetView

__all__ = ["TargetState"]


@dataclass
class TargetState:
    """One target of a run."""

    target: Target
    protocol: str = DEFAULT_PROTOCOL
    broker: AnyBroker | None = None
    profile_name: str | None = None
    announced: Announced = field(default_factory=Announced)
    profile: Profile | None = None
    coverage: Probe | None = None  # how its code's coverage is measured, where it can be
    _views: dict[str, TargetView] = field(default_factory=dict, repr=False, compare=False)

    @property
    def driver(self) -> Driver:
        return driver_for(self.protocol)

    def describe(self, timeout: float) -> None:
        """Ask the target what it is (a connection of its own) and choose its profile."""
        self.announce(self.driver.describe(self.target, timeout))

    def announce(self, announced: Announced) -> None:
        """What the target said of itself, and the profile that goes with it."""
        self.announced = announced
        kind = getattr(self.broker, "kind", None)
        self.profile = find_profile(
            self.profile_name, announced.product, announced.version, self.protocol, kind
        )
        self._views.clear()

    @property
    def product(self) -> str:
        return self.announced.product

    @property
    def version(self) -> str:
        return self.announced.version

    @property
    def label(self) -> str:
        """How the terminal and the records name it: its label, else product and version,
        else its URL (never with the password)."""
        announced = f"{self.product} {self.version}".strip()
        return self.target.label or announced or self.target.safe_url

    def view(self, protocol: str | None = None) -> TargetView:
        """The target as events and records show it (for ``protocol``, if not its own)."""
        protocol = protocol or self.protocol
        view = self._views.get(protocol)
        if view is None:  # made once: every case's event carries it
            view = TargetView(
                self.label, self.target.safe_url, self.product, self.version, protocol
            )
            self._views[protocol] = view
        return view

    def deviation(
        self,
        signature: str | None,
        rule: str | None = None,
        operator: str | None = None,
        protocol: str | None = None,
    ) -> Deviation | None:
        """The profile's deviation covering a failure (by signature), a rule or an operator.
        Another family's protocol (1.0 scenarios played on a 0-9-1 target) has the bundled
        profile of that family for the same product and version, if there is one."""
        profile = self.profile_for(protocol or self.protocol)
        if profile is None:
            return None
        return profile.deviation(signature, rule, operator, protocol)

    def profile_for(self, protocol: str) -> Profile | None:
        if family_of(protocol) == family_of(self.protocol):
            return self.profile
        if self.profile_name is not None:  # the profile asked for is for one family
            return None
        kind = getattr(self.broker, "kind", None)
        return find_profile(None, self.product, self.version, protocol, kind)
