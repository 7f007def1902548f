"""Distinct failure signatures found over time by a default client campaign, per client, for the
version the project pins (its newest) and for one a year older or more (``older`` in
clients.toml).

``amqpfuzz run --client NAME[@VERSION] --protocol P --profile none --no-shrink`` for 120 s, every
other setting at its default: the records tell when each distinct failure signature was first
found. One JSON line per client, version and point (30, 60 and 120 s of fuzzing): signatures so
far, crashes among them, flaky signatures apart, records. A campaign that cannot run (a client
that does not work as a client at all, say) is a line with its ``error``. A markdown table of the
signatures at each point goes to stderr. An older version should find at least what its later
releases fixed; where the library's changelog names a fix for malformed server input that the
older version's campaign does not find, that is a gap in amqpfuzz.

``--clients a,b`` picks clients (default: every bundled one), ``--seed`` the campaigns' seed,
``--keep DIR`` keeps each campaign's records and reproducers (DIR/NAME@VERSION);
``--quick`` is a smoke test: pika at both versions, 10 s.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from findings import campaign

from amqpfuzz.fuzzer.clients.shims import SHIMS
from amqpfuzz.fuzzer.clients.shims import version as installed

POINTS = (30.0, 60.0, 120.0)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="a very short run (smoke test)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--clients", help="comma-separated client names (default: all)")
    parser.add_argument("--keep", type=Path, help="keep each campaign's records: KEEP/NAME@VERSION")
    args = parser.parse_args(argv)
    names = args.clients.split(",") if args.clients else ["pika"] if args.quick else list(SHIMS)
    points = (5.0, 10.0) if args.quick else POINTS
    rows: list[tuple[str, str, list[float | str]]] = []
    for name in names:
        shim = SHIMS[name]
        for version in (None, *([shim.older] if shim.older else [])):
            spec = f"{name}@{version}" if version else name
            line: dict[str, object] = {"bench": "findings_clients", "client": name}
            line["version"] = version or shim.pinned or installed(name) or "installed"
            flags = ("--client", spec, "--protocol", shim.protocol, "--profile", "none")
            try:
                kept = args.keep / f"{name}@{line['version']}" if args.keep else None
                found = campaign((*flags, "--seed", str(args.seed)), max(points) + 1, points, kept)
            except SystemExit as exc:  # (one line of why, as the campaign said it)
                print(json.dumps({**line, "error": str(exc)[:300]}), flush=True)
                rows.append((name, str(line["version"]), ["error"] * len(points)))
                continue
            for point in found:
                print(json.dumps({**line, **point}), flush=True)
            rows.append((name, str(line["version"]), [p["signatures"] for p in found]))
    heads = " | ".join(f"{p:g} s" for p in points)
    print(f"| client | version | {heads} |", file=sys.stderr)
    print("|---|---|" + "---:|" * len(points), file=sys.stderr)
    for name, version, counts in rows:
        shown = " | ".join(str(c if isinstance(c, str) else int(c)) for c in counts)
        print(f"| {name} | {version} | {shown} |", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
