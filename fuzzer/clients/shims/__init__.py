"""The client shims: small programs that drive one real AMQP client library each (0-9-1 or
1.0, the registry's ``protocol``), and their registry (``clients.toml``), build and command lines.

The 0-9-1 shim contract. A shim runs as ``<command> URL [--once] [--linger SECONDS]`` and loops
over cases n = 0, 1, ... (one connection each), printing one JSON object a line, flushed:
``connecting``; ``connected`` (heartbeats off where the library allows, a ~10 s connect
timeout); ``channel``; confirm.select; ``declared`` (queue ``amqpfuzz-shim``); ``consuming``;
a mandatory publish of ``amqpfuzz-shim-<n>`` (text/plain, delivery-mode 1, headers
``{"shim": <name>}``) and its ``confirm``; a basic.get (``message`` via get, or
``get-empty``); then every ``message`` (via deliver, get or return; acked) and ``cancelled``
until the connection ends. A ``message`` carries its ``body`` (hex) and ``properties`` (those
present, by the specification's names; header table values as JSON: bytes ``"hex:<hex>"``,
decimals ``"<digits>E-<places>"``, timestamps integer seconds, a float JSON cannot carry as
text, an integer the language cannot hold as decimal digits), compared octet for octet and
value for value with what the peer sent. A case ends with one final event: ``closed`` (``by`` server,
socket, or client after ``--linger`` seconds, default 10) or ``error`` (an error of the
library's own: its class, its reply code or null, its message). Anything else the library
raises is not caught: the shim dies with it (a crash). No timeouts but the connect timeout and
``--linger``: whoever runs the shim judges hangs.

The 1.0 shim contract. The same command line (``amqp://[user:pass@]host:port``: no user is SASL
ANONYMOUS, a user SASL PLAIN) and cases, each event ``{"event", "case", ...}``:
``connecting``; ``connected`` (the peer's open: ``container_id`` or null, ``properties`` its
string values; idle-timeout off, a ~10 s connect timeout); ``session`` (begin answered);
``receiving`` (a receiver link, source address ``amqpfuzz-shim``, credit 10, rcv-settle-mode
first, snd-settle-mode unsettled, attach answered: ``link`` its name); ``sending`` (a sender
link, target address ``amqpfuzz-shim``); one unsettled message (an amqp-value string
``amqpfuzz-shim-<n>``, message-id the same, content-type text/plain, application-properties
``{"shim": <name>}``) and, at its disposition, ``confirm`` (``outcome`` accepted, rejected --
with its ``condition`` and ``description`` --, released, modified, or the library's word);
then every ``message`` (accepted by the shim): ``body`` (``{"value": v}``, ``{"data": [hex,
...]}`` or ``{"sequence": [list, ...]}``, one item a section), ``properties`` (those present,
by the specification's names, user-id hex, times integer milliseconds), ``application_properties``,
``annotations`` (the message annotations), ``header`` and ``settled``, where the library
exposes them; ``detached`` (a link the peer detached: ``link``, ``condition``,
``description``) and ``ended`` (a session the peer ended) where it reports them. Values as
JSON: binary ``"hex:<hex>"``, uuids as strings, timestamps integer milliseconds, described
values ``{"descriptor", "value"}`` (a library that hands over a 64-bit integer or a uuid as
octets: those octets, ``"hex:…"``); the body, properties and application-properties are
compared with what the peer sent. ``--linger`` counts from ``connected``. A case ends with one
final event: ``closed`` (``by`` server with the close's ``condition`` and ``description`` --
null without an error --, socket, or client after ``--linger``) or ``error`` (an error of the
library's own: ``class``, ``condition`` -- an AMQP condition or null -- and ``message``; a
connect timeout is the class TimeoutError). Anything else the library raises is not caught,
and there are no other timeouts, as in 0-9-1. Each 1.0 shim's module says what its library
cannot show.

The shims are this package's data (the Python ones are scripts run by path, never imported;
the uamqp one runs under the system's Python, beside Debian's python3-uamqp). Each library comes
from its registry (``clients.toml``'s ``version``: PyPI, npm, Maven Central, the Go module proxy,
crates.io, or Debian's packages), at the version the project pins, or at any version it
published on request (``name@version``): the shims in C, Go, Java, Rust and Node, and a Python
library at another version, are built into a build directory (:func:`directory`), each rebuilt
only when its sources changed (a stamp of their hash and the version), by
:mod:`amqpfuzz.fuzzer.clients.builds`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from amqpfuzz.spec import AmqpfuzzError

from ...cache import cache_root

__all__ = [
    "SHIMS",
    "SHIMS_DIR",
    "BuildFailed",
    "ClientError",
    "ClientNotBuilt",
    "Shim",
    "ToolMissing",
    "UnknownClient",
    "build_root",
    "command",
    "directory",
    "is_built",
    "needs",
    "shim",
    "version",
    "versions_root",
]

# the shims' sources are this package's files (data: never imported), the registry beside it
SHIMS_DIR = Path(__file__).resolve().parent
REGISTRY = SHIMS_DIR.parent / "clients.toml"
BUILDS = ("none", "c", "gomod", "npm", "maven", "cargo")
REGISTRY_KINDS = ("python", "deb", "npm", "maven", "go", "crates")
PROTOCOLS = ("0-9-1", "1.0")
STAMP = ".stamp"


class ClientError(AmqpfuzzError):
    """A client shim cannot be run or built; says why in one line."""


class UnknownClient(ClientError):
    pass


class ClientNotBuilt(ClientError):
    pass


class ToolMissing(ClientError):
    pass


class BuildFailed(ClientError):
    pass


@dataclass(frozen=True, slots=True)
class Shim:
    """One client library and its shim, as ``clients.toml`` lists it."""

    name: str
    language: str
    library: str
    version_source: tuple[str, str]  # (its registry: REGISTRY_KINDS, the package's name there)
    debs: tuple[str, ...]
    tools: tuple[str, ...]
    build: str
    sources: tuple[str, ...]
    template: tuple[str, ...]
    protocol: str = "0-9-1"  # the AMQP version the library speaks
    pinned: str | None = None  # the version `make setup` builds (else: what is installed)
    older: str | None = None  # a version a year older or more the shim fits (the benchmarks')

    @property
    def paths(self) -> list[Path]:
        return [SHIMS_DIR / source for source in self.sources]

    @property
    def registry(self) -> str:
        return self.version_source[0]

    @property
    def package(self) -> str:
        return self.version_source[1]

    def stamp(self, version: str | None = None) -> str:
        """The hash of what the shim is built from: its sources, its recipe and the library's
        version (None: the pinned or installed one)."""
        wanted = version or self.pinned or ""
        digest = hashlib.sha256(f"{self.build} {self.template} {wanted}".encode())
        for source, path in zip(self.sources, self.paths, strict=True):
            digest.update(source.encode() + b"\0" + path.read_bytes() + b"\0")
        return digest.hexdigest()


def _load() -> dict[str, Shim]:
    data = tomllib.loads(REGISTRY.read_text(encoding="utf-8"))
    shims = {}
    for name, entry in data.items():
        source = dict(entry["version"])
        pinned = source.pop("pinned", None)
        older = source.pop("older", None)
        ((kind, package),) = source.items()
        if kind not in REGISTRY_KINDS:
            raise ClientError(f"{REGISTRY}: {name}: unknown registry {kind!r}")
        if entry["build"] not in BUILDS:
            raise ClientError(f"{REGISTRY}: {name}: unknown build {entry['build']!r}")
        protocol = entry.get("protocol", "0-9-1")
        if protocol not in PROTOCOLS:
            raise ClientError(f"{REGISTRY}: {name}: unknown protocol {protocol!r}")
        shims[name] = Shim(
            name=name,
            language=entry["language"],
            library=entry["library"],
            version_source=(kind, package),
            debs=tuple(entry["debs"]),
            tools=tuple(entry["tools"]),
            build=entry["build"],
            sources=tuple(entry["sources"]),
            template=tuple(entry["command"]),
            protocol=protocol,
            pinned=pinned,
            older=older,
        )
    return shims


SHIMS: dict[str, Shim] = _load()


def shim(name: str) -> Shim:
    """The shim called ``name``; an unknown name is a :class:`UnknownClient`."""
    try:
        return SHIMS[name]
    except KeyError:
        raise UnknownClient(f"unknown client {name!r} (known: {', '.join(SHIMS)})") from None


def build_root() -> Path:
    """Where shims are built at their pinned versions: ``$AMQPFUZZ_CLIENTS``, else
    ``<sys.prefix>/share/amqpfuzz/clients``."""
    return Path(os.environ.get("AMQPFUZZ_CLIENTS") or Path(sys.prefix) / "share/amqpfuzz/clients")


def versions_root() -> Path:
    """Where libraries asked for at another version are built: the machine's cache, shared by
    its checkouts (``<cache>/clients/<name>@<version>``)."""
    return cache_root() / "clients"


def directory(name: str, into: Path | None = None, at: str | None = None) -> Path:
    """The client's build directory: for its pinned version (``at`` None), or for ``at``."""
    if at is None:
        return (into or build_root()) / name
    return (into or versions_root()) / f"{name}@{at}"


