"""The 0-8/0-9/0-9-1 driver: what the engine asks of a protocol, in this family's terms.

A case runs on a channel of its own; behind it goes ``basic.qos`` (synchronous, harmless), whose
``qos-ok`` proves the channel survived, with no waiting for a timeout. A connection of its own
keeps channel 1 open for that probe. The entities a case creates are the queues and exchanges it
declares (read from the bytes it sends) and the queues the broker names for it.

A case on the connection itself runs on one prepared only as far as its operator says (its
stage: nothing sent, the header answered, logged in, or open with a narrow channel-max). Short
of open there is no probe: what the server answers is the case's reaction (a close, or the
handshake going on: see :mod:`.connection`), except that logged in and tuned by the case, the
connection is opened behind it (the target's virtual host), whose answer then is the proof.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable, Iterator
from typing import Any

from amqpfuzz.spec import OutcomeKind, RemoteProtocolError
from amqpfuzz.spec.amqp091 import Constant
from amqpfuzz.spec.amqp091.codec import Frame, MethodFrame, codec_for
from amqpfuzz.spec.protocols import extension_of
from amqpfuzz.strategies import Case, Placement
from amqpfuzz.strategies.amqp091 import WireFrame
from amqpfuzz.strategies.amqp091.context import CODES
from amqpfuzz.strategies.amqp091.operators.handshake import NARROW, STAGES, Stage

from ...brokers import Target
from ..driver import ChannelRules, Driver
from ..outcome import (
    Announced,
    AuthenticationFailed,
    ConnectionFailed,
    Name,
    Outcome,
    Unreachable,
    text,
)
from .connection import Connection
from .names import created_names, names_a_queue_itself, ours

__all__ = ["Amqp091Driver"]

_FRAME_HEADER = struct.Struct(">BHI")
# a case's stage where its operator names none: by where it is placed
_PLACED = {Placement.HEADER: Stage.HEADER, Placement.START: Stage.START}
# what the server's answer to a case on a connection prepared so far is (for a hang's words)
_ANSWERS = {
    Stage.HEADER: ("connection.start",),
    Stage.START: ("connection.secure", "connection.tune"),
    Stage.TUNE: ("connection.open-ok",),
}


def _wire_steps(case: Case) -> Iterator[WireFrame]:
    return (step for step in case.steps if isinstance(step, WireFrame))


def _gone(case: Case, replies: list[Any]) -> set[tuple[str, Name]]:
    """What a case's valid frames declared exclusive (it goes with its connection) and, when
    every deletion it sent was answered, what they deleted."""
    gone: set[tuple[str, Name]] = set()
    deleted: list[tuple[str, Name]] = []
    for frame in case.frames:
        if not isinstance(frame, MethodFrame):
            continue
        values = dict(zip((f.name for f in frame.method.fields), frame.values, strict=False))
        kind = frame.method.class_name
        if frame.method.name == "declare" and kind == "queue" and values.get("exclusive"):
            gone.add(("queue", values.get("queue", "")))
        elif frame.method.name == "delete" and kind in ("queue", "exchange"):
            deleted.append((kind, values.get(kind, "")))
    answered = [f.name for f in replies if isinstance(f, MethodFrame)]
    for kind in ("queue", "exchange"):
        sent = [d for d in deleted if d[0] == kind]
        if sent and answered.count(f"{kind}.delete-ok") >= len(sent):
            gone.update(sent)
    return gone


def _has_no_wait(frame: Frame) -> bool:
    return isinstance(frame, MethodFrame) and any(
        f.name in ("no-wait", "nowait") and v
        for f, v in zip(frame.method.fields, frame.values, strict=False)
    )


class Amqp091Driver(Driver):
    rules = ChannelRules(control=1, probe_replies=("basic.qos-ok",))

    def __init__(self, protocol: str) -> None:
        super().__init__(protocol)
        # the protocol's extension, where it has one, reads all it does and what a broker
        # that speaks it says (RabbitMQ's confirm.select-ok, basic.nack)
        self.codec = codec_for(extension_of(protocol))
        self.spec = self.codec.spec
        # per target, once a spare's handshake told its limits: the whole handshake's bytes
        self._handshakes: dict[Target, tuple[bytes, int, int]] = {}

    # -- negotiation -------------------------------------------------------------------------

    def connect(self, target: Target, *, timeout: float = 10.0) -> Connection:
        return Connection.open(target, protocol=self.protocol, timeout=timeout)

    def announced(self, connection: Any) -> Announced:
        return Announced.of(connection.server_properties)

    def speaks(self, target: Target, protocol: str, timeout: float) -> str | None:
        try:
            Connection.open(target, protocol=protocol, timeout=timeout).close()
        except ConnectionFailed as exc:
            return f"the target does not speak AMQP {protocol}: {exc}"
        return None

    # -- running cases -----------------------------------------------------------------------

    def spare(self, target: Target, timeout: float, stage: str | None = None) -> Connection:
        """After the first, a spare's handshake in two writes and two round trips
        (:meth:`Connection.open_pipelined`): many spares a second cost the broker, and us,
        less. A broker whose limits changed gets the handshake step by step again."""
        if stage is not None:
            return Connection.prepared(
                target,
                Stage(stage),
                protocol=self.protocol,
                timeout=timeout,
                control=self.rules.control,
                narrow=NARROW,
            )
        known = self._handshakes.get(target)
        if known is not None:
            data, frame_max, channel_max = known
            try:
                return Connection.open_pipelined(
                    target,
                    data,
                    protocol=self.protocol,
                    timeout=timeout,
                    frame_max=frame_max,
                    channel_max=channel_max,
                )
            except (Unreachable, AuthenticationFailed):
                raise
            except ConnectionFailed:
                self._handshakes.pop(target, None)
        connection = super().spare(target, timeout)
        assert isinstance(connection, Connection)
        data = Connection.handshake_bytes(
            self.codec, target, connection.frame_max, connection.channel_max
        )
        self._handshakes[target] = (data, connection.frame_max, connection.channel_max)
        return connection

    def stage(self, case: Case) -> str | None:
        """How far a case's connection is prepared: its operator's stage (a case on the
        connection itself), else by its placement (a header, or connection.start, first)."""
        found = STAGES.get(case.operator or "") or _PLACED.get(case.placement)
        return None if found is None else found.value

    def needs_own_connection(self, case: Case) -> bool:
        """Cases that end a connection, or that need channel 0 or a channel not open, or a
        connection prepared only so far, get one; so does a declaration of a queue the broker
        names, whose name only its reply tells: on a shared connection that another case ends
        first, the reply may never come."""
        if case.placement in (Placement.CLOSED, Placement.NONE) or case.kills_connection:
            return True
        if self.stage(case) is not None or case.expected.outcome == OutcomeKind.SOCKET_CLOSE:
            return True
        if any(not (isinstance(c, Constant) and c.is_soft_error) for c in case.expected.tolerated):
            return True
        return names_a_queue_itself(self.spec, self.codec.frame_method, _wire_steps(case))

    def own_channel(self, case: Case) -> int:
        """The control channel if the case needs an open one, the next (not open) otherwise."""
        control = self.rules.control
        return control if case.placement in (Placement.OPEN, Placement.FRESH) else control + 1

    def open_channel(self, connection: Any, channel: int) -> bytes:
        """Nothing on a connection not yet open (a probe there is the handshake's answer)."""
        if getattr(connection, "stage", None) in _ANSWERS:
            return b""
        return self._frame("channel.open", channel)

    def close_channel(self, connection: Any, channel: int) -> bytes:
        return self._frame("channel.close", channel)

    def probe(self, connection: Any, channel: int) -> bytes:
        """``basic.qos``; on a connection prepared only to the tune, whose case tuned it, the
        opening of the target's virtual host (``open-ok`` is the proof); short of that,
        nothing (the server's answer to the case is)."""
        stage = getattr(connection, "stage", None)
        if stage == Stage.TUNE:
            return self.codec.encode(
                self.codec.method("connection.open", 0, virtual_host=connection.vhost)
            )
        if stage in _ANSWERS:
            return b""
        return self._frame("basic.qos", channel)

    @functools.lru_cache(maxsize=8192)  # noqa: B019 (one driver per protocol, for the process)
    def _frame(self, method: str, channel: int) -> bytes:
        """A method with plain arguments (a close's reply code 200), encoded once per channel:
        every case needs a few of them."""
        arguments = {"reply_code": 200} if method.endswith(".close") else {}
        return self.codec.encode(self.codec.method(method, channel, **arguments))

    def probes(self, case: Case) -> bool:
        """No probe behind valid traffic on a channel of its own that ends with a synchronous
        request: its answer is the proof (RabbitMQ wants a commit answered before the
        channel's next command, the probe included)."""
        return self._last(case) is None

    def answers(self, case: Case) -> tuple[str, ...]:
        stage = self.stage(case)
        if stage in _ANSWERS:
            return _ANSWERS[Stage(stage)]
        last = self._last(case)
        if last is None:
            return self.rules.probe_replies
        return tuple(f"{last.method.class_name}.{r}" for r in last.method.responses)

    def _last(self, case: Case) -> MethodFrame | None:
        """A valid fresh-channel case's last frame, if it is a synchronous request answered
        with no content (after content, or deliveries, there is more to wait for)."""
        if case.operator is not None or case.placement != Placement.FRESH or not case.frames:
            return None
        last = case.frames[-1]
        if not isinstance(last, MethodFrame) or not last.method.responses or _has_no_wait(last):
            return None
        answers = [self.spec.method(f"{last.method.class_name}.{r}") for r in last.method.responses]
        return None if any(a.content for a in answers) or last.name == "basic.consume" else last

    def echoes(self, case: Case) -> int:
        """How many answers like the one awaited the case itself asks for before: its own
        ``basic.qos`` (the probe's answer), or its earlier requests answered like its last."""
        answers = set(self.answers(case))
        frames = case.frames[:-1] if self._last(case) is not None else case.frames
        return sum(
            1
            for f in frames
            if isinstance(f, MethodFrame)
            and answers & {f"{f.method.class_name}.{r}" for r in f.method.responses}
            and not _has_no_wait(f)
        )

    def missing_responses(self, case: Case, frames: list[Any]) -> tuple[str, ...]:
        """The responses (one of them is due) of the first synchronous method unanswered."""
        if case.operator is not None:
            return ()
        got = {f.name for f in frames if isinstance(f, MethodFrame)}
        for frame in case.frames:
            if (
                isinstance(frame, MethodFrame)
                and frame.method.responses
                and not _has_no_wait(frame)
            ):
                wanted = tuple(f"{frame.method.class_name}.{r}" for r in frame.method.responses)
                if not set(wanted) & got:
                    return wanted
        return ()

    def recorded(self, data: bytes) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """Whole frames become frames again (a protocol header, or what does not end as a
        frame, stays as it is)."""
        steps: list[WireFrame] = []
        at = 0
        while at < len(data):
            if data.startswith(b"AMQP", at):
                steps.append(WireFrame(0, 0, b"", verbatim=data[at : at + 8]))
                at += 8
                continue
            whole = at + 7 <= len(data)
            kind, channel, size = _FRAME_HEADER.unpack_from(data, at) if whole else (0, 0, -1)
            end = at + 7 + size
            if size < 0 or end >= len(data) or data[end] != self.codec.frame_end:
                steps.append(WireFrame(0, 0, b"", verbatim=data[at:]))
                break
            steps.append(WireFrame(kind, channel, data[at + 7 : end]))
            at = end + 1
        try:
            frames = tuple(self.codec.reader().feed(data))
        except RemoteProtocolError:  # a malformed case: it is owed no responses
            frames = ()
        return tuple(steps), frames

    # -- what a case created -----------------------------------------------------------------

    def created(self, case: Case, replies: list[Any], prefix: str) -> Iterable[tuple[str, Name]]:
        """The queues and exchanges of the declarations ``case`` sent that carry the run's
        prefix (as sent: a lenient broker creates a broken name), and the queues the broker
        named in answer to its declarations; but the exclusive queues valid traffic declared
        (they go with their connection) and what it deleted itself, answered."""
        gone = _gone(case, replies)
        for kind, name in created_names(self.spec, self.codec.frame_method, _wire_steps(case)):
            if ours(name, prefix) and (kind, name) not in gone:
                yield kind, name
        for frame in replies:
            if isinstance(frame, MethodFrame) and frame.name == "queue.declare-ok":
                queue = text(frame.arguments.get("queue"))
                if queue.startswith("amq.gen"):
                    yield "queue", queue  # the answer to our declare

    def delete(
        self, target: Target, names: Iterable[tuple[str, Name]], timeout: float
    ) -> list[Name]:
        """Text names together on one connection; a name that is not UTF-8 alone on one (the
        broker may quote it back in a close whose text cannot be read, which ends the
        connection)."""
        todo = sorted(set(names), key=repr)
        left: list[Name] = []
        plain: list[tuple[str, Name]] = [(k, n) for k, n in todo if isinstance(n, str)]
        groups = [plain] if plain else []
        groups += [[(kind, name)] for kind, name in todo if isinstance(name, bytes)]
        for group in groups:
            queues = [name for kind, name in group if kind == "queue"]
            exchanges = [name for kind, name in group if kind == "exchange"]
            try:
                connection = self.connect(target, timeout=timeout)
            except ConnectionFailed:
                left += queues + exchanges
                continue
            left += connection.delete_entities(queues, exchanges, timeout=timeout)
            connection.close()
        return left

    # -- conformance and replays -------------------------------------------------------------

    def code(self, name: str) -> Constant:
        return CODES.code(self.spec, name)

    def serves(self, target: Target, timeout: float, probe: str) -> str | None:
        """The broker accepts a connection and declares the exclusive queue ``probe`` (which
        goes with the connection)."""
        try:
            connection = self.connect(target, timeout=timeout)
        except ConnectionFailed as exc:
            return str(exc)
        try:
            problem = connection.open_channel(1, timeout)
            if problem is None:
                declare = self.codec.method("queue.declare", 1, queue=probe, exclusive=True)
                reply = connection.call(declare, timeout)
                problem = reply if isinstance(reply, Outcome) else None
        finally:
            connection.close(timeout=1.0)
        return None if problem is None else f"a probe after it got {problem}"
