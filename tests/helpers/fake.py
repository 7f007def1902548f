"""A fake protocol family and its peer, in the test's own process: for unit tests of the engine
(the runner, campaigns, triage, steering) without a broker.

The fake protocol is words in frames: a frame is its channel (2 octets), its size (2 octets)
and ASCII words. A client says ``hello`` on channel 0 and the peer answers ``hello-ok``; on a
channel, ``open``, ``close`` (answered ``close-ok``), ``probe`` (answered ``probe-ok``), and a
case's own words:

* ``ok``: nothing to answer (a valid case; the probe behind it proves the channel lived);
* ``soft N``: the peer closes the channel with code N (``closed N``) and ignores the channel
  until it is opened again;
* ``hard N``: the peer closes the connection with code N (``conn-closed N`` on channel 0);
* ``once``: the peer closes the channel with 406 the first time it hears it, then with 404 (a
  failure that does not happen again: flaky);
* ``hang``: the peer answers nothing more on the connection;
* ``crash``: the peer goes down (every socket closed, no more accepted) until restarted;
* ``ask N``: the peer grants N credit on the channel a moment later (``credit N``); ``ask 0``
  grants none, ever;
* ``use N``: the peer closes the channel with 406 if N is more than it granted there.

A case that waits for the peer (:class:`Awaiting` its credit, then :class:`Using` what it
granted) is how the engine's tests show a case's segments going as the peer answers.

Every layer's object is here, each satisfying its layer's Protocol: the model (:class:`Spec`),
the strategies (:data:`STRATEGIES`: a valid case says ``ok``, an operator per way of going
wrong), the driver (:data:`DRIVING`), and :func:`registered`, which lists them in every
layer's table for the length of a test.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from lxml import etree

from amqpfuzz import strategies as afs
from amqpfuzz.fuzzer.brokers import Target
from amqpfuzz.fuzzer.protocols import (
    Announced,
    ChannelRules,
    ConnectionFailed,
    Driver,
    Name,
    Outcome,
)
from amqpfuzz.fuzzer.protocols import families as driving
from amqpfuzz.fuzzer.protocols.stream import Stream, open_socket
from amqpfuzz.spec import Description, OutcomeKind, Reach, RemoteProtocolError, Scope
from amqpfuzz.spec import registry as specs
from amqpfuzz.spec.protocols import PROTOCOLS, Protocol
from amqpfuzz.strategies import Arm, Built, Case, ErrorCode, Placement, Reaction
from amqpfuzz.strategies.operator import Operator, registrar
from amqpfuzz.strategies.source import Source

__all__ = [
    "CODES",
    "PROTOCOL",
    "Awaiting",
    "FakeBroker",
    "Peer",
    "Spec",
    "Step",
    "Using",
    "registered",
    "word",
]

PROTOCOL = "fake"
CASE_CHANNEL = -1
_HEAD = struct.Struct(">HH")


def word(channel: int, words: str) -> bytes:
    """One frame of the fake protocol."""
    data = words.encode()
    return _HEAD.pack(channel, len(data)) + data


@dataclass(frozen=True, slots=True)
class Frame:
    channel: int
    name: str
    code: int | None = None


class Reader:
    """Frames from a stream in any chunks."""

    def __init__(self) -> None:
        self.buffer = b""

    def feed(self, data: bytes) -> list[Frame]:
        self.buffer += data
        out = []
        while len(self.buffer) >= _HEAD.size:
            channel, size = _HEAD.unpack_from(self.buffer)
            if len(self.buffer) < _HEAD.size + size:
                break
            words = self.buffer[_HEAD.size : _HEAD.size + size].decode("ascii", "replace").split()
            self.buffer = self.buffer[_HEAD.size + size :]
            if not words:
                raise RemoteProtocolError("an empty frame", len(self.buffer), "frame-error")
            code = int(words[1]) if len(words) > 1 and words[1].isdigit() else None
            out.append(Frame(channel, words[0], code))
        return out


# -- the specification layer ------------------------------------------------------------------


class Spec:
    """The fake protocol's whole model."""

    protocol = PROTOCOL

    def inventory(self) -> dict[str, int]:
        return {"words": 9}


