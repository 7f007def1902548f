"""The page as a reader meets it, from tables made by hand (no Spark): known deviations with
their reasons and an xpass called out, a matrix of a few named columns however many unknown
class ids the night drew, coverage with what was not exercised, the broker's own code covered
(a real campaign's modules and functions never entered), a drill-down per signature, and trend
charts that read from one night to ninety. Headless Chromium renders it at a desktop and
a narrow width: every section is there and nothing overflows sideways."""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from amqpfuzz.reports import html, page
from amqpfuzz.reports.charts import DOTTED_NIGHTS
from amqpfuzz.reports.page import Trend
from amqpfuzz.spec import reach

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NIGHT = dt.date(2026, 6, 30)
RABBIT = "rabbitmq"
SECTIONS = ("targets", "new", "deviations", "scenarios", "matrix", "coverage", "broker-coverage")
# a real campaign's coverage file (a throwaway RabbitMQ fuzzed for 30 s): its final record
REAL = Path(__file__).with_name("data") / "coverage-638f43895d9b-vm-16703-w0.jsonl"
PROTON = {"target_label": "throwaway qpid-proton", "target_product": "", "target_version": "",
          "target_protocol": "1.0", "how": "coverage.py"}  # fmt: skip
# the page's own measurements, taken by a script added to a copy of it (the page has none);
# the widest element is looked for outside the boxes that scroll a wide table in place
MEASURE = """<script>
const found = {};
for (const id of %s) found[id] = document.getElementById(id) !== null;
document.body.insertAdjacentHTML("beforeend", '<pre id="measured">' + JSON.stringify({
  scroll: document.documentElement.scrollWidth,
  client: document.documentElement.clientWidth,
  height: document.documentElement.scrollHeight,
  sections: found,
  widest: Math.max(...[...document.querySelectorAll("body *")]
    .filter(e => e.closest(".scroll") === null || e.classList.contains("scroll"))
    .map(e => e.getBoundingClientRect().right)),
}) + "</pre>");
</script>"""


def _conformance() -> list[dict[str, Any]]:
    """0-9-1 on RabbitMQ: a class per case, then 393 unknown class ids (one case each), a
    broken frame; 1.0 on the same target: an attach and a sentence."""
    counts = dict.fromkeys(("pass", "fail", "error", "skip", "xfail", "xpass"), 0)

    def row(ref: str, protocol: str = "0-9-1", **verdicts: int) -> dict[str, Any]:
        cells = counts | verdicts
        return {"target_label": RABBIT, "target_protocol": protocol, "spec_ref": ref,
                **cells, "total": sum(cells.values()), "run_date": NIGHT}  # fmt: skip

    rows = [row(f"{c}.x", **{"pass": 5}) for c in reach("0-9-1").classes]
    rows += [row(f"class {10000 + i}", xfail=1) for i in range(393)]
    rows += [row("queue.declare/queue/reserved", fail=3), row("heartbeat", xpass=1)]
    rows += [row("attach", "1.0", **{"pass": 2}), row("message-format#1", "1.0", fail=1)]
    return rows


def _signature(name: str, ref: str, protocol: str = "0-9-1") -> dict[str, Any]:
    return {
        "signature": name, "status": "new", "oracle": "reply-code", "spec_ref": ref,
        "message": f"{name} happened", "occurrences": 3, "targets": [RABBIT],
        "reproducer": f"out/reproducers/{name}.json", "expected": "channel-close 403",
        "observed": "reply", "protocol": protocol, "first_seen": 1_782_000_000_000_000,
        "last_seen": 1_782_000_060_000_000, "total_occurrences": 7, "nights_seen": 2,
        "run_date": NIGHT,
    }  # fmt: skip


