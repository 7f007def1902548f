"""Records and reproducers: the contract between the fuzzer and the nightly reports
(:mod:`.contract`), the file a worker writes them to (:mod:`.writer`), and the reproducer files
of failures (:mod:`.reproducers`). Nothing here imports the engine: the reports read the
contract, and :mod:`amqpfuzz.fuzzer.recording` makes records of the engine's events."""

from .contract import (
    COVERAGE_FIELDS,
    COVERAGE_SCHEMA,
    FIELDS,
    OUTCOMES,
    RECORD_KINDS,
    SCHEMA_VERSION,
    SCHEMA_VERSIONS,
    TOOL_VERSION,
    VERDICTS,
    RecordError,
    coverage_record,
    describe,
    reaction_of,
    read_records,
    record,
    worker_name,
)
from .reproducers import ReproducerError, load_reproducer, replay_command, write_reproducer
from .writer import RecordWriter

__all__ = [
    "COVERAGE_FIELDS",
    "COVERAGE_SCHEMA",
    "FIELDS",
    "OUTCOMES",
    "RECORD_KINDS",
    "SCHEMA_VERSION",
    "SCHEMA_VERSIONS",
    "TOOL_VERSION",
    "VERDICTS",
    "RecordError",
    "RecordWriter",
    "ReproducerError",
    "coverage_record",
    "describe",
    "load_reproducer",
    "reaction_of",
    "read_records",
    "record",
    "replay_command",
    "worker_name",
    "write_reproducer",
]
