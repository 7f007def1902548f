"""The client libraries a campaign tests: a bundled shim by name, or anyone's by command."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from amqpfuzz.spec import family_of

from . import shims
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

    def argv(self, url: str) -> list[str]:
        if any("{url}" in part for part in self.command):
            return [part.replace("{url}", url) for part in self.command]
        return [*self.command, url]

    @classmethod
    def bundled(cls, name: str, *, once: bool = False) -> ClientTarget:
        """A bundled client by name (its shim built; one line if it is unknown or not)."""
        if name not in shims.SHIMS:
            known = ", ".join(shims.SHIMS)
            raise ClientError(f"--client {name}: not a bundled client; they are {known}")
        shim = shims.SHIMS[name]
        command = tuple(shims.command(name, "{url}", once=once))
        return cls(name, command, shim.library, shims.version(name), shim.language, shim.protocol)

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
            "label": self.name,
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
