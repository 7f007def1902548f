"""The morning report: one static HTML page, inline CSS and SVG, nothing loaded from anywhere.

Order is what a reader needs first: the headline numbers, then the failures that are new or came
back (each with the command that replays it), the conformance heatmap, coverage, the trends,
and the detail below. The page holds no time of its own making, so the same tables always
render the same bytes.
"""

from __future__ import annotations

import datetime as dt
import shlex
from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

from .charts import TREND_COLOURS, bars, heatmap, line_chart
from .page import Page

__all__ = ["render", "replay_command"]

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#222;margin:24px auto;
max-width:1220px;padding:0 16px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 10px;border-bottom:1px solid #ddd;
padding-bottom:4px}.sub{color:#666;margin:0 0 16px}
.cards{display:flex;flex-wrap:wrap;gap:10px}.card{border:1px solid #ddd;border-radius:6px;
padding:8px 14px;min-width:120px;background:#fafafa}.card .n{font-size:24px;font-weight:600}
.card .l{color:#555;font-size:12px}.card.bad .n{color:#c0392b}.card.good .n{color:#1a7f37}
table{border-collapse:collapse;width:100%;font-size:13px}th,td{text-align:left;padding:4px 8px;
border-bottom:1px solid #eee;vertical-align:top}th{background:#f3f3f3}td.num,th.num{text-align:right}
code{font:12px ui-monospace,monospace;background:#f4f4f4;padding:1px 4px;border-radius:3px;
word-break:break-all}.status{font-weight:600;text-transform:uppercase;font-size:11px}
.status.new,.status.regressed{color:#c0392b}.status.fixed{color:#1a7f37}.trends{display:flex;
flex-wrap:wrap;gap:16px}.none{color:#666;font-style:italic}.msg{color:#555}
"""

_HEADLINE = (
    ("cases", "cases", ""),
    ("failures", "failures", "bad"),
    ("signatures", "failure signatures", ""),
    ("new", "new", "bad"),
    ("regressed", "regressed", "bad"),
    ("fixed", "fixed", "good"),
    ("cases_per_s", "cases per second", ""),
    ("targets", "targets", ""),
    ("runs", "runs", ""),
    ("errors", "errors", ""),
)


def _n(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.1f}" if abs(value) >= 10 else f"{value:,.2f}"
    return f"{int(value):,}"


def _when(micros: int | None) -> str:
    """A time in microseconds since the epoch as UTC minutes."""
    if micros is None:
        return ""
    moment = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=micros)
    return moment.strftime("%Y-%m-%d %H:%M")


def replay_command(reproducer: str | None) -> str | None:
    return f"amqpfuzz replay {shlex.quote(reproducer)}" if reproducer else None


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: set[int]) -> str:
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
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _headline(page: Page) -> str:
    cards = []
    for key, label, tone in _HEADLINE:
        value = page.headline[key]
        tone = tone if value else ""
        cards.append(
            f'<div class="card {tone}"><div class="n" data-figure="{key}">{_n(value)}</div>'
            f'<div class="l">{escape(label)}</div></div>'
        )
    return f'<div class="cards">{"".join(cards)}</div>'


def _signature_rows(signatures: Iterable[dict[str, Any]]) -> str:
    rows = []
    for s in signatures:
        command = replay_command(s["reproducer"])
        replay = f"<code>{escape(command)}</code>" if command else '<span class="none">none</span>'
        message = escape((s["message"] or "")[:300])
        rows.append(
            (
                f'<span class="status {s["status"]}">{s["status"]}</span>',
                f"<code>{escape(s['signature'])}</code>"
                f'<div class="msg">{escape(s["oracle"] or "")}: {message}</div>',
                escape(s["spec_ref"] or ""),
                escape(", ".join(s["targets"])),
                _n(s["occurrences"]),
                _when(s["first_seen"]),
                replay,
            )
        )
    headers = ("status", "signature", "spec", "targets", "tonight", "first seen", "replay")
    return _table(headers, rows, {4})


def _failures(page: Page, statuses: tuple[str, ...], empty: str) -> str:
    chosen = [s for s in page.signatures if s["status"] in statuses]
    return _signature_rows(chosen) if chosen else f'<p class="none">{escape(empty)}</p>'


def _coverage(page: Page) -> str:
    if not page.coverage:
        return '<p class="none">No coverage for this night.</p>'
    order = ("methods", "rules", "scenario_files", "mutation_operators")
    spoken = sorted({str(r.get("protocol") or "") for r in page.coverage})
    rows = sorted(
        page.coverage,
        key=lambda r: (spoken.index(str(r.get("protocol") or "")), order.index(r["dimension"])),
    )

    def label(row: dict[str, Any]) -> str:
        name = row["dimension"].replace("_", " ")
        return f"AMQP {row['protocol']} {name}" if len(spoken) > 1 else name

    return bars([(label(r), r["exercised"], r["total"]) for r in rows])


def _trends(page: Page) -> str:
    charts = [
        ("cases", [(t.night, float(t.cases)) for t in page.trends]),
        ("failures", [(t.night, float(t.failures)) for t in page.trends]),
        ("signatures", [(t.night, float(t.signatures)) for t in page.trends]),
        ("cases_per_s", [(t.night, t.cases_per_s) for t in page.trends]),
    ]
    titles = {"cases_per_s": "cases per second", "signatures": "failure signatures"}
    svgs = [line_chart(titles.get(k, k), pts, TREND_COLOURS[k]) for k, pts in charts]
    return f'<div class="trends">{"".join(svgs)}</div>'


def _runs(page: Page) -> str:
    rows = [
        (
            f"<code>{escape(r['run_id'])}</code>",
            escape(r["target_label"] or ""),
            escape(
                " ".join(filter(None, (r["target_product"], r["target_version"])))
                + (f" · AMQP {r['target_protocol']}" if r.get("target_protocol") else "")
            ),
            _n(r["workers"]),
            _n(r["duration_s"]),
            _n(r["cases"]),
            _n(r["cases_per_s"]),
            _n(r["failures"]),
        )
        for r in page.runs
    ]
    headers = ("run", "target", "product", "workers", "seconds", "cases", "cases/s", "failures")
    return _table(headers, rows, {3, 4, 5, 6, 7})


def _divergences(page: Page) -> str:
    if not page.divergences:
        return '<p class="none">No differential divergences.</p>'
    rows = [
        (
            escape(d["spec_ref"] or ""),
            escape(d["mutation"] or "valid"),
            escape(d["target_label"] or ""),
            escape(f"{d['expected_outcome']} {d['expected_reply_code'] or ''}"),
            escape(f"{d['observed_outcome']} {d['observed_reply_code'] or ''}"),
            _n(d["occurrences"]),
            f"<code>{escape(replay_command(d['reproducer']) or '')}</code>",
        )
        for d in page.divergences
    ]
    headers = ("spec", "mutation", "target", "reference", "observed", "cases", "replay")
    return _table(headers, rows, {5})


def _ingest(page: Page) -> str:
    h = page.headline
    summary = (
        f"<p>{_n(len(page.ingest))} files, {_n(h['records'])} records, {_n(h['duplicates'])} "
        f"duplicates, {_n(h['torn_lines'])} torn lines, {_n(h['malformed_lines'])} malformed "
        "lines.</p>"
    )
    rows = [
        (
            f"<code>{escape(f['file'])}</code>",
            escape(f["state"]),
            _n(f["records"]),
            _n(f["duplicates"]),
            _n(f["torn_lines"]),
            _n(f["malformed_lines"]),
        )
        for f in page.ingest
    ]
    headers = ("file", "state", "records", "duplicates", "torn", "malformed")
    return summary + _table(headers, rows, {2, 3, 4, 5})


def render(page: Page) -> str:
    """The whole page for ``page.night``."""
    products = sorted({r["target_label"] or "?" for r in page.runs})
    sections = [
        f"<h1>amqpfuzz nightly report: {page.night}</h1>",
        f'<p class="sub">{_n(page.headline["runs"])} runs against '
        f"{escape(', '.join(products))}</p>",
        _headline(page),
        "<h2>New and regressed failures</h2>",
        _failures(page, ("new", "regressed"), "No new or regressed failures tonight."),
        "<h2>Conformance by target and spec class</h2>",
        heatmap(page.heat_rows, page.heat_columns, page.heat)
        + '<p class="sub">Each cell: failing cases (fail, error) of those judged (all but '
        "skip); green none, then light green up to 5%, yellow 20%, orange 50%, red more.</p>"
        if page.heat
        else '<p class="none">No cases.</p>',
        "<h2>Spec coverage</h2>",
        _coverage(page),
        "<h2>Trends</h2>",
        _trends(page),
        "<h2>Recurring failures</h2>",
        _failures(page, ("recurring",), "None."),
        "<h2>Fixed since the night before</h2>",
        _failures(page, ("fixed",), "None."),
        "<h2>Differential divergences</h2>",
        _divergences(page),
        "<h2>Runs</h2>",
        _runs(page),
        "<h2>Ingest health</h2>",
        _ingest(page),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>amqpfuzz nightly report {page.night}</title>"
        f"<style>{_CSS}</style></head><body>\n" + "\n".join(sections) + "\n</body></html>\n"
    )
