"""``amqpfuzz replay``: run a reproducer again, a fuzz case's bytes or a stateful program's steps
against a broker, or a client campaign's server script to a client library's shim.

Exit status 1 while the failure still happens (or another one does), 0 once the broker (or the
client) does what the specification requires, 2 for a file that is not a reproducer, a broker
that cannot be reached or a client that cannot be run.
"""

from __future__ import annotations

import contextlib
import shlex
import sys
from typing import Any

import click
from rich.table import Table

from amqpfuzz.spec import DEFAULT_PROTOCOL, family_of

from ..brokers import BROKERS, parse_target, throwaway
from ..clients.campaign import replay_client
from ..clients.history import (
    EVERY,
    Step,
    first_change,
    history,
    parse_range,
    replay_at,
    versions_between,
)
from ..clients.judge import same_failure
from ..clients.shims import SHIMS, shim
from ..clients.targets import client_targets
from ..engine.replay import replay
from ..records import describe, load_reproducer
from .console import BadInput, make_console
from .run import preflight

__all__ = ["replay_command"]


@click.command("replay")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option(
    "--url",
    help="Replay against this broker (default: a throwaway broker of the kind the file was "
    "found on, else the broker at the URL it names, if local).",
)
@click.option(
    "--broker",
    "kind",
    type=click.Choice(sorted(BROKERS)),
    help="Replay on a throwaway broker of this kind, started and removed here (the default for "
    "a reproducer found on a throwaway broker; a program that restarts the broker needs one).",
)
@click.option("--allow-remote", is_flag=True)
@click.option(
    "--timeout",
    type=float,
    help="Seconds before a silent peer is hanging [default: the run's, as the file says; else 5].",
)
@click.option(
    "--client",
    metavar="NAME[@VERSION]",
    help="A client reproducer: serve it to this bundled client, at a version its registry "
    "published (default: the one it failed); NAME@FIRST..LAST: to every published version in "
    "that range, as a table, with the first version where the verdict changes.",
)
@click.option("--client-command", metavar="CMD", help="A client reproducer: serve it to this shim.")
def replay_command(
    path: str,
    url: str | None,
    kind: str | None,
    allow_remote: bool,
    timeout: float | None,
    client: str | None,
    client_command: str | None,
) -> None:
    """Replay a reproducer: exit 1 if the failure still happens, 0 if it does not."""
    data = load_reproducer(path)
    if timeout is None:
        timeout = float(data.get("timeout") or 5.0)
    if data.get("verdict") == "flaky":
        rate = (data.get("confirmation") or {}).get("rate", "?")
        click.echo(f"note: a flaky failure: the run's replays reproduced it {rate}")
    if data["kind"] == "client":
        if url is not None or kind is not None:
            raise BadInput(f"{path}: a client reproducer is served to a client, not a broker")
        sys.exit(_replay_client(data, client, client_command, timeout))
    if client is not None or client_command is not None:
        raise BadInput(f"{path}: not a client reproducer; --client replays those")
    if url is not None and kind is not None:
        raise BadInput("give --url or --broker, not both")
    origin = data["broker"] if isinstance(data.get("broker"), dict) else {}
    if url is None and kind is None and origin.get("kind") in BROKERS:
        kind = str(origin["kind"])  # found on a throwaway broker: replayed on a new one
        found = f"{origin.get('product', '')} {origin.get('version', '')}".strip()
        click.echo(f"replaying on a throwaway {kind} (found on {found or kind}; --url for another)")
    with contextlib.ExitStack() as stack:
        restart = None
        if kind is not None:
            family = family_of(str(data.get("protocol") or DEFAULT_PROTOCOL))
            own = stack.enter_context(throwaway(kind, family=family))
            url, restart = own.url, own.recover
        elif url is None:
            recorded = str(data.get("target", ""))
            if not recorded:
                raise BadInput(f"{path}: names no target; give --url or --broker")
            url = recorded  # the safe URL has no password: guest's default then
        target = parse_target(url, allow_remote=allow_remote)
        preflight([target], str(data.get("protocol", DEFAULT_PROTOCOL)), timeout)
        result = replay(data, target, timeout=timeout, restart=restart)
    click.echo(f"expected: {result.expected}")
    click.echo(f"observed: {result.observed}")
    if result.reproduced:
        click.echo(f"still failing: {result.signature}")
        if result.now != result.signature:  # (a hang that left the whole broker unanswering)
            click.echo(f"worse now: {result.now}")
        sys.exit(1)
    if result.now is not None:
        click.echo(f"a different failure now: {result.now}")
        sys.exit(1)
    click.echo("fixed: the broker now reacts as the specification requires")
    sys.exit(0)


def _replay_client(
    data: dict[str, Any], name: str | None, command: str | None, timeout: float
) -> int:
    if name is not None and command is not None:
        raise BadInput("give --client or --client-command, not both")
    if name is not None and ".." in name:
        return _history(data, name, timeout)
    if command is None and name is None and str(data["client"]).partition("@")[0] not in SHIMS:
        command = shlex.join(data.get("command") or [])  # anyone's shim, as the campaign ran it
    names = (name or data["client"],) if command is None else ()
    (client,) = client_targets(
        names, (command,) if command is not None else (), str(data["protocol"])
    )
    judged = replay_client(data, client, timeout)
    click.echo(f"expected: {data.get('expected', {}).get('text', '?')}")
    click.echo(f"observed: {describe(judged.observed)}")
    if judged.failed and same_failure(str(data.get("signature")), judged.signature):
        click.echo(f"still failing: {judged.signature}")
        return 1
    if judged.failed:
        click.echo(f"a different failure now: {judged.signature}")
        return 1
    click.echo(f"fixed: {client.name} now reacts as the specification requires")
    return 0


def _history(data: dict[str, Any], spec: str, timeout: float) -> int:
    """The reproducer on each published version of a range: a table, and the first version
    where the verdict changes. Exit 1 if the range's newest version still fails, else 0."""
    name, low, high = parse_range(spec)
    if data.get("protocol") and shim(name).protocol != str(data["protocol"]):
        client_targets((name,), (), str(data["protocol"]))  # one line: it speaks another
    versions = versions_between(name, low, high)
    how = "each" if len(versions) <= EVERY else "a binary search of"
    click.echo(f"replaying on {how} {len(versions)} versions of {name} from {low} to {high}")
    console = make_console()

    def replay(version: str) -> Step:
        step = replay_at(data, name, version, timeout)
        console.print(f"  {name}@{version}: {step.verdict}", highlight=False)
        return step

    steps = history(versions, replay)
    click.echo(f"{data.get('signature')} on {name}:")
    table = Table()
    for column in ("version", "verdict", "what it did"):
        table.add_column(column, overflow="fold")
    for step in steps:
        said = step.observed if step.verdict != "other" else f"{step.signature}: {step.observed}"
        table.add_row(step.version, step.verdict, said[:200])
    console.print(table)
    change = first_change(steps)
    if change is None:
        click.echo(f"no change from {steps[0].version} to {steps[-1].version}")
    else:
        before = next(s for s in steps if s.verdict != "unbuildable")
        click.echo(
            f"first version where it changes: {change.version} "
            f"({before.verdict} -> {change.verdict})"
        )
    return 1 if steps[-1].verdict in ("failing", "other") else 0