class SpecFamily:
    name = "fake"
    title = "a fake protocol"
    model = Spec

    def read(self, protocol: str) -> Spec:
        return _SPEC

    def claims(self, root: etree._Element) -> bool:
        return False

    def read_file(self, path: str) -> Spec:
        raise NotImplementedError("the fake protocol has no files")

    def reach(self, protocol: str) -> Reach:
        return Reach(("fake",), ("fake.ok",), ())

    def column(self, protocol: str, spec_ref: str, reach: Reach) -> str:
        return "fake"

    def rule_text(self, protocol: str, spec_ref: str) -> str | None:
        return None

    def describe(self, spec: Spec) -> Description:
        return Description({"protocol": PROTOCOL, "sources": [], "counts": spec.inventory()})


_SPEC = Spec()

# -- the strategies layer ---------------------------------------------------------------------

_CODES = {
    "not-found": (404, Scope.CHANNEL),
    "precondition-failed": (406, Scope.CHANNEL),
    "frame-error": (501, Scope.CONNECTION),
}


class Codes:
    def names(self, spec: Any) -> frozenset[str]:
        return frozenset(_CODES)

    def code(self, spec: Any, name: str) -> ErrorCode:
        value, scope = _CODES[name]
        return ErrorCode(name, value, scope)


CODES = Codes()


@dataclass(frozen=True, slots=True)
class Step:
    """Words on the case's channel (or on a channel of their own)."""

    words: str
    channel: int = CASE_CHANNEL

    def render(self, channel: int) -> bytes:
        return word(channel if self.channel == CASE_CHANNEL else self.channel, self.words)

    @property
    def label(self) -> str:
        return self.words


@dataclass(frozen=True, slots=True)
class Awaiting:
    """The steps after it go once a frame named ``name`` came on the case's channel (never,
    once the channel was closed)."""

    name: str

    def render(self, channel: int) -> bytes:
        return b""

    @property
    def label(self) -> str:
        return f"await {self.name}"

    def met(self, sent: Sequence[bytes], received: Sequence[Any]) -> bool | None:
        names = [getattr(f, "name", None) for f in received]
        if "closed" in names:
            return None
        return self.name in names


@dataclass(frozen=True, slots=True)
class Using:
    """Uses all the credit the peer granted on the channel (planned: 1)."""

    def render(self, channel: int) -> bytes:
        return word(channel, "use 1")

    @property
    def label(self) -> str:
        return "use the credit"

    def answer(self, channel: int, sent: Sequence[bytes], received: Sequence[Any]) -> bytes:
        credit = max((f.code or 0 for f in received if f.name == "credit"), default=0)
        return word(channel, f"use {credit}")


@dataclass(frozen=True)
class Context:
    spec: Spec
    prefix: str | None


OPERATORS: list[Operator] = []
operator = registrar(OPERATORS, CODES)


@operator(
    "soft-error", "a channel's error", "asks for a channel close 404", ("not-found",), "frame"
)
def _soft(src: Source, ctx: Context) -> Built:
    return Built((Step("soft 404"),), "fake.soft", "closes its channel")


@operator("wrong-code", "a channel's error", "gets 406 where 404 is due", ("not-found",), "frame")
def _wrong(src: Source, ctx: Context) -> Built:
    return Built((Step("soft 406"),), "fake.soft", "closes its channel with another code")


@operator(
    "wrong-once", "a channel's error", "gets 406 where 404 is due, once", ("not-found",), "frame"
)
def _wrong_once(src: Source, ctx: Context) -> Built:
    return Built((Step("once"),), "fake.soft", "closes its channel with another code, once")


@operator("hard-error", "the connection", "asks for a connection close", ("frame-error",), "frame")
def _hard(src: Source, ctx: Context) -> Built:
    return Built((Step("hard 501"),), "fake.hard", "closes its connection")


@operator("hang", "the peer's answers", "makes the peer answer no more", ("not-found",), "frame")
def _hang(src: Source, ctx: Context) -> Built:
    return Built((Step("hang"),), "fake.hang", "the peer stops answering")


@operator("crash", "the peer", "brings the peer down", ("frame-error",), "frame")
def _crash(src: Source, ctx: Context) -> Built:
    return Built((Step("crash"),), "fake.crash", "the peer goes down")


