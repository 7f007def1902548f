"""The morning report: one static HTML page, inline CSS and SVG, nothing loaded from anywhere.

Order is what a reader needs first: the headline numbers, then the failures that are new or came
back (each with the command that replays it), the conformance heatmap, coverage of the spec and
of the broker's own code, the trends, and the detail below. The page holds no time of its own
making, so the same tables always render the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from typing import Any

from amqpfuzz.spec import DEFAULT_PROTOCOL, PROTOCOLS, rule_text

from .cells import SHOWN, n, replay_command, signature_id, status, table, when
from .charts import TREND_COLOURS, heatmap, line_chart
from .covered import broker, coverage
from .page import Page, cell_id

__all__ = ["render", "replay_command", "signature_id"]

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
overflow-wrap:anywhere}.status{font-weight:600;text-transform:uppercase;font-size:11px}
.status.new,.status.regressed{color:#c0392b}.status.fixed{color:#1a7f37}.trends{display:flex;
flex-wrap:wrap;gap:16px}.none{color:#666;font-style:italic}.msg{color:#555}
svg.chart{max-width:100%;height:auto}.scroll{overflow-x:auto;max-width:100%}
.status.xpass,.status.fail,.status.error{color:#c0392b}.status.xfail{color:#8a6d00}
.status.pass{color:#1a7f37}.status.skip{color:#666}.callout{border-left:4px solid #c0392b;
background:#fdf0ee;padding:6px 12px;margin:8px 0}details>summary{cursor:pointer;color:#1f5fbf}
details ul{margin:4px 0 8px;columns:3 220px;font-size:12px}details ul.wide{columns:1}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 10px;margin:4px 0;font-size:12px}
dt{color:#666}dd{margin:0}
.cells details{margin:2px 0}:target{background:#fff6d6}
.unreached details{margin:2px 0 2px 14px}.unreached li .msg{font-size:11px}
tr.group td{background:#f8f8f8;font-size:12px;padding-top:8px}
table.modules code{overflow-wrap:normal}
"""

_HEADLINE = (
    ("cases", "cases", ""),
    ("failures", "failures", "bad"),
    ("flaky", "flaky (not failures)", ""),
    ("signatures", "failure signatures", ""),
    ("new", "new", "bad"),
    ("regressed", "regressed", "bad"),
    ("fixed", "fixed", "good"),
    ("xfails", "known deviations (xfail)", ""),
    ("xpasses", "deviations gone (xpass)", "bad"),
    ("cases_per_s", "cases per second", ""),
    ("targets", "targets", ""),
    ("runs", "runs", ""),
    ("errors", "errors", ""),
)


def _headline(page: Page) -> str:
    cards = []
    for key, label, tone in _HEADLINE:
        value = page.headline[key]
        tone = tone if value else ""
        cards.append(
            f'<div class="card {tone}"><div class="n" data-figure="{key}">{n(value)}</div>'
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
                f'<code id="{signature_id(s["signature"])}">{escape(s["signature"])}</code>'
                f'<div class="msg">{escape(s["oracle"] or "")}: {message}</div>'
                + _drill_down(s, command),
                escape(s["spec_ref"] or ""),
                escape(", ".join(s["targets"])),
                n(s["occurrences"]),
                when(s["first_seen"]),
                replay,
            )
        )
    headers = ("status", "signature", "spec", "targets", "tonight", "first seen", "replay")
    return table(headers, rows, {4})


def _drill_down(s: dict[str, Any], command: str | None) -> str:
    """A signature's story, behind a click: the nights it failed on, how often, where, the
    reaction required and the one seen, the rule's text, and the replay of its smallest case."""
    first, last = when(s["first_seen"])[:10], when(s["last_seen"])[:10]
    protocol = s.get("protocol") or DEFAULT_PROTOCOL
    text = rule_text(protocol, s["spec_ref"]) if s["spec_ref"] and protocol in PROTOCOLS else None
    facts = [
        ("nights", f"first {first}, last {last}: {n(s['nights_seen'])} night(s)"),
        ("cases", f"{n(s['occurrences'])} tonight, {n(s['total_occurrences'])} in all"),
        ("targets", ", ".join(s["targets"]) + f" (AMQP {protocol})"),
        ("expected", s.get("expected") or "?"),
        ("observed", s.get("observed") or "?"),
        ("rule", f"{s['spec_ref'] or '?'}: {text}" if text else s["spec_ref"] or "?"),
    ]
    items = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in facts)
    replay = f"<dt>replay</dt><dd><code>{escape(command)}</code></dd>" if command else ""
    return f'<details class="drill"><summary>details</summary><dl>{items}{replay}</dl></details>'


