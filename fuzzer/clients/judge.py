"""The oracles of a client campaign: what a client library must and must not do with a case.

* ``crash``: the shim died (a signal, an uncaught exception, a panic);
* ``hang``: the case did not end within the time allowed (the client neither closed nor
  answered the server's close), or the shim said nothing of how it ended;
* ``resource``: the shim's memory grew past the bound on one case;
* ``reaction``: the client did not refuse what the specification says it must refuse, with
  the close code it names (a hard error: ``connection.close`` with that code), or it refused
  what was valid;
* ``integrity``: its application was handed a message the server never validly sent (a body
  or property that differs octet for octet, or one carried by the frames it should refuse);
* ``client-frames``: what the client sent breaks the specification (a channel method on
  channel zero, a channel not open, a frame above the frame-max agreed, a delivery tag it
  never got, a malformed frame).

Signatures are stable across runs: the oracle, the client, the operator, what was required
and what was seen, with numbers taken out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from amqpfuzz.spec import OutcomeKind, Scope

from ..protocols.family import ServerScript
from ..protocols.served import Exchange, Message
from .process import Died

if TYPE_CHECKING:
    from amqpfuzz.strategies import Reaction

__all__ = ["Judged", "as_recorded", "judge", "observed_of", "same_failure"]

_NUMBERS = re.compile(r"\d+")
_CLOSES = tuple(
    k.value
    for k in (
        OutcomeKind.CONNECTION_CLOSE,
        OutcomeKind.CHANNEL_CLOSE,
        OutcomeKind.SESSION_CLOSE,
        OutcomeKind.LINK_CLOSE,
    )
)


@dataclass(frozen=True)
class Judged:
    """A case's verdict: the failure (oracle, signature, message) if any, and what was seen."""

    observed: dict[str, Any]
    oracle: str | None = None
    signature: str = ""
    message: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.oracle is not None


def observed_of(ex: Exchange) -> dict[str, Any]:
    """What the client did, in the record contract's words."""
    if ex.client_close is not None:
        code, text, class_id, method_id = ex.client_close
        return {
            "outcome": OutcomeKind.CONNECTION_CLOSE.value,
            "scope": "connection",
            "reply_code": code,
            "text": text,
            "class_id": class_id,
            "method_id": method_id,
        }
    if ex.closes:  # 1.0: a session ended or a link detached with an error
        outcome, condition = ex.closes[0]
        return {"outcome": outcome, "scope": outcome.split("-")[0], "reply_code": condition}
    errors = [(ch, code) for ch, code in ex.channel_closes if code]
    if errors:
        return {
            "outcome": OutcomeKind.CHANNEL_CLOSE.value,
            "scope": "channel",
            "reply_code": errors[0][1],
        }
    if ex.ended == "socket":
        return {"outcome": OutcomeKind.SOCKET_CLOSE.value, "spoke": ex.spoke}
    if ex.ended == "timeout":
        return {"outcome": OutcomeKind.TIMEOUT.value}
    return {"outcome": OutcomeKind.REPLY.value}


def as_recorded(reaction: dict[str, Any]) -> dict[str, Any]:
    """A reaction in the record contract's fields: a code that is a 1.0 condition (a symbol)
    is its ``condition``, ``reply_code`` being 0-9-1's numbers."""
    code = reaction.get("reply_code")
    if isinstance(code, str):
        return {**reaction, "reply_code": None, "condition": code}
    return reaction


def _words(observed: dict[str, Any]) -> str:
    code = observed.get("reply_code")
    return f"{observed['outcome']}/{code}" if code else str(observed["outcome"])


def _expected_words(script: ServerScript) -> str:
    reaction = script.expected
    codes = "|".join(str(c.value) for c in reaction.codes)
    return f"{reaction.outcome.value}/{codes}" if codes else reaction.outcome.value


def judge(
    client: str,
    script: ServerScript,
    ex: Exchange,
    events: Sequence[dict[str, Any]],
    final: bool,
    died: Died | None,
    grown: int,
    bound: int,
    close_code: int | str,
) -> Judged:
    """The verdict on one case (``grown``: the shim's memory growth in bytes over it)."""
    observed = observed_of(ex)
    observed["events"] = [e.get("event") for e in events]
    library_error = next((e for e in events if e.get("event") == "error"), None)
    if library_error is not None:
        observed["library_error"] = {
            "class": library_error.get("class"),
            "code": library_error.get("code"),
        }
    # an operator whose strike never came (the client refused, died or hung before its point,
    # or the connection left it nothing to break) is judged as the valid exchange it was: its
    # failure is not the operator's
    played = script.operator is not None and ex.struck is not None and not ex.unstruck
    where = script.label if played else "valid"
    expected = _expected_words(script) if played else OutcomeKind.REPLY.value

    def failed(oracle: str, seen: str, message: str) -> Judged:
        signature = f"{oracle}:{client}:{where}:{expected}->{_NUMBERS.sub('N', seen)}"
        return Judged(observed, oracle, signature, message, list(events))

    if died is not None:  # (out of memory: a resource failure, where the runtime says so)
        oracle = "resource" if died.out_of_memory else "crash"
        return failed(oracle, died.cause, f"the shim died ({died.status}): {died.last}")
    if grown > bound:
        return failed("resource", "memory", f"the shim grew by {grown >> 20} MiB on one case")
    if ex.ended == "timeout" or not final:
        what = (
            "no end within the time allowed"
            if ex.ended == "timeout"
            else "the shim never said how the case ended"
        )
        return failed("hang", ex.ended, f"{what} ({ex.sent[-1] if ex.sent else 'nothing sent'})")
    bad = _integrity(ex, events)
    if bad is not None:
        return failed("integrity", bad[0], bad[1])
    if ex.violations:
        first = ex.violations[0]
        return failed("client-frames", first, "; ".join(ex.violations[:3]))
    return _reaction(script, ex, played, observed, events, close_code, failed) or Judged(
        observed, events=list(events)
    )


