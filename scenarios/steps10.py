"""The steps of 1.0 scenario files: their language (:data:`STEPS10`) and its checks.

A 1.0 file encodes one MUST or MUST NOT sentence of the specification with a few steps a client
takes (connect, begin a session, attach links, send and receive messages, settle them) and
checks on what the peer did. Conventions:

* ``connection`` names a connection opened by ``connect``; ``channel`` a session begun on it;
  ``handle`` a link attached on that session.
* A node's ``address`` starts with ``${prefix}`` (the run's prefix): only those are deleted.
* ``save`` binds what the peer sent (its attach, a message received) to a name; ``check``
  reads it by a dotted path: ``m.bare`` (the bare message's exact bytes), ``m.header.delivery-
  count``, ``m.message-annotations``, ``a.source.default-outcome``.
* ``frame`` sends one performative of the specification with the given fields (those of
  primitive types, written as the XML writes values: ``handle: 7``, ``role: receiver``), on
  any channel, for what a client library would not send: a handle in use, a channel beyond
  the peer's channel-max. Its answer is the next step's (``expect``).
* ``expect``'s ``condition`` is an error condition (``framing-error``), or the restricted type
  that lists several (``session-error``: any of them), or ``"*"`` (an error, whichever).
* A message is given by its sections: ``header``, ``message_annotations``, ``properties``,
  ``application_properties`` (mappings of their fields or entries) and ``body`` (text: an
  amqp-value).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

from .model import ScenarioError, Step
from .vocabulary import StepKind
from .yamlfile import Located

__all__ = ["CHECKS", "OUTCOMES", "STEPS10", "StepChecker10"]

_LINK = ("connection", "channel", "handle")
OUTCOMES = ("accepted", "rejected", "released", "modified")
SECTIONS = ("header", "message_annotations", "properties", "application_properties", "body")
CHECKS = ("equals", "same_as", "is_set", "is_not_set", "one_of", "each_in", "has_key")

STEPS10: Mapping[str, StepKind] = {
    kind.name: kind
    for kind in (
        StepKind("connect", "log in (SASL) and open connection `as`; the peer's open bound "
                 "to `save`", ("as",), ("save",)),
        StepKind("begin", "begin a session on `channel`, the peer's begin awaited and bound "
                 "to `save`", ("connection", "channel"), ("save",)),
        StepKind("attach",
                 "attach link `handle` as `role` (sender or receiver) to `address` (or a "
                 "`dynamic` node), `durable` terminus if asked; the peer's attach awaited and "
                 "bound to `save`", (*_LINK, "role"), ("address", "dynamic", "durable", "save")),
        StepKind("credit", "grant `credit` on receiving link `handle`", (*_LINK, "credit")),
        StepKind("send",
                 "a transfer of `message` on sending link `handle` (`settled`: true by "
                 "default); what was sent bound to `save` (its `bare` bytes)",
                 (*_LINK, "message"), ("settled", "save")),
        StepKind("settled", "the peer's disposition of the last unsettled transfer: `outcome`",
                 ("connection", "channel", "outcome")),
        StepKind("receive", "the next transfer on the session, bound to `save`",
                 ("connection", "channel", "save"), ("seconds",)),
        StepKind("settle",
                 "settle received `message` with `outcome` (modified: `delivery_failed`, "
                 "`undeliverable_here`)", ("connection", "channel", "message", "outcome"),
                 ("delivery_failed", "undeliverable_here")),
        StepKind("nothing", "no transfer arrives on the session within `seconds`",
                 ("connection", "channel", "seconds")),
        StepKind("expect", "the peer closes the `close` scope (link, session, connection), "
                 "with `condition` if given", ("connection", "channel", "close"),
                 ("condition",)),
        StepKind("detach", "detach link `handle` (closed), the peer's detach awaited and bound "
                 "to `save`", _LINK, ("save",)),
        StepKind("frame", "send `performative` with `fields` on `channel` of `connection`",
                 ("connection", "channel", "performative"), ("fields",)),
        StepKind("await", "the peer's next `performative` on the session (within `seconds`; "
                 "with `where`, the first whose fields have those values), bound to `save`",
                 ("connection", "channel", "performative", "save"), ("seconds", "where")),
        StepKind("close", "close the connection politely: the peer's close awaited",
                 ("connection",)),
        StepKind("restart", "restart the broker (a throwaway one the run started)",
                 capability="restart"),
        StepKind("check", "what `that` (a dotted path to a saved value) reads meets one of "
                 f"{', '.join(CHECKS)}", ("that",), CHECKS),
    )
}  # fmt: skip


class StepChecker10:
    """Checks a 1.0 file's steps in order: names bound before use, messages well formed.
    (0-10's checker is this one with its own language and handlers.)"""

    language: Mapping[str, StepKind] = STEPS10
    protocol = "1.0"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.needs: dict[str, int] = {}  # capability -> first line needing it
        self.connections: set[str] = set()
        self.sessions: set[tuple[str, int]] = set()
        self.links: set[tuple[str, int, int]] = set()
        self.saved: set[str] = set()

    def fail(self, line: int, message: str) -> NoReturn:
        raise ScenarioError(self.path, line, message)

    def steps(self, doc: Any, line: int) -> tuple[Step, ...]:
        if not isinstance(doc, list):
            self.fail(line, "steps is a list")
        return tuple(self.step(item, line) for item in doc)

    def step(self, item: Any, line: int) -> Step:
        if not isinstance(item, Located) or len(item) != 1:
            self.fail(getattr(item, "line", line), "a step is a mapping of one step kind")
        ((kind, args),) = item.items()
        at = item.line
        known = self.language.get(str(kind))
        if known is None:
            self.fail(at, f"unknown step {kind!r}; {self.protocol} steps are "
                      f"{', '.join(self.language)}")  # fmt: skip
        args = args if args is not None else {}
        if not isinstance(args, Mapping):
            self.fail(at, f"{kind} takes a mapping of {', '.join(sorted(known.keys))}")
        for key in args:
            if key not in known.keys:
                self.fail(at, f"{kind}: unknown key {key!r}")
        for key in known.required:
            if key not in args:
                self.fail(at, f"{kind}: missing key {key!r}")
        if known.capability:
            self.needs.setdefault(known.capability, at)
        getattr(self, f"_{kind}", lambda a, n: None)(args, at)
        return Step(str(kind), dict(args), at)

    # -- what each kind requires ----------------------------------------------------------------

    def _connection(self, args: Mapping[str, Any], at: int) -> str:
        name = str(args["connection"])
        if name not in self.connections:
            self.fail(at, f"connection {name!r} is not opened by an earlier connect")
        return name

    def _session(self, args: Mapping[str, Any], at: int) -> tuple[str, int]:
        key = (self._connection(args, at), args["channel"])
        if key not in self.sessions:
            self.fail(at, f"no session begun on channel {args['channel']} of {key[0]}")
        return key

    def _link(self, args: Mapping[str, Any], at: int) -> None:
        if (*self._session(args, at), args["handle"]) not in self.links:
            self.fail(at, f"no link attached with handle {args['handle']}")

    def _save(self, args: Mapping[str, Any]) -> None:
        if "save" in args:
            self.saved.add(str(args["save"]))

    def _connect(self, args: Mapping[str, Any], at: int) -> None:
        if len(self.connections) == 1:
            self.needs.setdefault("second-connection", at)
        self.connections.add(str(args["as"]))
        self._save(args)

    def _begin(self, args: Mapping[str, Any], at: int) -> None:
        if not isinstance(args["channel"], int) or args["channel"] < 0:
            self.fail(at, "channel is a number")
        self.sessions.add((self._connection(args, at), args["channel"]))
        self._save(args)

    def _frame(self, args: Mapping[str, Any], at: int) -> None:
        from amqpfuzz.spec.amqp10 import performatives
        from amqpfuzz.spec.amqp10.codec import codec_for

        self._connection(args, at)
        if not isinstance(args["channel"], int) or not 0 <= args["channel"] <= 0xFFFF:
            self.fail(at, "channel is a number from 0 to 65535")
        types = codec_for("1.0").types
        name = str(args["performative"])
        frames = performatives()
        if name not in frames:
            self.fail(at, f"{name!r} is not a performative; they are {', '.join(frames)}")
        known = {f.name: f for f in types.fields[name]}
        fields = args.get("fields") or {}
        if not isinstance(fields, Mapping):
            self.fail(at, "fields is a mapping of the performative's fields")
        for key, value in fields.items():
            info = known.get(str(key))
            if info is None:
                self.fail(at, f"{name} has no field {key!r}; its fields are {', '.join(known)}")
            if info.primitive is None or info.multiple or isinstance(value, Mapping | list):
                self.fail(at, f"{name}.{key}: only a field of a primitive type can be given")

    def _attach(self, args: Mapping[str, Any], at: int) -> None:
        session = self._session(args, at)
        if args["role"] not in ("sender", "receiver"):
            self.fail(at, "role is sender or receiver")
        address = args.get("address")
        if address is None and not args.get("dynamic"):
            self.fail(at, "attach names an address, or asks for a dynamic node")
        if address is not None and not str(address).startswith("${prefix}"):
            self.fail(at, "a node's address starts with ${prefix}")
        self.links.add((*session, args["handle"]))
        self._save(args)

    def _credit(self, args: Mapping[str, Any], at: int) -> None:
        self._link(args, at)

    def _send(self, args: Mapping[str, Any], at: int) -> None:
        self._link(args, at)
        message = args["message"]
        if not isinstance(message, Mapping) or "body" not in message:
            self.fail(at, f"a message is a mapping of {', '.join(SECTIONS)} (body required)")
        for key in message:
            if key not in SECTIONS:
                self.fail(at, f"unknown section {key!r}; sections are {', '.join(SECTIONS)}")
        self._save(args)

    def _settled(self, args: Mapping[str, Any], at: int) -> None:
        self._session(args, at)
        if args["outcome"] not in OUTCOMES:
            self.fail(at, f"outcome is one of {', '.join(OUTCOMES)}")

    def _receive(self, args: Mapping[str, Any], at: int) -> None:
        self._session(args, at)
        self.needs.setdefault("consumer", at)
        self._save(args)

    def _settle(self, args: Mapping[str, Any], at: int) -> None:
        self._settled(args, at)
        if str(args["message"]) not in self.saved:
            self.fail(at, f"{args['message']!r} is not bound by an earlier receive")

    def _nothing(self, args: Mapping[str, Any], at: int) -> None:
        self._session(args, at)

    def _expect(self, args: Mapping[str, Any], at: int) -> None:
        self._session(args, at)
        if args["close"] not in ("link", "session", "connection"):
            self.fail(at, "close is link, session or connection")
        condition = args.get("condition")
        if condition is not None and condition != "*":
            from amqpfuzz.spec.amqp10.codec import codec_for

            known = codec_for("1.0").spec.error_conditions()
            if condition not in known and condition not in {kind for _, kind in known.values()}:
                self.fail(at, f"{condition!r} is neither an error condition of 1.0, nor a type "
                          "of them, nor \"*\"")  # fmt: skip

    def _detach(self, args: Mapping[str, Any], at: int) -> None:
        self._link(args, at)
        self._save(args)

    def _await(self, args: Mapping[str, Any], at: int) -> None:
        from amqpfuzz.spec.amqp10 import performatives

        self._session(args, at)
        if args["performative"] not in performatives():
            self.fail(at, f"{args['performative']!r} is not a performative")
        if not isinstance(args.get("where", {}), Mapping):
            self.fail(at, "where is a mapping of fields to the values they must have")
        self._save(args)

    def _close(self, args: Mapping[str, Any], at: int) -> None:
        self._connection(args, at)

    def _check(self, args: Mapping[str, Any], at: int) -> None:
        root = str(args["that"]).split(".", 1)[0]
        if root not in self.saved:
            self.fail(at, f"{root!r} is not bound by an earlier step's save")
        if sum(1 for k in CHECKS if k in args) != 1:
            self.fail(at, f"check takes exactly one of {', '.join(CHECKS)}")