def _failures(page: Page, statuses: tuple[str, ...], empty: str) -> str:
    chosen = [s for s in page.signatures if s["status"] in statuses]
    return _signature_rows(chosen) if chosen else f'<p class="none">{escape(empty)}</p>'


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
            n(r["workers"]),
            n(r["duration_s"]),
            n(r["cases"]),
            n(r["cases_per_s"]),
            n(r["failures"]),
            n(r.get("flaky") or 0),
        )
        for r in page.runs
    ]
    headers = (
        "run", "target", "product", "workers", "seconds", "cases", "cases/s", "failures", "flaky",
    )  # fmt: skip
    return table(headers, rows, {3, 4, 5, 6, 7, 8})


def _flaky(page: Page) -> str:
    """Failures whose replays did not all fail: not counted as failures, and why."""
    if not page.flaky:
        return '<p class="none">No flaky failures tonight.</p>'
    rows = [
        (
            f'<code id="{signature_id(f["signature"])}">{escape(f["signature"])}</code>'
            f'<div class="msg">{escape(f["oracle"] or "")}: {escape((f["message"] or "")[:300])}'
            "</div>",
            escape(", ".join(f["targets"])),
            n(f["occurrences"]),
            escape(f["rate"] or "?"),
            escape(f"found: {f['observed'] or '?'}; the replays saw: ")
            + escape("; ".join(f["replays"]) or "?"),
            f"<code>{escape(replay_command(f['reproducer']) or '')}</code>",
        )
        for f in page.flaky
    ]
    headers = ("signature", "targets", "tonight", "reproduced", "what differed", "replay")
    return table(headers, rows, {2})


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
            escape(d.get("alone") or ""),
            n(d["occurrences"]),
            f"<code>{escape(replay_command(d['reproducer']) or '')}</code>",
        )
        for d in page.divergences
    ]
    headers = ("spec", "mutation", "target", "reference", "observed", "stands alone", "cases")
    return table((*headers, "replay"), rows, {6})


def _ingest(page: Page) -> str:
    h = page.headline
    coverage = h.get("coverage_records", 0)
    summary = (
        f"<p>{n(len(page.ingest))} files, {n(h['records'])} records"
        + (f", {n(coverage)} coverage records" if coverage else "")
        + f", {n(h['duplicates'])} duplicates, {n(h['torn_lines'])} torn lines, "
        f"{n(h['malformed_lines'])} malformed lines.</p>"
    )
    rows = [
        (
            f"<code>{escape(f['file'])}</code>",
            escape(f["state"]),
            n(f["records"]),
            n(f["duplicates"]),
            n(f["torn_lines"]),
            n(f["malformed_lines"]),
        )
        for f in page.ingest
    ]
    headers = ("file", "state", "records", "duplicates", "torn", "malformed")
    return summary + table(headers, rows, {2, 3, 4, 5})


def _targets(page: Page) -> str:
    rows = [
        (
            escape(t["target_label"]),
            escape(f"AMQP {t['target_protocol']}"),
            *(
                n(t.get(v, 0))
                for v in ("pass", "fail", "flaky", "error", "xfail", "xpass", "skip", "total")
            ),
        )
        for t in page.targets
    ]
    headers = (
        "target", "protocol", "pass", "fail", "flaky", "error", "xfail", "xpass", "skip", "cases",
    )  # fmt: skip
    return table(headers, rows, {2, 3, 4, 5, 6, 7, 8, 9})


def _deviations(page: Page) -> str:
    if not page.deviations:
        return '<p class="none">No profile entry matched tonight: no known deviations.</p>'
    rows = [
        (
            status(d["verdict"]),
            escape(d["target_label"] or ""),
            f"<code>{escape(d['entry'] or '(entry not recorded)')}</code>"
            f'<div class="msg">{escape(d["profile"] or "")}</div>',
            escape(d["reason"] or ""),
            escape(", ".join(d["spec_refs"])),
            n(d["occurrences"]),
        )
        for d in page.deviations
    ]
    headers = ("status", "target", "profile entry", "reason", "spec (first few)", "cases")
    shown = max(SHOWN, sum(1 for d in page.deviations if d["verdict"] == "xpass"))
    made = table(headers, rows[:shown], {5})
    if len(rows) > shown:
        made += (
            f"<details><summary>{len(rows) - shown} more profile entries</summary>"
            f"{table(headers, rows[shown:], {5})}</details>"
        )
    return made


def _xpass_callout(page: Page) -> str:
    gone = [d for d in page.deviations if d["verdict"] == "xpass"]
    if not gone:
        return ""
    return (
        f'<p class="callout"><strong>{len(gone)} known deviation(s) no longer happen '
        f"(xpass, {n(sum(d['occurrences'] for d in gone))} cases)</strong>: the profile is out "
        'of date, or the broker changed. See <a href="#deviations">known deviations</a>.</p>'
    )


