"""Entry point for ``spark-submit``: ``amqpfuzz run --spark`` on whatever cluster spark-submit
names, with the session it made.

    spark-submit --master spark://head:7077 "$(python -c 'import amqpfuzz.fuzzer.cluster.submit
    as s; print(s.__file__)')" --broker rabbitmq --shards 8 --duration 600 --out /shared/amqpfuzz

The options are ``amqpfuzz run``'s. Every executor needs amqpfuzz installed (its tasks run the
engine) and, for ``--broker`` shards, the broker's packages (what ``make setup`` installs).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a file, this script has its own folder first on sys.path, where the package's modules
# would shadow others of the same name: drop it.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from amqpfuzz.fuzzer.cli import main  # noqa: E402
from amqpfuzz.fuzzer.cluster.job import SUBMITTED  # noqa: E402

if __name__ == "__main__":
    main(["run", "--spark", SUBMITTED, *sys.argv[1:]])
