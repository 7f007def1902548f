"""``amqpfuzz replay``: run a reproducer again, a fuzz case's bytes or a stateful program's steps.

Exit status 1 while the failure still happens (or another one does), 0 once the broker does
what the specification requires, 2 for a file that is not a reproducer or a broker that cannot
be reached.
"""

from __future__ import annotations

import contextlib
import sys

import click

from amqpfuzz.spec import DEFAULT_PROTOCOL

from ..brokers import BROKERS, parse_target, throwaway
from ..engine.replay import replay
from ..records import load_reproducer
from .console import BadInput
from .run import preflight

__all__ = ["replay_command"]


@click.command("replay")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--url", help="Replay against this broker (default: the one in the file, if local).")
@click.option(
    "--broker",
    "kind",
    type=click.Choice(sorted(BROKERS)),
    help="Replay on a throwaway broker of this kind, started and removed here (a program that "
    "restarts the broker needs one).",
)
@click.option("--allow-remote", is_flag=True)
@click.option("--timeout", type=float, default=5.0, show_default=True)
def replay_command(
    path: str, url: str | None, kind: str | None, allow_remote: bool, timeout: float
) -> None:
    """Replay a reproducer: exit 1 if the failure still happens, 0 if it does not."""
    data = load_reproducer(path)
    if url is not None and kind is not None:
        raise BadInput("give --url or --broker, not both")
    with contextlib.ExitStack() as stack:
        restart = None
        if kind is not None:
            own = stack.enter_context(throwaway(kind))
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
        sys.exit(1)
    if result.now is not None:
        click.echo(f"a different failure now: {result.now}")
        sys.exit(1)
    click.echo("fixed: the broker now reacts as the specification requires")
    sys.exit(0)
