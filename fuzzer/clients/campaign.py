"""A client campaign: amqpfuzz plays a hostile broker to one client library for a budget.

The serving peer listens on a free loopback port; the client's shim (a long-lived process that
reconnects for every case) connects to it; each connection plays one server script drawn from
a blob (the seed's random generator fills it, as a broker campaign's batches are), and is
judged by the client oracles (:mod:`.judge`) on what the peer saw and what the shim's
application reported. A shim that dies or hangs is restarted, for the whole budget. Each case
is a record (kind ``client``; the target is the library, its version and language); the first
failure of each signature leaves a reproducer: the script's blob, which ``amqpfuzz replay``
serves again.
"""

from __future__ import annotations

import random
import shlex
import socket
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..protocols.families import family_for
from ..protocols.family import ServerScript, Serving, ServingPeer
from ..protocols.served import Exchange
from ..records.contract import record, worker_name
from ..records.reproducers import write_reproducer
from ..records.writer import RecordWriter
from .judge import Judged, judge
from .process import ShimProcess
from .shims import ClientError

__all__ = [
    "ClientSettings",
    "ClientTarget",
    "Outcome",
    "play_one",
    "replay_client",
    "run_clients",
    "serving_of",
]

MEMORY_BOUND = 1 << 30  # a shim growing by more than this on one case is a resource failure
CONNECT_GRACE = 15.0  # how long a (re)started shim may take to connect


@dataclass(frozen=True)
class ClientTarget:
    """The library under test: its shim's command (``{url}`` where the URL goes) and what
    records say of it."""

    name: str
    command: tuple[str, ...]
    library: str = ""
    version: str | None = None
    language: str = ""

    def argv(self, url: str) -> list[str]:
        if any("{url}" in part for part in self.command):
            return [part.replace("{url}", url) for part in self.command]
        return [*self.command, url]

    @classmethod
    def of_command(cls, text: str) -> ClientTarget:
        parts = tuple(shlex.split(text))
        if not parts:
            raise ClientError("--client-command is empty")
        return cls(Path(parts[0]).name, parts, library=parts[0], language="")

    def as_target(self, url: str, protocol: str) -> dict[str, Any]:
        return {
            "label": self.name,
            "url": url,
            "product": self.library or self.name,
            "version": self.version,
            "protocol": protocol,
            "language": self.language,
        }


@dataclass(frozen=True)
class ClientSettings:
    protocol: str = "0-9-1"
    duration: float = 60.0
    max_cases: int | None = None
    seed: int = 0
    timeout: float = 5.0
    valid_share: float = 0.2
    operators: tuple[str, ...] | None = None
    out: Path = Path("amqpfuzz-out")


@dataclass
class Outcome:
    """What a campaign on one client came to."""

    client: ClientTarget
    cases: int = 0
    restarts: int = 0
    failures: Counter[str] = field(default_factory=Counter)
    messages: dict[str, str] = field(default_factory=dict)
    reproducers: dict[str, Path] = field(default_factory=dict)
    elapsed: float = 0.0


def serving_of(protocol: str) -> Serving:
    """The server side of ``protocol``'s family; one line where it plays none yet."""
    serving = family_for(protocol).serving
    if serving is None:
        raise ClientError(f"AMQP {protocol}: amqpfuzz cannot play its server yet")
    return serving


def play_one(
    peer: ServingPeer, shim: ShimProcess, client: ClientTarget, script: ServerScript, timeout: float
) -> tuple[Judged, Exchange]:
    """Serves ``script`` to the shim's next connection and judges it; restarts a shim that
    died or hung."""
    conn = _accept(peer, shim)
    before = shim.rss()
    if conn is None:
        died = shim.died(wait=0.5)
        if died is not None and not shim.connections:
            raise ClientError(
                f"the client {client.name} ends before it connects (status {died.status}): "
                f"{died.last or 'it said nothing'}"
            )
        ex = Exchange(ended="timeout")
        ex.sent.append("(the shim never connected)")
        judged = judge(client.name, script, ex, [], False, died, 0, MEMORY_BOUND, peer.case_over)
        shim.restart()
        return judged, ex
    ex = peer.play(conn, script, timeout)
    events, final = shim.events(time.monotonic() + min(2.0, timeout))
    died = shim.died(wait=0.2) if not final else shim.died()
    if died is not None and final and died.status == 0:
        died = None  # it ended its case and then itself (a shim run --once): no crash
    grown = max(0, shim.rss() - before)
    judged = judge(
        client.name, script, ex, events, final, died, grown, MEMORY_BOUND, peer.case_over
    )
    if judged.oracle in ("crash", "hang", "resource") or died is not None:
        shim.restart()
    return judged, ex


