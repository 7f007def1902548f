"""amqpfuzz's nightly reports: Spark jobs that turn result records into Parquet tables and one
static HTML page. Imports the record contract and the spec model, never Hypothesis or the
fuzzer's engine.

>>> from amqpfuzz.reports import run          # run(spark, inputs, output): no session inside
"""

from .job import Summary, run
from .listing import ReportInputError

__all__ = ["ReportInputError", "Summary", "run"]
