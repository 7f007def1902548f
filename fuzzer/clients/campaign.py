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

import contextlib
import random
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..brokers.profiles import Profile, load_profile
from ..engine.confirm import Confirmation, Decisions, confirm
from ..engine.replay import Replay
from ..engine.verdicts import Verdict
from ..protocols.families import family_for
from ..protocols.family import ServerScript, Serving, ServingPeer
from ..protocols.served import Exchange
from ..records.contract import describe, record, worker_name
from ..records.reproducers import load_reproducer, write_reproducer
from ..records.writer import RecordWriter
from .judge import Judged, as_recorded, judge, same_failure
from .process import ShimProcess
from .shims import ClientError
from .shrink import shrink_script
from .targets import ClientTarget

__all__ = [
    "ClientSettings",
    "ClientTarget",
    "Differential",
    "Lane",
    "Outcome",
    "client_profile",
    "play_one",
    "reaction_word",
    "replay_client",
    "run_clients",
    "serving_of",
]

DEVIATIONS = Path(__file__).parent / "deviations"  # a profile per bundled client, by its name
MEMORY_BOUND = 1 << 30  # a shim growing by more than this on one case is a resource failure
# a client whose first valid scripts all fail, or nearly all of many, does not work as a client at
# all (a shim that does not fit its library, a library that cannot talk to any broker): the
# campaign stops, as for a broker it cannot reach, rather than report its every case
FIRST_VALID = 5
MOST_VALID = (10, 0.9)  # at least this many valid scripts, more than this share failed
CONNECT_GRACE = 15.0  # how long a (re)started shim may take to connect
SHRINKING = threading.Lock()


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
    profile: str | None = None  # a bundled client's name or a path; "none": none; None: by client
    shrink: bool = True  # a new signature's script shrunk before its reproducer is written
    shrink_budget: float = 10.0  # seconds per signature at most
    shrink_share: float = 0.3  # of the duration, at most, spent shrinking (per client)
    # replays of a new failure's reproducer (each to a shim started afresh, as `amqpfuzz
    # replay` serves it) before it is reported: one that does not fail every time is flaky
    confirm: int = 3
    confirm_tries: int = 3  # cases of a flaky signature replayed before it stays flaky


@dataclass
class Outcome:
    """What a campaign on one client came to."""

    client: ClientTarget
    cases: int = 0
    restarts: int = 0
    failures: Counter[str] = field(default_factory=Counter)
    known: Counter[str] = field(default_factory=Counter)  # failures its profile documents
    shrinking: float = 0.0  # seconds spent shrinking
    messages: dict[str, str] = field(default_factory=dict)
    reproducers: dict[str, Path] = field(default_factory=dict)
    elapsed: float = 0.0
    # failures whose replays did not all fail, and each flaky signature's replays
    flaky: Counter[str] = field(default_factory=Counter)
    confirmations: dict[str, dict[str, Any]] = field(default_factory=dict)

    def merge(self, other: Outcome) -> Outcome:
        """Two campaigns' outcomes on the same client as one (Spark shards: other seeds); a
        signature one of them confirmed is a failure, whatever the other's replays saw."""
        failures = self.failures + other.failures
        flaky = Counter({s: n for s, n in (self.flaky + other.flaky).items() if s not in failures})
        return Outcome(
            self.client,
            self.cases + other.cases,
            self.restarts + other.restarts,
            failures,
            self.known + other.known,
            self.shrinking + other.shrinking,
            other.messages | self.messages,
            other.reproducers | self.reproducers,
            self.elapsed + other.elapsed,
            flaky,
            {s: c for s, c in (other.confirmations | self.confirmations).items() if s in flaky},
        )


