"""Client conformance scenarios: the scenario files played against a client library's shim,
amqpfuzz being the peer the client connects to (``amqpfuzz scenarios --client NAME``).

A client file (capability ``client``) serves one connection (its ``serve`` step: the fields of
the peer's ``open`` and ``begin``, and the server-side operator that strikes, or none) and
says what the client must do (``expect_client``: close a scope with a condition, close the
socket, or carry on; and, with ``frames: valid``, send nothing the peer's checks refuse). The
same oracles as a client campaign watch it (a crash, a hang, a message delivered that was never
validly sent fail it too). Each file played is a record of kind ``scenario`` whose target is
the client library; a client's profile may document a deviation by the file's ``spec_ref``
(an xfail, not a failure; an xpass once it no longer deviates).
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from amqpfuzz.scenarios import Scenario, Step, load_all
from amqpfuzz.spec import OutcomeKind

from ..brokers.profiles import Profile
from ..protocols.family import Serving
from ..protocols.served import Exchange
from ..records.contract import record, worker_name
from ..records.writer import RecordWriter
from .campaign import ClientSettings, client_profile, play_one, serving_of
from .judge import Judged, as_recorded
from .process import ShimProcess
from .targets import ClientTarget

__all__ = ["ClientVerdict", "client_scenarios", "play_client_scenarios"]


@dataclass(frozen=True)
class ClientVerdict:
    """One client file played on one client: its verdict, what was required and what the
    client did, in words."""

    scenario: Scenario
    client: str
    verdict: str  # pass, fail, xfail, xpass
    expected: str
    seen: str
    message: str = ""
    expected_fields: dict[str, Any] = field(default_factory=dict)  # as records have them
    observed_fields: dict[str, Any] = field(default_factory=dict)


def client_scenarios(protocol: str) -> list[Scenario]:
    """The client files of ``protocol``."""
    return [s for s in load_all(protocol) if s.for_client and s.runnable]


def play_client_scenarios(
    client: ClientTarget,
    scenarios: Sequence[Scenario],
    settings: ClientSettings,
    on_verdict: Callable[[ClientVerdict], None] | None = None,
) -> list[ClientVerdict]:
    """Every file served to ``client``'s shim, in turn, one connection each; its records."""
    serving = serving_of(settings.protocol)
    profile = client_profile(client.name, settings.profile)
    peer = serving.peer(settings.protocol)
    shim = ShimProcess(client.argv(peer.url))
    verdicts = []
    run_id = uuid.uuid4().hex[:12]
    target = client.as_target(peer.url, settings.protocol)
    try:
        with RecordWriter(settings.out, run_id, f"{worker_name()}-{client.label}") as writer:
            for scenario in scenarios:
                started = time.monotonic()
                verdict = _play(scenario, client, peer, shim, settings, profile)
                verdicts.append(verdict)
                writer.write(_record(verdict, writer, run_id, target, settings, started, profile))
                if on_verdict is not None:
                    on_verdict(verdict)
    finally:
        shim.stop()
        peer.close()
    return verdicts


def _play(
    scenario: Scenario,
    client: ClientTarget,
    peer: Any,
    shim: ShimProcess,
    settings: ClientSettings,
    profile: Profile | None,
) -> ClientVerdict:
    serve, expect = _steps(scenario)
    operator = serve.args.get("operator")
    served = {str(k): _fields(v) for k, v in serve.args.items() if k != "operator"}
    # the same file, the same bytes (no operator: a valid script with no deliveries of its own)
    blob = hashlib.sha256(scenario.name.encode()).digest() * 8 if operator else bytes(256)
    serving = serving_of(settings.protocol)
    script = serving.scripted(settings.protocol, str(operator) if operator else None, served, blob)
    judged, ex = play_one(peer, shim, client, script, settings.timeout)
    code = _code(serving, settings.protocol, expect)
    # a message's property its library is known to hand over otherwise (a profile's integrity
    # deviation) does not decide a file about something else
    known = judged.oracle == "integrity" and bool(profile and profile.deviation(judged.signature))
    wanted, seen, message = _judge(expect, judged, ex, code, known)
    close = str(expect.args["close"])
    required = {
        "outcome": {"none": OutcomeKind.REPLY.value, "any": None}.get(close, f"{close}-close"),
        "text": wanted,
    } | as_recorded({"reply_code": code})
    observed = {k: v for k, v in as_recorded(judged.observed).items() if k != "events"}
    verdict = "pass" if not message else "fail"
    if ex.unstruck:  # the client left the operator nothing to break
        verdict, message = "skip", ex.spec_ref
    deviation = profile.deviation(None, rule=scenario.spec_ref) if profile else None
    if deviation is not None and verdict != "skip":
        verdict = "xfail" if verdict == "fail" else "xpass"
        message = message or f"the profile's deviation no longer happens: {deviation.reason}"
    return ClientVerdict(
        scenario, client.name, verdict, wanted, seen, message, required, observed | {"text": seen}
    )