def _broker(nights: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The broker's code covered tonight: RabbitMQ's modules as the real campaign's final record
    counts them, a Python broker with a long file name; a point per 5 s of an hour's run (more
    than the page draws) per target; and ``nights - 1`` earlier nights of each set."""
    final = json.loads(REAL.read_text().splitlines()[-1])
    rabbit = {"target_label": RABBIT, "target_product": "RabbitMQ", "target_version": "3.10.8",
              "target_protocol": "0-9-1", "how": "erlang-cover"}  # fmt: skip
    common = {"runs": 1, "workers": 2, "finals": 2, "lines": [], "run_date": NIGHT}
    modules = [
        rabbit | common | m | {"ratio": None,
                               "unreached": [{"function": f, "lines": n}
                                             for f, n in final["unreached"].get(m["module"], [])]}
        for m in final["modules"]
    ]  # fmt: skip
    long_name = "usr/lib/python3/dist-packages/proton/_a_module_with_a_rather_long_name.py"
    modules += [
        PROTON | common | {"set": "1.0 (Proton)", "module": long_name, "covered": 40,
                           "relevant": 90, "ratio": 0.44,
                           "unreached": [{"function": "Transport.a_method_with_a_long_name_"
                                          f"{i}_that_goes_on", "lines": i} for i in range(30)]},
        PROTON | common | {"set": "1.0 (Proton)", "module": "python/broker.py", "covered": 77,
                           "relevant": 93, "ratio": 0.83, "unreached": None, "finals": 0},
    ]  # fmt: skip
    points = [
        target | {"run_id": "r1", "worker": "host-1-w0", "set": name, "seq": i,
                  "elapsed_s": 5.0 * i, "covered": covered * min(i, 60) // 60,
                  "relevant": 1000, "streams": 2, "run_date": NIGHT}
        for target, name, covered in ((rabbit, "0-9-1", 1806), (PROTON, "1.0 (Proton)", 117))
        for i in range(720)
    ]  # fmt: skip
    history = [
        {**{k: target[k] for k in target if k.startswith("target_")}, "set": name,
         "covered": covered - i % 10, "relevant": 3856, "run_date": NIGHT - dt.timedelta(days=i)}
        for target, name, covered in ((rabbit, "0-9-1", 1806), (PROTON, "1.0 (Proton)", 117))
        for i in range(1, nights)
    ]  # fmt: skip
    return modules, points, history


def _tables(nights: int) -> tuple[dict[str, list[dict[str, Any]]], list[Trend]]:
    """Tonight's tables, and the trend points of ``nights - 1`` nights before it."""
    deviation = {
        "target_label": RABBIT, "target_protocol": "0-9-1", "profile": "rabbitmq-3.10",
        "reason": "RabbitMQ's reader crashes on an unknown class id", "kinds": ["fuzz"],
        "first_seen": 0, "last_seen": 0, "run_date": NIGHT,
    }  # fmt: skip
    coverage = [
        {"dimension": "methods", "exercised": 29, "total": 30, "ratio": 29 / 30,
         "totals_from": "spec", "protocol": "0-9-1", "uncovered": ["basic.recover-async"],
         "run_date": NIGHT},
    ]  # fmt: skip
    tables = {
        "runs": [{"run_id": "r1", "target_label": RABBIT, "target_product": "RabbitMQ",
                  "target_version": "3.10.8", "target_protocol": "0-9-1", "workers": 2,
                  "duration_s": 60.0, "cases": 1000, "cases_per_s": 16.7, "failures": 4,
                  "errors": 0, "run_date": NIGHT}],
        "conformance": _conformance(),
        "signatures": [_signature("sig-reserved", "queue.declare/queue/reserved"),
                       _signature("sig-bare", "message-format#1", "1.0")],
        "deviations": [
            deviation | {"entry": "signature reaction:-:unknown-class:*->socket-close",
                         "verdict": "xfail", "spec_refs": ["class 10000"], "occurrences": 393},
            deviation | {"entry": "operator heartbeat-channel", "verdict": "xpass",
                         "reason": "RabbitMQ used to close with 501", "spec_refs": ["heartbeat"],
                         "occurrences": 1},
        ],
        "scenarios": [{"target_label": RABBIT, "target_protocol": "0-9-1",
                       "spec_ref": "queue.declare/queue/reserved", "scenario": "0-9-1/q",
                       "verdict": "xfail", "observed_outcome": "reply",
                       "observed_reply_code": None, "observed_reply": "queue.declare-ok",
                       "reason": "RabbitMQ lets amq. names through", "occurrences": 1,
                       "run_date": NIGHT}],
        "coverage": coverage,
        "broker_coverage": _broker(nights)[0],
        "broker_coverage_points": _broker(nights)[1],
        "divergences": [],
        "ingest": [{"file": "records-r1.jsonl", "state": "complete", "records": 1000,
                    "duplicates": 0, "torn_lines": 0, "malformed_lines": 0, "run_date": NIGHT}],
    }  # fmt: skip
    history = [
        Trend(NIGHT - dt.timedelta(days=nights - 1 - i), 900 + i, i % 7, i % 5, 15.0 + i % 3)
        for i in range(nights - 1)
    ]
    return tables, history


