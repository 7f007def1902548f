"""Records and reproducers: the contract between the fuzzer and the nightly reports
(:mod:`.contract`), writing them as events come (:mod:`.writer`), and the reproducer files of
failures (:mod:`.reproducers`)."""

from .contract import (
    FIELDS,
    OUTCOMES,
    RECORD_KINDS,
    SCHEMA_VERSION,
    SCHEMA_VERSIONS,
    TOOL_VERSION,
    VERDICTS,
    RecordError,
    exercisable,
    read_records,
    record,
    worker_name,
    write_totals,
)
from .reproducers import ReproducerError, load_reproducer, write_reproducer
from .writer import RecordHandler, RecordWriter

__all__ = [
    "FIELDS",
    "OUTCOMES",
    "RECORD_KINDS",
    "SCHEMA_VERSION",
    "SCHEMA_VERSIONS",
    "TOOL_VERSION",
    "VERDICTS",
    "RecordError",
    "RecordHandler",
    "RecordWriter",
    "ReproducerError",
    "exercisable",
    "load_reproducer",
    "read_records",
    "record",
    "worker_name",
    "write_reproducer",
    "write_totals",
]
