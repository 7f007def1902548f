"""Expectation profiles: a broker's documented deviations from the specification, as data.

A profile is a TOML file per broker and version (``fuzzer/brokers/deviations/``, or any path given with
``--profile``). Each ``[[deviation]]`` names what it covers, why, and what the broker does::

    product = "RabbitMQ"             # as the broker says in connection.start (1.0: open)
    versions = ["3.10"]              # version prefixes it applies to
    family = "amqp091"               # the protocol family it is for (the default; or amqp10)
    kind = "qpid-proton"             # for a throwaway of this kind whose peer names no product
    protocols = ["0-9"]              # only for these protocols of the family (preferred then)
    extends = "rabbitmq-3.10"        # a bundled profile whose deviations apply here too
    notice = "announces 0-9 ..."     # said in one line when a run starts on such a broker

    [[deviation]]
    signature = "reaction:basic.recover:valid:*->connection-close/540"   # a failure signature
    reason = "RabbitMQ does not implement basic.recover with requeue=false"
    observed = "connection-close 540 NOT_IMPLEMENTED"

A profile may also say what valid traffic can use of the broker beyond the specification (a
``[traffic]`` table: values for fields it refuses otherwise, the arguments it reads, message
properties and headers it interprets; :class:`amqpfuzz.strategies.amqp091.profile.Traffic`).

A deviation matches a failure by its ``signature``, or a scenario or a case by its ``rule`` (a
spec reference: ``file.*`` is every method of the file class; both with shell-style
wildcards), or a whole operator by ``mutation``; a ``rule`` deviation may name its ``protocol``
(``0-9``) where the protocols' rule references coincide. A failure a profile covers is reported as ``xfail``,
not hidden; a deviation that no longer happens shows up as ``xpass`` where it can be told. A
deviation the broker shows only now and then (a race: ``sometimes = true``) is no xpass when it
does not happen.
"""

from __future__ import annotations

import fnmatch
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    # a race in the broker: the deviation does not happen every time, so a run where it did
    # not happen passes (it is no xpass, and says nothing of whether it is fixed)
    sometimes: bool = False

    @property
    def entry(self) -> str:
        """Which entry of its profile this is, as a reader finds it in the file: ``signature
        <pattern>``, ``rule <spec_ref>`` or ``operator <name>``."""
        if self.signature is not None:
            return f"signature {self.signature}"
        if self.rule is not None:
            return f"rule {self.rule}" + (f" (AMQP {self.protocol})" if self.protocol else "")
        return f"operator {self.operator}"

    def covers(
        self,
        signature: str | None,
        rule: str | None = None,
        operator: str | None = None,
        protocol: str | None = None,
    ) -> bool:
        if self.signature is not None:
            return signature is not None and fnmatch.fnmatchcase(signature, self.signature)
        if signature is not None and signature.startswith("liveness:"):
            return False  # a crash stays a failure: a rule's or an operator's entry is no excuse
        if self.rule is not None:
            same = self.protocol is None or protocol is None or protocol == self.protocol
            return rule is not None and fnmatch.fnmatchcase(rule, self.rule) and same
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
    protocols: tuple[str, ...] = ()  # only these protocols of the family; () for all of them
    notice: str = ""  # what a run on such a broker says first (a protocol it does not speak)
    # what valid traffic can use of the broker beyond the specification (its [traffic] table)
    traffic: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

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

    def serves(self, protocol: str | None) -> bool:
        """For ``protocol`` of its family (None: any protocol, so not one for some alone)."""
        if protocol is None:
            return not self.protocols
        return family_of(protocol) == self.family and protocol in (self.protocols or (protocol,))

    def applies_to(self, product: str, version: str, kind: str | None = None) -> bool:
        if not product and self.kind:  # a peer that says nothing of itself: by what we ran
            return kind == self.kind
        return (
            bool(product)
            and product.lower() == self.product.lower()
            and any(version.startswith(v) for v in self.versions)
        )


def load_profile(path: Path | str, extending: tuple[str, ...] = ()) -> Profile:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path}: not TOML: {exc}") from None
    try:
        entries = data.get("deviation", [])
        if not isinstance(entries, list):
            raise ProfileError(f"{path}: deviations are [[deviation]] tables")
        deviations = tuple(
            found for i, entry in enumerate(entries) for found in _deviations(path, i, entry)
        )
        family = str(data.get("family", "amqp091"))
        traffic: Mapping[str, Any] = _traffic(path, data.get("traffic", {}))
        if "extends" in data:  # its own deviations first, then the base's; its traffic over theirs
            base = _base(path, str(data["extends"]), family, extending)
            deviations += base.deviations
            traffic = {**base.traffic, **traffic}
        return Profile(
            name=path.stem,
            product=str(data["product"]),
            versions=tuple(str(v) for v in data.get("versions", [""])),
            deviations=deviations,
            path=str(path),
            family=family,
            kind=str(data.get("kind", "")),
            protocols=tuple(str(p) for p in data.get("protocols", ())),
            notice=str(data.get("notice", "")),
            traffic=traffic,
        )
    except KeyError as exc:
        raise ProfileError(f"{path}: missing key {exc}") from None