def _page(nights: int) -> tuple[page.Page, str]:
    tables, history = _tables(nights)
    shown = page.build(NIGHT, tables, history, broker_history=_broker(nights)[2])
    return shown, html.render(shown)


def test_known_deviations_are_told_with_their_reasons() -> None:
    shown, text = _page(3)
    assert (shown.headline["xfails"], shown.headline["xpasses"]) == (393, 1)
    deviations = text[text.index('id="deviations"') : text.index('id="scenarios"')]
    assert "RabbitMQ&#x27;s reader crashes on an unknown class id" in deviations
    assert "signature reaction:-:unknown-class:*-&gt;socket-close" in deviations
    # the xpass comes first, and is called out with the failures
    assert deviations.index('status xpass">') < deviations.index('status xfail">')
    news = text[text.index('id="new"') : text.index('id="deviations"')]
    assert 'class="callout"' in news and "no longer happen" in news


def test_the_matrix_groups_what_lies_outside_the_spec() -> None:
    shown, text = _page(3)
    by_protocol = {m.protocol: m for m in shown.matrices}
    assert by_protocol["0-9-1"].columns == [*reach("0-9-1").classes, "unknown ids", "frames"]
    assert by_protocol["0-9-1"].cells[(RABBIT, "unknown ids")] == (0, 393, 393)
    assert by_protocol["1.0"].columns == ["attach", "messaging sentences"]
    # a failing cell links to its signatures, each of which has its row
    (link,) = re.findall(r'href="#(cell-0-9-1-[^"]*queue)"', text)
    listed = text[text.index(f'id="{link}"') :]
    assert listed.index("sig-reserved") < listed.index("</details>")
    assert f'id="{html.signature_id("sig-reserved")}"' in text


def test_each_signature_drills_down_to_its_story() -> None:
    _, text = _page(3)
    story = text[text.index('id="' + html.signature_id("sig-reserved")) :]
    story = story[: story.index("</details>")]
    for part in ("first 2026-06-21, last 2026-06-21: 2 night(s)", "3 tonight, 7 in all",
                 "channel-close 403", "Queue names starting with &quot;amq.&quot; are reserved",
                 "amqpfuzz replay out/reproducers/sig-reserved.json"):  # fmt: skip
        assert part in story, part


def test_coverage_lists_what_was_not_exercised() -> None:
    _, text = _page(3)
    coverage = text[text.index('id="coverage"') :]
    assert "29 of 30 (97%)" in coverage
    assert "1 not exercised" in coverage and "<code>basic.recover-async</code>" in coverage


def _broker_section(text: str) -> str:
    start = text.index('id="broker-coverage"')
    return text[start : text.index("<h2", start)]


def test_the_brokers_code_covered_per_set_module_and_function() -> None:
    shown, text = _page(3)
    section = _broker_section(text)
    # per target: its sets (the bars), its modules, the curve over the run and the trend
    assert [(b.label, b.protocol) for b in shown.broker] == [
        ("rabbitmq", "0-9-1"), ("throwaway qpid-proton", "1.0"),
    ]  # fmt: skip
    assert "1806 of 3856 (47%)" in section and "117 of 183 (64%)" in section
    assert section.count('<svg class="chart run"') == 2
    assert section.count('<svg class="chart trend"') == 2
    rabbit, _ = shown.broker
    assert len(rabbit.curve["0-9-1"]) == page.CURVE_POINTS  # an hour's 720 points, thinned
    assert rabbit.curve["0-9-1"][-1] == (5.0 * 719, 1806.0)
    assert [n for n, _ in rabbit.trend["0-9-1"]] == [
        NIGHT - dt.timedelta(days=i) for i in (2, 1, 0)
    ]
    assert "(the one of 2 that covered most)" in section
    # a row per module under its set's (the named set first, then the steering-only ones)
    assert section.index("<strong>0-9-1</strong>: 1,806 of 3,856 (47%)") < section.index(
        "measured for steering only"
    )
    assert "<code>rabbit_<wbr>amqqueue_<wbr>process</code>" in section  # (breaks there only)
    # the functions never reached, folded: all of them, per module
    folded = section[section.index('<details class="unreached">') :]
    assert "Functions never reached: 452 in 21 module(s)" in folded
    assert (
        '<details data-unreached="rabbit_reader"><summary><code>rabbit_reader</code>: 37' in folded
    )
    assert "<code>auth_fail/5</code>" in folded
    # a module no run ended with a final record of: not known
    broker_row = section[section.index("<code>python/<wbr>broker.py</code>") :]
    assert re.match(r"<code>[^<]*<wbr>[^<]*</code></td>(<td[^>]*>[^<]*</td>){3}<td[^>]*>\?<",
                    broker_row)  # fmt: skip


