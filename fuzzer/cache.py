"""The machine's cache of what amqpfuzz fetches and builds (JVM brokers, client libraries at the
versions asked for): shared by every checkout, fetched once."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_root"]


def cache_root() -> Path:
    """``$AMQPFUZZ_CACHE``, else ``~/.cache/amqpfuzz``."""
    return Path(os.environ.get("AMQPFUZZ_CACHE") or Path.home() / ".cache" / "amqpfuzz")
