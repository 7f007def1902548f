"""``amqpfuzz scenarios --client NAME``: the client conformance files played against client
libraries, amqpfuzz being the peer each connects to.

Each client named plays every client file of its protocol (``-k`` chooses among them, as for
brokers): one connection per file, judged by what the file requires of the client and by the
client oracles. The table shows per file each client's verdict and what it did; each file
played is a record (kind ``scenario``, the client as its target). Exit status 1 if a file
fails outside the client's profile, or passes where the profile records a deviation.
"""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from amqpfuzz.scenarios import select
from amqpfuzz.spec import DEFAULT_PROTOCOL, family_of

from ..clients.campaign import ClientSettings
from ..clients.scenarios import ClientVerdict, client_scenarios, play_client_scenarios
from ..clients.targets import client_targets
from .console import BadInput, make_console

__all__ = ["play_clients"]

_STYLE = {"pass": "green", "fail": "bold red", "xpass": "bold yellow", "xfail": "yellow",
          "skip": "dim"}  # fmt: skip


def play_clients(
    names: tuple[str, ...],
    protocol: str | None,
    keyword: str | None,
    out: str,
    timeout: float,
    profile: str | None,
) -> int:
    clients = client_targets(names)
    spoken = {c.protocol for c in clients}
    if protocol is None:
        if len({family_of(p) for p in spoken if p}) > 1:
            raise BadInput(f"the clients speak {', '.join(sorted(p for p in spoken if p))}: "
                           "give --protocol, and clients of it")  # fmt: skip
        protocol = next(iter(spoken)) or DEFAULT_PROTOCOL
    for client in clients:
        client.speaks(protocol)
    files = select(keyword, client_scenarios(protocol))
    if not files:
        raise BadInput(
            f"no client scenario of AMQP {protocol} is chosen (amqpfuzz scenarios --list)"
        )
    console = make_console()
    settings = ClientSettings(protocol=protocol, timeout=timeout, out=Path(out), profile=profile)
    found: dict[str, list[ClientVerdict]] = {}
    for client in clients:
        found[client.name] = play_client_scenarios(client, files, settings)
    table = Table(title=f"client conformance (AMQP {protocol})", title_justify="left")
    table.add_column("rule", overflow="fold")
    for client in clients:
        table.add_column(f"{client.name} {client.version or ''}".strip(), overflow="fold")
    for number, scenario in enumerate(files):
        cells = [found[c.name][number] for c in clients]
        table.add_row(
            scenario.spec_ref, *(f"[{_STYLE[v.verdict]}]{v.verdict} · {v.seen}[/]" for v in cells)
        )
    console.print(table)
    bad = [v for verdicts in found.values() for v in verdicts if v.verdict in ("fail", "xpass")]
    for verdict in bad:
        console.print(
            f"{verdict.verdict.upper()} {verdict.client}: "
            f"{verdict.scenario.protocol}/{verdict.scenario.path.name} {verdict.message}",
            style=_STYLE[verdict.verdict],
            highlight=False,
            markup=False,
        )
    console.print(f"records in {out}", highlight=False)
    return 1 if bad else 0