def client_profile(client: str, choice: str | None) -> Profile | None:
    """The profile of a client's known deviations: ``choice`` (a bundled name or a path;
    ``none``: none), else the bundled one named for the client, if there is one."""
    if choice == "none":
        return None
    if choice is None:
        bundled = DEVIATIONS / f"{client}.toml"
        return load_profile(bundled) if bundled.exists() else None
    path = Path(choice) if Path(choice).exists() else DEVIATIONS / f"{choice}.toml"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in DEVIATIONS.glob("*.toml")))
        raise ClientError(f"no client profile {choice!r} (bundled: {known}; or give a path)")
    return load_profile(path)


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
                f"the client {client.label} ends before it connects (status {died.status}): "
                f"{died.last or 'it said nothing'}"
            )
        ex = Exchange(ended="timeout")
        ex.sent.append("(the shim never connected)")
        judged = judge(client.name, script, ex, [], False, died, 0, MEMORY_BOUND, peer.case_over)
        shim.restart(before=lambda: _drain(peer))
        return judged, ex
    ex = peer.play(conn, script, timeout, shim.hearing(peer.waits))
    # (a client that never answered is hanging whatever it says now: what it said so far)
    said = 0.1 if ex.ended == "timeout" else min(2.0, timeout)
    events, final = shim.events(time.monotonic() + said)
    died = shim.died(wait=0.2) if not final else shim.died()
    if died is not None and final and died.status == 0:
        died = None  # it ended its case and then itself (a shim run --once): no crash
    grown = max(0, shim.rss() - before)
    judged = judge(
        client.name, script, ex, events, final, died, grown, MEMORY_BOUND, peer.case_over
    )
    if judged.oracle in ("crash", "hang", "resource") or died is not None:
        shim.restart(before=lambda: _drain(peer))
    return judged, ex


def _drain(peer: ServingPeer) -> None:
    """Closes the connections an ended shim left waiting to be accepted (a client that had
    already reconnected): the next shim's connection must not be judged by one of them."""
    while (conn := peer.accept(0.0)) is not None:
        conn.close()


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
    on_case: Callable[[ClientTarget, Judged, Verdict], None] | None = None,
    *,
    run_id: str | None = None,
    worker: str | None = None,
) -> Differential:
    """A campaign of ``settings.duration``: each script served to every client in turn (each
    a lane: its shim, its peer, its records), their reactions compared where there are
    several. ``run_id`` and ``worker`` (what the record files are named by: a client's is
    ``<worker>-<client>``) default to a new run and this process."""
    serving = serving_of(settings.protocol)
    size, build = serving.scripts(settings.protocol, settings.operators, settings.valid_share)
    run_id = run_id or uuid.uuid4().hex[:12]
    worker = worker or worker_name()
    (settings.out / "reproducers").mkdir(parents=True, exist_ok=True)
    rnd = random.Random(f"{settings.seed}:{'+'.join(c.name for c in clients)}")
    result = Differential([Outcome(c) for c in clients])
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        lanes = [
            stack.enter_context(Lane.open(o, serving, settings, run_id, worker)) for o in result
        ]
        pool = stack.enter_context(ThreadPoolExecutor(len(lanes), thread_name_prefix="lane"))
        differ = (
            stack.enter_context(RecordWriter(settings.out, run_id, f"{worker}-differential"))
            if len(lanes) > 1
            else None
        )
        while time.monotonic() - started < settings.duration:
            if settings.max_cases is not None and result.cases >= settings.max_cases:
                break
            script = build(rnd.randbytes(size))
            shrinking = [lane.outcome.shrinking for lane in lanes]
            # every client plays the script at once: a shim waiting for its turn would reach
            # its own connect timeout while the others played theirs
            served = [
                f.result() for f in [pool.submit(x.serve, script, settings, build) for x in lanes]
            ]
            judged = {x.outcome.client.label: j for x, (j, _) in zip(lanes, served, strict=True)}
            for lane, before, (one, verdict) in zip(lanes, shrinking, served, strict=True):
                if on_case is not None:
                    on_case(lane.outcome.client, one, verdict)
                if lane.outcome.shrinking > before:  # the others waited: their shims afresh
                    for other in lanes:
                        if other is not lane:
                            other.refresh()
            result.cases += 1
            if differ is not None:
                result.compare(script, judged, differ, run_id, settings)
    result.elapsed = time.monotonic() - started
    return result


