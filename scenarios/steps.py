"""Checking the steps of one scenario file against the vocabulary and the spec model.

:class:`StepChecker` walks the steps in order, as a runner would, so that it can say that a
connection is used before it is opened, a channel before ``open_channel``, a variable before the
``save`` that binds it. Every error names the file and the line of the offending key.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, NoReturn

from amqpfuzz.spec.amqp091 import Field, Method, Spec, load

from .model import ScenarioError, Step
from .vocabulary import MATCHERS, STEPS, VARIABLES
from .yamlfile import Located

__all__ = ["EXTENSIONS", "NAME_DOMAINS", "StepChecker"]

# Queue and exchange names are fields of these domains (and the `queue`/`exchange` keys of the
# message steps): they must start with ${prefix} unless they are special names.
NAME_DOMAINS = frozenset({"queue-name", "exchange-name"})
# Files of a protocol may also use the methods that only its extended model has (RabbitMQ's
# confirm.select, basic.nack, exchange.bind for 0-9-1); everything else is checked against
# the protocol's own model.
EXTENSIONS: Mapping[str, str] = {"0-9-1": "0-9-1-rabbit"}

_VARIABLE = re.compile(r"\$\{([^}]*)\}")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_INTEGER_TYPES = frozenset({"octet", "short", "long", "longlong", "timestamp"})
_STRING_TYPES = frozenset({"shortstr", "longstr", "content"})
_PADDABLE = frozenset({"table", "shortstr", "longstr"})
_GET_EXPECT = frozenset({"body", "redelivered", "properties", "message_count"})
_NUMBER = (int, float)


def _is(value: object, kind: type | tuple[type, ...]) -> bool:
    """isinstance, except that a bool is never a number."""
    return isinstance(value, kind) and not (isinstance(value, bool) and kind is not bool)


def _whole_variable(value: object) -> str | None:
    if isinstance(value, str):
        match = _VARIABLE.fullmatch(value)
        if match:
            return match.group(1)
    return None


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def freeze(value: object) -> object:
    """Read-only copies: mappings become mapping proxies, lists tuples."""
    if isinstance(value, dict):
        return MappingProxyType({key: freeze(item) for key, item in value.items()})
    if isinstance(value, list):
        return tuple(freeze(item) for item in value)
    return value


class StepChecker:
    """Checks the steps of one file in order; :attr:`needs` collects the capabilities they
    need (with the line of the first step needing each)."""

    def __init__(self, path: Path, spec: Spec) -> None:
        self.path = path
        self.spec = spec
        extension = EXTENSIONS.get(spec.protocol)
        self.extension = load(extension) if extension else None
        self.channels: dict[str, set[int]] = {}  # connection name -> channels opened on it
        self.raw: set[str] = set()  # connections opened with handshake: false
        self.variables = {"prefix", "plain"}
        self.loops = 0
        self.connects = 0
        self.needs: dict[str, int] = {}
        self._handlers: Mapping[str, Callable[[Located], tuple[Step, ...]]] = {
            name: getattr(self, "_" + name) for name in STEPS if not STEPS[name].scalar
        }

    def fail(self, line: int | None, message: str) -> NoReturn:
        raise ScenarioError(self.path, line, message)

    def need(self, capability: str, line: int) -> None:
        self.needs.setdefault(capability, line)

    # -- the walk ----------------------------------------------------------------------------

    def steps(self, items: object, line: int) -> tuple[Step, ...]:
        if not isinstance(items, list):
            self.fail(line, "steps is a list of steps (`steps: []` if there are none)")
        return tuple(self.step(item, line) for item in items)

    def step(self, item: object, line: int) -> Step:
        if not isinstance(item, Located) or len(item) != 1:
            where = item.line if isinstance(item, Located) else line
            self.fail(where, "a step is a mapping of one step kind to its arguments")
        ((kind, value),) = item.items()
        line = item.line
        known = STEPS.get(str(kind))
        if known is None:
            self.fail(line, f"unknown step kind {kind!r}; known: {', '.join(STEPS)}")
        if known.scalar:
            if not _is(value, _NUMBER) or value <= 0:
                self.fail(line, f"{kind} takes a number of seconds > 0, not {value!r}")
            return Step(known.name, MappingProxyType({"seconds": value}), line)
        if value is None:
            value = Located()
            value.line, value.key_lines = line, {}
        if not isinstance(value, Located):
            self.fail(line, f"{kind} takes a mapping of {', '.join(sorted(known.keys)) or '{}'}")
        self._keys(known.name, value, known.required, known.keys)
        self._variables(value)
        if known.capability:
            self.need(known.capability, line)
        nested = self._handlers[known.name](value)
        args = {str(key): freeze(item) for key, item in value.items() if key != "steps"}
        return Step(known.name, MappingProxyType(args), line, nested)

    def _keys(
        self, what: str, value: Located, required: tuple[str, ...], allowed: frozenset[str]
    ) -> None:
        for key in value:
            if key not in allowed:
                known = ", ".join(sorted(allowed)) or "nothing"
                self.fail(value.line_of(str(key)), f"{what} has no key {key!r}; it takes {known}")
        for key in required:
            if key not in value:
                self.fail(value.line, f"{what} needs `{key}`")

    def _variables(self, value: Located) -> None:
        for key, item in value.items():
            if key == "steps":  # a loop's steps are checked one by one, with ${i} known
                continue
            for text in _strings(item):
                for name in _VARIABLE.findall(text):
                    if name in self.variables or (name == "i" and self.loops):
                        continue
                    hint = " (only inside repeat or until_limit)" if name == "i" else ""
                    self.fail(value.line_of(str(key)), f"unknown variable ${{{name}}}{hint}")

    # -- shared checks -------------------------------------------------------------------------

    def typed(self, value: Located, key: str, kind: type | tuple[type, ...], what: str) -> Any:
        """``value[key]`` if present (None if not), failing unless it is of ``kind``."""
        if key not in value:
            return None
        item = value[key]
        if not _is(item, kind):
            self.fail(value.line_of(key), f"{key} is {what}, not {item!r}")
        return item

    def connection(self, value: Located) -> str:
        name = value["connection"]
        if name not in self.channels:
            self.fail(
                value.line_of("connection"),
                f"connection {name!r} is used before `connect: {{as: {name}}}`",
            )
        return str(name)

    def channel(self, value: Located, connection: str, zero: bool | None = None) -> int:
        """The step's channel; ``zero``: True if it must be 0, False if it must not be."""
        line = value.line_of("channel")
        if "channel" not in value:
            self.fail(value.line, "this step needs `channel`")
        channel = value["channel"]
        if not _is(channel, int) or not 0 <= channel <= 0xFFFF:
            self.fail(line, f"channel is a number 0..65535, not {channel!r}")
        if zero and channel != 0:
            self.fail(line, "the connection class's methods travel on channel 0")
        if zero is False and channel == 0:
            self.fail(line, "channel 0 carries only the connection class's methods")
        if channel and channel not in self.channels[connection]:
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
        if _whole_variable(item) is not None:
            return
        kind = field.type
        ok = (
            (kind == "bit" and isinstance(item, bool))
            or (kind in _INTEGER_TYPES and _is(item, int))
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
        variable = _whole_variable(item)
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

    def seconds(self, value: Located, key: str) -> None:
        item = self.typed(value, key, _NUMBER, "a number of seconds")
        if item is not None and item <= 0:
            self.fail(value.line_of(key), f"{key} is a number of seconds > 0")

    def octets(self, value: Located, key: str) -> None:
        item = value[key]
        if not (
            isinstance(item, list)
            and len(item) == 4
            and all(_is(o, int) and 0 <= o <= 255 for o in item)
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

    # -- step kinds (one method each, named after the kind) ----------------------------------

    def _connect(self, value: Located) -> tuple[Step, ...]:
        name = value["as"]
        if not isinstance(name, str) or not _IDENTIFIER.match(name):
            self.fail(value.line_of("as"), f"a connection is named by an identifier, not {name!r}")
        if self.typed(value, "handshake", bool, "true or false") is False:
            self.need("raw-bytes", value.line)
            self.raw.add(name)
        else:
            self.raw.discard(name)
        self.channels[name] = set()
        self.connects += 1
        if self.connects > 1:
            self.need("second-connection", value.line)
        return ()

    def _close_connection(self, value: Located) -> tuple[Step, ...]:
        self.connection(value)
        return ()

    def _open_channel(self, value: Located) -> tuple[Step, ...]:
        connection = self.connection(value)
        channel = value["channel"]
        if not _is(channel, int) or not 1 <= channel <= 0xFFFF:
            self.fail(value.line_of("channel"), f"open_channel takes 1..65535, not {channel!r}")
        self.channels[connection].add(channel)
        return ()

    def _close_channel(self, value: Located) -> tuple[Step, ...]:
        self.channel(value, self.connection(value), zero=False)
        return ()

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
        if not _is(size, int) or size < 8:
            self.fail(line, f"frame_size is a number of octets or a constant, not {size!r}")
        fields = {f.attr: f for f in method.fields}
        pad = value["pad"]
        if pad not in fields or fields[pad].type not in _PADDABLE:
            self.fail(
                value.line_of("pad"), f"pad names a table or string field of {method.full_name}"
            )

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
            if not isinstance(variable, str) or not _IDENTIFIER.match(variable):
                self.fail(at, f"a variable is named by an identifier, not {variable!r}")
            if variable in VARIABLES:
                self.fail(at, f"${{{variable}}} is the runner's; save under another name")
            self.variables.add(variable)

    def _send_raw(self, value: Located) -> tuple[Step, ...]:
        self.connection(value)
        text = value["hex"]
        try:
            bytes.fromhex(text)
        except (TypeError, ValueError):
            self.fail(value.line_of("hex"), f"hex is a string of hexadecimal octets, not {text!r}")
        return ()

    def _send_header(self, value: Located) -> tuple[Step, ...]:
        self.connection(value)
        self.octets(value, "version")
        name = self.typed(value, "name", str, "a string of four ASCII letters")
        if name is not None and (len(name) != 4 or not name.isascii()):
            self.fail(value.line_of("name"), f"name is four ASCII characters, not {name!r}")
        return ()

    def _expect_header(self, value: Located) -> tuple[Step, ...]:
        self.connection(value)
        if "version" in value:
            self.octets(value, "version")
        return ()

    def _expect_greeting(self, value: Located) -> tuple[Step, ...]:
        self.connection(value)
        return ()

    def _expect_closed(self, value: Located) -> tuple[Step, ...]:
        self.connection(value)
        self.typed(value, "no_frames", bool, "true or false")
        self.seconds(value, "within")
        return ()

    def _publish(self, value: Located) -> tuple[Step, ...]:
        self.channel(value, self.connection(value), zero=False)
        self.typed(value, "routing_key", str, "a string")
        if "exchange" in value:
            self.name(value["exchange"], value.line_of("exchange"), "exchange")
        for key in ("mandatory", "immediate"):
            self.typed(value, key, bool, "true or false")
        self.content(value, "basic")
        return ()

    def _get(self, value: Located) -> tuple[Step, ...]:
        self.channel(value, self.connection(value), zero=False)
        self.name(value["queue"], value.line_of("queue"), "queue")
        self.typed(value, "no_ack", bool, "true or false")
        self.seconds(value, "within")
        expect = value.get("expect", "empty")
        if expect != "empty":
            if not isinstance(expect, Located):
                self.fail(value.line_of("expect"), "get's expect is `empty` or a mapping")
            self._keys("get's expect", expect, (), _GET_EXPECT)
            self.typed(expect, "body", str, "a string")
            self.typed(expect, "redelivered", bool, "true or false")
            self.typed(expect, "message_count", int, "a number")
            self.properties(expect.get("properties"), "basic", expect.line_of("properties"))
        return ()

    def _consume(self, value: Located) -> tuple[Step, ...]:
        self.channel(value, self.connection(value), zero=False)
        self.name(value["queue"], value.line_of("queue"), "queue")
        self.typed(value, "tag", str, "a consumer tag")
        for key in ("no_ack", "exclusive", "no_local"):
            self.typed(value, key, bool, "true or false")
        self.typed(value, "arguments", dict, "a table")
        return ()

    def _deliveries(self, value: Located) -> tuple[Step, ...]:
        self.channel(value, self.connection(value), zero=False)
        count = self.typed(value, "count", int, "a number")
        if count < 0:
            self.fail(value.line_of("count"), "count is a number >= 0")
        for key, kind in (("bodies", str), ("redelivered", bool), ("properties", dict)):
            items = self.typed(value, key, list, f"a list of {count}")
            if items is None:
                continue
            if len(items) != count or not all(_is(item, kind) for item in items):
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
        if delivery not in ("last", "all") and not (_is(delivery, int) and delivery >= 1):
            self.fail(
                value.line_of("delivery"), f"delivery is last, all or N >= 1, not {delivery!r}"
            )
        for key in ("requeue", "multiple"):
            self.typed(value, key, bool, "true or false")

    def _ack(self, value: Located) -> tuple[Step, ...]:
        self._settle(value)
        return ()

    def _reject(self, value: Located) -> tuple[Step, ...]:
        self._settle(value)
        return ()

    def _nack(self, value: Located) -> tuple[Step, ...]:
        self.method_named("basic.nack", value.line, "client")
        self._settle(value)
        return ()

    def _restart_broker(self, value: Located) -> tuple[Step, ...]:
        return ()

    def _repeat(self, value: Located) -> tuple[Step, ...]:
        times = self.typed(value, "times", int, "a number")
        if times < 1:
            self.fail(value.line_of("times"), "times is a number >= 1")
        return self.loop(value)

    def _eventually(self, value: Located) -> tuple[Step, ...]:
        self.seconds(value, "within")
        steps = self.steps(value["steps"], value.line_of("steps"))
        if not steps:
            self.fail(value.line_of("steps"), "eventually needs at least one step")
        return steps

    def _until_limit(self, value: Located) -> tuple[Step, ...]:
        most = self.typed(value, "max", int, "a number")
        least = self.typed(value, "at_least", int, "a number")
        if most < 1 or (least is not None and not 0 <= least <= most):
            self.fail(value.line, "until_limit needs max >= 1 and 0 <= at_least <= max")
        close = value.get("expect_close")
        if close is not None:
            if not isinstance(close, Located):
                self.fail(value.line_of("expect_close"), "expect_close is {close, code}")
            self._keys("expect_close", close, ("close",), frozenset({"close", "code"}))
            self.close_code(close["close"], close.get("code"), close.line)
        return self.loop(value)
