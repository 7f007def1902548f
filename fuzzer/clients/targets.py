"""The client libraries a campaign tests: a bundled shim by name, or anyone's by command."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from amqpfuzz.spec import family_of

from . import shims
from .builds import build, parse_spec, wanted
from .shims import ClientError

__all__ = ["ClientTarget", "client_targets"]


@dataclass(frozen=True)
class ClientTarget:
    """The library under test: its shim's command (``{url}`` where the URL goes) and what
    records say of it."""

    name: str
    command: tuple[str, ...]
    library: str = ""
    version: str | None = None
    language: str = ""
    protocol: str | None = None  # what its shim speaks (None: anyone's shim, which says not)
    at: str | None = None  # the library's version, asked for as name@version (None: pinned)

    @property
    def label(self) -> str:
        """What records, reproducers and reports call it: ``name@version`` for a version asked
        for (two versions of one library are two targets), else its name."""
        return f"{self.name}@{self.at}" if self.at else self.name

    def argv(self, url: str) -> list[str]:
        if any("{url}" in part for part in self.command):
            return [part.replace("{url}", url) for part in self.command]
        return [*self.command, url]

    @classmethod
    def bundled(cls, spec: str, *, once: bool = False) -> ClientTarget:
        """A bundled client by name, or ``name@version``: that version fetched from its
        registry and built on first use (one line if the name is unknown, the version not
        published, or the pinned shim not built)."""
        name = spec.partition("@")[0]
        if name not in shims.SHIMS:
            known = ", ".join(shims.SHIMS)
            raise ClientError(f"--client {name}: not a bundled client; they are {known}")
        at = wanted(*parse_spec(spec))
        if at is not None:
            build([name], at=at)
        shim = shims.SHIMS[name]
        command = tuple(shims.command(name, "{url}", once=once, at=at))
        found = at or shims.version(name)
        return cls(name, command, shim.library, found, shim.language, shim.protocol, at)

    def speaks(self, protocol: str) -> None:
        """Nothing if the client's shim speaks ``protocol`` (anyone's shim may); one line
        naming the bundled clients that do, if not."""
        if self.protocol is None or family_of(self.protocol) == family_of(protocol):
            return
        fluent = [n for n, s in shims.SHIMS.items() if family_of(s.protocol) == family_of(protocol)]
        raise ClientError(
            f"--client {self.name} speaks AMQP {self.protocol}, not {protocol}"
            + (f" (for {protocol}: {', '.join(fluent)})" if fluent else "")
        )

    @classmethod
    def of_command(cls, text: str) -> ClientTarget:
        parts = tuple(shlex.split(text))
        if not parts:
            raise ClientError("--client-command is empty")
        return cls(Path(parts[0]).name, parts, library=parts[0], language="")

    def as_target(self, url: str, protocol: str) -> dict[str, Any]:
        return {
            "label": self.label,
            "url": url,
            "product": self.library or self.name,
            "version": self.version,
            "protocol": protocol,
            "language": self.language,
        }


def client_targets(
    names: Sequence[str], commands: Sequence[str] = (), protocol: str | None = None
) -> list[ClientTarget]:
    """The clients named, bundled ones first; one line for one that is unknown or unbuilt, or
    (``protocol`` given) whose shim speaks another protocol."""
    found = [*(ClientTarget.bundled(n) for n in names), *map(ClientTarget.of_command, commands)]
    if protocol is not None:
        for client in found:
            client.speaks(protocol)
    return found