class StrategyFamily:
    name = "fake"
    blob = 8

    def context(
        self, protocol: str, *, frame_max: int | None, prefix: str | None, **options: Any
    ) -> Context:
        return Context(_SPEC, prefix)

    def catalogue(self, protocol: str) -> tuple[Operator, ...]:
        return tuple(OPERATORS)

    def case_methods(self, context: Context) -> tuple[str, ...]:
        return ("fake.ok",)

    def valid(self, context: Context, methods: Sequence[str] | None) -> Callable[[Source], Case]:
        return lambda src: Case((Step("ok"),), Reaction.reply(), "fake.ok", blob=src.data)

    def traffic(self, context: Context) -> tuple[Arm, ...]:
        return ()

    def in_state(self, context: Context) -> Callable[[Source, Case], Case] | None:
        return None


# -- the driving layer ------------------------------------------------------------------------


class Connection(Stream):
    """A client connection of the fake protocol."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__(sock)
        self.reader = Reader()
        self.frame_max = 65535
        self.channel_max = 2047

    @classmethod
    def open(cls, target: Target, timeout: float) -> Connection:
        connection = cls(open_socket(target, timeout))
        connection.send(word(0, "hello"))
        found = connection.wait(0, ("hello-ok",), timeout)
        if isinstance(found, Outcome):
            connection.abort()
            raise ConnectionFailed(f"{target.safe_url}: no hello-ok: {found}")
        return connection

    def _file(self, frame: Any) -> None:
        if frame.name == "conn-closed":
            self._end(Outcome(OutcomeKind.CONNECTION_CLOSE, frame.code))
            return
        if frame.name == "closed":
            self.closed_channels[frame.channel] = Outcome(OutcomeKind.CHANNEL_CLOSE, frame.code)
            self.open_channels.discard(frame.channel)
        self.inbox.setdefault(frame.channel, deque()).append(frame)

    def _stops(self, channel: int, frame: Any) -> Outcome | None:
        if frame.name == "closed":
            return Outcome(OutcomeKind.CHANNEL_CLOSE, frame.code)
        return None

    def close(self, timeout: float = 2.0) -> None:
        self.abort()


class FakeDriver(Driver):
    rules = ChannelRules(control=1, probe_replies=("probe-ok",))

    def connect(self, target: Target, *, timeout: float = 10.0) -> Connection:
        return Connection.open(target, timeout)

    def announced(self, connection: Any) -> Announced:
        return Announced("fake", "1")

    def speaks(self, target: Target, protocol: str, timeout: float) -> str | None:
        return None

    def serves(self, target: Target, timeout: float, probe: str) -> str | None:
        try:
            self.connect(target, timeout=timeout).close()
        except ConnectionFailed as exc:
            return str(exc)
        return None

    def needs_own_connection(self, case: Case) -> bool:
        return case.placement != Placement.OPEN or case.kills_connection

    def own_channel(self, case: Case) -> int:
        return self.rules.control

    def open_channel(self, connection: Any, channel: int) -> bytes:
        return word(channel, "open")

    def close_channel(self, connection: Any, channel: int) -> bytes:
        return word(channel, "close")

    def probe(self, connection: Any, channel: int) -> bytes:
        return word(channel, "probe")

    def echoes(self, case: Case) -> int:
        return 0

    def missing_responses(self, case: Case, frames: list[Any]) -> tuple[str, ...]:
        return ()

    def created(self, case: Case, replies: list[Any], prefix: str) -> Iterable[tuple[str, Name]]:
        return ()

    def delete(
        self, target: Target, names: Iterable[tuple[str, Name]], timeout: float
    ) -> list[Name]:
        return []

    def recorded(self, data: bytes) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        frames = Reader().feed(data)
        steps = tuple(Step(f"{f.name} {f.code}" if f.code is not None else f.name) for f in frames)
        return steps, ()

    def code(self, name: str) -> ErrorCode:
        return CODES.code(_SPEC, name)


class DriverFamily:
    name = "fake"
    player = None
    programs = None
    serving = None

    def driver(self, protocol: str) -> FakeDriver:
        return FakeDriver(protocol)


# -- the peer ---------------------------------------------------------------------------------


class Peer:
    """The fake protocol's peer: a listening socket and a thread per connection."""

    def __init__(self) -> None:
        self.port = 0
        self.down = False
        self.crashed_at: float | None = None
        self.seen: list[str] = []  # every word that came, in order
        self.heard_once = False  # whether ``once`` came already
        self._listener: socket.socket | None = None
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()

    def start(self) -> Peer:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        self.down = False
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/"

    def crash(self) -> None:
        with self._lock:
            self.down = True
            self.crashed_at = time.monotonic()
            closing = [self._listener, *self._sockets] if self._listener else self._sockets
            self._listener = None
            self._sockets = []
        for sock in closing:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                sock, _ = listener.accept()
            except OSError:
                return
            with self._lock:
                if self.down:
                    sock.close()
                    return
                self._sockets.append(sock)
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        reader, errored, hung = Reader(), set[int](), False
        granted: dict[int, int] = {}
        lock = threading.Lock()
        with contextlib.suppress(OSError):
            while not self.down:
                data = sock.recv(65536)
                if not data:
                    return
                for frame in reader.feed(data):
                    self.seen.append(frame.name)
                    if hung or (frame.channel in errored and frame.name != "open"):
                        continue
                    with lock:
                        answer = self._answer(sock, frame, errored)
                    if frame.name in ("ask", "use"):
                        self._credit(sock, lock, frame, granted, errored)
                    if answer == "hang":
                        hung = True
                    elif answer == "stop":
                        return

    def _credit(
        self,
        sock: socket.socket,
        lock: threading.Lock,
        frame: Frame,
        granted: dict[int, int],
        errored: set[int],
    ) -> None:
        """``ask N``: N credit a moment later (so that a case must wait for it); ``use N``:
        the channel closed with 406 if N is more than was granted."""
        channel, count = frame.channel, frame.code or 0
        if frame.name == "use":
            if count > granted.get(channel, 0):
                with lock:
                    sock.sendall(word(channel, "closed 406"))
                errored.add(channel)
            return
        if count == 0:
            return

        def grant() -> None:
            granted[channel] = count
            with lock, contextlib.suppress(OSError):
                sock.sendall(word(channel, f"credit {count}"))

        threading.Timer(0.05, grant).start()

    def _answer(self, sock: socket.socket, frame: Frame, errored: set[int]) -> str:
        name, channel = frame.name, frame.channel
        if name == "hello":
            sock.sendall(word(0, "hello-ok"))
        elif name == "open":
            errored.discard(channel)
        elif name == "close":
            sock.sendall(word(channel, "close-ok"))
        elif name == "probe":
            sock.sendall(word(channel, "probe-ok"))
        elif name == "soft":
            sock.sendall(word(channel, f"closed {frame.code}"))
            errored.add(channel)
        elif name == "once":
            code, self.heard_once = (404 if self.heard_once else 406), True
            sock.sendall(word(channel, f"closed {code}"))
            errored.add(channel)
        elif name == "hard":
            sock.sendall(word(0, f"conn-closed {frame.code}"))
            sock.close()
            return "stop"
        elif name == "crash":
            self.crash()
            return "stop"
        return name if name == "hang" else ""