class Differential(list[Outcome]):
    """Every client's outcome (a list of them), and where their reactions differed: a
    signature per shape of disagreement (``differential:<operator>:<client>=<reaction>,...``),
    counted, with the blob of its first script."""

    def __init__(self, outcomes: list[Outcome]) -> None:
        super().__init__(outcomes)
        self.cases = 0
        self.elapsed = 0.0
        self.divergences: Counter[str] = Counter()
        self.examples: dict[str, str] = {}

    def compare(
        self,
        script: ServerScript,
        judged: dict[str, Judged],
        writer: RecordWriter,
        run_id: str,
        settings: ClientSettings,
    ) -> None:
        reactions = {name: reaction_word(j) for name, j in judged.items()}
        if len(set(reactions.values())) < 2:
            return
        shown = ",".join(f"{name}={word}" for name, word in sorted(reactions.items()))
        signature = f"differential:{script.label}:{shown}"
        self.divergences[signature] += 1
        self.examples.setdefault(signature, script.blob.hex())
        writer.write(
            record(
                run_id=run_id,
                worker=writer.worker,
                seq=writer.next_seq(),
                seed=str(settings.seed),
                target={"label": "+".join(sorted(reactions)), "protocol": settings.protocol},
                kind="differential",
                spec_ref=script.operator.name if script.operator else "valid",
                expected=_expected(script),
                observed={"reactions": reactions},
                verdict="fail",
                duration_s=0.0,
                mutation=script.operator.name if script.operator else None,
                failure={"oracle": "differential", "signature": signature, "message": shown},
                blob=script.blob.hex(),
            )
        )


def reaction_word(judged: Judged) -> str:
    """What a client did with a case, in a word to compare clients by: as the specification
    requires (however it went about it), how it died or hung, or how it reacted instead (with
    its close code), and whether its application got a message it should not have."""
    if not judged.failed:
        return "as-required"
    if judged.oracle in ("crash", "hang", "resource"):
        return judged.oracle
    observed = judged.observed
    code = observed.get("reply_code")
    word = f"{observed['outcome']}/{code}" if code else str(observed["outcome"])
    return f"{word}+delivered" if judged.oracle == "integrity" else word


