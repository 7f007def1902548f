"""The steps of 0-10 scenario files: their language (:data:`STEPS010`) and its checks.

A 0-10 file encodes a rule of the 0-10 preview with the steps a client takes over a raw 0-10
connection. Conventions:

* ``connection`` names a connection opened by ``connect`` (``handshake: false``: the socket
  alone, nothing sent); ``channel`` a session attached on it by ``attach``.
* ``send_raw`` writes octets as they are (``hex``); ``expect_closed`` checks that the peer
  closed the socket, having sent nothing (``no_frames``: a protocol header at most) and
  answered with the ``header`` asked for (``0-10``, ``other``: any other version's, ``any``).
* ``command`` sends one command of the specification by its qualified name with ``fields``
  (names as the XML writes them; enum fields by their choice names), the structs of its
  ``header`` segment (each ``{struct: message.delivery-properties, fields: {...}}``), its
  ``body`` (text) and the ``sync`` bit; entity names start with ``${prefix}``.
* ``await`` reads the peer's next control or command of that name on the session; ``receive``
  the next ``count`` message transfers, bound to ``save``; ``record`` notes how many
  distinct values a field of the saved transfers' header structs took (``path``:
  ``message.delivery-properties.priority``).

A file whose steps only connect without a handshake, send raw octets and expect the close
exchanges no more than protocol headers: it runs on any target, whatever it speaks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from amqpfuzz.spec.amqp010 import Spec010

from .steps10 import StepChecker10
from .vocabulary import StepKind

__all__ = ["HEADERS", "NEGOTIATION", "STEPS010", "StepChecker010"]

HEADERS = ("0-10", "other", "any")
# the steps of a file that exchanges protocol headers only
NEGOTIATION = ("connect", "send_raw", "expect_closed")

STEPS010: Mapping[str, StepKind] = {
    kind.name: kind
    for kind in (
        StepKind("connect", "open connection `as`: the 0-10 handshake (or, with `handshake: "
                 "false`, the socket alone); the peer's server-properties bound to `save`",
                 ("as",), ("handshake", "save")),
        StepKind("send_raw", "write the octets `hex` on `connection`", ("connection", "hex"),
                 capability="raw-bytes"),
        StepKind("expect_closed", "the peer closes the socket (`no_frames`: having sent no more "
                 "than a protocol header; `header`: it answered with 0-10's, another's, any; "
                 "`or_spoken`: unless it answered with the 0-10 header, speaking 0-10)",
                 ("connection",), ("no_frames", "header", "or_spoken")),
        StepKind("attach", "attach a session on `channel`, its attached awaited",
                 ("connection", "channel")),
        StepKind("command", "send `command` with `fields`, a `header` segment of structs, a "
                 "`body`, the `sync` bit", ("connection", "channel", "command"),
                 ("fields", "header", "body", "sync")),
        StepKind("await", "the peer's next `name` (a control or command) on the session, "
                 "within `seconds`, bound to `save`", ("connection", "channel", "name"),
                 ("seconds", "save")),
        StepKind("receive", "the next `count` message transfers on the session, bound to "
                 "`save`", ("connection", "channel", "count", "save"), ("seconds",)),
        StepKind("record", "note `as` how many distinct values `path` took in the saved "
                 "transfers `of`", ("as", "of", "path")),
        StepKind("close", "close the connection politely", ("connection",)),
    )
}  # fmt: skip


def _spec() -> Spec010:
    from amqpfuzz.spec import load

    spec = load("0-10")
    assert isinstance(spec, Spec010)
    return spec


class StepChecker010(StepChecker10):
    """Checks a 0-10 file's steps: names bound before use, commands, fields and structs
    known to the specification."""

    language = STEPS010
    protocol = "0-10"

    def _connect(self, args: Mapping[str, Any], at: int) -> None:
        super()._connect(args, at)
        if not isinstance(args.get("handshake", True), bool):
            self.fail(at, "handshake is true or false")

    def _send_raw(self, args: Mapping[str, Any], at: int) -> None:
        self._connection(args, at)
        try:
            bytes.fromhex(str(args["hex"]))
        except ValueError:
            self.fail(at, f"hex is octets in hexadecimal, not {args['hex']!r}")

    def _expect_closed(self, args: Mapping[str, Any], at: int) -> None:
        self._connection(args, at)
        if args.get("header", "any") not in HEADERS:
            self.fail(at, f"header is one of {', '.join(HEADERS)}")

    def _attach(self, args: Mapping[str, Any], at: int) -> None:
        if not isinstance(args["channel"], int) or not 0 < args["channel"] <= 0xFFFF:
            self.fail(at, "channel is a number from 1 to 65535")
        self.sessions.add((self._connection(args, at), args["channel"]))

    def _command(self, args: Mapping[str, Any], at: int) -> None:
        self._session(args, at)
        spec = _spec()
        name = str(args["command"])
        try:
            command = spec.command(name)
        except KeyError:
            self.fail(at, f"{name!r} is not a command of 0-10")
        self._fields(name, {f.name for f in command.fields}, args.get("fields") or {}, at)
        for entry in args.get("header") or ():
            if not isinstance(entry, Mapping) or "struct" not in entry:
                self.fail(at, "a header entry is {struct: class.name, fields: {...}}")
            try:
                struct = spec.struct(str(entry["struct"]))
            except KeyError:
                self.fail(at, f"{entry['struct']!r} is not a struct of 0-10")
            names = {f.name for f in struct.fields}
            self._fields(str(entry["struct"]), names, entry.get("fields") or {}, at)

    def _fields(self, owner: str, names: set[str], fields: Any, at: int) -> None:
        if not isinstance(fields, Mapping):
            self.fail(at, f"the fields of {owner} are a mapping")
        for key in fields:
            if key not in names:
                self.fail(at, f"{owner} has no field {key!r}; its fields are "
                          f"{', '.join(sorted(names))}")  # fmt: skip

    def _await(self, args: Mapping[str, Any], at: int) -> None:
        self._session(args, at)
        spec = _spec()
        name = str(args["name"])
        known = {m.qualified for m in (*spec.controls, *spec.commands)}
        if name not in known:
            self.fail(at, f"{name!r} is not a control or command of 0-10")
        self._save(args)

    def _receive(self, args: Mapping[str, Any], at: int) -> None:
        self._session(args, at)
        self.needs.setdefault("consumer", at)
        if not isinstance(args["count"], int) or args["count"] < 1:
            self.fail(at, "count is a number of transfers, at least 1")
        self._save(args)

    def _record(self, args: Mapping[str, Any], at: int) -> None:
        if str(args["of"]) not in self.saved:
            self.fail(at, f"{args['of']!r} is not bound by an earlier receive")
        if str(args["path"]).count(".") < 2:
            self.fail(at, "path is a header struct's qualified name and a field: "
                      "message.delivery-properties.priority")  # fmt: skip
