"""Checking the steps of one 0-10 scenario file: names bound before use, sessions used after
they are attached, commands, fields and structs known to the specification.

:class:`Amqp010Checker` is the shared walk (:class:`~..checking.Checker`) with a handler per
step kind of :data:`~.language.LANGUAGE`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from amqpfuzz.spec.amqp010 import load

from ..checking import Checker
from ..language import handles
from ..model import Step
from ..yamlfile import Located
from .language import HEADERS, LANGUAGE

__all__ = ["Amqp010Checker"]


class Amqp010Checker(Checker):
    """Checks a 0-10 file's steps in order, against the 0-10 model."""

    language = LANGUAGE

    def session(self, value: Located) -> None:
        """The step's session, attached earlier on its connection."""
        connection = self.connection(value)
        if value["channel"] not in self.opened[connection]:
            self.fail(value.line, f"no session begun on channel {value['channel']} of {connection}")

    def fields(self, owner: str, names: set[str], fields: Any, at: int) -> None:
        if not isinstance(fields, Mapping):
            self.fail(at, f"the fields of {owner} are a mapping")
        for key in fields:
            if key not in names:
                self.fail(
                    at, f"{owner} has no field {key!r}; its fields are {', '.join(sorted(names))}"
                )

    # -- the step kinds, a handler each -----------------------------------------------------

    @handles("connect")
    def _connect(self, value: Located) -> tuple[Step, ...]:
        self.connects(value)
        if not isinstance(value.get("handshake", True), bool):
            self.fail(value.line, "handshake is true or false")
        self.bind(value)
        return ()

    @handles("send_raw")
    def _send_raw(self, value: Located) -> tuple[Step, ...]:
        self.connection(value)
        try:
            bytes.fromhex(str(value["hex"]))
        except ValueError:
            self.fail(value.line, f"hex is octets in hexadecimal, not {value['hex']!r}")
        return ()

    @handles("expect_closed")
    def _expect_closed(self, value: Located) -> tuple[Step, ...]:
        self.connection(value)
        if value.get("header", "any") not in HEADERS:
            self.fail(value.line, f"header is one of {', '.join(HEADERS)}")
        return ()

    @handles("attach")
    def _attach(self, value: Located) -> tuple[Step, ...]:
        if not isinstance(value["channel"], int) or not 0 < value["channel"] <= 0xFFFF:
            self.fail(value.line, "channel is a number from 1 to 65535")
        self.opens(value)
        return ()

    @handles("command")
    def _command(self, value: Located) -> tuple[Step, ...]:
        self.session(value)
        spec, at = load(), value.line
        name = str(value["command"])
        try:
            command = spec.command(name)
        except KeyError:
            self.fail(at, f"{name!r} is not a command of 0-10")
        self.fields(name, {f.name for f in command.fields}, value.get("fields") or {}, at)
        for entry in value.get("header") or ():
            if not isinstance(entry, Mapping) or "struct" not in entry:
                self.fail(at, "a header entry is {struct: class.name, fields: {...}}")
            try:
                struct = spec.struct(str(entry["struct"]))
            except KeyError:
                self.fail(at, f"{entry['struct']!r} is not a struct of 0-10")
            names = {f.name for f in struct.fields}
            self.fields(str(entry["struct"]), names, entry.get("fields") or {}, at)
        return ()

    @handles("await")
    def _await(self, value: Located) -> tuple[Step, ...]:
        self.session(value)
        spec = load()
        name = str(value["name"])
        known = {m.qualified for m in (*spec.controls, *spec.commands)}
        if name not in known:
            self.fail(value.line, f"{name!r} is not a control or command of 0-10")
        self.bind(value)
        return ()

    @handles("receive")
    def _receive(self, value: Located) -> tuple[Step, ...]:
        self.session(value)
        self.need("consumer", value.line)
        if not isinstance(value["count"], int) or value["count"] < 1:
            self.fail(value.line, "count is a number of transfers, at least 1")
        self.bind(value)
        return ()

    @handles("record")
    def _record(self, value: Located) -> tuple[Step, ...]:
        self.bound(value, "of", "an earlier receive")
        if str(value["path"]).count(".") < 2:
            self.fail(
                value.line,
                "path is a header struct's qualified name and a field: "
                "message.delivery-properties.priority",
            )
        return ()

    @handles("close")
    def _close(self, value: Located) -> tuple[Step, ...]:
        self.connection(value)
        return ()