def _scenarios(page: Page) -> str:
    """Per protocol, rule by target: each verdict and what the broker did; the rules skipped
    on every target listed apart, with the reason."""
    if not page.scenarios:
        return (
            '<p class="none">No scenario records tonight (run <code>amqpfuzz scenarios</code>).</p>'
        )
    parts = []
    for protocol in sorted({r["target_protocol"] or "?" for r in page.scenarios}):
        mine = [r for r in page.scenarios if (r["target_protocol"] or "?") == protocol]
        targets = sorted({r["target_label"] or "?" for r in mine})
        cells: dict[tuple[str, str], list[str]] = {}
        skipped: dict[str, str] = {}
        refs: list[str] = []
        for r in mine:
            ref = r["spec_ref"] or "?"
            if ref not in refs:
                refs.append(ref)
            why = escape((r["reason"] or "")[:200])
            if r["verdict"] == "skip":
                skipped.setdefault(ref, why)
                cells.setdefault((ref, r["target_label"] or "?"), []).append(
                    f'{status("skip")}<div class="msg">{why}</div>'
                )
                continue
            seen = " ".join(
                str(x) for x in (r["observed_reply"] or r["observed_outcome"], r["observed_reply_code"])
                if x
            )  # fmt: skip
            note = f'<div class="msg">{why}</div>' if why else ""
            cells.setdefault((ref, r["target_label"] or "?"), []).append(
                f"{status(r['verdict'])} {escape(seen)}{note}"
            )
        ran = [ref for ref in refs if any(r["spec_ref"] == ref and r["verdict"] != "skip"
                                          for r in mine)]  # fmt: skip
        rows = [
            (
                f"<code>{escape(ref)}</code>",
                *("<br>".join(cells.get((ref, t), [])) for t in targets),
            )
            for ref in ran
        ]
        parts.append(f"<h3>AMQP {escape(protocol)}</h3>")
        parts.append(table(("rule", *targets), rows, set()) if rows else "")
        idle = [ref for ref in refs if ref not in ran]
        if idle:
            items = "".join(
                f"<li><code>{escape(ref)}</code>: {skipped.get(ref, '')}</li>" for ref in idle
            )
            parts.append(
                f"<details><summary>{len(idle)} rule(s) skipped on every target</summary>"
                f'<ul class="wide">{items}</ul></details>'
            )
    return "".join(parts)


def _matrices(page: Page) -> str:
    if not page.matrices:
        return '<p class="none">No cases.</p>'
    parts = []
    for m in page.matrices:
        links = {key: f"#{cell_id(m.protocol, *key)}" for key in m.failures}
        parts.append(f"<h3>AMQP {escape(m.protocol)}</h3>")
        parts.append(heatmap(m.rows, m.columns, m.cells, links))
        lists = []
        for (row, column), found in sorted(m.failures.items()):
            items = "".join(f'<li><a href="#{signature_id(s)}"><code>{escape(s)}</code></a></li>'
                            for s in found)  # fmt: skip
            lists.append(
                f'<details id="{cell_id(m.protocol, row, column)}"><summary>{escape(row)} · '
                f"{escape(column)}: {len(found)} failing signature(s)</summary>"
                f"<ul>{items}</ul></details>"
            )
        if lists:
            parts.append(f'<div class="cells">{"".join(lists)}</div>')
    parts.append(
        '<p class="sub">Columns: the specification\'s classes, then what lies outside it '
        "(unknown class or method ids, broken frames, ...). Each cell: failing cases (fail, "
        "error, xpass) of those judged (all but skip); green none, then light green up to 5%, "
        "yellow 20%, orange 50%, red more. A cell with failures links to their signatures.</p>"
    )
    return "".join(parts)


def render(page: Page) -> str:
    """The whole page for ``page.night``."""
    products = sorted({r["target_label"] or "?" for r in page.runs})
    sections = [
        f"<h1>amqpfuzz nightly report: {page.night}</h1>",
        f'<p class="sub">{n(page.headline["runs"])} runs against {escape(", ".join(products))}</p>',
        _headline(page),
        '<h2 id="targets">Targets</h2>',
        _targets(page),
        '<h2 id="new">New and regressed failures</h2>',
        _xpass_callout(page),
        _failures(page, ("new", "regressed"), "No new or regressed failures tonight."),
        '<h2 id="flaky">Flaky failures</h2>',
        '<p class="sub">Failures that did not happen again every time they were replayed from '
        "their reproducer (not counted as failures): how often their replays reproduced them, "
        "and what the replays saw instead.</p>",
        _flaky(page),
        '<h2 id="deviations">Known deviations</h2>',
        '<p class="sub">The profile entries that matched tonight (xfail: the deviation '
        "happened, as recorded) and the ones that no longer did (xpass).</p>",
        _deviations(page),
        '<h2 id="scenarios">Conformance scenarios</h2>',
        _scenarios(page),
        '<h2 id="matrix">Conformance by target and spec class</h2>',
        _matrices(page),
        '<h2 id="coverage">Spec coverage</h2>',
        coverage(page),
        '<h2 id="broker-coverage">The broker\'s code covered</h2>',
        broker(page),
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
