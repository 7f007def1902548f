"""Inline SVG charts for the report: a line chart for trends, lines over a run's seconds, a
heatmap, horizontal bars.

Plain strings, no library and nothing fetched, so the page reads offline. Colours are fixed
constants (the heatmap uses five buckets rather than a gradient) so that a screenshot can be
checked for the charts by their colours.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from html import escape

__all__ = [
    "BAR_COLOUR",
    "BAR_TRACK",
    "DOTTED_NIGHTS",
    "HEAT_COLOURS",
    "HEAT_EMPTY",
    "SET_COLOURS",
    "TREND_COLOURS",
    "bars",
    "heat_colour",
    "heatmap",
    "line_chart",
    "run_chart",
]

TREND_COLOURS = {
    "cases": "#1f5fbf",
    "failures": "#c0392b",
    "signatures": "#8e44ad",
    "cases_per_s": "#d35400",
}
DOTTED_NIGHTS = 31  # more nights than this, and a trend is drawn as a line without dots
BAR_COLOUR = "#16a085"
BAR_TRACK = "#dfe6e9"
# Share of failing cases (fail + error) among judged ones (all but skip): upper bound, colour.
HEAT_COLOURS = (
    (0.0, "#1a9850"),
    (0.05, "#91cf60"),
    (0.2, "#fee08b"),
    (0.5, "#fc8d59"),
    (1.0, "#d73027"),
)
HEAT_EMPTY = "#eeeeee"
# the named sets of a broker's code, in turn (a target has one or two)
SET_COLOURS = ("#2c7a7b", "#b7791f", "#6b46c1", "#c53030")
_TEXT = "#333333"


def _fmt(value: float) -> str:
    if value >= 100 or float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:,.1f}" if value >= 10 else f"{value:,.2f}"


def line_chart(
    title: str, points: Sequence[tuple[dt.date, float]], colour: str, *, width: int = 290
) -> str:
    """Values over nights, oldest left: a dot per night (up to :data:`DOTTED_NIGHTS`, then the
    line alone and the latest night's dot), the latest value written above it, the first and
    last nights under the axis (one night: a dot in the middle)."""
    height, left, right, top, bottom = 170, 44, 14, 26, 26
    inner_w, inner_h = width - left - right, height - top - bottom
    values = [v for _, v in points]
    high = max(values, default=0.0) or 1.0
    step = inner_w / max(len(points) - 1, 1)

    def xy(i: int, v: float) -> tuple[float, float]:
        x = left + (i * step if len(points) > 1 else inner_w / 2)
        return round(x, 1), round(top + inner_h * (1 - v / high), 1)

    coords = [xy(i, v) for i, v in enumerate(values)]
    parts = [
        f'<svg class="chart trend" data-chart="{escape(title)}" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img">',
        f'<text x="{left}" y="16" font-size="13" fill="{_TEXT}">{escape(title)}</text>',
        f'<line x1="{left}" y1="{top + inner_h}" x2="{width - right}" y2="{top + inner_h}" '
        'stroke="#999" stroke-width="1"/>',
        f'<text x="{left - 4}" y="{top + 4}" font-size="10" text-anchor="end" '
        f'fill="{_TEXT}">{_fmt(high)}</text>',
        f'<text x="{left - 4}" y="{top + inner_h}" font-size="10" text-anchor="end" '
        f'fill="{_TEXT}">0</text>',
    ]
    if len(coords) > 1:
        line = " ".join(f"{x},{y}" for x, y in coords)
        thick = 3 if len(points) <= DOTTED_NIGHTS else 2
        parts.append(
            f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="{thick}"/>'
        )
    # a dot per night while the dots stand apart; beyond that the line, and the last night's dot
    dotted = len(points) <= DOTTED_NIGHTS
    radius = 5 if len(points) <= 15 else 3
    for i, ((x, y), (night, value)) in enumerate(zip(coords, points, strict=True)):
        if dotted or i == len(points) - 1:
            parts.append(
                f'<circle cx="{x}" cy="{y}" r="{radius}" fill="{colour}">'
                f"<title>{night}: {_fmt(value)}</title></circle>"
            )
    if points:
        x, y = coords[-1]
        # above the last dot; below it where above would run into the title
        label_y = y - 8 if y - 8 >= top + 8 else y + 16
        parts.append(
            f'<text x="{min(x, width - right)}" y="{label_y}" font-size="10" '
            f'text-anchor="end" fill="{_TEXT}">{_fmt(points[-1][1])}</text>'
        )
    if len(points) == 1:
        parts.append(
            f'<text x="{left + inner_w / 2}" y="{height - 8}" font-size="10" text-anchor="middle" '
            f'fill="{_TEXT}">{points[0][0]}</text>'
        )
    elif points:
        parts.append(
            f'<text x="{left}" y="{height - 8}" font-size="10" fill="{_TEXT}">{points[0][0]}</text>'
        )
        parts.append(
            f'<text x="{width - right}" y="{height - 8}" font-size="10" text-anchor="end" '
            f'fill="{_TEXT}">{points[-1][0]}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def heat_colour(failing: int, judged: int) -> str:
    if judged == 0:
        return HEAT_EMPTY
    share = failing / judged
    return next(colour for bound, colour in HEAT_COLOURS if share <= bound)


def heatmap(
    rows: Sequence[str],
    columns: Sequence[str],
    cells: Mapping[tuple[str, str], tuple[int, int, int]],
    links: Mapping[tuple[str, str], str] | None = None,
    *,
    width: int = 1180,
) -> str:
    """Targets (rows) x columns (a protocol's spec classes, then the few outside them); a cell
    is (failing, judged, total) cases, and a link where ``links`` has one for it. The columns
    share ``width`` (at most 92 pixels each), and the picture scales down with its box."""
    cell_h, left, top = 34, 170, 100
    right = 110  # the last column's slanted name
    cell_w = max(48, min(92, (width - left - right) // max(len(columns), 1)))
    width, height = left + cell_w * len(columns) + right, top + cell_h * len(rows) + 10
    parts = [
        f'<svg class="chart heatmap" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img">'
    ]
    for j, column in enumerate(columns):
        x = left + j * cell_w + cell_w / 2
        parts.append(
            f'<text x="{x}" y="{top - 10}" font-size="12" text-anchor="start" '
            f'transform="rotate(-30 {x} {top - 10})" fill="{_TEXT}">{escape(column)}</text>'
        )
    for i, row in enumerate(rows):
        y = top + i * cell_h
        parts.append(
            f'<text x="{left - 8}" y="{y + cell_h / 2 + 4}" font-size="12" text-anchor="end" '
            f'fill="{_TEXT}">{escape(row)}</text>'
        )
        for j, column in enumerate(columns):
            failing, judged, total = cells.get((row, column), (0, 0, 0))
            colour = heat_colour(failing, judged)
            label = f"{failing}/{judged}" if judged else ("skipped" if total else "")
            x = left + j * cell_w
            cell = (
                f'<rect x="{x}" y="{y}" width="{cell_w - 2}" height="{cell_h - 2}" '
                f'fill="{colour}"><title>{escape(row)} {escape(column)}: {failing} failing of '
                f"{judged} judged, {total} cases</title></rect>"
                f'<text x="{x + cell_w / 2 - 1}" y="{y + cell_h / 2 + 4}" font-size="11" '
                f'text-anchor="middle" fill="#111">{label}</text>'
            )
            link = (links or {}).get((row, column))
            if link is not None:
                cell = f'<a href="{escape(link)}" class="cell">{cell}</a>'
            parts.append(cell)
    parts.append("</svg>")
    return "".join(parts)


def bars(items: Sequence[tuple[str, int, int | None]], *, width: int = 680) -> str:
    """One horizontal bar per (label, exercised, total); an unknown total draws no track, and
    nothing to exercise (a total of 0) an empty one."""
    bar_h, gap, left, right = 22, 12, 230, 150
    inner = width - left - right
    height = len(items) * (bar_h + gap) + gap
    parts = [
        f'<svg class="chart bars" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img">'
    ]
    for i, (label, done, total) in enumerate(items):
        y = gap + i * (bar_h + gap)
        share = (min(done / total, 1.0) if total else 0.0) if total is not None else None
        parts.append(
            f'<text x="{left - 8}" y="{y + 15}" font-size="12" text-anchor="end" '
            f'fill="{_TEXT}">{escape(label)}</text>'
        )
        if share is not None:
            parts.append(
                f'<rect x="{left}" y="{y}" width="{inner}" height="{bar_h}" fill="{BAR_TRACK}"/>'
            )
        filled = inner * share if share is not None else min(inner, 4 + done)
        parts.append(
            f'<rect x="{left}" y="{y}" width="{round(filled, 1)}" height="{bar_h}" '
            f'fill="{BAR_COLOUR}"/>'
        )
        text = f"{done} of {total} ({share:.0%})" if total else f"{done} of {total}"
        text = text if share is not None else f"{done} of ?"
        parts.append(
            f'<text x="{left + inner + 8}" y="{y + 15}" font-size="12" fill="{_TEXT}">{text}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _seconds(value: float) -> str:
    if value >= 3600:
        return f"{value / 3600:.1f} h"
    if value >= 120:
        return f"{value / 60:.0f} min"
    return f"{value:.0f} s"


def run_chart(
    title: str,
    series: Sequence[tuple[str, Sequence[tuple[float, float]], str]],
    *,
    width: int = 420,
) -> str:
    """Values over a run's seconds: a line per (name, points, colour), each point (seconds,
    value), its last value written at its end; a legend of the names under the title, the
    highest value at the top of the axis, the run's first and last second under it."""
    height, left, right, top, bottom = 190, 50, 14, 44, 26
    inner_w, inner_h = width - left - right, height - top - bottom
    longest = max((x for _, points, _ in series for x, _ in points), default=0.0) or 1.0
    high = max((y for _, points, _ in series for _, y in points), default=0.0) or 1.0

    def xy(x: float, y: float) -> tuple[float, float]:
        return round(left + inner_w * x / longest, 1), round(top + inner_h * (1 - y / high), 1)

    parts = [
        f'<svg class="chart run" data-chart="{escape(title)}" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img">',
        f'<text x="{left}" y="16" font-size="13" fill="{_TEXT}">{escape(title)}</text>',
        f'<line x1="{left}" y1="{top + inner_h}" x2="{width - right}" y2="{top + inner_h}" '
        'stroke="#999" stroke-width="1"/>',
        f'<text x="{left - 4}" y="{top + 4}" font-size="10" text-anchor="end" '
        f'fill="{_TEXT}">{_fmt(high)}</text>',
        f'<text x="{left - 4}" y="{top + inner_h}" font-size="10" text-anchor="end" '
        f'fill="{_TEXT}">0</text>',
        f'<text x="{left}" y="{height - 8}" font-size="10" fill="{_TEXT}">0 s</text>',
        f'<text x="{width - right}" y="{height - 8}" font-size="10" text-anchor="end" '
        f'fill="{_TEXT}">{_seconds(longest)}</text>',
    ]
    x_key = left
    for name, points, colour in series:
        parts.append(
            f'<rect x="{x_key}" y="24" width="10" height="10" fill="{colour}"/>'
            f'<text x="{x_key + 14}" y="33" font-size="11" fill="{_TEXT}">{escape(name)}</text>'
        )
        x_key += 24 + 7 * len(name)
        coords = [xy(x, y) for x, y in points]
        if len(coords) > 1:
            line = " ".join(f"{x},{y}" for x, y in coords)
            parts.append(
                f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="2"/>'
            )
        if coords:
            (x, y), (seconds, value) = coords[-1], points[-1]
            parts.append(
                f'<circle cx="{x}" cy="{y}" r="3" fill="{colour}"><title>{escape(name)}: '
                f"{_fmt(value)} after {_seconds(seconds)}</title></circle>"
                f'<text x="{min(x, width - right)}" y="{max(y - 6, top - 2)}" font-size="10" '
                f'text-anchor="end" fill="{_TEXT}">{_fmt(value)}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)
