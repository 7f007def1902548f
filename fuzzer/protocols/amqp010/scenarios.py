"""Playing a 0-10 scenario file (:mod:`amqpfuzz.scenarios.amqp010`) on a target, over our raw
0-10 connection: each step as a client takes it, each expectation checked as it comes.

A step that does not get what it needs fails the scenario there, with what was expected and
what came instead. The queues and exchanges the file's commands named (the run's prefix) are
deleted at the end.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from amqpfuzz.scenarios import Scenario, Step, handles
from amqpfuzz.scenarios.amqp010 import LANGUAGE
from amqpfuzz.spec import OutcomeKind
from amqpfuzz.spec.amqp010.codec import codec_for

from ...brokers import Target
from ..outcome import Outcome
from ..playing import Playing, StepPlayer
from ..stream import open_socket
from .connection import Connection, NotSpoken, header_text
from .driver import Amqp010Driver

__all__ = ["PLAYER", "Player"]

_HEADER = b"AMQP\x01\x01\x00\x0a"


class Player(StepPlayer):
    language = LANGUAGE

    def __init__(self, scenario: Scenario, target: Target, **options: Any) -> None:
        super().__init__(scenario, target, **options)
        self.connections: dict[str, Connection] = {}
        self.commands: dict[tuple[str, int], int] = {}  # the next command-id of a session
        self.entities: list[tuple[str, str]] = []

    def close(self) -> None:
        for connection in self.connections.values():
            if connection.alive and connection.server_properties:
                connection.close(timeout=1.0)
            connection.abort()
        self.connections.clear()
        if self.entities:
            Amqp010Driver("0-10").delete(self.target, self.entities, self.timeout)

    # -- where a step acts ---------------------------------------------------------------------

    def _conn(self, args: Mapping[str, Any]) -> Connection:
        return self.connections[str(args["connection"])]

    def _fail(self, step: Step, message: str, expected: OutcomeKind, seen: Outcome | str) -> None:
        observed = seen if isinstance(seen, Outcome) else Outcome(OutcomeKind.REPLY, reply=seen)
        raise self.failed(step, message, Outcome(expected), observed)

    # -- the steps ------------------------------------------------------------------------------

    @handles("connect")
    def _connect(self, step: Step, args: Mapping[str, Any]) -> None:
        if args.get("handshake", True) is False:
            connection = Connection(open_socket(self.target, self.timeout), codec_for("0-10"))
        else:
            try:
                connection = Connection.open(self.target, timeout=self.timeout)
            except NotSpoken as exc:
                self._fail(
                    step, str(exc), OutcomeKind.REPLY, f"answered {header_text(exc.answered)}"
                )
        self.connections[str(args["as"])] = connection
        if "save" in args:
            self.saved[str(args["save"])] = dict(connection.server_properties)

    @handles("send_raw")
    def _send_raw(self, step: Step, args: Mapping[str, Any]) -> None:
        self._conn(args).send(bytes.fromhex(str(args["hex"])))

    @handles("expect_closed")
    def _expect_closed(self, step: Step, args: Mapping[str, Any]) -> None:
        """The socket closes; what came before it is read raw: a protocol header at most (with
        ``no_frames``), the one ``header`` asks for."""
        connection = self._conn(args)
        expected = Outcome(OutcomeKind.SOCKET_CLOSE)
        got = b""
        deadline = time.monotonic() + self.timeout
        closed = False
        while time.monotonic() < deadline:
            try:
                connection.sock.settimeout(max(0.05, deadline - time.monotonic()))
                chunk = connection.sock.recv(65536)
            except TimeoutError:
                break
            except OSError:  # a reset is a close too
                closed = True
                break
            if not chunk:
                closed = True
                break
            got += chunk
            if args.get("or_spoken") and got[:8] == _HEADER:
                break  # it speaks 0-10: its connection.start follows, and the socket stays
        header, rest = (got[:8], got[8:]) if got.startswith(b"AMQP") else (b"", got)
        seen = f"{header_text(header) if header else 'no protocol header'}" + (
            f" and {len(rest)} more octets" if rest else ""
        )
        if args.get("or_spoken") and header == _HEADER:  # it speaks 0-10: the rule is not for it
            self.checked(expected, Outcome(OutcomeKind.REPLY, reply=f"{seen}: it speaks 0-10"))
            return
        kind = OutcomeKind.SOCKET_CLOSE if closed else OutcomeKind.TIMEOUT
        self.checked(expected, Outcome(kind, reply=seen))
        if not closed:
            self._fail(
                step,
                f"the socket stays open ({seen})",
                OutcomeKind.SOCKET_CLOSE,
                "timeout: " + seen,
            )
        if args.get("no_frames") and rest:
            self._fail(
                step,
                f"the peer sent more than a protocol header: {seen}",
                OutcomeKind.SOCKET_CLOSE,
                seen,
            )
        wanted = args.get("header", "any")
        if wanted == "0-10" and header != _HEADER:
            self._fail(
                step, f"0-10's protocol header expected: {seen}", OutcomeKind.SOCKET_CLOSE, seen
            )
        if wanted == "other" and (not header or header == _HEADER):
            self._fail(
                step,
                f"another version's protocol header expected: {seen}",
                OutcomeKind.SOCKET_CLOSE,
                seen,
            )

    @handles("attach")
    def _attach(self, step: Step, args: Mapping[str, Any]) -> None:
        connection, channel = self._conn(args), int(args["channel"])
        problem = connection.open_session(channel, self.timeout)
        if problem is not None:
            self._fail(step, f"the session on channel {channel} was not attached: {problem}",
                       OutcomeKind.REPLY, problem)  # fmt: skip
        self.commands[(str(args["connection"]), channel)] = 0

    @handles("command")
    def _command(self, step: Step, args: Mapping[str, Any]) -> None:
        connection, channel = self._conn(args), int(args["channel"])
        fields = self.resolve(dict(args.get("fields") or {}))
        header = [
            connection.codec.struct(
                str(e["struct"]), **_names(self.resolve(dict(e.get("fields") or {})))
            )
            for e in args.get("header") or ()
        ]
        body = args.get("body")
        data = connection.codec.encode_command(
            str(args["command"]),
            {k.replace("-", "_"): v for k, v in fields.items()},
            channel=channel,
            sync=bool(args.get("sync", False)),
            header=header or None,
            body=None if body is None else self.resolve(str(body)).encode(),
        )
        self.commands[(str(args["connection"]), channel)] += 1
        for key in ("queue", "exchange"):
            name = fields.get(key)
            if str(args["command"]).endswith(".declare") and isinstance(name, str):
                self.entities.append((key, name))
        if not connection.send(data):
            self._fail(
                step,
                f"{args['command']} could not be sent",
                OutcomeKind.REPLY,
                connection.ended or "",
            )

    @handles("await")
    def _await(self, step: Step, args: Mapping[str, Any]) -> None:
        connection, channel = self._conn(args), int(args["channel"])
        seconds = float(args.get("seconds", self.timeout))
        name = str(args["name"])
        got = connection.wait(channel, (name,), seconds)
        if isinstance(got, Outcome):
            self._fail(step, f"{name} expected, got {got}", OutcomeKind.REPLY, got)
        if "save" in args:
            self.saved[str(args["save"])] = got

    @handles("receive")
    def _receive(self, step: Step, args: Mapping[str, Any]) -> None:
        connection, channel = self._conn(args), int(args["channel"])
        seconds = float(args.get("seconds", self.timeout))
        got: list[Any] = []
        for _ in range(int(args["count"])):
            found = connection.wait(channel, ("message.transfer",), seconds)
            if isinstance(found, Outcome):
                self._fail(step, f"{args['count']} transfers expected, {len(got)} came, then "
                           f"{found}", OutcomeKind.REPLY, found)  # fmt: skip
            got.append(found)
        self.saved[str(args["save"])] = got

    @handles("record")
    def _record(self, step: Step, args: Mapping[str, Any]) -> None:
        struct, field = str(args["path"]).rsplit(".", 1)
        values = []
        for transfer in self.saved[str(args["of"])]:
            for entry in transfer.header or ():
                if entry.name == struct:
                    values.append(entry[field])
        self.notes[str(args["as"])] = len(set(values))

    @handles("close")
    def _close(self, step: Step, args: Mapping[str, Any]) -> None:
        self._conn(args).close(timeout=self.timeout)


def _names(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {k.replace("-", "_"): v for k, v in fields.items()}


PLAYER = Playing(Player)
