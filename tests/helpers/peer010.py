"""A scripted 0-10 peer for the client side of the handshake and, in its ``sessions`` mode, for
the campaign path: a codec-level test double, not a broker (no 0-10 broker is packaged here).

Its bytes are written out by hand from the layout the 0-10 specification gives, not made by
amqpfuzz's encoder: a frame is a 12-octet header (octet 0: version 0 and the flags first-segment
0x08, last-segment 0x04, first-frame 0x02, last-frame 0x01; octet 1: the segment type, 0 for a
control; octets 2-3: the frame size, header included; octet 5: the track, 0 for controls;
octets 6-7: the channel; the rest reserved, zero) and its payload. A control's payload is its
class code, its code, two octets of packing flags (bit i of octet i // 8 for field i) and the
fields present, in order. A map is a 4-octet size, a 4-octet count and entries (a str8 key, a
type code, the value); an array a 4-octet size, the element type code, a 4-octet count and the
elements; str16 (code 0x95) a 2-octet length and UTF-8; vbin16 a 2-octet length; vbin32 4.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

HEADER = b"AMQP\x01\x01\x00\x0a"
CONNECTION, SESSION = 1, 2


def frame(payload: bytes, channel: int = 0, segment_type: int = 0, track: int = 0) -> bytes:
    return (
        bytes((0x0F, segment_type))
        + struct.pack(">H", 12 + len(payload))
        + bytes((0, track))
        + struct.pack(">H", channel)
        + b"\x00" * 4
        + payload
    )


def control(class_code: int, code: int, flags: int, fields: bytes, channel: int = 0) -> bytes:
    return frame(bytes((class_code, code)) + struct.pack("<H", flags) + fields, channel)


def str16(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">H", len(data)) + data


def str8(text: str) -> bytes:
    data = text.encode()
    return bytes((len(data),)) + data


def vbin16(data: bytes) -> bytes:
    return struct.pack(">H", len(data)) + data


def str16_array(items: list[str]) -> bytes:
    body = bytes((0x95,)) + struct.pack(">I", len(items)) + b"".join(str16(i) for i in items)
    return struct.pack(">I", len(body)) + body


def str16_map(entries: dict[str, str]) -> bytes:
    body = struct.pack(">I", len(entries)) + b"".join(
        str8(k) + bytes((0x95,)) + str16(v) for k, v in entries.items()
    )
    return struct.pack(">I", len(body)) + body


def start(mechanisms: list[str]) -> bytes:
    """connection.start: server-properties, mechanisms, locales (fields 0, 1, 2)."""
    fields = (
        str16_map({"product": "scripted", "version": "0.10"})
        + str16_array(mechanisms)
        + str16_array(["en_US"])
    )
    return control(CONNECTION, 1, 0b111, fields)


def tune(channel_max: int, max_frame_size: int) -> bytes:
    """connection.tune: channel-max and max-frame-size (fields 0 and 1), uint16 each."""
    return control(CONNECTION, 5, 0b11, struct.pack(">HH", channel_max, max_frame_size))


OPEN_OK = control(CONNECTION, 8, 0, b"")
CLOSE_OK = control(CONNECTION, 12, 0, b"")


@dataclass
class Script:
    """What the peer answers with, and what it read from the client (frames by channel).

    With ``sessions`` it serves every connection made to it (each in a thread of its own) and
    plays a small, sloppy 0-10 server: it checks what it can check by hand and nothing more
    (see :func:`_serve`)."""

    answer: bytes = HEADER  # the protocol header it answers with
    close_after_header: bool = False  # another version's header: then close (or not)
    mechanisms: list[str] = field(default_factory=lambda: ["PLAIN", "ANONYMOUS"])
    channel_max: int = 256
    max_frame_size: int = 4096
    received: list[tuple[int, int, int, bytes]] = field(default_factory=list)
    header: bytes = b""
    ended: str = ""  # how the client's side ended, when it went before the script's end
    sessions: bool = False
    connections: int = 0  # how many the peer accepted


def _read(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def _frames(conn: socket.socket) -> Iterator[tuple[bytes, bytes | None]]:
    """Each frame's 12-octet header and its payload (None, and the end, for a size under 12)."""
    while True:
        head = _read(conn, 12)
        size = struct.unpack(">H", head[2:4])[0]
        if size < 12:
            yield head, None
            return
        yield head, _read(conn, size - 12)


