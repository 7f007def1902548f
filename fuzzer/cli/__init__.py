"""The ``amqpfuzz`` command line: a click group whose commands load when they run.

Every expected failure (a bad spec file, an unknown protocol, an unreachable broker) is an
:class:`~amqpfuzz.spec.errors.AmqpfuzzError`; the group turns it into one line on stderr and
exit status 2, never a traceback.
"""

from __future__ import annotations

import importlib
import sys
from importlib.metadata import version
from typing import Any

import click

from amqpfuzz.spec import AmqpfuzzError

from .console import BadInput

__all__ = ["main"]


# Every command is imported only when it runs, so that `amqpfuzz --help` stays fast and the
# fuzzer never imports the layer to its right (the Spark reports).
LAZY_COMMANDS = {
    "spec": "amqpfuzz.fuzzer.cli.info:spec_command",
    "mutations": "amqpfuzz.fuzzer.cli.info:mutations_command",
    "run": "amqpfuzz.fuzzer.cli.run:run_command",
    "replay": "amqpfuzz.fuzzer.cli.replay:replay_command",
    "broker": "amqpfuzz.fuzzer.cli.broker:broker_group",
    "client": "amqpfuzz.fuzzer.cli.client:client_group",
    "scenarios": "amqpfuzz.fuzzer.cli.scenarios:scenarios_command",
    "report": "amqpfuzz.reports.cli:report_command",
    "spark-connect": "amqpfuzz.fuzzer.cli.connect:spark_connect_command",
}


class _Group(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *LAZY_COMMANDS])

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in LAZY_COMMANDS:
            module, _, attribute = LAZY_COMMANDS[name].partition(":")
            command: click.Command = getattr(importlib.import_module(module), attribute)
            return command
        return super().get_command(ctx, name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except AmqpfuzzError as exc:
            raise BadInput(str(exc)) from None
        except click.UsageError as exc:  # a command's options: one line too, not the usage
            where = exc.ctx.command_path if exc.ctx is not None else ctx.command_path
            raise BadInput(f"{where}: {exc.format_message()}") from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version("amqpfuzz"), prog_name="amqpfuzz")
def cli() -> None:
    """Property-based fuzzing and conformance testing of AMQP brokers."""


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``amqpfuzz`` console script."""
    cli.main(args=argv if argv is not None else sys.argv[1:], prog_name="amqpfuzz")