def needs(item: Shim) -> None:
    """Every tool the shim needs is on PATH, else :class:`ToolMissing` says what to install."""
    for tool in item.tools:
        if shutil.which(tool) is None:
            debs = " ".join(item.debs) or "it"
            raise ToolMissing(
                f"client {item.name} needs `{tool}`: install the Debian packages {debs}"
            )


def is_built(name: str, into: Path | None = None, at: str | None = None) -> bool | None:
    """Whether the shim is built from its current sources (at version ``at``); None when it
    needs no build."""
    item = shim(name)
    if item.build == "none" and at is None:
        return None
    stamp = directory(name, into, at) / STAMP
    return stamp.is_file() and stamp.read_text() == item.stamp(at)


def command(
    name: str,
    url: str,
    *,
    once: bool = False,
    linger: float | None = None,
    into: Path | None = None,
    at: str | None = None,
) -> list[str]:
    """The command line that runs the shim against ``url`` (its library at version ``at``:
    built by ``amqpfuzz client build NAME@VERSION``)."""
    item = shim(name)
    needs(item)
    built = directory(name, into, at)
    if is_built(name, into, at) is False:
        called = f"{name}@{at}" if at else name
        raise ClientNotBuilt(
            f"client {called} is not built from its current sources in {built}: "
            f"run `amqpfuzz client build {called}`"
        )
    places = {"python": sys.executable, "shims": str(SHIMS_DIR), "build": str(built)}
    argv = [part.format(**places) for part in item.template] + [url]
    if item.build == "none" and at is not None:  # a Python library installed beside the shim
        argv = ["env", f"PYTHONPATH={built}", *argv]
    if once:
        argv.append("--once")
    if linger is not None:
        argv += ["--linger", f"{linger:g}"]
    return argv


def version(name: str, into: Path | None = None) -> str | None:
    """The version of the client's library as built or installed for its pinned build, or None
    when it is not installed."""
    item = shim(name)
    kind, package = item.version_source
    if kind == "python":
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return None
    if kind == "deb":
        if shutil.which("dpkg-query") is None:
            return None
        done = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}|${Version}", package],
            capture_output=True,
            text=True,
            check=False,
        )
        status, _, found = done.stdout.partition("|")
        return found if done.returncode == 0 and status.endswith(" installed") else None
    if kind != "npm":
        return item.pinned
    manifest = directory(name, into) / "node_modules" / package / "package.json"
    if not manifest.is_file():
        return None
    found = json.loads(manifest.read_text(encoding="utf-8")).get("version")
    return found if isinstance(found, str) else None
