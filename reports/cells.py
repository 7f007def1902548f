"""What every section of the report's page is made of: numbers and times as the page shows them,
tables, verdicts, a signature's anchor and a reproducer's replay command."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

from amqpfuzz.fuzzer.records import replay_command as replay_of

__all__ = ["SHOWN", "n", "replay_command", "signature_id", "status", "table", "when"]


def n(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.1f}" if abs(value) >= 10 else f"{value:,.2f}"
    return f"{int(value):,}"


def when(micros: int | None) -> str:
    """A time in microseconds since the epoch as UTC minutes."""
    if micros is None:
        return ""
    moment = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=micros)
    return moment.strftime("%Y-%m-%d %H:%M")


def signature_id(signature: str) -> str:
    """The HTML id of a signature's row (the matrix's cells link to it)."""
    return "sig-" + hashlib.sha1(signature.encode()).hexdigest()[:12]


def replay_command(reproducer: str | None) -> str | None:
    """The reproducer's replay as it can be pasted into a shell where the report was made."""
    return replay_of(reproducer) if reproducer else None


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: set[int]) -> str:
    head = "".join(
        f'<th class="num">{escape(h)}</th>' if i in numeric else f"<th>{escape(h)}</th>"
        for i, h in enumerate(headers)
    )
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{cell}</td>' if i in numeric else f"<td>{cell}</td>"
            for i, cell in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


SHOWN = 12  # rows of a long table shown before the rest, behind a click


def status(verdict: str) -> str:
    return f'<span class="status {escape(verdict)}">{escape(verdict)}</span>'
