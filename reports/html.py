"""The morning report: one static HTML page, inline CSS and SVG, nothing loaded from anywhere.

Order is what a reader needs first: the headline numbers, then the failures that are new or came
back (each with the command that replays it), the conformance heatmap, coverage of the spec and
of the broker's own code, the trends, and the detail below. The page holds no time of its own
making, so the same tables always render the same bytes.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

from amqpfuzz.fuzzer.records import replay_command as replay_of
from amqpfuzz.spec import DEFAULT_PROTOCOL, PROTOCOLS, rule_text

from .charts import SET_COLOURS, TREND_COLOURS, bars, heatmap, line_chart, run_chart
from .page import BrokerCoverage, Page, cell_id

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


def signature_id(signature: str) -> str:
    """The HTML id of a signature's row (the matrix's cells link to it)."""
    return "sig-" + hashlib.sha1(signature.encode()).hexdigest()[:12]


def replay_command(reproducer: str | None) -> str | None:
    """The reproducer's replay as it can be pasted into a shell where the report was made."""
    return replay_of(reproducer) if reproducer else None


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
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


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
                f'<code id="{signature_id(s["signature"])}">{escape(s["signature"])}</code>'
                f'<div class="msg">{escape(s["oracle"] or "")}: {message}</div>'
                + _drill_down(s, command),
                escape(s["spec_ref"] or ""),
                escape(", ".join(s["targets"])),
                _n(s["occurrences"]),
                _when(s["first_seen"]),
                replay,
            )
        )
    headers = ("status", "signature", "spec", "targets", "tonight", "first seen", "replay")
    return _table(headers, rows, {4})


