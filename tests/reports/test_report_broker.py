"""The broker's own code covered, as the report tells it: hand-made coverage records of the first
night (run r1's RabbitMQ measured on two machines: coverage_records.first_night), and a real
campaign's file (a throwaway RabbitMQ fuzzed for 30 s: its first, a middle and its final
point), whose numbers must be those the campaign's own summary printed."""

from __future__ import annotations

import datetime as dt
import re
import shutil
from html import unescape
from pathlib import Path

import pytest
from pyspark.sql import Row, SparkSession
from pyspark.testing import assertDataFrameEqual

from amqpfuzz.reports import Summary, run
from tests.helpers.report_records import RABBIT, case, write
from tests.helpers.spark import table

pytestmark = pytest.mark.slow  # every test here starts a broker, Spark or a process

NIGHT = dt.date(2026, 1, 10)
First = tuple[Path, Path, Summary]
TARGET = {
    "target_label": "rabbitmq",
    "target_product": "RabbitMQ",
    "target_version": "3.10.8",
    "target_protocol": "0-9-1",
}
# the real campaign's file: `amqpfuzz run --duration 30` on a throwaway RabbitMQ 3.10.8
REAL = Path(__file__).with_name("data") / "coverage-638f43895d9b-vm-16703-w0.jsonl"
REAL_RUN, REAL_NIGHT = "638f43895d9b", dt.date(2026, 11, 26)


def test_lines_are_the_union_and_unreached_functions_the_intersection(
    spark: SparkSession, first_night: First
) -> None:
    _, out, _ = first_night
    common = TARGET | {"how": "erlang-cover", "runs": 1, "workers": 2, "finals": 2}
    expected = [
        # m1 entered 1-4, m2 3-7; auth_fail/5 neither entered, become/2 m2 did
        Row(**common, set="0-9-1", module="rabbit_reader", covered=7, relevant=10,
            ratio=0.7, lines=[1, 2, 3, 4, 5, 6, 7],
            unreached=[Row(function="auth_fail/5", lines=3)], run_date=NIGHT),
        Row(**common, set="0-9-1", module="rabbit_channel", covered=2, relevant=8,
            ratio=0.25, lines=[1, 2], unreached=[Row(function="a/1", lines=2)],
            run_date=NIGHT),
        # m1 entered every function of it: none is never reached
        Row(**common, set=None, module="rabbit_router", covered=1, relevant=4, ratio=0.25,
            lines=[1], unreached=[], run_date=NIGHT),
    ]  # fmt: skip
    actual = table(spark, out, "broker_coverage").select(*expected[0].__fields__)
    assertDataFrameEqual(actual, expected)


def test_points_over_the_run_per_worker_and_set(spark: SparkSession, first_night: First) -> None:
    _, out, _ = first_night
    columns = ("worker", "set", "seq", "elapsed_s", "final", "covered", "relevant")
    expected = [
        ("m1-11", "0-9-1", 1, 0.0, False, 2, 18),
        ("m1-11", None, 1, 0.0, False, 0, 4),
        ("m1-11", "0-9-1", 2, 5.0, False, 6, 18),
        ("m1-11", None, 2, 5.0, False, 1, 4),
        ("m1-11", "0-9-1", 3, 6.0, True, 6, 18),
        ("m1-11", None, 3, 6.0, True, 1, 4),
        ("m2-22", "0-9-1", 1, 0.0, False, 3, 18),
        ("m2-22", None, 1, 0.0, False, 0, 4),
        ("m2-22", "0-9-1", 2, 4.0, True, 5, 18),
        ("m2-22", None, 2, 4.0, True, 0, 4),
    ]
    actual = table(spark, out, "broker_coverage_points")
    assert {(r.run_id, r.target_label, r.run_date) for r in actual.collect()} == {
        ("r1", "rabbitmq", NIGHT)
    }
    rows = [Row(**dict(zip(columns, e, strict=True))) for e in expected]
    assertDataFrameEqual(actual.select(*columns), rows)


def _section(page: str) -> str:
    start = page.index('id="broker-coverage"')
    return page[start : page.index("<h2", start)]


def test_the_page_shows_the_code_covered_and_what_no_run_entered(first_night: First) -> None:
    _, out, _ = first_night
    section = _section((out / "report.html").read_text())
    text = unescape(re.sub(r"<[^>]+>", " ", section))
    assert "rabbitmq · AMQP 0-9-1" in text
    assert "9 of 18 (50%)" in section  # the set's bar: rabbit_reader 7 + rabbit_channel 2
    # the curve is m1's (6 lines of the set against m2's 5)
    assert "worker <code>m1-11</code> (the one of 2 that covered most)" in section
    assert '<svg class="chart run"' in section
    unreached = section[section.index('<details class="unreached">') :]
    assert "auth_fail/5" in unreached and "a/1" in unreached
    for entered in ("become/2", "b/2", "c/3", "route/2"):  # some run entered each
        assert entered not in section
    # the spec's coverage section is still there, before it
    page = (out / "report.html").read_text()
    assert page.index('id="coverage"') < page.index('id="broker-coverage"')


@pytest.fixture(scope="module")
def real(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real file beside a record of its run (the night is its run's), reported."""
    inputs, output = tmp_path_factory.mktemp("real-in"), tmp_path_factory.mktemp("real-out")
    shutil.copy(REAL, inputs / REAL.name)
    target = RABBIT | {"label": "throwaway rabbitmq"}
    ts = "2026-11-26T06:51:10.000+00:00"
    write(
        inputs, REAL_RUN, "vm-16703-w0", [case(run_id=REAL_RUN, worker="w", ts=ts, target=target)]
    )
    run(spark, [str(inputs)], str(output))
    return output


def test_a_real_campaigns_coverage_is_what_its_summary_said(
    spark: SparkSession, real: Path
) -> None:
    """The campaign's summary: the 0-9-1 set 1,806 of 3,856 lines, rabbit_reader 327 of 636
    with 37 functions never entered; 24 modules measured, 14 of them for steering only."""
    rows = table(spark, real, "broker_coverage").collect()
    assert len(rows) == 24 and {r.run_date for r in rows} == {REAL_NIGHT}
    named = [r for r in rows if r.set == "0-9-1"]
    assert (len(named), sum(r.covered for r in named), sum(r.relevant for r in named)) == (
        10, 1806, 3856,
    )  # fmt: skip
    (reader,) = [r for r in rows if r.module == "rabbit_reader"]
    assert (reader.covered, reader.relevant, len(reader.unreached)) == (327, 636, 37)
    assert reader.unreached[0].function == "auth_fail/5" and reader.unreached[0].lines == 9
    points = table(spark, real, "broker_coverage_points").filter("set = '0-9-1'").collect()
    curve = sorted((p.elapsed_s, p.covered) for p in points)
    assert curve == [(0.081, 305), (18.714, 1792), (31.578, 1806)]
    section = _section((real / "report.html").read_text())
    assert "1806 of 3856 (47%)" in section and "throwaway rabbitmq · AMQP 0-9-1" in section