def _accept(peer: ServingPeer, shim: ShimProcess) -> socket.socket | None:
    """The shim's next connection, waited for while the shim lives (``CONNECT_GRACE``)."""
    deadline = time.monotonic() + CONNECT_GRACE
    while time.monotonic() < deadline:
        conn = peer.accept(0.25)
        if conn is not None:
            shim.connections += 1
            return conn
        if shim.died() is not None:
            return None
    return None


def run_clients(
    clients: Sequence[ClientTarget],
    settings: ClientSettings,
    on_case: Callable[[ClientTarget, Judged], None] | None = None,
) -> list[Outcome]:
    """One campaign per client, one after the other, each for ``settings.duration``."""
    return [_campaign(client, settings, on_case) for client in clients]


def _campaign(
    client: ClientTarget,
    settings: ClientSettings,
    on_case: Callable[[ClientTarget, Judged], None] | None,
) -> Outcome:
    serving = serving_of(settings.protocol)
    size, build = serving.scripts(settings.protocol, settings.operators, settings.valid_share)
    peer = serving.peer(settings.protocol)
    outcome = Outcome(client)
    run_id = uuid.uuid4().hex[:12]
    out = settings.out
    (out / "reproducers").mkdir(parents=True, exist_ok=True)
    rnd = random.Random(f"{settings.seed}:{client.name}")
    target = client.as_target(peer.url, settings.protocol)
    started = time.monotonic()
    shim = ShimProcess(client.argv(peer.url))
    try:
        with RecordWriter(out, run_id, f"{worker_name()}-{client.name}") as writer:
            while time.monotonic() - started < settings.duration:
                if settings.max_cases is not None and outcome.cases >= settings.max_cases:
                    break
                blob = rnd.randbytes(size)
                script = build(blob)
                t0 = time.monotonic()
                judged, ex = play_one(peer, shim, client, script, settings.timeout)
                outcome.cases += 1
                reproducer = None
                if judged.failed:
                    outcome.failures[judged.signature] += 1
                    outcome.messages.setdefault(judged.signature, judged.message)
                    if judged.signature not in outcome.reproducers:
                        outcome.reproducers[judged.signature] = _reproduce(
                            out, client, settings, script, judged
                        )
                    reproducer = str(outcome.reproducers[judged.signature])
                writer.write(
                    record(
                        run_id=run_id,
                        worker=writer.worker,
                        seq=writer.next_seq(),
                        seed=str(settings.seed),
                        target=target,
                        kind="client",
                        spec_ref=ex.spec_ref
                        or (script.operator.name if script.operator else "valid"),
                        expected=_expected(script),
                        observed=judged.observed,
                        verdict="fail" if judged.failed else "pass",
                        duration_s=time.monotonic() - t0,
                        mutation=script.operator.name if script.operator else None,
                        failure={
                            "oracle": judged.oracle,
                            "signature": judged.signature,
                            "message": judged.message,
                        }
                        if judged.failed
                        else None,
                        reproducer=reproducer,
                        note=ex.struck,
                        blob=script.blob.hex(),
                    )
                )
                if on_case is not None:
                    on_case(client, judged)
    finally:
        outcome.restarts = shim.started - 1
        shim.stop()
        peer.close()
        outcome.elapsed = time.monotonic() - started
    return outcome


def _expected(script: ServerScript) -> dict[str, Any]:
    reaction = script.expected
    scope = reaction.outcome.scope
    return {
        "outcome": reaction.outcome.value,
        "scope": scope.value if scope is not None else None,
        "reply_code": reaction.code,
        "condition": None,
        "class_id": None,
        "method_id": None,
        "text": str(reaction),
    }


def _reproduce(
    out: Path, client: ClientTarget, settings: ClientSettings, script: ServerScript, judged: Judged
) -> Path:
    name = f"client-{uuid.uuid5(uuid.NAMESPACE_URL, judged.signature).hex[:12]}"
    body = {
        "kind": "client",
        "protocol": settings.protocol,
        "client": client.name,
        "command": list(client.command),
        "signature": judged.signature,
        "oracle": judged.oracle,
        "message": judged.message,
        "operator": script.operator.name if script.operator else None,
        "operators": list(settings.operators) if settings.operators is not None else None,
        "valid_share": settings.valid_share,
        "blob": script.blob.hex(),
        "timeout": settings.timeout,
        "expected": _expected(script),
        "observed": judged.observed,
    }
    return write_reproducer(out / "reproducers", name, body)


def replay_client(data: Mapping[str, Any], client: ClientTarget, timeout: float) -> Judged:
    """A client reproducer's script served once more to ``client``'s shim, and judged."""
    protocol = str(data["protocol"])
    serving = serving_of(protocol)
    _, build = serving.scripts(protocol, data.get("operators"), float(data["valid_share"]))
    script = build(bytes.fromhex(str(data["blob"])))
    peer = serving.peer(protocol)
    shim = ShimProcess(client.argv(peer.url))
    try:
        judged, _ = play_one(peer, shim, client, script, timeout)
    finally:
        shim.stop()
        peer.close()
    return judged
