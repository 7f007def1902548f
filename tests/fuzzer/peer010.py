"""A scripted 0-10 peer for the client side of the handshake: a codec-level test double, not a
broker (no 0-10 broker is packaged here).

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
    """What the peer answers with, and what it read from the client (frames by channel)."""

    answer: bytes = HEADER  # the protocol header it answers with
    close_after_header: bool = False  # another version's header: then close (or not)
    mechanisms: list[str] = field(default_factory=lambda: ["PLAIN", "ANONYMOUS"])
    channel_max: int = 256
    max_frame_size: int = 4096
    received: list[tuple[int, int, int, bytes]] = field(default_factory=list)
    header: bytes = b""
    ended: str = ""  # how the client's side ended, when it went before the script's end


def _read(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def _frames(conn: socket.socket) -> Iterator[tuple[int, int, int, bytes]]:
    """(channel, class code, code, fields) of each whole control the client sends."""
    while True:
        head = _read(conn, 12)
        size = struct.unpack(">H", head[2:4])[0]
        channel = struct.unpack(">H", head[6:8])[0]
        payload = _read(conn, size - 12)
        yield channel, payload[0], payload[1], payload[2:]


def _play(conn: socket.socket, script: Script) -> None:
    script.header = _read(conn, 8)
    if script.answer != HEADER:
        conn.sendall(script.answer)
        if script.close_after_header:
            return
        conn.recv(1)  # keeps the socket open until the client gives up
        return
    conn.sendall(HEADER + start(script.mechanisms))
    for channel, class_code, code, fields in _frames(conn):
        script.received.append((channel, class_code, code, fields))
        if (class_code, code) == (CONNECTION, 2):  # start-ok
            conn.sendall(tune(script.channel_max, script.max_frame_size))
        elif (class_code, code) == (CONNECTION, 7):  # open
            conn.sendall(OPEN_OK)
        elif (class_code, code) == (SESSION, 1):  # attach: name is field 0, a vbin16
            name = fields[2 : 4 + struct.unpack(">H", fields[2:4])[0]]
            conn.sendall(control(SESSION, 2, 0b1, name, channel))
        elif (class_code, code) == (SESSION, 3):  # detach: attached's name, code normal
            name = fields[2 : 4 + struct.unpack(">H", fields[2:4])[0]]
            conn.sendall(control(SESSION, 4, 0b11, name + b"\x00", channel))
        elif (class_code, code) == (CONNECTION, 11):  # close
            conn.sendall(CLOSE_OK)
            return


@contextmanager
def scripted(script: Script) -> Iterator[int]:
    """A peer on a free loopback port playing ``script`` for one connection: the port."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(10)

    def serve() -> None:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        with conn:
            try:
                _play(conn, script)
            except (EOFError, OSError) as exc:  # the client went: the script ends with it
                script.ended = repr(exc)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        server.close()
        thread.join(10)
