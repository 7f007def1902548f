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
the uamqp one runs under the system's Python, beside Debian's python3-uamqp); those in C, Go
and Node are built into a build directory (:func:`build_root`), each rebuilt only when its
sources changed (a stamp of their hash).
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

__all__ = [
    "SHIMS",
    "SHIMS_DIR",
    "BuildFailed",
    "Built",
    "ClientError",
    "ClientNotBuilt",
    "Shim",
    "ToolMissing",
    "UnknownClient",
    "build",
    "build_root",
    "command",
    "is_built",
    "shim",
    "version",
]

# the shims' sources are this package's files (data: never imported), the registry beside it
SHIMS_DIR = Path(__file__).resolve().parent
REGISTRY = SHIMS_DIR.parent / "clients.toml"
BUILDS = ("none", "c", "go", "npm")
PROTOCOLS = ("0-9-1", "1.0")
# Debian's Go libraries, read in GOPATH mode (no module proxy, no network)
GOCODE = "/usr/share/gocode"
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
    version_source: tuple[str, str]  # ("python" | "deb" | "npm", the package's name)
    debs: tuple[str, ...]
    tools: tuple[str, ...]
    build: str
    sources: tuple[str, ...]
    template: tuple[str, ...]
    protocol: str = "0-9-1"  # the AMQP version the library speaks

    @property
    def paths(self) -> list[Path]:
        return [SHIMS_DIR / source for source in self.sources]

    def stamp(self) -> str:
        """The hash of what the shim is built from: its sources and its recipe."""
        digest = hashlib.sha256(f"{self.build} {self.template}".encode())
        for source, path in zip(self.sources, self.paths, strict=True):
            digest.update(source.encode() + b"\0" + path.read_bytes() + b"\0")
        return digest.hexdigest()


def _load() -> dict[str, Shim]:
    data = tomllib.loads(REGISTRY.read_text(encoding="utf-8"))
    shims = {}
    for name, entry in data.items():
        ((kind, package),) = entry["version"].items()
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
    """Where shims are built: ``$AMQPFUZZ_CLIENTS``, else ``<sys.prefix>/share/amqpfuzz/clients``."""
    return Path(os.environ.get("AMQPFUZZ_CLIENTS") or Path(sys.prefix) / "share/amqpfuzz/clients")


def _directory(name: str, into: Path | None) -> Path:
    return (into or build_root()) / name


def _needs(item: Shim) -> None:
    """Every tool the shim needs is on PATH, else :class:`ToolMissing` says what to install."""
    for tool in item.tools:
        if shutil.which(tool) is None:
            debs = " ".join(item.debs) or "it"
            raise ToolMissing(
                f"client {item.name} needs `{tool}`: install the Debian packages {debs}"
            )


def is_built(name: str, into: Path | None = None) -> bool | None:
    """Whether the shim is built from its current sources; None when it needs no build."""
    item = shim(name)
    if item.build == "none":
        return None
    stamp = _directory(name, into) / STAMP
    return stamp.is_file() and stamp.read_text() == item.stamp()


def command(
    name: str,
    url: str,
    *,
    once: bool = False,
    linger: float | None = None,
    into: Path | None = None,
) -> list[str]:
    """The command line that runs the shim against ``url``."""
    item = shim(name)
    _needs(item)
    if is_built(name, into) is False:
        raise ClientNotBuilt(
            f"client {name} is not built from its current sources in "
            f"{_directory(name, into)}: run `amqpfuzz client build {name}`"
        )
    places = {
        "python": sys.executable,
        "shims": str(SHIMS_DIR),
        "build": str(_directory(name, into)),
    }
    argv = [part.format(**places) for part in item.template] + [url]
    if once:
        argv.append("--once")
    if linger is not None:
        argv += ["--linger", f"{linger:g}"]
    return argv


def version(name: str, into: Path | None = None) -> str | None:
    """The version of the client's library, or None when it is not installed."""
    kind, package = shim(name).version_source
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
    manifest = _directory(name, into) / "node_modules" / package / "package.json"
    if not manifest.is_file():
        return None
    found = json.loads(manifest.read_text(encoding="utf-8")).get("version")
    return found if isinstance(found, str) else None


@dataclass(frozen=True, slots=True)
class Built:
    """What :func:`build` did for one client: ``built``, ``up to date`` or ``nothing to build``."""

    name: str
    outcome: str
    directory: Path


def build(names: list[str] | None = None, into: Path | None = None) -> list[Built]:
    """Builds the named clients (all by default) that need it and whose sources changed."""
    items = [shim(name) for name in names] if names else list(SHIMS.values())
    done = []
    for item in items:
        directory = _directory(item.name, into)
        if item.build == "none":
            _needs(item)
            done.append(Built(item.name, "nothing to build", directory))
            continue
        if is_built(item.name, into):
            done.append(Built(item.name, "up to date", directory))
            continue
        _needs(item)
        if missing := [deb for deb in item.debs if _missing_deb(deb)]:
            raise ToolMissing(
                f"client {item.name} needs the Debian packages {' '.join(missing)}: install them"
            )
        _build_one(item, directory)
        (directory / STAMP).write_text(item.stamp())
        done.append(Built(item.name, "built", directory))
    return done


def _missing_deb(package: str) -> bool:
    """Whether a Debian package is known to be absent (not knowable off Debian: then False)."""
    if shutil.which("dpkg-query") is None:
        return False
    done = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True, check=False
    )
    return not done.stdout.endswith(" installed")


def _build_one(item: Shim, directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / STAMP).unlink(missing_ok=True)
    env = dict(os.environ)
    if item.build == "c":
        steps = [["cc", "-O2", "-Wall", "-o", item.name, *map(str, item.paths), "-lrabbitmq"]]
    elif item.build == "go":
        source = directory / "src"
        shutil.rmtree(source, ignore_errors=True)
        source.mkdir()
        for path in item.paths:
            shutil.copy2(path, source / path.name)
        env.update(
            GO111MODULE="off",
            GOPATH=f"{directory / 'gopath'}:{GOCODE}",
            GOCACHE=str(directory / "go-cache"),
            GOFLAGS="",
            GOPROXY="off",
        )
        steps = [["go", "build", "-o", str(directory / item.name), "./src"]]
    else:  # npm: the package and the shim side by side, node_modules beside them
        for path in item.paths:
            shutil.copy2(path, directory / path.name)
        steps = [["npm", "install", "--no-audit", "--no-fund", "--prefix", str(directory)]]
    log = directory / "build.log"
    with log.open("w") as out:
        for step in steps:
            done = subprocess.run(
                step, cwd=directory, env=env, stdout=out, stderr=subprocess.STDOUT, check=False
            )
            if done.returncode != 0:
                out.flush()
                lines = [line for line in log.read_text().splitlines() if line.strip()]
                last = lines[-1] if lines else "no output"
                raise BuildFailed(
                    f"building client {item.name} failed ({step[0]} exit {done.returncode}): "
                    f"{last} (the whole log: {log})"
                )
