"""Checking the steps of one 0-8/0-9/0-9-1 scenario file against its language and the spec
model: methods, fields, codes, names, connections and channels.

:class:`Amqp091Checker` is the shared walk (:class:`~..checking.Checker`) with a handler per
step kind of :data:`~.language.LANGUAGE`. Every error names the file and the line of the
offending key.
"""

from __future__ import annotations

from pathlib import Path

from amqpfuzz.spec.amqp091 import Field, Method, Spec, load

from ..checking import IDENTIFIER, Checker, is_a, whole_variable
from ..language import handles
from ..model import Step
from ..yamlfile import Located
from .language import EXTENSIONS, LANGUAGE, MATCHERS, NAME_DOMAINS, VARIABLES
from .serving import SERVING_OPERATORS

__all__ = ["Amqp091Checker"]

_INTEGER_TYPES = frozenset({"octet", "short", "long", "longlong", "timestamp"})
_STRING_TYPES = frozenset({"shortstr", "longstr", "content"})
_PADDABLE = frozenset({"table", "shortstr", "longstr"})
_GET_EXPECT = frozenset({"body", "redelivered", "properties", "message_count"})


class Amqp091Checker(Checker):
    """Checks a 0-8/0-9/0-9-1 file's steps in order, against the model of its protocol."""

    language = LANGUAGE

    def __init__(self, path: Path, spec: Spec) -> None:
        super().__init__(path)
        self.spec = spec
        extension = EXTENSIONS.get(spec.protocol)
        self.extension = load(extension) if extension else None
        self.raw: set[str] = set()  # connections opened with handshake: false
        self.variables.add("plain")
        self.served = False  # a client file's serve step came

    # -- shared checks -------------------------------------------------------------------------

    def channel(self, value: Located, connection: str, zero: bool | None = None) -> int:
        """The step's channel; ``zero``: True if it must be 0, False if it must not be."""
        line = value.line_of("channel")
        if "channel" not in value:
            self.fail(value.line, "this step needs `channel`")
        channel = value["channel"]
        if not is_a(channel, int) or not 0 <= channel <= 0xFFFF:
            self.fail(line, f"channel is a number 0..65535, not {channel!r}")
        if zero and channel != 0:
            self.fail(line, "the connection class's methods travel on channel 0")
        if zero is False and channel == 0:
            self.fail(line, "channel 0 carries only the connection class's methods")
        if channel and channel not in self.opened[connection]:
            self.fail(line, f"channel {channel} of {connection!r} is used before open_channel")
        return int(channel)

    def method(self, value: Located, key: str, sender: str) -> Method:
        return self.method_named(value[key], value.line_of(key), sender, key)

    def handshake(self, method: Method, connection: str, line: int) -> None:
        """The connection class's methods are the handshake's: a scenario that speaks them
        opens its connection with ``handshake: false``."""
        if method.class_name == "connection" and connection not in self.raw:
            self.fail(
                line,
                f"{method.full_name} belongs to the handshake: connect {connection!r} with "
                "handshake: false to speak it",
            )

    def method_named(self, name: object, line: int, sender: str, key: str = "method") -> Method:
        """The method ``name`` of the file's protocol (or its extension) that ``sender`` sends."""
        if not isinstance(name, str):
            self.fail(line, f"{key} is a method name (class.method), not {name!r}")
        for spec in (self.spec, self.extension):
            if spec is None:
                continue
            try:
                method = spec.method(name)
            except KeyError:
                continue
            if not method.sent_by(sender):
                self.fail(line, f"{name} is not sent by the {sender}")
            return method
        also = f" nor in its extension {self.extension.protocol}" if self.extension else ""
        self.fail(line, f"no method {name!r} in AMQP {self.spec.protocol}{also}")

    def value(self, item: object, field: Field, line: int, what: str, names: bool = True) -> None:
        """An argument's value against its field's wire type (a whole variable fits any)."""
        if whole_variable(item) is not None:
            return
        kind = field.type
        ok = (
            (kind == "bit" and isinstance(item, bool))
            or (kind in _INTEGER_TYPES and is_a(item, int))
            or (kind in _STRING_TYPES and isinstance(item, str))
            or (kind == "table" and isinstance(item, dict))
            or kind not in _INTEGER_TYPES | _STRING_TYPES | {"bit", "table"}
        )
        if not ok:
            self.fail(line, f"{what} is a {kind}, not {item!r}")
        if names and field.domain in NAME_DOMAINS:
            self.name(item, line, what)

    def name(self, item: object, line: int, what: str) -> None:
        if not isinstance(item, str):
            self.fail(line, f"{what} is a name, not {item!r}")
        variable = whole_variable(item)
        if (
            item == ""
            or item.startswith(("amq.", "${prefix}"))
            or (variable is not None and variable not in VARIABLES)
        ):
            return
        self.fail(
            line,
            f"{what} {item!r} must start with ${{prefix}} (or be '', an amq. name or a saved "
            "variable) so that a run touches only what it created",
        )

    def arguments(
        self, method: Method, value: object, line: int, *, expected: bool = False
    ) -> None:
        """The arguments a step sends (``expected``: the fields a reply is expected to have,
        which may be matchers and name anything)."""
        if value is None:
            return
        if not isinstance(value, Located):
            what = "fields" if expected else "arguments"
            self.fail(line, f"{what} of {method.full_name} are a mapping of its fields")
        fields = {f.attr: f for f in method.fields}
        for key, item in value.items():
            at = value.line_of(str(key))
            if key not in fields:
                self.fail(
                    at, f"{method.full_name} has no field {key!r}; it has {', '.join(fields)}"
                )
            what = f"{method.full_name} {key}"
            if not expected:
                self.value(item, fields[key], at, what)
            elif isinstance(item, dict) and len(item) == 1 and next(iter(item)) in MATCHERS:
                ((matcher, argument),) = item.items()
                self._matcher(str(matcher), argument, fields[str(key)], at, what)
            else:
                self.value(item, fields[str(key)], at, what, names=False)

    def properties(self, value: object, class_name: str, line: int) -> None:
        if value is None:
            return
        if not isinstance(value, Located):
            self.fail(line, "properties are a mapping of content property names")
        props = {p.attr: p for p in self.spec.amqp_class(class_name).properties}
        for key, item in value.items():
            at = value.line_of(str(key))
            if key not in props:
                self.fail(at, f"{class_name} content has no property {key!r}")
            self.value(item, props[key], at, f"{class_name} property {key}")

    def content(self, value: Located, class_name: str) -> None:
        self.typed(value, "body", str, "a string")
        size = self.typed(value, "body_size", int, "a number of octets")
        if size is not None and size < 0:
            self.fail(value.line_of("body_size"), "body_size is a number of octets >= 0")
        if "body" in value and "body_size" in value:
            self.fail(value.line_of("body_size"), "give body or body_size, not both")
        self.properties(value.get("properties"), class_name, value.line_of("properties"))

    def close_code(self, kind: object, code: object, line: int) -> None:
        """``close: kind`` and its optional ``code``: a reply-code constant of the right class."""
        if kind not in ("channel", "connection"):
            self.fail(line, f"close is `channel` or `connection`, not {kind!r}")
        if code is None:
            return
        try:
            constant = self.spec.constant(str(code))
        except KeyError:
            self.fail(line, f"code {code!r} is not a constant of AMQP {self.spec.protocol}")
        if constant.error_class is None:
            self.fail(line, f"{code} is not a reply code (it has no hard/soft error class)")
        closes = "connection" if constant.is_hard_error else "channel"
        if closes != kind:
            self.fail(line, f"{code} is a {constant.error_class}: it closes the {closes}")

    def octets(self, value: Located, key: str) -> None:
        item = value[key]
        if not (
            isinstance(item, list)
            and len(item) == 4
            and all(is_a(o, int) and 0 <= o <= 255 for o in item)
        ):
            self.fail(value.line_of(key), f"{key} is a list of four octets, not {item!r}")

    def loop(self, value: Located) -> tuple[Step, ...]:
        self.loops += 1
        try:
            steps = self.steps(value["steps"], value.line_of("steps"))
        finally:
            self.loops -= 1
        if not steps:
            self.fail(value.line_of("steps"), "a loop needs at least one step")
        return steps

    # -- the step kinds, a handler each -----------------------------------------------------

    @handles("connect")
    def _connect(self, value: Located) -> tuple[Step, ...]:
        name = self.connects(value)
        if self.typed(value, "handshake", bool, "true or false") is False:
            self.need("raw-bytes", value.line)
            self.raw.add(name)
        else:
            self.raw.discard(name)
        return ()

    @handles("close_connection")
    def _close_connection(self, value: Located) -> tuple[Step, ...]:
        self.connection(value)
        return ()

    @handles("open_channel")
    def _open_channel(self, value: Located) -> tuple[Step, ...]:
        connection = self.connection(value)
        channel = value["channel"]
        if not is_a(channel, int) or not 1 <= channel <= 0xFFFF:
            self.fail(value.line_of("channel"), f"open_channel takes 1..65535, not {channel!r}")
        self.opened[connection].add(channel)
        return ()

    @handles("close_channel")
    def _close_channel(self, value: Located) -> tuple[Step, ...]:
        self.channel(value, self.connection(value), zero=False)
        return ()

    @handles("send")
    def _send(self, value: Located) -> tuple[Step, ...]:
        connection = self.connection(value)
        method = self.method(value, "method", "client")
        self.handshake(method, connection, value.line_of("method"))
        self.channel(value, connection, zero=method.class_name == "connection")
        self.arguments(method, value.get("arguments"), value.line_of("arguments"))
        if {"body", "body_size", "properties"} & value.keys():
            if not method.content:
                self.fail(value.line, f"{method.full_name} carries no content")
            self.content(value, method.class_name)
        if ("frame_size" in value) != ("pad" in value):
            self.fail(value.line, "frame_size and pad go together")
        if "frame_size" in value:
            self._frame_size(value, method)
        return ()

    def _frame_size(self, value: Located, method: Method) -> None:
        size, line = value["frame_size"], value.line_of("frame_size")
        if isinstance(size, str):
            try:
                size = self.spec.constant(size).value
            except KeyError:
                self.fail(
                    line, f"frame_size {size!r} is not a constant of AMQP {self.spec.protocol}"
                )
        if not is_a(size, int) or size < 8:
            self.fail(line, f"frame_size is a number of octets or a constant, not {size!r}")
        fields = {f.attr: f for f in method.fields}
        pad = value["pad"]
        if pad not in fields or fields[pad].type not in _PADDABLE:
            self.fail(
                value.line_of("pad"), f"pad names a table or string field of {method.full_name}"
            )

    @handles("expect")
    def _expect(self, value: Located) -> tuple[Step, ...]:
        connection = self.connection(value)
        modes = [key for key in ("reply", "close", "nothing") if key in value]
        if len(modes) != 1:
            self.fail(value.line, "expect takes exactly one of reply, close, nothing")
        mode = modes[0]
        extra = {
            "reply": ("code",),
            "close": ("fields", "save"),
            "nothing": ("fields", "save", "code"),
        }
        for key in extra[mode]:
            if key in value:
                self.fail(value.line_of(key), f"{key} does not go with {mode}")
        if mode == "reply":
            method = self.method(value, "reply", "server")
            self.handshake(method, connection, value.line_of("reply"))
            self.channel(value, connection, zero=method.class_name == "connection")
            self.arguments(method, value.get("fields"), value.line_of("fields"), expected=True)
            self._save(method, value.get("save"), value.line_of("save"))
        elif mode == "close":
            self.close_code(value["close"], value.get("code"), value.line_of("close"))
            if value["close"] == "channel":
                self.channel(value, connection, zero=False)
            elif "channel" in value:
                self.channel(value, connection)
        else:
            self.seconds(value, "nothing")
            if "channel" in value:
                self.channel(value, connection)
        return ()

    def _matcher(self, matcher: str, argument: object, field: Field, line: int, what: str) -> None:
        if matcher == "has_keys":
            if field.type != "table" or not isinstance(argument, list):
                self.fail(line, f"has_keys takes a list of keys and applies to tables ({what})")
        elif matcher == "contains":
            if field.type not in _STRING_TYPES | {"table"}:
                self.fail(line, f"contains applies to strings and arrays ({what})")
        elif not isinstance(argument, list):
            self.fail(line, f"not_in takes a list ({what})")
        else:
            for item in argument:
                self.value(item, field, line, what, names=False)

    def _save(self, method: Method, value: object, line: int) -> None:
        if value is None:
            return
        if not isinstance(value, Located):
            self.fail(line, "save is a mapping of field names to variable names")
        fields = {f.attr for f in method.fields}
        for key, variable in value.items():
            at = value.line_of(str(key))
            if key not in fields:
                self.fail(at, f"{method.full_name} has no field {key!r} to save")
            if not isinstance(variable, str) or not IDENTIFIER.match(variable):
                self.fail(at, f"a variable is named by an identifier, not {variable!r}")
            if variable in VARIABLES:
                self.fail(at, f"${{{variable}}} is the runner's; save under another name")
            self.variables.add(variable)

    @handles("send_raw")
    def _send_raw(self, value: Located) -> tuple[Step, ...]:
        self.connection(value)
        text = value["hex"]
        try:
            bytes.fromhex(text)
        except (TypeError, ValueError):
            self.fail(value.line_of("hex"), f"hex is a string of hexadecimal octets, not {text!r}")
        return ()

    @handles("send_header")
    def _send_header(self, value: Located) -> tuple[Step, ...]:
        self.connection(value)
        self.octets(value, "version")
        name = self.typed(value, "name", str, "a string of four ASCII letters")
        if name is not None and (len(name) != 4 or not name.isascii()):
            self.fail(value.line_of("name"), f"name is four ASCII characters, not {name!r}")
        return ()

    @handles("expect_header")
    def _expect_header(self, value: Located) -> tuple[Step, ...]:
        self.connection(value)
        if "version" in value:
            self.octets(value, "version")
        return ()

    @handles("expect_greeting")
    def _expect_greeting(self, value: Located) -> tuple[Step, ...]:
        self.connection(value)
        return ()

    @handles("expect_closed")
    def _expect_closed(self, value: Located) -> tuple[Step, ...]:
        self.connection(value)
        self.typed(value, "no_frames", bool, "true or false")
        self.seconds(value, "within")
        return ()

    @handles("publish")
    def _publish(self, value: Located) -> tuple[Step, ...]:
        self.channel(value, self.connection(value), zero=False)
        self.typed(value, "routing_key", str, "a string")
        if "exchange" in value:
            self.name(value["exchange"], value.line_of("exchange"), "exchange")
        for key in ("mandatory", "immediate"):
            self.typed(value, key, bool, "true or false")
        self.content(value, "basic")
        return ()

    @handles("get")
    def _get(self, value: Located) -> tuple[Step, ...]:
        self.channel(value, self.connection(value), zero=False)
        self.name(value["queue"], value.line_of("queue"), "queue")
        self.typed(value, "no_ack", bool, "true or false")
        self.seconds(value, "within")
        expect = value.get("expect", "empty")
        if expect != "empty":
            if not isinstance(expect, Located):
                self.fail(value.line_of("expect"), "get's expect is `empty` or a mapping")
            self.keys("get's expect", expect, (), _GET_EXPECT)
            self.typed(expect, "body", str, "a string")
            self.typed(expect, "redelivered", bool, "true or false")
            self.typed(expect, "message_count", int, "a number")
            self.properties(expect.get("properties"), "basic", expect.line_of("properties"))
        return ()

    @handles("consume")
    def _consume(self, value: Located) -> tuple[Step, ...]:
        self.channel(value, self.connection(value), zero=False)
        self.name(value["queue"], value.line_of("queue"), "queue")
        self.typed(value, "tag", str, "a consumer tag")
        for key in ("no_ack", "exclusive", "no_local"):
            self.typed(value, key, bool, "true or false")
        self.typed(value, "arguments", dict, "a table")
        return ()

    @handles("deliveries")
    def _deliveries(self, value: Located) -> tuple[Step, ...]:
        self.channel(value, self.connection(value), zero=False)
        count = self.typed(value, "count", int, "a number")
        if count < 0:
            self.fail(value.line_of("count"), "count is a number >= 0")
        for key, kind in (("bodies", str), ("redelivered", bool), ("properties", dict)):
            items = self.typed(value, key, list, f"a list of {count}")
            if items is None:
                continue
            if len(items) != count or not all(is_a(item, kind) for item in items):
                self.fail(value.line_of(key), f"{key} is a list of {count} {kind.__name__}s")
            if key == "properties":
                for item in items:
                    self.properties(item, "basic", value.line_of(key))
        self.typed(value, "tag", str, "a consumer tag")
        self.seconds(value, "within")
        return ()

    def _settle(self, value: Located) -> None:
        self.channel(value, self.connection(value), zero=False)
        delivery = value["delivery"]
        if delivery not in ("last", "all") and not (is_a(delivery, int) and delivery >= 1):
            self.fail(
                value.line_of("delivery"), f"delivery is last, all or N >= 1, not {delivery!r}"
            )
        for key in ("requeue", "multiple"):
            self.typed(value, key, bool, "true or false")

    @handles("ack")
    def _ack(self, value: Located) -> tuple[Step, ...]:
        self._settle(value)
        return ()

    @handles("reject")
    def _reject(self, value: Located) -> tuple[Step, ...]:
        self._settle(value)
        return ()

    @handles("nack")
    def _nack(self, value: Located) -> tuple[Step, ...]:
        self.method_named("basic.nack", value.line, "client")
        self._settle(value)
        return ()

    @handles("restart_broker")
    def _restart_broker(self, value: Located) -> tuple[Step, ...]:
        return ()

    @handles("serve")
    def _serve(self, value: Located) -> tuple[Step, ...]:
        operator = value.get("operator")
        if operator is not None and operator not in SERVING_OPERATORS:
            self.fail(
                value.line,
                f"{operator!r} is not a server-side operator; they are {', '.join(SERVING_OPERATORS)}",
            )
        self.served = True
        return ()

    @handles("expect_client")
    def _expect_client(self, value: Located) -> tuple[Step, ...]:
        if not self.served:
            self.fail(value.line, "expect_client follows a serve")
        close = value["close"]
        if close in ("channel", "connection"):
            self.close_code(close, value.get("code"), value.line)
        elif close not in ("socket", "none", "any") or value.get("code") is not None:
            self.fail(value.line, "close is connection, channel (with a code), socket, none or any")
        if value.get("frames", "valid") != "valid":
            self.fail(value.line, "frames is valid")
        return ()

    @handles("repeat")
    def _repeat(self, value: Located) -> tuple[Step, ...]:
        times = self.typed(value, "times", int, "a number")
        if times < 1:
            self.fail(value.line_of("times"), "times is a number >= 1")
        return self.loop(value)

    @handles("eventually")
    def _eventually(self, value: Located) -> tuple[Step, ...]:
        self.seconds(value, "within")
        steps = self.steps(value["steps"], value.line_of("steps"))
        if not steps:
            self.fail(value.line_of("steps"), "eventually needs at least one step")
        return steps

    @handles("until_limit")
    def _until_limit(self, value: Located) -> tuple[Step, ...]:
        most = self.typed(value, "max", int, "a number")
        least = self.typed(value, "at_least", int, "a number")
        if most < 1 or (least is not None and not 0 <= least <= most):
            self.fail(value.line, "until_limit needs max >= 1 and 0 <= at_least <= max")
        close = value.get("expect_close")
        if close is not None:
            if not isinstance(close, Located):
                self.fail(value.line_of("expect_close"), "expect_close is {close, code}")
            self.keys("expect_close", close, ("close",), frozenset({"close", "code"}))
            self.close_code(close["close"], close.get("code"), close.line)
        return self.loop(value)
