"""The page's two coverage sections: the specification's (what the night's cases exercised of
what a client can send) and the broker's own code (sets, modules, the functions never reached,
the curve over a run and the trend over nights)."""

from __future__ import annotations

from html import escape
from typing import Any

from .cells import n
from .charts import SET_COLOURS, bars, line_chart, run_chart
from .page import BrokerCoverage, Page

__all__ = ["broker", "coverage"]


def coverage(page: Page) -> str:
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


def _lines(count: int | None) -> str:
    return f"{n(count)} line" + ("" if count == 1 else "s")


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
                    f"<strong>{escape(m['set'])}</strong>: {n(covered)} of {n(relevant)} "
                    f"({_percent(covered, relevant)})"
                )
            rows.append(f'<tr class="group"><td colspan="5">{title}</td></tr>')
        unreached = m.get("unreached")
        cells = (
            n(m["covered"]),
            n(m["relevant"]),
            _percent(m["covered"], m["relevant"]),
            n(len(unreached)) if unreached is not None else "?",
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
    made = (
        f'<div class="scroll"><table class="modules"><thead><tr><th>module</th>{head}</tr>'
        f"</thead><tbody>{''.join(rows)}</tbody></table></div>"
    )
    if not folds:
        return made
    total = sum(len(m.get("unreached") or ()) for m in b.modules)
    return (
        made + f'<details class="unreached"><summary>Functions never reached: {n(total)} in '
        f"{len(folds)} module(s)</summary>{''.join(folds)}</details>"
    )


def broker(page: Page) -> str:
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