def _drill_down(s: dict[str, Any], command: str | None) -> str:
    """A signature's story, behind a click: the nights it failed on, how often, where, the
    reaction required and the one seen, the rule's text, and the replay of its smallest case."""
    first, last = _when(s["first_seen"])[:10], _when(s["last_seen"])[:10]
    protocol = s.get("protocol") or DEFAULT_PROTOCOL
    text = rule_text(protocol, s["spec_ref"]) if s["spec_ref"] and protocol in PROTOCOLS else None
    facts = [
        ("nights", f"first {first}, last {last}: {_n(s['nights_seen'])} night(s)"),
        ("cases", f"{_n(s['occurrences'])} tonight, {_n(s['total_occurrences'])} in all"),
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

    chart = bars([(label(r), r["exercised"], r["total"]) for r in rows])
    lists = []
    for r in rows:
        missing = r.get("uncovered") or []
        if missing:
            items = "".join(f"<li><code>{escape(m)}</code></li>" for m in missing)
            lists.append(
                f'<details data-uncovered="{escape(label(r))}"><summary>{escape(label(r))}: '
                f"{len(missing)} not exercised</summary><ul>{items}</ul></details>"
            )
    source = {str(r.get("totals_from")) for r in rows}
    note = (
        '<p class="sub">Against what a client can exercise: the methods a client may send and '
        "the rules they carry, the scenario files and the mutation operators, as "
        + ("the runs' files name them." if source == {"run-file"} else "the specification and "
           "this installation name them.")
        + "</p>"
    )  # fmt: skip
    return chart + note + "".join(lists)


def _percent(covered: int, relevant: int) -> str:
    return f"{covered / relevant:.0%}" if relevant else "-"


def _broker_charts(b: BrokerCoverage) -> str:
    """The curve over the run drawn and a trend per set, side by side (wrapping)."""
    colours = {name: SET_COLOURS[i % len(SET_COLOURS)] for i, (name, _, _) in enumerate(b.sets)}
    charts = []
    series = [(name, b.curve[name], colours[name]) for name in colours if b.curve.get(name)]
    if series:
        charts.append(run_chart("lines covered over the run", series))
    for name, colour in colours.items():
        points = b.trend.get(name, [])
        if points:
            charts.append(line_chart(f"{name}, by night", points, colour))
    return f'<div class="trends">{"".join(charts)}</div>' if charts else ""


def _lines(n: int | None) -> str:
    return f"{_n(n)} line" + ("" if n == 1 else "s")


def _breakable(name: str) -> str:
    """A module's name that a narrow table may break after its ``_`` and ``/`` (only there)."""
    return escape(name).replace("_", "_<wbr>").replace("/", "/<wbr>")


def _broker_modules(b: BrokerCoverage) -> str:
    """A row per module under its set's (the named sets' first, then those measured for
    steering only), and the functions never reached, folded."""
    sets = {name: (covered, relevant) for name, covered, relevant in b.sets}
    rows = []
    folds = []
    group: object = ()  # no set yet
    for m in b.modules:
        if m["set"] != group:
            group = m["set"]
            if m["set"] is None:
                title = "measured for steering only (in no set)"
            else:
                covered, relevant = sets[m["set"]]
                title = (
                    f"<strong>{escape(m['set'])}</strong>: {_n(covered)} of {_n(relevant)} "
                    f"({_percent(covered, relevant)})"
                )
            rows.append(f'<tr class="group"><td colspan="5">{title}</td></tr>')
        unreached = m.get("unreached")
        cells = (
            _n(m["covered"]),
            _n(m["relevant"]),
            _percent(m["covered"], m["relevant"]),
            _n(len(unreached)) if unreached is not None else "?",
        )
        rows.append(
            f"<tr><td><code>{_breakable(m['module'])}</code></td>"
            + "".join(f'<td class="num">{cell}</td>' for cell in cells)
            + "</tr>"
        )
        if unreached:
            items = "".join(
                f"<li><code>{escape(u['function'])}</code> "
                f'<span class="msg">{_lines(u["lines"])}</span></li>'
                for u in unreached
            )
            folds.append(
                f'<details data-unreached="{escape(m["module"])}"><summary>'
                f"<code>{escape(m['module'])}</code>: {len(unreached)} function(s)</summary>"
                f"<ul>{items}</ul></details>"
            )
    head = "".join(
        f'<th class="num">{h}</th>' for h in ("covered", "relevant", "%", "never reached")
    )
    table = (
        f'<div class="scroll"><table class="modules"><thead><tr><th>module</th>{head}</tr>'
        f"</thead><tbody>{''.join(rows)}</tbody></table></div>"
    )
    if not folds:
        return table
    total = sum(len(m.get("unreached") or ()) for m in b.modules)
    return (
        table + f'<details class="unreached"><summary>Functions never reached: {_n(total)} in '
        f"{len(folds)} module(s)</summary>{''.join(folds)}</details>"
    )


def _broker(page: Page) -> str:
    """Per target measured: per named set the lines covered, the curve over the run, the trend
    over nights, per module the lines and the functions no run of the night entered."""
    if not page.broker:
        return (
            '<p class="none">The broker\'s code coverage was not measured this night (no '
            "coverage records).</p>"
        )
    parts = [
        "<p class=\"sub\">Lines of the broker's own code the night's campaigns ran (Erlang's "
        "cover in a RabbitMQ node, coverage.py in a Python broker), per named set of modules: "
        "the union over the night's runs and workers. Over the run: the worker that covered most "
        "(each worker's curve is in the broker_coverage_points table). Functions never reached: "
        "those no run of the night entered (? where no run ended with its final record).</p>"
    ]
    for b in page.broker:
        facts = [b.product, b.how, f"{b.runs} run(s)", f"{b.workers} worker(s)"]
        parts.append(
            f'<h3 data-broker="{escape(b.label)}">{escape(b.label)} · AMQP {escape(b.protocol)}'
            "</h3>"
            f'<p class="sub">{escape(" · ".join(f for f in facts if f))}</p>'
        )
        if b.sets:
            parts.append(bars([(name, covered, relevant) for name, covered, relevant in b.sets]))
        parts.append(_broker_charts(b))
        if b.drawn is not None:
            run, worker = b.drawn
            which = f"the one of {b.workers} that covered most" if b.workers > 1 else "the only one"
            parts.append(
                f'<p class="sub">Over the run: run <code>{escape(run)}</code>, worker '
                f"<code>{escape(worker)}</code> ({which}).</p>"
            )
        parts.append(_broker_modules(b))
    return "".join(parts)


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
            _n(r.get("flaky") or 0),
        )
        for r in page.runs
    ]
    headers = (
        "run", "target", "product", "workers", "seconds", "cases", "cases/s", "failures", "flaky",
    )  # fmt: skip
    return _table(headers, rows, {3, 4, 5, 6, 7, 8})


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
            _n(f["occurrences"]),
            escape(f["rate"] or "?"),
            escape(f"found: {f['observed'] or '?'}; the replays saw: ")
            + escape("; ".join(f["replays"]) or "?"),
            f"<code>{escape(replay_command(f['reproducer']) or '')}</code>",
        )
        for f in page.flaky
    ]
    headers = ("signature", "targets", "tonight", "reproduced", "what differed", "replay")
    return _table(headers, rows, {2})


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
    coverage = h.get("coverage_records", 0)
    summary = (
        f"<p>{_n(len(page.ingest))} files, {_n(h['records'])} records"
        + (f", {_n(coverage)} coverage records" if coverage else "")
        + f", {_n(h['duplicates'])} duplicates, {_n(h['torn_lines'])} torn lines, "
        f"{_n(h['malformed_lines'])} malformed lines.</p>"
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


SHOWN = 12  # rows of a long table shown before the rest, behind a click


def _status(verdict: str) -> str:
    return f'<span class="status {escape(verdict)}">{escape(verdict)}</span>'


def _targets(page: Page) -> str:
    rows = [
        (
            escape(t["target_label"]),
            escape(f"AMQP {t['target_protocol']}"),
            *(
                _n(t.get(v, 0))
                for v in ("pass", "fail", "flaky", "error", "xfail", "xpass", "skip", "total")
            ),
        )
        for t in page.targets
    ]
    headers = (
        "target", "protocol", "pass", "fail", "flaky", "error", "xfail", "xpass", "skip", "cases",
    )  # fmt: skip
    return _table(headers, rows, {2, 3, 4, 5, 6, 7, 8, 9})


def _deviations(page: Page) -> str:
    if not page.deviations:
        return '<p class="none">No profile entry matched tonight: no known deviations.</p>'
    rows = [
        (
            _status(d["verdict"]),
            escape(d["target_label"] or ""),
            f"<code>{escape(d['entry'] or '(entry not recorded)')}</code>"
            f'<div class="msg">{escape(d["profile"] or "")}</div>',
            escape(d["reason"] or ""),
            escape(", ".join(d["spec_refs"])),
            _n(d["occurrences"]),
        )
        for d in page.deviations
    ]
    headers = ("status", "target", "profile entry", "reason", "spec (first few)", "cases")
    shown = max(SHOWN, sum(1 for d in page.deviations if d["verdict"] == "xpass"))
    table = _table(headers, rows[:shown], {5})
    if len(rows) > shown:
        table += (
            f"<details><summary>{len(rows) - shown} more profile entries</summary>"
            f"{_table(headers, rows[shown:], {5})}</details>"
        )
    return table


def _xpass_callout(page: Page) -> str:
    gone = [d for d in page.deviations if d["verdict"] == "xpass"]
    if not gone:
        return ""
    return (
        f'<p class="callout"><strong>{len(gone)} known deviation(s) no longer happen '
        f"(xpass, {_n(sum(d['occurrences'] for d in gone))} cases)</strong>: the profile is out "
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
                    f'{_status("skip")}<div class="msg">{why}</div>'
                )
                continue
            seen = " ".join(
                str(x) for x in (r["observed_reply"] or r["observed_outcome"], r["observed_reply_code"])
                if x
            )  # fmt: skip
            note = f'<div class="msg">{why}</div>' if why else ""
            cells.setdefault((ref, r["target_label"] or "?"), []).append(
                f"{_status(r['verdict'])} {escape(seen)}{note}"
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
        parts.append(_table(("rule", *targets), rows, set()) if rows else "")
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
        f'<p class="sub">{_n(page.headline["runs"])} runs against '
        f"{escape(', '.join(products))}</p>",
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
        _coverage(page),
        '<h2 id="broker-coverage">The broker\'s code covered</h2>',
        _broker(page),
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