_FRAME = re.compile(r" in (?:shim )?\S+$")


def same_failure(found: str, now: str | None) -> bool:
    """Whether a replay failed as the case did: the same signature, a crash's frame left out
    (where a library's stack runs out, or which thread rethrows its error first, is chance)."""
    if now is None or not found.startswith(("crash:", "resource:")):
        return now == found
    return _FRAME.sub("", found) == _FRAME.sub("", now)


def _reaction(
    script: ServerScript,
    ex: Exchange,
    played: bool,
    observed: dict[str, Any],
    events: Sequence[dict[str, Any]],
    close_code: int | str,
    failed: Callable[[str, str, str], Judged],
) -> Judged | None:
    reaction = script.expected
    seen = _words(observed)
    if not played:
        refused = observed["outcome"] in _CLOSES and observed.get("reply_code") not in (None, 200)
        ended = next((e for e in events if e.get("event") in ("closed", "error")), {})
        clean = ended.get("code") in (close_code, 200) or ended.get("by") in ("server", "client")
        if refused or not clean:
            detail = f"{ended.get('class') or ended.get('by') or ''} {ended.get('code') or ''} {ended.get('message') or ended.get('text') or ''}".strip()
            return failed(
                "reaction",
                seen if refused else f"error {ended.get('class', '?')}",
                f"the client refused a valid exchange: {detail}",
            )
        return None
    if _tolerated(reaction, observed):
        return None
    if reaction.outcome is OutcomeKind.SOCKET_CLOSE:
        if observed["outcome"] == OutcomeKind.SOCKET_CLOSE.value and not ex.spoke:
            return None
        if reaction.or_reply and observed["outcome"] == OutcomeKind.REPLY.value:
            return None
        return failed(
            "reaction",
            seen,
            f"{ex.struck}: the client must close the socket without a word; it {_said(observed)}",
        )
    codes = {c.value for c in reaction.codes}
    if observed["outcome"] == reaction.outcome.value and (
        observed.get("reply_code") in codes or reaction.outcome is OutcomeKind.REPLY
    ):
        return None
    if reaction.or_reply and observed["outcome"] == OutcomeKind.REPLY.value:
        return None
    return failed(
        "reaction",
        seen,
        f"{ex.struck}: the client must answer {_closing(reaction.outcome)} with {sorted(codes)}; it {_said(observed)}",
    )


def _tolerated(reaction: Reaction, observed: dict[str, Any]) -> bool:
    """Whether the client closed a scope with a code the reaction also allows (another close
    the specification's text names for the case: 0-9-1's 503 for connection.tune on a channel
    beside the silent close before connection.open; 1.0's handle-in-use carried by a close)."""
    code = observed.get("reply_code")
    return code is not None and any(
        c.value == code and Scope(c.scope).close.value == observed["outcome"]
        for c in reaction.tolerated
    )


def _closing(outcome: OutcomeKind) -> str:
    """What a close outcome does, in words (``channel-close``: closing the channel)."""
    if outcome is OutcomeKind.REPLY:
        return "as if nothing were wrong"
    return "by closing the " + outcome.value.removesuffix("-close")


def _said(observed: dict[str, Any]) -> str:
    outcome = observed["outcome"]
    if outcome == OutcomeKind.SOCKET_CLOSE.value:
        return "closed the socket" + (
            " after sending more" if observed.get("spoke") else " without a word"
        )
    if outcome == OutcomeKind.REPLY.value:
        return "carried on as if nothing was wrong"
    return f"answered {outcome} {observed.get('reply_code')}"


def _integrity(ex: Exchange, events: Sequence[dict[str, Any]]) -> tuple[str, str] | None:
    """What the application was handed that the peer never validly sent: ``delivered`` (a
    message), ``delivered/<what>`` (one of its properties, as the family names it), and how."""
    marked = {m.marker: m for m in ex.messages if m.marker is not None}
    valid: dict[str, list[Message]] = {}
    for m in ex.messages:
        if m.marker is None:
            valid.setdefault(m.body.hex(), []).append(m)
    for event in events:
        if event.get("event") != "message":
            continue
        if not isinstance(event.get("body"), str):  # 1.0: known by its message-id
            marker = (event.get("properties") or {}).get("message-id")
            if marker not in marked:
                return "delivered", (
                    f"the application got a message the peer never validly sent (message-id {str(marker)[:64]!r})"
                )
            exact = marked[marker].content
            if exact is not None and event.get("body") != exact:
                return "delivered", (
                    f"a body delivered as {str(event.get('body'))[:80]}, sent as {str(exact)[:80]}"
                )
            found = _differs([marked[marker]], event)
            if found is not None:
                return f"delivered/{found[0]}", found[1]
            continue
        body = str(event.get("body", ""))
        sent = valid.get(body)
        if not sent:
            return "delivered", (
                f"the application got a message the server never validly sent ({event.get('via')}, body {body[:64]}…)"
            )
        found = _differs(sent, event)
        if found is not None:
            return f"delivered/{found[0]}", found[1]
    return None


def _differs(sent: Sequence[Message], event: dict[str, Any]) -> tuple[str, str] | None:
    """How a delivered message's properties differ from those of the message it is: of the
    messages sent with its body, the one with its delivery tag first, and none if any agrees."""
    tag = event.get("delivery_tag")
    first: tuple[str, str] | None = None
    for message in sorted(sent, key=lambda m: m.delivery_tag != tag):
        found = message.differs(message.properties, event) if message.differs else None
        if found is None:
            return None
        first = first or found
    return first
