"""Expectation profiles: a broker's documented deviations from the specification, as data.

A profile is a TOML file per broker and version (``fuzzer/brokers/deviations/``, or any path given with
``--profile``). Each ``[[deviation]]`` names what it covers, why, and what the broker does::

    product = "RabbitMQ"             # as the broker says in connection.start (1.0: open)
    versions = ["3.10"]              # version prefixes it applies to
    family = "amqp091"               # the protocol family it is for (the default; or amqp10)
    kind = "qpid-proton"             # for a throwaway of this kind whose peer names no product

    [[deviation]]
    signature = "reaction:basic.recover:valid:*->connection-close/540"   # a failure signature
    reason = "RabbitMQ does not implement basic.recover with requeue=false"
    observed = "connection-close 540 NOT_IMPLEMENTED"

A deviation matches a failure by its ``signature`` (shell-style wildcards), or a scenario or a
whole operator by ``rule`` / ``mutation``; a ``rule`` deviation may name its ``protocol``
(``0-9``) where the protocols' rule references coincide. A failure a profile covers is reported as ``xfail``,
not hidden; a deviation that no longer happens shows up as ``xpass`` where it can be told.
"""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass
from pathlib import Path

from amqpfuzz.spec import AmqpfuzzError, family_of

__all__ = ["PROFILES", "Deviation", "Profile", "ProfileError", "find_profile", "load_profile"]

PROFILES = Path(__file__).parent / "deviations"


class ProfileError(AmqpfuzzError):
    """A profile file that cannot be used: says which file and why."""


@dataclass(frozen=True)
class Deviation:
    reason: str
    observed: str = ""
    signature: str | None = None
    rule: str | None = None
    operator: str | None = None  # the file's ``mutation`` key: a mutation operator's name
    protocol: str | None = None  # a rule's deviation in this protocol only (0-9, 0-9-1 share refs)

    def covers(
        self,
        signature: str | None,
        rule: str | None = None,
        operator: str | None = None,
        protocol: str | None = None,
    ) -> bool:
        if self.signature is not None:
            return signature is not None and fnmatch.fnmatchcase(signature, self.signature)
        if self.rule is not None:
            same = self.protocol is None or protocol is None or protocol == self.protocol
            return rule == self.rule and same
        return self.operator is not None and operator == self.operator


@dataclass(frozen=True)
class Profile:
    name: str
    product: str
    versions: tuple[str, ...]
    deviations: tuple[Deviation, ...]
    path: str = ""
    family: str = "amqp091"
    kind: str = ""  # a throwaway broker kind whose peer announces no product (Proton's broker)

    def deviation(
        self,
        signature: str | None,
        rule: str | None = None,
        operator: str | None = None,
        protocol: str | None = None,
    ) -> Deviation | None:
        """The deviation covering a failure (by signature) or a rule (of ``protocol``) or
        operator, if any."""
        for deviation in self.deviations:
            if deviation.covers(signature, rule, operator, protocol):
                return deviation
        return None

    def applies_to(self, product: str, version: str, kind: str | None = None) -> bool:
        if not product and self.kind:  # a peer that says nothing of itself: by what we ran
            return kind == self.kind
        return (
            bool(product)
            and product.lower() == self.product.lower()
            and any(version.startswith(v) for v in self.versions)
        )


def load_profile(path: Path | str) -> Profile:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path}: not TOML: {exc}") from None
    try:
        deviations = tuple(_deviation(path, i, d) for i, d in enumerate(data.get("deviation", [])))
        return Profile(
            name=path.stem,
            product=str(data["product"]),
            versions=tuple(str(v) for v in data.get("versions", [""])),
            deviations=deviations,
            path=str(path),
            family=str(data.get("family", "amqp091")),
            kind=str(data.get("kind", "")),
        )
    except KeyError as exc:
        raise ProfileError(f"{path}: missing key {exc}") from None


def _deviation(path: Path, index: int, data: dict[str, object]) -> Deviation:
    keys = [k for k in ("signature", "rule", "mutation") if k in data]
    if len(keys) != 1:
        raise ProfileError(
            f"{path}: deviation {index + 1} needs exactly one of signature, rule or mutation"
        )
    if not data.get("reason"):
        raise ProfileError(f"{path}: deviation {index + 1} gives no reason")
    return Deviation(
        reason=str(data["reason"]),
        observed=str(data.get("observed", "")),
        signature=str(data["signature"]) if "signature" in data else None,
        rule=str(data["rule"]) if "rule" in data else None,
        operator=str(data["mutation"]) if "mutation" in data else None,
        protocol=str(data["protocol"]) if "protocol" in data else None,
    )


def find_profile(
    name: str | None,
    product: str = "",
    version: str = "",
    protocol: str | None = None,
    kind: str | None = None,
) -> Profile | None:
    """The profile named (a bundled name or a path), else the bundled one for the broker's
    product and version and the ``protocol``'s family (None if there is none). ``none`` asks
    for no profile at all; a profile named for another family than ``protocol``'s is refused."""
    family = family_of(protocol) if protocol is not None else None
    if name == "none":
        return None
    if name is not None:
        candidate = Path(name)
        if not candidate.exists():
            candidate = PROFILES / f"{name}.toml"
        if not candidate.exists():
            bundled = ", ".join(sorted(p.stem for p in PROFILES.glob("*.toml")))
            raise ProfileError(f"no profile {name!r} (bundled: {bundled}; or give a path)")
        profile = load_profile(candidate)
        if family is not None and profile.family != family:
            raise ProfileError(
                f"{candidate}: a profile for the {profile.family} family, not AMQP {protocol}"
            )
        return profile
    for path in sorted(PROFILES.glob("*.toml")):
        profile = load_profile(path)
        if profile.applies_to(product, version, kind) and family in (None, profile.family):
            return profile
    return None
