"""Checking the steps of one 1.0 scenario file: names bound before use, sessions and links
used after they are opened, performatives, fields, conditions and messages known to the
specification.

:class:`Amqp10Checker` is the shared walk (:class:`~..checking.Checker`) with a handler per
step kind of :data:`~.language.LANGUAGE`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from amqpfuzz.spec.amqp10 import performatives
from amqpfuzz.spec.amqp10.codec import codec_for

from ..checking import Checker
from ..language import handles
from ..model import Step
from ..yamlfile import Located
from .language import (
    CHECKS,
    CLIENT_CLOSES,
    FRAME_CHECKS,
    LANGUAGE,
    OUTCOMES,
    SECTIONS,
    SERVED,
)
from .serving import SERVING_OPERATORS

__all__ = ["Amqp10Checker"]


class Amqp10Checker(Checker):
    """Checks a 1.0 file's steps in order."""

    language = LANGUAGE

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.links: set[tuple[str, int, int]] = set()
        self.served = False

    def session(self, value: Located) -> tuple[str, int]:
        """The step's session, begun earlier on its connection."""
        connection = self.connection(value)
        if value["channel"] not in self.opened[connection]:
            self.fail(value.line, f"no session begun on channel {value['channel']} of {connection}")
        return connection, int(value["channel"])

    def link(self, value: Located) -> None:
        if (*self.session(value), value["handle"]) not in self.links:
            self.fail(value.line, f"no link attached with handle {value['handle']}")

    # -- the step kinds, a handler each -----------------------------------------------------

    @handles("connect")
    def _connect(self, value: Located) -> tuple[Step, ...]:
        self.connects(value)
        self.bind(value)
        return ()

    @handles("begin")
    def _begin(self, value: Located) -> tuple[Step, ...]:
        if not isinstance(value["channel"], int) or value["channel"] < 0:
            self.fail(value.line, "channel is a number")
        self.opens(value)
        self.bind(value)
        return ()

    @handles("frame")
    def _frame(self, value: Located) -> tuple[Step, ...]:
        self.connection(value)
        at = value.line
        if not isinstance(value["channel"], int) or not 0 <= value["channel"] <= 0xFFFF:
            self.fail(at, "channel is a number from 0 to 65535")
        types = codec_for("1.0").types
        name = str(value["performative"])
        frames = performatives()
        if name not in frames:
            self.fail(at, f"{name!r} is not a performative; they are {', '.join(frames)}")
        known = {f.name: f for f in types.fields[name]}
        fields = value.get("fields") or {}
        if not isinstance(fields, Mapping):
            self.fail(at, "fields is a mapping of the performative's fields")
        for key, item in fields.items():
            info = known.get(str(key))
            if info is None:
                self.fail(at, f"{name} has no field {key!r}; its fields are {', '.join(known)}")
            if info.primitive is None or info.multiple or isinstance(item, Mapping | list):
                self.fail(at, f"{name}.{key}: only a field of a primitive type can be given")
        return ()

    @handles("attach")
    def _attach(self, value: Located) -> tuple[Step, ...]:
        session = self.session(value)
        at = value.line
        if value["role"] not in ("sender", "receiver"):
            self.fail(at, "role is sender or receiver")
        address = value.get("address")
        if address is None and not value.get("dynamic"):
            self.fail(at, "attach names an address, or asks for a dynamic node")
        if address is not None and not str(address).startswith("${prefix}"):
            self.fail(at, "a node's address starts with ${prefix}")
        self.links.add((*session, value["handle"]))
        self.bind(value)
        return ()

    @handles("credit")
    def _credit(self, value: Located) -> tuple[Step, ...]:
        self.link(value)
        return ()

    @handles("send")
    def _send(self, value: Located) -> tuple[Step, ...]:
        self.link(value)
        message = value["message"]
        if not isinstance(message, Mapping) or "body" not in message:
            self.fail(
                value.line, f"a message is a mapping of {', '.join(SECTIONS)} (body required)"
            )
        for key in message:
            if key not in SECTIONS:
                self.fail(
                    value.line, f"unknown section {key!r}; sections are {', '.join(SECTIONS)}"
                )
        self.bind(value)
        return ()

    @handles("settled")
    def _settled(self, value: Located) -> tuple[Step, ...]:
        self.session(value)
        if value["outcome"] not in OUTCOMES:
            self.fail(value.line, f"outcome is one of {', '.join(OUTCOMES)}")
        return ()

    @handles("receive")
    def _receive(self, value: Located) -> tuple[Step, ...]:
        self.session(value)
        self.need("consumer", value.line)
        self.bind(value)
        return ()

    @handles("settle")
    def _settle(self, value: Located) -> tuple[Step, ...]:
        self._settled(value)
        self.bound(value, "message", "an earlier receive")
        return ()

    @handles("nothing")
    def _nothing(self, value: Located) -> tuple[Step, ...]:
        self.session(value)
        return ()

    @handles("expect")
    def _expect(self, value: Located) -> tuple[Step, ...]:
        self.session(value)
        if value["close"] not in ("link", "session", "connection"):
            self.fail(value.line, "close is link, session or connection")
        condition = value.get("condition")
        if condition is not None and condition != "*":
            known = codec_for("1.0").spec.error_conditions()
            if condition not in known and condition not in {kind for _, kind in known.values()}:
                self.fail(
                    value.line,
                    f"{condition!r} is neither an error condition of 1.0, nor a type of them, "
                    'nor "*"',
                )
        return ()

    @handles("detach")
    def _detach(self, value: Located) -> tuple[Step, ...]:
        self.link(value)
        self.bind(value)
        return ()

    @handles("await")
    def _await(self, value: Located) -> tuple[Step, ...]:
        self.session(value)
        if value["performative"] not in performatives():
            self.fail(value.line, f"{value['performative']!r} is not a performative")
        if not isinstance(value.get("where", {}), Mapping):
            self.fail(value.line, "where is a mapping of fields to the values they must have")
        self.bind(value)
        return ()

    @handles("close")
    def _close(self, value: Located) -> tuple[Step, ...]:
        self.connection(value)
        return ()

    @handles("restart")
    def _restart(self, value: Located) -> tuple[Step, ...]:
        return ()  # (its capability is the language's)

    @handles("serve")
    def _serve(self, value: Located) -> tuple[Step, ...]:
        if self.served:
            self.fail(value.line, "a client scenario serves once")
        self.served = True
        operator = value.get("operator")
        if operator is not None and operator not in SERVING_OPERATORS:
            self.fail(
                value.line,
                f"{operator!r} is not a server-side operator; they are {', '.join(SERVING_OPERATORS)}",
            )
        for performative, fields in SERVED.items():
            given = value.get(performative) or {}
            if not isinstance(given, Mapping) or set(given) - set(fields):
                self.fail(value.line, f"{performative} takes {', '.join(fields)}")
            if not all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in given.values()
            ):
                self.fail(value.line, f"{performative}'s fields are numbers")
        return ()

    @handles("expect_client")
    def _expect_client(self, value: Located) -> tuple[Step, ...]:
        if not self.served:
            self.fail(value.line, "expect_client follows a serve")
        if value["close"] not in CLIENT_CLOSES:
            self.fail(value.line, f"close is one of {', '.join(CLIENT_CLOSES)}")
        condition = value.get("condition")
        if condition is not None and condition not in codec_for("1.0").spec.error_conditions():
            self.fail(value.line, f"{condition!r} is not an error condition of 1.0")
        frames = value.get("frames", "valid")
        if frames != "valid" and (
            not isinstance(frames, list) or not frames or set(frames) - set(FRAME_CHECKS)
        ):
            self.fail(value.line, f"frames is valid, or a list of {', '.join(FRAME_CHECKS)}")
        return ()

    @handles("check")
    def _check(self, value: Located) -> tuple[Step, ...]:
        self.bound(value, "that")
        if sum(1 for k in CHECKS if k in value) != 1:
            self.fail(value.line, f"check takes exactly one of {', '.join(CHECKS)}")
        return ()
