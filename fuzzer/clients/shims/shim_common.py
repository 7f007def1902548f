"""What the Python shims share: their arguments, the URL's parts and the JSON lines they print.

Imported by the shims as a sibling module (a script's own folder is first on ``sys.path``);
never imported by amqpfuzz itself. Standard library only: the uamqp shim imports it under the
system's Python, outside the project's virtual environment.

Header tables become JSON as they are: strings, integers, booleans, null, lists and objects;
bytes are ``"hex:<hex>"``, decimals ``"<digits>E-<places>"`` (as every shim writes them),
timestamps integer seconds, a float that JSON cannot carry (NaN, infinities) its ``repr()``.
"""

from __future__ import annotations

import argparse
import datetime
import decimal
import itertools
import json
import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

QUEUE = "amqpfuzz-shim"
ADDRESS = QUEUE  # the AMQP 1.0 shims' source and target address
CONNECT_TIMEOUT = 10.0

# Properties in the specification's words, from the Python libraries' attribute names.
PROPERTY_NAMES = {
    "content_type": "content-type",
    "content_encoding": "content-encoding",
    "headers": "headers",
    "application_headers": "headers",
    "delivery_mode": "delivery-mode",
    "priority": "priority",
    "correlation_id": "correlation-id",
    "reply_to": "reply-to",
    "expiration": "expiration",
    "message_id": "message-id",
    "timestamp": "timestamp",
    "message_type": "type",
    "type": "type",
    "user_id": "user-id",
    "app_id": "app-id",
    "cluster_id": "cluster-id",
}


@dataclass(frozen=True)
class Options:
    url: str
    host: str
    port: int
    user: str
    password: str
    vhost: str
    once: bool
    linger: float


def options(argv: list[str] | None = None) -> Options:
    """The shim's command line: ``URL [--once] [--linger SECONDS]``."""
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--once", action="store_true")
    parser.add_argument("--linger", type=float, default=10.0)
    args = parser.parse_args(argv)
    parts = urlsplit(args.url)
    path = parts.path[1:] if parts.path.startswith("/") else parts.path
    return Options(
        url=args.url,
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 5672,
        user=unquote(parts.username or "guest"),
        password=unquote(parts.password or "guest"),
        vhost=unquote(path) or "/",
        once=args.once,
        linger=args.linger,
    )


def cases(opts: Options) -> Iterator[int]:
    """The cases a shim runs, one connection each: 0, 1, 2, ... (only 0 with ``--once``)."""
    return iter((0,)) if opts.once else itertools.count()


def emit(event: str, case: int, **fields: Any) -> None:
    """One event, one line, flushed."""
    sys.stdout.write(json.dumps({"event": event, "case": case, **fields}) + "\n")
    sys.stdout.flush()


def jsonable(value: Any) -> Any:
    """A header table's value as JSON (the module's docstring says how)."""
    if isinstance(value, bytes | bytearray | memoryview):
        return "hex:" + bytes(value).hex()
    if isinstance(value, bool) or value is None or isinstance(value, str | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, decimal.Decimal):
        sign, digits, exponent = value.as_tuple()
        if not isinstance(exponent, int):  # NaN, infinities: no AMQP decimal is
            return str(value)
        number = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
        return f"{number}E-{-exponent}" if exponent <= 0 else f"{number * 10**exponent}E-0"
    if isinstance(value, datetime.datetime):
        return seconds(value)
    if isinstance(value, dict):
        return {str(jsonable(k)): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return repr(value)


def seconds(value: Any) -> Any:
    """A timestamp as integer seconds (naive datetimes are UTC, as AMQP's are)."""
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.UTC)
        return int(value.timestamp())
    return jsonable(value)


def properties(found: dict[str, Any]) -> dict[str, Any]:
    """A message's properties by the specification's names, only those present."""
    shown: dict[str, Any] = {}
    for name, value in found.items():
        if value is None or name not in PROPERTY_NAMES:
            continue
        key = PROPERTY_NAMES[name]
        shown[key] = seconds(value) if key == "timestamp" else jsonable(value)
    return shown


def text(value: Any) -> Any:
    """A reply text or an error's message as a JSON string (bytes as they decode)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if value is None else str(value)


def strings(found: Any) -> dict[str, str]:
    """Server properties: the string values only."""
    if not isinstance(found, dict):
        return {}
    return {str(k): v for k, v in found.items() if isinstance(v, str)}


def sasl_user(opts: Options) -> tuple[str, str] | None:
    """The URL's user and password (SASL PLAIN), None without a user (SASL ANONYMOUS): the
    AMQP 1.0 shims' credentials, where ``opts.user`` defaults to guest."""
    parts = urlsplit(opts.url)
    if parts.username is None:
        return None
    return unquote(parts.username), unquote(parts.password or "")


def error_class(exc: BaseException) -> str:
    kind = type(exc)
    return f"{kind.__module__}.{kind.__qualname__}"