def test_without_coverage_records_the_section_says_it_was_not_measured() -> None:
    tables, history = _tables(3)
    del tables["broker_coverage"], tables["broker_coverage_points"]
    text = html.render(page.build(NIGHT, tables, history))
    section = _broker_section(text)
    assert "coverage was not measured this night" in section and "<svg" not in section
    assert text.index('id="coverage"') < text.index('id="broker-coverage"')


@pytest.mark.parametrize("nights", [1, 3, 90])
def test_trends_read_from_one_night_to_ninety(nights: int) -> None:
    shown, text = _page(nights)
    assert len(shown.trends) == nights
    charts = re.findall(r'<svg class="chart trend".*?</svg>', text)
    assert len(charts) == 4 + 2  # the night's four, and a named set's per target measured
    for chart in charts:
        dots = chart.count("<circle")
        assert dots == (nights if nights <= DOTTED_NIGHTS else 1)
        if nights > 1:
            (line,) = re.findall(r'<polyline points="([^"]*)"', chart)
            assert len(line.split()) == nights
        dates = re.findall(r">(\d{4}-\d\d-\d\d)</text>", chart)
        assert dates == ([str(NIGHT)] if nights == 1 else [str(shown.trends[0].night), str(NIGHT)])


def _chromium(args: list[str], target: Path, profile: Path) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM, "chromium is not installed (make check installs Debian's chromium)"
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update",
         "--force-color-profile=srgb", f"--user-data-dir={profile}", *args, target.as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done


@pytest.mark.slow
@pytest.mark.parametrize("nights", [3, 90])
@pytest.mark.parametrize("width", [1300, 500])  # (headless Chromium is never narrower)
def test_the_page_fits_the_screen(nights: int, width: int, tmp_path: Path) -> None:
    """Every section is there, and nothing is wider than the window: no sideways scrolling at
    a desktop's width or a narrow one; the screenshot has the window's width, and its right
    margin is bare (nothing drawn up to the edge and cut there)."""
    _, text = _page(nights)
    measured = tmp_path / "measured.html"
    measured.write_text(text.replace("</body>", MEASURE % json.dumps(SECTIONS) + "</body>"))
    dom = _chromium(
        [f"--window-size={width},900", "--virtual-time-budget=3000", "--dump-dom"],
        measured,
        tmp_path / "profile",
    ).stdout
    found = re.findall(r'<pre id="measured">(\{[^<]*)</pre>', dom)
    assert found, "the measuring script did not run"
    seen = json.loads(unescape(found[-1]))
    assert seen["sections"] == dict.fromkeys(SECTIONS, True)
    assert seen["scroll"] <= seen["client"], f"{seen['scroll']} px wide in {seen['client']}"
    assert seen["widest"] <= seen["client"]
    shot = tmp_path / "page.png"
    plain = tmp_path / "report.html"
    plain.write_text(text)
    height = min(int(seen["height"]), 16000)
    _chromium([f"--window-size={width},{height}", f"--screenshot={shot}"], plain, tmp_path / "p2")
    image = Image.open(shot).convert("RGB")
    assert image.size == (width, height)
    edge = image.crop((width - 8, 0, width, height)).getcolors(maxcolors=1 << 20) or []
    assert {rgb for _, rgb in edge} <= {(255, 255, 255)}, "something reaches the right edge"
