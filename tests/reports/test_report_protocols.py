"""Protocol as a dimension of the nightly report: a night with 0-9-1, 1.0, 0-10 and 0-9 records has
coverage rows for each protocol against its own specification's totals (1.0: performatives and
the MUST sentences of its messaging part), and its conformance rows say the protocol."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from amqpfuzz.fuzzer.recording import exercisable
from amqpfuzz.reports import run
from tests.helpers.report_records import RABBIT, at, case, write
from tests.helpers.spark import table

pytestmark = pytest.mark.slow  # every test here starts a broker, Spark or a process

NIGHT = "2026-02-02"
PROTON = {**RABBIT, "label": "proton", "product": "", "version": "", "protocol": "1.0"}
QPIDD = {**RABBIT, "label": "qpidd", "product": "qpid-cpp", "version": "1.39", "protocol": "0-10"}
RABBIT09 = {**RABBIT, "label": "rabbitmq-0-9", "protocol": "0-9"}


def test_each_protocol_is_covered_against_its_own_spec(spark: SparkSession, tmp_path: Path) -> None:
    records = tmp_path / "in"
    write(records, "r091", "m1", [
        case(run_id="r091", worker="m1", ts=at(NIGHT, 1), spec_ref="queue.declare"),
        case(run_id="r091", worker="m1", ts=at(NIGHT, 2), spec_ref="basic.qos", seq=1),
    ])  # fmt: skip
    write(records, "r10", "m1", [
        case(run_id="r10", worker="m1", ts=at(NIGHT, 3), target=PROTON, spec_ref="attach"),
        case(run_id="r10", worker="m1", ts=at(NIGHT, 4), target=PROTON, spec_ref="transfer",
             mutation="unattached-handle", seq=1),
        case(run_id="r10", worker="m1", ts=at(NIGHT, 5), target=PROTON, kind="scenario",
             spec_ref="message-format#1", seq=2),
        case(run_id="r10", worker="m1", ts=at(NIGHT, 6), target=PROTON, kind="scenario",
             spec_ref="delivery-state/released#1", verdict="fail", signature="s", seq=3),
    ])  # fmt: skip
    write(records, "r010", "m1", [
        case(run_id="r010", worker="m1", ts=at(NIGHT, 7), target=QPIDD, spec_ref="queue.declare"),
        case(run_id="r010", worker="m1", ts=at(NIGHT, 8), target=QPIDD, spec_ref="session.gap",
             mutation="gap-before-attach", seq=1),
    ])  # fmt: skip
    write(records, "r09", "m1", [
        case(run_id="r09", worker="m1", ts=at(NIGHT, 9), target=RABBIT09, spec_ref="file.qos"),
    ])  # fmt: skip
    out = tmp_path / "out"
    run(spark, [str(records)], str(out), settle=dt.timedelta(0))
    rows = table(spark, out, "coverage").collect()
    got = {(r.protocol, r.dimension): (r.exercised, r.total) for r in rows}

    def total(protocol: str, dimension: str) -> int:
        return len(exercisable(protocol)[dimension])

    # queue.declare and basic.qos, of the methods a 0-9-1 client may send
    assert got[("0-9-1", "methods")] == (2, total("0-9-1", "methods"))
    assert got[("1.0", "methods")] == (2, 9)  # attach and transfer, of 9 performatives
    # two MUST sentences, of messaging's 39 and transport's 94
    assert got[("1.0", "rules")] == (2, 39 + 94)
    assert got[("1.0", "mutation_operators")] == (0, 0)  # no run file: nothing names them
    # queue.declare and session.gap (a session's sender sends it: so does a client)
    assert got[("0-10", "methods")] == (2, total("0-10", "methods"))
    assert got[("0-9", "methods")] == (1, total("0-9", "methods"))
    conformance = table(spark, out, "conformance").collect()
    assert {(r.target_label, r.target_protocol) for r in conformance} == {
        ("rabbitmq", "0-9-1"),
        ("proton", "1.0"),
        ("qpidd", "0-10"),
        ("rabbitmq-0-9", "0-9"),
    }
    html = (out / "report.html").read_text()
    for protocol in ("1.0", "0-9-1", "0-10", "0-9"):
        assert f"AMQP {protocol} methods" in html, protocol