def _play(conn: socket.socket, script: Script) -> None:
    script.header = _read(conn, 8)
    if script.answer != HEADER or (script.sessions and script.header != HEADER):
        conn.sendall(HEADER if script.sessions else script.answer)
        if script.close_after_header or script.sessions:
            return
        conn.recv(1)  # keeps the socket open until the client gives up
        return
    conn.sendall(HEADER + start(script.mechanisms))
    server = _Server(conn, script)
    for head, payload in _frames(conn):
        channel = struct.unpack(">H", head[6:8])[0]
        if payload is not None and len(payload) >= 2:
            script.received.append((channel, payload[0], payload[1], payload[2:]))
        if script.sessions and server.refuses(head, payload):
            return
        assert payload is not None
        if len(payload) < 2:  # no class and code: a command-invalid, when the peer reads it
            if script.sessions:
                server.take(channel, head, payload)
            continue
        class_code, code, fields = payload[0], payload[1], payload[2:]
        if head[1] == 0 and (class_code, code) == (CONNECTION, 2):  # start-ok
            conn.sendall(tune(script.channel_max, script.max_frame_size))
        elif head[1] == 0 and (class_code, code) == (CONNECTION, 7):  # open
            conn.sendall(OPEN_OK)
        elif head[1] == 0 and (class_code, code) == (CONNECTION, 11):  # close
            conn.sendall(CLOSE_OK)
            return
        elif script.sessions and head[0] & FIRST_FRAME and head[0] & LAST_FRAME:
            server.take(channel, head, payload)  # (a segment over several frames: not read)
        elif (class_code, code) == (SESSION, 1):  # attach: name is field 0, a vbin16
            name = fields[2 : 4 + struct.unpack(">H", fields[2:4])[0]]
            conn.sendall(control(SESSION, 2, 0b1, name, channel))
        elif (class_code, code) == (SESSION, 3):  # detach: attached's name, code normal
            name = fields[2 : 4 + struct.unpack(">H", fields[2:4])[0]]
            conn.sendall(control(SESSION, 4, 0b11, name + b"\x00", channel))


FIRST_SEGMENT, LAST_SEGMENT, FIRST_FRAME, LAST_FRAME = 0x08, 0x04, 0x02, 0x01
NOT_ATTACHED, UNKNOWN_IDS, TRANSPORT_BUSY = 3, 4, 2
EXECUTION, MESSAGE, TRANSFER = 3, 4, 1
CLASSES = range(1, 11)  # connection .. stream


def _vbin16_at(fields: bytes) -> bytes:
    """The first field (a vbin16, after two octets of packing flags)."""
    size = struct.unpack(">H", fields[2:4])[0]
    return fields[4 : 4 + size]