class FakeBroker:
    """The peer as a throwaway broker: it goes down, and is restarted (on its port)."""

    kind = "fake"

    def __init__(self, peer: Peer) -> None:
        self.peer = peer

    @property
    def crashed(self) -> bool:
        return self.peer.down

    @property
    def crashed_at(self) -> float | None:
        return self.peer.crashed_at

    def log_tail(self, lines: int = 20) -> str:
        return "the fake peer went down"

    def recover(self) -> FakeBroker:
        if self.peer.down:
            self.peer.start()
        return self


# -- every layer's table ----------------------------------------------------------------------


@contextlib.contextmanager
def registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[Peer]:
    """The fake family in every layer's table, and a peer that serves it, for a test."""
    monkeypatch.setitem(PROTOCOLS, PROTOCOL, Protocol(PROTOCOL, "fake", (), "a fake protocol"))
    monkeypatch.setitem(specs.FAMILIES, "fake", SpecFamily())  # type: ignore[index]
    monkeypatch.setitem(afs.FAMILIES, "fake", StrategyFamily())  # type: ignore[index]
    monkeypatch.setitem(driving.FAMILIES, "fake", DriverFamily())  # type: ignore[index]
    driving.driver_for.cache_clear()
    specs.reach.cache_clear()
    peer = Peer().start()
    try:
        yield peer
    finally:
        peer.crash()
        driving.driver_for.cache_clear()
        specs.reach.cache_clear()