@dataclass
class Lane:
    """One client's part of a campaign: its peer, its shim, its records."""

    outcome: Outcome
    peer: ServingPeer
    shim: ShimProcess
    writer: RecordWriter
    run_id: str
    target: dict[str, Any]
    profile: Profile | None
    refreshed: int = 0  # restarts that were not the shim's doing
    valid: int = 0  # valid scripts served
    valid_failed: Counter[str] = field(default_factory=Counter)  # and their failures' signatures
    # what the replays decided of each failure signature (its confirmation), by signature
    decisions: Decisions = field(default_factory=lambda: Decisions(3))

    def refresh(self) -> None:
        """The shim started afresh, the connection it left waiting closed: it waited for
        another lane longer than it waits for a peer to answer."""
        self.shim.restart(before=lambda: _drain(self.peer))
        self.refreshed += 1

    def play(self, timeout: float) -> Callable[[ServerScript], Judged]:
        """Serving a script to this lane's client and judging it, unrecorded."""
        return lambda script: play_one(self.peer, self.shim, self.outcome.client, script, timeout)[
            0
        ]

    @classmethod
    @contextlib.contextmanager
    def open(
        cls,
        outcome: Outcome,
        serving: Serving,
        settings: ClientSettings,
        run_id: str,
        worker: str | None = None,
    ) -> Iterator[Lane]:
        client = outcome.client
        peer = serving.peer(settings.protocol)
        lane: Lane | None = None
        try:
            shim = ShimProcess(client.argv(peer.url))
            try:
                named = f"{worker or worker_name()}-{client.label}"
                with RecordWriter(settings.out, run_id, named) as writer:
                    target = client.as_target(peer.url, settings.protocol)
                    profile = client_profile(client.name, settings.profile)
                    lane = cls(outcome, peer, shim, writer, run_id, target, profile)
                    lane.decisions = Decisions(settings.confirm_tries)
                    yield lane
            finally:
                outcome.restarts = shim.started - 1 - (lane.refreshed if lane else 0)
                shim.stop()
        finally:
            peer.close()

    def serve(
        self,
        script: ServerScript,
        settings: ClientSettings,
        build: Callable[[bytes], ServerScript] | None = None,
    ) -> tuple[Judged, Verdict]:
        """One case: served, judged against the client's profile, recorded; a new signature's
        reproducer holds its script shrunk (by ``build``, with ``settings.shrink``)."""
        outcome, client, started = self.outcome, self.outcome.client, time.monotonic()
        judged, ex = play_one(self.peer, self.shim, client, script, settings.timeout)
        outcome.cases += 1
        outcome.elapsed += time.monotonic() - started
        reproducer = None
        verdict = Verdict("fail" if judged.failed else "pass")
        deviation = (
            self.profile.deviation(judged.signature) if judged.failed and self.profile else None
        )
        if deviation is not None and self.profile is not None:
            verdict = Verdict("xfail", deviation.reason, deviation, self.profile.name)
            outcome.known[judged.signature] += 1
        elif judged.failed:
            verdict = Verdict(self._confirmed(script, judged, settings, build))
            reproducer = str(outcome.reproducers[judged.signature])
        failure = (
            {"oracle": judged.oracle, "signature": judged.signature, "message": judged.message}
            if judged.failed
            else None
        )
        self.writer.write(
            record(
                run_id=self.run_id,
                worker=self.writer.worker,
                seq=self.writer.next_seq(),
                seed=str(settings.seed),
                target=self.target,
                kind="client",
                spec_ref=ex.spec_ref or script.label,
                expected=_expected(script),
                observed=as_recorded(judged.observed),
                verdict=verdict.verdict,
                duration_s=time.monotonic() - started,
                mutation=script.operator.name if script.operator else None,
                failure=failure,
                reproducer=reproducer,
                note=ex.struck,
                blob=script.blob.hex(),
                confirmation=self._confirmation(judged) if judged.failed else None,
                **verdict.known(),
            )
        )
        self._works(script, judged)
        return judged, verdict

    def _works(self, script: ServerScript, judged: Judged) -> None:
        """Counts a valid script's verdict; one line (a :class:`ClientError`) once the valid
        scripts say the client does not work as a client at all."""
        if script.operator is not None:
            return
        self.valid += 1
        known = self.profile is not None and self.profile.deviation(judged.signature) is not None
        if judged.failed and not known:
            self.valid_failed[judged.signature] += 1
        failed = sum(self.valid_failed.values())
        first = self.valid == FIRST_VALID and failed == FIRST_VALID
        most = self.valid >= MOST_VALID[0] and failed > MOST_VALID[1] * self.valid
        if not (first or most):
            return
        # the shim's own code failing says the most: named first, if it failed at all
        own = Counter({s: n for s, n in self.valid_failed.items() if " in shim " in s})
        (signature, _), *_ = (own or self.valid_failed).most_common(1)
        whose = (
            "in the shim's own code: it is broken or does not fit this version of the library"
            if own
            else "the library fails them"
        )
        how = (
            f"its first {failed} valid scripts all failed"
            if first
            else f"{failed} of its {self.valid} valid scripts failed"
        )
        raise ClientError(
            f"client {self.outcome.client.label} does not work as a client at all: {how} "
            f"({signature}; {whose}); records so far in {self.writer.directory}"
        )

    def _confirmed(
        self,
        script: ServerScript,
        judged: Judged,
        settings: ClientSettings,
        build: Callable[[bytes], ServerScript] | None,
    ) -> str:
        """A failure's verdict: its signature's first script (shrunk, with ``build`` and
        ``settings.shrink``) kept as its reproducer and replayed from it before it is
        reported, as ``amqpfuzz replay`` serves it; a flaky signature's later scripts replayed
        too, a few, until one fails every time. ``fail`` or ``flaky``."""
        outcome, signature = self.outcome, judged.signature
        outcome.messages.setdefault(signature, judged.message)
        if self.decisions.wanted(signature):
            kept = (script, judged)
            first = signature not in outcome.reproducers
            allowance = settings.shrink_share * settings.duration - outcome.shrinking
            budget = min(settings.shrink_budget, allowance)
            if first and settings.shrink and build is not None and budget > 0:
                play, began = self.play(settings.timeout), time.monotonic()
                with SHRINKING:  # Hypothesis shrinks one script at a time
                    kept = shrink_script(play, build, script, signature, budget) or kept
                outcome.shrinking += time.monotonic() - began
            confirmation = self._replays(*kept, settings)
            if confirmation.flaky and kept[0] is not script:  # the script as it came, then
                kept, confirmation = (script, judged), self._replays(script, judged, settings)
            now = self.decisions.decide(signature, confirmation, signature)
            if first or not confirmation.flaky:  # the file: the script that decided it
                outcome.reproducers[signature] = _reproduce(
                    settings.out, self.outcome.client, settings, *kept, now.said()
                )
        decided = self.decisions.get(signature)
        assert decided is not None
        if decided.verdict == "flaky":
            outcome.flaky[signature] += 1
            outcome.confirmations[signature] = decided.confirmation.as_record()
        else:
            outcome.failures[signature] += 1
            outcome.confirmations.pop(signature, None)
        return decided.verdict

    def _replays(
        self, script: ServerScript, judged: Judged, settings: ClientSettings
    ) -> Confirmation:
        """``script`` written as a reproducer and served from it ``settings.confirm`` times,
        each to a shim started afresh."""
        found = describe(judged.observed)
        if settings.confirm <= 0:
            return Confirmation(1, 1, found)
        client = self.outcome.client
        path = _reproduce(settings.out, client, settings, script, judged, {}, ".replayed")
        data = load_reproducer(path)
        path.unlink()  # (what is kept is the file of the script that decides the verdict)

        def again() -> Replay:
            now = replay_client(data, client, settings.timeout)
            seen = now.signature if now.failed else None
            return Replay(
                judged.signature,
                judged.signature if same_failure(judged.signature, seen) else seen,
                str(data.get("expected", {}).get("text", "")),
                describe(now.observed),
            )

        return confirm(again, settings.confirm, found)

    def _confirmation(self, judged: Judged) -> dict[str, Any] | None:
        decided = self.decisions.get(judged.signature)
        return decided.confirmation.as_record() if decided is not None else None


