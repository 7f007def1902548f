"""What the commands share: one-line errors, live progress, the summary table."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import IO, Any, TypeVar

import click
from rich.console import Console
from rich.live import Live
from rich.text import Text

from ..brokers import Target, parse_target

__all__ = ["BadInput", "Progress", "make_console", "target_options", "url_targets"]

# Off a terminal (a CI log, a file) rich would cut tables to 80 columns ("throwa…"): there the
# width is this, or $COLUMNS where it is set.
LOG_WIDTH = 200


def make_console(*, stderr: bool = False) -> Console:
    """The console a command prints to: a terminal's own width, a wide one elsewhere. No
    emoji codes: 1.0's conditions have colons (``amqp:link:detach-forced`` is no 🔗)."""
    shown = Console(stderr=stderr, emoji=False)
    if shown.is_terminal or os.environ.get("COLUMNS"):
        return shown
    return Console(stderr=stderr, width=LOG_WIDTH, emoji=False)


class BadInput(click.ClickException):
    """One clear line, exit status 2."""

    exit_code = 2

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"amqpfuzz: error: {self.format_message()}", err=True)


class Progress:
    """Cases, cases per second, failures and elapsed time: live on a terminal, a plain line
    every few seconds otherwise (CI logs)."""

    def __init__(self, console: Console, every: float = 5.0) -> None:
        self.console = console
        self.every = every
        self.cases = 0
        self.failures = 0
        self.xfails = 0
        self.programs = 0
        self.flaky = 0
        self.coverage: dict[str, dict[str, tuple[int, int]]] = {}  # target -> set -> lines
        self.started = time.monotonic()
        self._last = 0.0
        self._live: Live | None = None

    def __enter__(self) -> Progress:
        if self.console.is_terminal:
            self._live = Live(
                self._line(), console=self.console, refresh_per_second=4, transient=True
            )
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.__exit__(None, None, None)
        self.console.print(self._line())

    def update(
        self, cases: int, failures: int, xfails: int, programs: int = 0, flaky: int = 0
    ) -> None:
        self.cases, self.failures, self.xfails = cases, failures, xfails
        self.programs, self.flaky = programs, flaky
        now = time.monotonic()
        if self._live is not None:
            self._live.update(self._line())
        elif now - self._last >= self.every:
            self._last = now
            self.console.print(self._line())

    def covered(self, target: str, sets: dict[str, tuple[int, int]]) -> None:
        """A target's coverage so far (each worker's view: the largest stands)."""
        shown = self.coverage.setdefault(target, {})
        for name, (covered, relevant) in sets.items():
            if covered >= shown.get(name, (0, 0))[0]:
                shown[name] = (covered, relevant)

    def note(self, text: str) -> None:
        self.console.print(text, highlight=False, markup=False)

    def _line(self) -> Text:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        programs = f"{self.programs} programs  " if self.programs else ""
        flaky = f"{self.flaky} flaky  " if self.flaky else ""
        covered = "".join(
            f"  {name} {c:,}/{r:,} lines"
            for sets in self.coverage.values()
            for name, (c, r) in sets.items()
        )
        return Text(
            f"{self.cases} cases  {self.cases / elapsed:.0f}/s  {programs}"
            f"{self.failures} failures  {flaky}{self.xfails} known deviations  "
            f"{elapsed:.0f} s{covered}"
        )


Command = TypeVar("Command", bound=Callable[..., Any])


def target_options(command: Command) -> Command:
    """``--allow-remote``, ``--ca-file`` and ``--insecure``: how ``--url`` targets are reached."""
    for option in (
        click.option("--insecure", is_flag=True, help="Do not verify amqps:// certificates."),
        click.option(
            "--ca-file",
            type=click.Path(dir_okay=False),
            help="CA certificates for amqps:// targets.",
        ),
        click.option(
            "--allow-remote",
            is_flag=True,
            help="Allow a target that is not on the loopback network.",
        ),
    ):
        command = option(command)
    return command


def url_targets(
    urls: Sequence[str], allow_remote: bool, ca_file: str | None, insecure: bool
) -> list[Target]:
    """The ``--url`` targets, as :func:`target_options` say they may be reached."""
    return [
        parse_target(u, allow_remote=allow_remote, ca_file=ca_file, verify=not insecure)
        for u in urls
    ]