class _Server:
    """The sessions mode's server side of one connection. By hand it checks: the frame header
    (size, version and reserved bits, segment type, track, a control on the command track),
    frames that contradict their segment (a continuation without a first frame, a new segment
    inside one), a command or session control on a channel with no session (detached
    not-attached), a command before command-point (detached unknown-ids), a second attach on a
    busy channel (detached transport-busy), a class code no class has (execution.exception
    not-implemented), a header or body after a command other than message.transfer
    (command-invalid). A command with the sync bit is answered by session.completed. It reads
    no command's arguments, so it accepts what only a decoder would refuse: sloppy on purpose."""

    def __init__(self, conn: socket.socket, script: Script) -> None:
        self.conn = conn
        self.script = script
        self.attached: dict[int, bytes] = {}
        self.pointed: set[int] = set()
        self.next_id: dict[int, int] = {}
        self.pending: dict[int, tuple[int, int, bool]] = {}  # a command awaiting its segments
        self.in_segment: set[int] = set()  # tracks whose segment has not had its last frame

    def refuses(self, head: bytes, payload: bytes | None) -> bool:
        """A frame that cannot be read: connection.close framing-error (501), and the end."""
        flags, kind, track = head[0], head[1], head[5] & 0x0F
        broken = (
            payload is None
            or flags & 0xF0
            or head[4]
            or head[5] & 0xF0
            or head[8:12] != bytes(4)
            or kind > 3
            or track > 1
            or (kind == 0) != (track == 0)
            or bool(flags & FIRST_FRAME) == (track in self.in_segment)
        )
        if not broken:
            if flags & LAST_FRAME:
                self.in_segment.discard(track)
            else:
                self.in_segment.add(track)
            return False
        close = control(CONNECTION, 11, 0b11, struct.pack(">H", 501) + str8("framing error"))
        self.conn.sendall(close)
        self._drain()
        return True

    def _drain(self) -> None:
        """Read what the client still sends (its close-ok) until it closes, or a second
        passes: a socket closed with unread octets is reset, and the close lost with it."""
        self.conn.settimeout(1.0)
        try:
            while self.conn.recv(4096):
                pass
        except TimeoutError:
            pass

    def take(self, channel: int, head: bytes, payload: bytes) -> None:
        kind, flags = head[1], head[0]
        if kind == 0 and len(payload) >= 2:
            self._control(channel, payload[0], payload[1], payload[2:])
        elif kind == 0:
            return
        elif channel not in self.attached:
            self._detached(channel, b"", NOT_ATTACHED)
        elif channel not in self.pointed:
            self._detached(channel, self.attached.pop(channel), UNKNOWN_IDS)
        elif kind == 1:
            self._command(channel, payload, flags)
        else:  # a header or body segment
            class_code, code, sync = self.pending.get(channel, (0, 0, False))
            if (class_code, code) != (MESSAGE, TRANSFER):
                self._exception(channel, 503, "a segment after a command that takes none")
            elif flags & LAST_SEGMENT:
                self.pending.pop(channel)
                self._complete(channel, sync)

    def _control(self, channel: int, class_code: int, code: int, fields: bytes) -> None:
        if class_code != SESSION:
            return
        if code == 1:  # attach
            name = _vbin16_at(fields)
            if channel in self.attached:
                self._detached(channel, name, TRANSPORT_BUSY)
                return
            self.attached[channel] = name
            self.next_id[channel] = 0
            self.send(control(SESSION, 2, 0b1, vbin16(name), channel))
        elif code == 3:  # detach
            name = self.attached.pop(channel, _vbin16_at(fields))
            self.pointed.discard(channel)
            self.send(control(SESSION, 4, 0b11, vbin16(name) + b"\x00", channel))
        elif code == 4:  # the client's detached, in answer to ours
            return
        elif channel not in self.attached:
            self._detached(channel, b"", NOT_ATTACHED)
        elif code == 7:  # command-point
            self.pointed.add(channel)

    def _command(self, channel: int, payload: bytes, flags: int) -> None:
        self.next_id[channel] += 1
        if len(payload) < 4:
            self._exception(channel, 503, "no session header")
            return
        class_code, code, sync = payload[0], payload[1], bool(payload[3] & 1)
        if class_code not in CLASSES:
            self._exception(channel, 540, f"no class {class_code}")
        elif not flags & LAST_SEGMENT:
            self.pending[channel] = (class_code, code, sync)
        else:
            self._complete(channel, sync)

    def _complete(self, channel: int, sync: bool) -> None:
        if sync:  # session.completed: the commands so far, a sequence-set (field 0)
            done = struct.pack(">HII", 8, 0, self.next_id[channel] - 1)
            self.send(control(SESSION, 0x0A, 0b1, done, channel))

    def _exception(self, channel: int, error_code: int, text: str) -> None:
        """execution.exception (error-code, command-id, description: fields 0, 1, 5), then the
        session's detach."""
        fields = struct.pack("<H", 0b100011) + struct.pack(
            ">HI", error_code, self.next_id[channel] - 1
        )
        payload = bytes((EXECUTION, 3)) + b"\x01\x00" + fields + str16(text)
        self.send(frame(payload, channel, segment_type=1, track=1))
        self.send(control(SESSION, 3, 0b1, vbin16(self.attached.pop(channel)), channel))
        self.pointed.discard(channel)

    def _detached(self, channel: int, name: bytes, code: int) -> None:
        self.pointed.discard(channel)
        self.send(control(SESSION, 4, 0b11, vbin16(name) + bytes((code,)), channel))

    def send(self, data: bytes) -> None:
        self.conn.sendall(data)


@contextmanager
def scripted(script: Script) -> Iterator[int]:
    """A peer on a free loopback port playing ``script`` for one connection (with
    ``sessions``, for every connection made until the block ends): the port."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)  # so that the block's end is seen soon
    threads: list[threading.Thread] = []
    ended = threading.Event()
    patience = time.monotonic() + 10  # for the one connection of the handshake scripts

    def play(conn: socket.socket) -> None:
        with conn:
            try:
                _play(conn, script)
            except (EOFError, OSError) as exc:  # the client went: the script ends with it
                script.ended = repr(exc)

    def serve() -> None:
        while not ended.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                if script.sessions or time.monotonic() < patience:
                    continue
                return
            except OSError:  # closed at the block's end
                return
            conn.settimeout(None)
            script.connections += 1
            if not script.sessions:
                play(conn)
                return
            thread = threading.Thread(target=play, args=(conn,), daemon=True)
            threads.append(thread)
            thread.start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        ended.set()
        thread.join(10)
        server.close()
        for each in threads:
            each.join(10)