def _base(path: Path, name: str, family: str, extending: tuple[str, ...]) -> Profile:
    """The bundled profile ``name`` that the one at ``path`` extends."""
    base = PROFILES / f"{name}.toml"
    if name in extending or name == path.stem:
        raise ProfileError(f"{path}: extends {name!r}, which extends it again")
    if not base.exists():
        raise ProfileError(f"{path}: extends {name!r}, which is no bundled profile")
    profile = load_profile(base, (*extending, path.stem))
    if profile.family != family:
        raise ProfileError(f"{path}: extends {name!r}, a profile for the {profile.family} family")
    return profile


def _traffic(path: Path, data: object) -> dict[str, Any]:
    """The ``[traffic]`` table: tables (one level deeper for ``arguments``) of lists."""
    if not isinstance(data, dict):
        raise ProfileError(f"{path}: traffic is a table")
    for section, entries in data.items():
        known = (
            "fields", "arguments", "properties", "headers", "addresses", "awaits", "apart",
            "requires", "variants", "extension", "excludes", "pseudo", "without", "odd_without",
        )  # fmt: skip
        if section not in known:
            raise ProfileError(f"{path}: traffic.{section} is not a section amqpfuzz reads")
        if section == "extension":
            if not isinstance(entries, bool):
                raise ProfileError(f"{path}: traffic.extension is true or false")
            continue
        if section in ("addresses", "awaits", "apart", "excludes", "without", "odd_without"):
            if not isinstance(entries, list):
                raise ProfileError(f"{path}: traffic.{section} is a list")
            continue
        if section == "pseudo":
            if not isinstance(entries, list) or not all(
                isinstance(p, dict) and "queue" in p for p in entries
            ):
                raise ProfileError(f"{path}: traffic.pseudo: tables with a queue")
            continue
        if section == "variants":
            if not isinstance(entries, list) or not all(
                isinstance(v, dict) and "method" in v and isinstance(v.get("when", {}), dict)
                for v in entries
            ):
                raise ProfileError(f"{path}: traffic.variants: tables with a method and when")
            continue
        if not isinstance(entries, dict):
            raise ProfileError(f"{path}: traffic.{section} is a table")
        lists = (
            entries.values()
            if section != "arguments"
            else [
                v for table in entries.values() if isinstance(table, dict) for v in table.values()
            ]
        )
        if section == "arguments" and not all(isinstance(t, dict) for t in entries.values()):
            raise ProfileError(f"{path}: traffic.arguments holds a table per method")
        if not all(isinstance(v, list) for v in lists):
            raise ProfileError(f"{path}: traffic.{section}: each value is a list to pick from")
    return data


def _deviations(path: Path, index: int, data: dict[str, object]) -> list[Deviation]:
    """An entry's deviations: one, or (``signatures``: the failures one cause gives, each
    named in full) one per signature, with the entry's reason."""
    if not isinstance(data, dict):
        raise ProfileError(f"{path}: deviation {index + 1} is not a table ([[deviation]])")
    if "signatures" not in data:
        return [_deviation(path, index, data)]
    listed = data["signatures"]
    if not isinstance(listed, list) or not listed or not all(isinstance(s, str) for s in listed):
        raise ProfileError(
            f"{path}: deviation {index + 1}: signatures is a non-empty list of signatures"
        )
    rest = {k: v for k, v in data.items() if k != "signatures"}
    if "signature" in rest:
        raise ProfileError(f"{path}: deviation {index + 1} has both signature and signatures")
    return [_deviation(path, index, {**rest, "signature": s}) for s in listed]


def _deviation(path: Path, index: int, data: dict[str, object]) -> Deviation:
    keys = [k for k in ("signature", "rule", "mutation") if k in data]
    if len(keys) != 1:
        raise ProfileError(
            f"{path}: deviation {index + 1} needs exactly one of signature(s), rule or mutation"
        )
    if not data.get("reason"):
        raise ProfileError(f"{path}: deviation {index + 1} gives no reason")
    if not isinstance(data.get("sometimes", False), bool):
        raise ProfileError(f"{path}: deviation {index + 1}: sometimes is true or false")
    return Deviation(
        reason=str(data["reason"]),
        observed=str(data.get("observed", "")),
        signature=str(data["signature"]) if "signature" in data else None,
        rule=str(data["rule"]) if "rule" in data else None,
        operator=str(data["mutation"]) if "mutation" in data else None,
        protocol=str(data["protocol"]) if "protocol" in data else None,
        sometimes=bool(data.get("sometimes", False)),
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
    # the bundled ones for this broker and protocol: one for the protocol alone comes first
    found = [
        profile
        for profile in map(load_profile, sorted(PROFILES.glob("*.toml")))
        if profile.applies_to(product, version, kind) and profile.serves(protocol)
    ]
    found.sort(key=lambda profile: not profile.protocols)
    return found[0] if found else None
