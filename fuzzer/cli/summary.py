"""The end of a run in the terminal: a table per target and the failure signatures in the order
they were found, each with its replay command; and the run's exit status."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

from ..engine.events import CoverageReached, RunFinished
from ..records import replay_command
from .console import BadInput

__all__ = ["coverage_table", "joined", "summarize", "summary_table"]


def summary_table(
    rows: list[dict[str, Any]],
    signatures: dict[str, tuple[int, str, float]],
    flaky: dict[str, tuple[int, str, float, Mapping[str, Any]]] | None = None,
    alone: Mapping[str, str] | None = None,
) -> list[Table]:
    """The end-of-run tables: per target (with the broker's restarts), then the failure
    signatures in the order they were found (seconds into the run), each with a replay
    command, then the flaky ones apart: each with the rate its replays reproduced it at and
    what they saw instead."""
    targets = Table(title="amqpfuzz run", title_justify="left")
    columns = ("target", "cases", "cases/s", "programs", "failures", "flaky")
    for column in (*columns, "known deviations", "divergences", "restarts"):
        targets.add_column(column, justify="left" if column == "target" else "right")
    for row in rows:
        targets.add_row(
            row["target"],
            str(row["cases"]),
            f"{row['rate']:.0f}",
            str(row["programs"]),
            str(row["failures"]),
            str(row["flaky"]),
            str(row["xfails"]),
            str(row["divergences"]),
            str(row["restarts"]),
        )
    tables = [targets]
    if signatures:
        failures = Table(title="failures, as they were found", title_justify="left")
        failures.add_column("found", justify="right")
        failures.add_column("signature", overflow="fold")
        failures.add_column("seen", justify="right")
        failures.add_column("replay", overflow="fold")
        for signature, (count, reproducer, found) in sorted(
            signatures.items(), key=lambda item: (item[1][2], item[0])
        ):
            replay = replay_command(reproducer) if reproducer else ""
            if alone and signature in alone:  # a divergence whose other targets agree
                signature = f"{signature}\n{alone[signature]} stands alone"
            failures.add_row(f"{found:.0f} s", signature, str(count), replay)
        tables.append(failures)
    if flaky:
        apart = Table(
            title="flaky: failures that did not happen again every time they were replayed "
            "(not counted as failures)",
            title_justify="left",
        )
        for column in ("found", "signature", "seen", "reproduced", "the replays saw", "replay"):
            apart.add_column(
                column, overflow="fold", justify="right" if column == "seen" else "left"
            )
        for signature, (count, reproducer, found, confirmation) in sorted(
            flaky.items(), key=lambda item: (item[1][2], item[0])
        ):
            saw = "; ".join(dict.fromkeys(str(s) for s in confirmation.get("replays", ())))
            apart.add_row(
                f"{found:.0f} s",
                signature,
                str(count),
                str(confirmation.get("rate", "?")),
                saw,
                replay_command(reproducer) if reproducer else "",
            )
        tables.append(apart)
    return tables


def joined(
    reached: list[CoverageReached],
) -> dict[str, list[tuple[str, str | None, int, int, int]]]:
    """The workers' last points joined, per target: per module, its set, the lines any worker
    saw covered, its relevant lines, and the functions no worker saw entered."""
    found: dict[str, dict[str, tuple[str | None, set[int], int, set[str] | None]]] = {}
    for event in reached:
        modules = found.setdefault(event.target.label, {})
        for count in event.modules:
            set_name, lines, relevant, missed = modules.get(
                count.module, (count.set, set(), 0, None)
            )
            lines |= set(event.lines.get(count.module, ()))
            unreached = {name for name, _ in event.unreached.get(count.module, ())}
            missed = unreached if missed is None else missed & unreached
            modules[count.module] = (set_name, lines, max(relevant, count.relevant), missed)
    return {
        label: [
            (m, s, len(lines), r, len(missed or ())) for m, (s, lines, r, missed) in modules.items()
        ]
        for label, modules in found.items()
    }


MODULE_ROWS = 20  # modules shown per target; more are the ones with the most lines not covered


def coverage_table(reached: list[CoverageReached]) -> Table | None:
    """The broker's code covered in the run, per target: each named set, then its modules
    (lines covered of the relevant ones, and the functions never entered)."""
    if not reached:
        return None
    table = Table(title="the broker's code covered (lines)", title_justify="left")
    for column in ("target", "set / module", "covered", "relevant", "%", "functions never entered"):
        table.add_column(
            column, justify="left" if column in ("target", "set / module") else "right"
        )
    for label, modules in joined(reached).items():
        sets: dict[str, tuple[int, int]] = {}
        for _, name, covered, relevant, _ in modules:
            if name is not None:
                c, r = sets.get(name, (0, 0))
                sets[name] = (c + covered, r + relevant)
        for name, (covered, relevant) in sets.items():
            table.add_row(
                label,
                f"{name} set",
                f"{covered:,}",
                f"{relevant:,}",
                _percent(covered, relevant),
                "",
            )
        shown = list(modules)
        if len(shown) > MODULE_ROWS:  # a JVM broker's hundreds of classes: the widest gaps
            shown = sorted(shown, key=lambda m: m[2] - m[3])[:MODULE_ROWS]
        for module, _, covered, relevant, missed in shown:
            table.add_row(
                label,
                f"  {module}",
                f"{covered:,}",
                f"{relevant:,}",
                _percent(covered, relevant),
                str(missed),
            )
        if len(shown) < len(modules):
            rest = f"  ... {len(modules) - len(shown)} more (the records have every one)"
            table.add_row(label, rest, "", "", "", "")
    return table


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}" if whole else "-"


def summarize(
    finished: list[RunFinished],
    errors: list[str],
    interrupted: bool,
    console: Console,
    seed: int,
    where: str = "records in the --out directory",
    coverage: list[CoverageReached] | None = None,
    flaky_fails: bool = False,
) -> int:
    """The end-of-run tables from the runs' summaries; the exit status (1: failures found, or
    flaky ones with ``flaky_fails``)."""
    rows: dict[str, dict[str, Any]] = {}
    signatures: dict[str, tuple[int, str, float]] = {}
    flaky: dict[str, tuple[int, str, float, Mapping[str, Any]]] = {}
    down: list[str] = []
    alone: dict[str, str] = {}
    for run in finished:
        for summary in run.targets:
            row = rows.setdefault(
                summary.label,
                {
                    "target": summary.label,
                    "cases": 0,
                    "programs": 0,
                    "rate": 0.0,
                    "failures": 0,
                    "flaky": 0,
                    "xfails": 0,
                    "divergences": 0,
                    "restarts": 0,
                },
            )
            row["cases"] += summary.cases
            row["programs"] += summary.programs
            row["rate"] += summary.cases / max(summary.elapsed, 1e-9)
            row["failures"] += summary.failures
            row["flaky"] += summary.flaky
            row["xfails"] += summary.xfails
            row["divergences"] += summary.divergences
            row["restarts"] = max(row["restarts"], summary.restarts)  # one broker, many workers
            for signature, count in summary.signatures.items():
                seen, path, found = signatures.get(signature, (0, "", math.inf))
                signatures[signature] = (
                    seen + count,
                    path or summary.reproducers.get(signature, ""),
                    min(found, summary.first_seen.get(signature, math.inf)),
                )
            for signature, count in summary.flaky_signatures.items():
                seen, path, found, confirmation = flaky.get(signature, (0, "", math.inf, {}))
                flaky[signature] = (
                    seen + count,
                    path or summary.reproducers.get(signature, ""),
                    min(found, summary.first_seen.get(signature, math.inf)),
                    confirmation or summary.confirmations.get(signature, {}),
                )
            alone.update(summary.alone)
            if summary.broker_down and summary.broker_down not in down:
                down.append(summary.broker_down)
    # a signature one worker confirmed is a failure, whatever another's replays saw
    flaky = {s: f for s, f in flaky.items() if s not in signatures}
    for table in summary_table(list(rows.values()), signatures, flaky, alone):
        console.print(table)
    covered = coverage_table(coverage or [])
    if covered is not None:
        console.print(covered)
    for message in down:
        console.print(f"broker down: {message}", highlight=False)
    console.print(f"seed {seed}; {where}", highlight=False)
    if errors:
        raise BadInput(errors[0])
    if interrupted:
        return 130
    return 1 if signatures or down or (flaky and flaky_fails) else 0