def _expected(script: ServerScript) -> dict[str, Any]:
    reaction = script.expected
    scope = reaction.outcome.scope
    return as_recorded(
        {
            "outcome": reaction.outcome.value,
            "scope": scope.value if scope is not None else None,
            "reply_code": reaction.code,
            "class_id": None,
            "method_id": None,
            "text": str(reaction),
        }
    )


def _reproduce(
    out: Path,
    client: ClientTarget,
    settings: ClientSettings,
    script: ServerScript,
    judged: Judged,
    said: Mapping[str, Any],
    suffix: str = "",
) -> Path:
    name = f"client-{uuid.uuid5(uuid.NAMESPACE_URL, judged.signature).hex[:12]}{suffix}"
    body = {
        "kind": "client",
        "protocol": settings.protocol,
        "client": client.label,
        "command": list(client.command),
        "signature": judged.signature,
        "oracle": judged.oracle,
        "message": judged.message,
        "operator": script.operator.name if script.operator else None,
        # the catalogue as it stands, by name: a catalogue that grows later leaves the blob
        # reading the same operator (an index into these names)
        "operators": list(
            settings.operators or serving_of(settings.protocol).operators(settings.protocol)
        ),
        "valid_share": settings.valid_share,
        "blob": script.blob.hex(),
        "timeout": settings.timeout,
        "expected": _expected(script),
        "observed": judged.observed,
        **said,
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