def _fields(given: object) -> dict[str, Any]:
    """A performative's fields a ``serve`` step gives (the checker made them numbers)."""
    return {str(k): v for k, v in given.items()} if isinstance(given, Mapping) else {}


def _steps(scenario: Scenario) -> tuple[Step, Step]:
    found = {step.kind: step for step in scenario.steps}
    return found["serve"], found["expect_client"]


def _judge(
    expect: Step, judged: Judged, ex: Exchange, symbol: int | str | None, known: bool = False
) -> tuple[str, str, str]:
    """What the file requires, what the client did, and why that fails (empty: it passes)."""
    close = str(expect.args["close"])
    wanted = {"none": "carry on", "any": "anything"}.get(close) or f"{close}-close" + (
        f" {symbol}" if symbol else ""
    )
    observed = judged.observed
    seen = str(observed["outcome"]) + (
        f" {observed['reply_code']}" if observed.get("reply_code") else ""
    )
    if judged.oracle in ("crash", "hang", "resource", "integrity") and not known:
        return wanted, judged.oracle or seen, judged.message
    frames = expect.args.get("frames")
    named = frames if isinstance(frames, tuple | list) else ()
    counted = [v for v in ex.violations if frames == "valid" or _check(v) in named]
    if counted:
        return wanted, seen, f"the client's own frames: {'; '.join(counted[:3])}"
    if close == "any":
        return wanted, seen, ""
    if close == "none":
        refused = observed["outcome"] != OutcomeKind.REPLY.value
        return wanted, seen, f"the client did not carry on: {seen}" if refused else ""
    if close == "socket":
        right = observed["outcome"] == OutcomeKind.SOCKET_CLOSE.value
        if right and observed.get("spoke"):
            return wanted, seen, "the client sent more before it closed the socket"
        return wanted, seen, "" if right else f"the client did not close the socket: {seen}"
    right = observed["outcome"] == f"{close}-close" and (
        symbol is None or observed.get("reply_code") == symbol
    )
    return wanted, seen, "" if right else f"required {wanted}; the client did {seen}"


def _check(violation: str) -> str:
    """The name of the peer's check that saw a violation (``... [session-flow]``)."""
    return violation.rsplit("[", 1)[-1].rstrip("]") if violation.endswith("]") else ""


def _code(serving: Serving, protocol: str, expect: Step) -> int | str | None:
    """The code the file requires (1.0: ``condition``, 0-9-1: ``code``), as the client's close
    carries it."""
    name = expect.args.get("condition") or expect.args.get("code")
    return None if name is None else serving.code(protocol, str(name))


def _record(
    verdict: ClientVerdict,
    writer: RecordWriter,
    run_id: str,
    target: dict[str, Any],
    settings: ClientSettings,
    started: float,
    profile: Profile | None,
) -> dict[str, Any]:
    scenario = verdict.scenario
    failed = verdict.verdict in ("fail", "xfail")
    return record(
        run_id=run_id,
        worker=writer.worker,
        seq=writer.next_seq(),
        seed="-",
        target=target,
        kind="scenario",
        spec_ref=scenario.spec_ref,
        expected=verdict.expected_fields,
        observed=verdict.observed_fields,
        verdict=verdict.verdict,
        duration_s=time.monotonic() - started,
        failure={
            "oracle": "scenario",
            "signature": f"scenario:{verdict.client}:{scenario.spec_ref}",
            "message": verdict.message,
        }
        if failed
        else None,
        scenario=f"{scenario.protocol}/{scenario.name}",
        reason=verdict.message or None,
        profile=profile.name if profile else None,
    )
