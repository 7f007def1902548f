"""Playing a 1.0 scenario file (:mod:`amqpfuzz.scenarios.amqp10`) on a target, over our raw 1.0
connection: each step as a client takes it, each expectation checked as it comes.

A step that does not get what it needs (a link the peer refuses, no transfer in time) fails the
scenario there, with what was expected and what came instead. The nodes the file named (the
run's prefix) are deleted at the end.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from amqpfuzz.scenarios import Scenario, Step, handles
from amqpfuzz.scenarios.amqp10 import CHECKS, LANGUAGE
from amqpfuzz.spec import AmqpfuzzError, OutcomeKind, Scope
from amqpfuzz.spec.amqp10.codec import (
    Composite,
    Described,
    Frame,
    Symbol,
    UByte,
    UInt,
    codec_for,
)

from ...brokers import Target
from ..outcome import Outcome
from ..playing import Playing, StepPlayer
from .connection import Connection
from .nodes import delete_nodes

__all__ = ["PLAYER", "Player"]

_NOT_BARE = ("header", "delivery-annotations", "message-annotations", "footer")
_WINDOW = 2048


@dataclass
class Session:
    next_id: int = 0  # the delivery-id of our next transfer
    unsettled: int | None = None  # our last unsettled transfer's delivery-id
    counts: dict[int, int] = field(default_factory=dict)  # a receiving link's delivery-count


def _plain(value: Any) -> Any:
    """A decoded value as plain data: composites as mappings of their fields, described values
    as what they describe, symbols as text."""
    if isinstance(value, Composite):
        return {"name": value.name} | {k: _plain(v) for k, v in value.fields.items()}
    if isinstance(value, Described):
        return _plain(value.value)
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    items = getattr(value, "items", None)
    if items is not None and not callable(items):  # an Array
        return [_plain(v) for v in items]
    return str(value) if isinstance(value, Symbol) else value


class Player(StepPlayer):
    language = LANGUAGE

    def __init__(self, scenario: Scenario, target: Target, **options: Any) -> None:
        super().__init__(scenario, target, **options)
        self.connections: dict[str, Connection] = {}
        self.sessions: dict[tuple[str, int], Session] = {}
        self.nodes: set[str] = set()
        self.codec_spec = codec_for("1.0").spec

    def close(self) -> None:
        for connection in self.connections.values():
            connection.close(timeout=1.0)
        self.connections.clear()
        if self.nodes:
            delete_nodes(self.target, sorted(self.nodes), self.timeout)

    # -- where a step acts ---------------------------------------------------------------------

    def _at(self, args: Any) -> tuple[Connection, int, Session]:
        name, channel = str(args["connection"]), int(args["channel"])
        return self.connections[name], channel, self.sessions[(name, channel)]

    def _wait(
        self, step: Step, connection: Connection, channel: int, names: tuple[str, ...], what: str,
        seconds: float | None = None,
    ) -> Frame:  # fmt: skip
        found = connection.wait(channel, names, self.timeout if seconds is None else seconds)
        if isinstance(found, Outcome):
            expected = Outcome(OutcomeKind.REPLY, reply=" or ".join(names))
            raise self.failed(step, f"{what}: {found}", expected, found)
        assert isinstance(found, Frame)
        return found

    # -- the steps -----------------------------------------------------------------------------

    @handles("connect")
    def _connect(self, step: Step, args: Any) -> None:
        connection = Connection.open(self.target, timeout=self.timeout)
        self.connections[str(args["as"])] = connection
        if "save" in args:
            self.saved[str(args["save"])] = _plain(connection.peer_open)

    @handles("begin")
    def _begin(self, step: Step, args: Any) -> None:
        name, channel = str(args["connection"]), int(args["channel"])
        problem = self.connections[name].open_session(channel, self.timeout)
        if problem is not None:
            expected = Outcome(OutcomeKind.REPLY, reply="begin")
            raise self.failed(step, f"the session was refused: {problem}", expected, problem)
        self.sessions[(name, channel)] = Session()
        if "save" in args:
            self.saved[str(args["save"])] = _plain(self.connections[name].peer_begins[channel])

    @handles("attach")
    def _attach(self, step: Step, args: Any) -> None:
        connection, channel, session = self._at(args)
        codec, handle = connection.codec, int(args["handle"])
        receiver = args["role"] == "receiver"
        terminus: dict[str, Any] = {}
        if args.get("dynamic"):
            terminus["dynamic"] = True
        else:
            address = str(args["address"])
            self.nodes.add(address)
            terminus["address"] = address
        if args.get("durable"):
            terminus["durable"] = UInt(2)  # unsettled-state
        source = codec.composite("source", **(terminus if receiver else {}))
        target = codec.composite("target", **({} if receiver else terminus))
        attach = codec.composite(
            "attach", name=f"{self.prefix}link-{channel}-{handle}", handle=UInt(handle),
            role=receiver, source=source, target=target,
            initial_delivery_count=None if receiver else UInt(0),
        )  # fmt: skip
        connection.send(codec.frame(attach, channel))
        answer = self._wait(step, connection, channel, ("attach",), "no attach in answer")
        assert answer.body is not None
        if receiver:
            session.counts[handle] = int(answer.body["initial-delivery-count"] or 0)
        elif answer.body["target"] is not None:  # a sender waits for its credit
            self._wait(step, connection, channel, ("flow",), "no credit for the sender")
        if "save" in args:
            self.saved[str(args["save"])] = _plain(answer.body)

    @handles("credit")
    def _credit(self, step: Step, args: Any) -> None:
        connection, channel, session = self._at(args)
        handle = int(args["handle"])
        flow = connection.codec.composite(
            "flow", incoming_window=UInt(_WINDOW), next_outgoing_id=UInt(session.next_id),
            outgoing_window=UInt(_WINDOW), handle=UInt(handle),
            delivery_count=UInt(session.counts.get(handle, 0)), link_credit=UInt(args["credit"]),
        )  # fmt: skip
        connection.send(connection.codec.frame(flow, channel))

    def _message(self, connection: Connection, spec: Any) -> tuple[bytes, bytes]:
        """The message's bytes, and those of its bare message."""
        codec = connection.codec
        sections: list[Any] = []
        if "header" in spec:
            header = {k.replace("-", "_"): v for k, v in spec["header"].items()}
            for key in ("ttl", "delivery_count"):
                if key in header:
                    header[key] = UInt(header[key])
            if "priority" in header:
                header["priority"] = UByte(header["priority"])
            sections.append(codec.composite("header", **header))
        if "message_annotations" in spec:
            entries = {Symbol(k): v for k, v in spec["message_annotations"].items()}
            sections.append(Described("message-annotations", entries))
        bare: list[Any] = []
        if "properties" in spec:
            fields = {k.replace("-", "_"): v for k, v in spec["properties"].items()}
            bare.append(codec.composite("properties", **fields))
        if "application_properties" in spec:
            bare.append(Described("application-properties", dict(spec["application_properties"])))
        bare.append(Described("amqp-value", str(spec["body"])))
        return codec.message([*sections, *bare]), codec.message(bare)

    @handles("send")
    def _send(self, step: Step, args: Any) -> None:
        connection, channel, session = self._at(args)
        codec = connection.codec
        payload, bare = self._message(connection, args["message"])
        settled = bool(args.get("settled", True))
        transfer = codec.composite(
            "transfer", handle=UInt(int(args["handle"])), delivery_id=UInt(session.next_id),
            delivery_tag=session.next_id.to_bytes(4, "big"), message_format=UInt(0),
            settled=settled,
        )  # fmt: skip
        if not settled:
            session.unsettled = session.next_id
        session.next_id += 1
        frames = codec.transfer_frames(channel, transfer, payload, min(connection.frame_max, 65536))
        connection.send(b"".join(frames))
        if "save" in args:
            self.saved[str(args["save"])] = {"bare": bare}

    @handles("settled")
    def _settled(self, step: Step, args: Any) -> None:
        connection, channel, _session = self._at(args)
        wanted = str(args["outcome"])
        frame = self._wait(step, connection, channel, ("disposition",), "no disposition")
        assert frame.body is not None
        state = frame.body["state"]
        got = state.name if isinstance(state, Composite) else str(state)
        self._hold(step, got == wanted, f"the transfer was {got}, not {wanted}", wanted, got)

    @handles("receive")
    def _receive(self, step: Step, args: Any) -> None:
        connection, channel, session = self._at(args)
        seconds = float(args.get("seconds", self.timeout))
        first = self._wait(step, connection, channel, ("transfer",), "no transfer", seconds)
        frames = [first]
        while frames[-1].body is not None and frames[-1].body["more"]:
            frames.append(self._wait(step, connection, channel, ("transfer",), "no more", seconds))
        assert first.body is not None
        handle = int(first.body["handle"])
        session.counts[handle] = session.counts.get(handle, 0) + 1
        payload = b"".join(f.payload for f in frames)
        self.saved[str(args["save"])] = self._read(connection, payload) | {
            "delivery-id": int(first.body["delivery-id"]),
            "handle": handle,
            "settled": bool(first.body["settled"]),
        }

    @staticmethod
    def _read(connection: Connection, payload: bytes) -> dict[str, Any]:
        """A message's sections by name (plain), and the exact bytes of its bare message."""
        # the receiver assumes the header's defaults for what it omits (messaging 3.2.1)
        found: dict[str, Any] = {
            "bare": b"",
            "header": _plain(connection.codec.with_defaults(connection.codec.composite("header"))),
        }
        at = 0
        while at < len(payload):
            value, end = connection.codec.decoder.read(payload, at)
            name = value.name if isinstance(value, Composite) else str(value.descriptor)
            if name == "header":
                value = connection.codec.with_defaults(value)
            found[name] = _plain(value)
            if name not in _NOT_BARE:
                found["bare"] += payload[at:end]
            at = end
        return found

    @handles("settle")
    def _settle(self, step: Step, args: Any) -> None:
        connection, channel, _session = self._at(args)
        codec, outcome = connection.codec, str(args["outcome"])
        extra = {}
        if outcome == "modified":
            extra = {
                "delivery_failed": bool(args.get("delivery_failed", False)),
                "undeliverable_here": bool(args.get("undeliverable_here", False)),
            }
        message = self.saved[str(args["message"])]
        disposition = codec.composite(
            "disposition", role=True, first=UInt(message["delivery-id"]), settled=True,
            state=codec.composite(outcome, **extra),
        )  # fmt: skip
        connection.send(codec.frame(disposition, channel))

    @handles("nothing")
    def _nothing(self, step: Step, args: Any) -> None:
        connection, channel, _ = self._at(args)
        found = connection.wait(channel, ("transfer",), float(args["seconds"]))
        came = not isinstance(found, Outcome)
        self._hold(step, not came, "a transfer came", "nothing", "transfer" if came else "nothing")

    @handles("expect")
    def _expect(self, step: Step, args: Any) -> None:
        connection, channel, _ = self._at(args)
        scope, condition = Scope(args["close"]), args.get("condition")
        expected = Outcome(scope.close, condition)
        found = connection.wait(channel, ("-",), self.timeout)  # only a close ends this wait
        seen = found if isinstance(found, Outcome) else Outcome(OutcomeKind.REPLY)
        self.checked(expected, seen)
        right = isinstance(found, Outcome) and found.kind == scope.close
        if right and condition == "*":
            right = found.condition is not None  # an error, whichever
        elif right and condition is not None:
            right = found.condition in self._conditions(condition)
        if not right:
            message = f"expected {scope.close} {condition or ''}, got {found}"
            raise self.failed(step, message, expected, seen)

    def _conditions(self, name: str) -> set[str]:
        """The symbols an expected condition allows: the one named, or every choice of the
        restricted type named (``session-error``)."""
        known = self.codec_spec.error_conditions()
        if name in known:
            return {known[name][0]}
        return {symbol for symbol, kind in known.values() if kind == name}

    @handles("detach")
    def _detach(self, step: Step, args: Any) -> None:
        connection, channel, _ = self._at(args)
        codec = connection.codec
        detach = codec.composite("detach", handle=UInt(int(args["handle"])), closed=True)
        connection.send(codec.frame(detach, channel))
        answer = self._wait(step, connection, channel, ("detach",), "no detach in answer")
        if "save" in args:
            self.saved[str(args["save"])] = _plain(answer.body)

    @handles("await")
    def _await(self, step: Step, args: Any) -> None:
        connection, channel, _ = self._at(args)
        name, seconds = str(args["performative"]), float(args.get("seconds", self.timeout))
        where = dict(args.get("where") or {})
        deadline = time.monotonic() + seconds
        while True:  # (the peer's others of the kind, before the one wanted, pass by)
            left = max(0.0, deadline - time.monotonic())
            found = _plain(self._wait(step, connection, channel, (name,), f"no {name}", left).body)
            if all(found.get(k) == v for k, v in where.items()):
                break
        self.saved[str(args["save"])] = found

    @handles("frame")
    def _frame(self, step: Step, args: Any) -> None:
        """One performative as the file writes it: each field's value as the XML writes
        values, made the field's type by the codec (``handle: 7``, ``role: receiver``)."""
        connection = self.connections[str(args["connection"])]
        codec = connection.codec
        types = codec.types
        fields = {}
        for info in types.fields[str(args["performative"])]:
            given = (args.get("fields") or {}).get(info.name)
            if given is not None:
                assert info.primitive is not None  # (the loader's check)
                text = str(given).lower() if isinstance(given, bool) else str(given)
                value = types.value_of(info.primitive, text, types.choices_of(info.type))
                fields[info.name.replace("-", "_")] = value
        body = codec.composite(str(args["performative"]), **fields)
        connection.send(codec.frame(body, int(args["channel"]), check=False))

    @handles("close")
    def _close(self, step: Step, args: Any) -> None:
        connection = self.connections.pop(str(args["connection"]))
        connection.close(timeout=self.timeout)
        ended = connection.ended
        if not (isinstance(ended, Outcome) and ended.kind == OutcomeKind.CONNECTION_CLOSE):
            expected = Outcome(OutcomeKind.CONNECTION_CLOSE)
            seen = ended if isinstance(ended, Outcome) else Outcome(OutcomeKind.REPLY)
            raise self.failed(step, f"our close was not answered by the peer's: {ended}",
                              expected, seen)  # fmt: skip

    @handles("serve", "expect_client")
    def _client(self, step: Step, args: Any) -> None:
        raise AmqpfuzzError(
            "a client scenario: amqpfuzz scenarios --client NAME plays it against a client library"
        )

    @handles("restart")
    def _restart(self, step: Step, args: Any) -> None:
        if self.broker is None:
            raise AmqpfuzzError("the scenario restarts the broker: it needs a throwaway one")
        for connection in self.connections.values():
            connection.abort()
        self.connections.clear()
        self.broker.restart()

    @handles("check")
    def _check(self, step: Step, args: Any) -> None:
        path = str(args["that"])
        value = self._path(path)
        kind = next(k for k in CHECKS if k in args)
        wanted = self._path(str(args[kind])) if kind == "same_as" else args[kind]
        if kind == "equals" or kind == "same_as":
            holds = value == wanted
        elif kind in ("is_set", "is_not_set"):
            holds = (value is not None) == (kind == "is_set")
        elif kind == "one_of":
            holds = value in wanted
        elif kind == "each_in":
            holds = value is None or all(v in wanted for v in value)
        else:
            holds = isinstance(value, dict) and str(wanted) in value
        self._hold(step, holds, f"{path}: {value!r} fails {kind} {wanted!r}", f"{kind} {wanted!r}",
                   repr(value))  # fmt: skip

    def _path(self, path: str) -> Any:
        value: Any = self.saved
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return value

    def _hold(self, step: Step, holds: bool, message: str, expected: Any, seen: Any) -> None:
        wanted = Outcome(OutcomeKind.REPLY, reply=str(expected)[:200])
        came = Outcome(OutcomeKind.REPLY, reply=str(seen)[:200])
        self.checked(wanted, came)
        if not holds:
            raise self.failed(step, message, wanted, came)


PLAYER = Playing(Player)
