"""The language of 0-8/0-9/0-9-1 scenario files, as data: step kinds, variables, matchers.

One table per notion, each entry with a one-line meaning; the checker (:mod:`.checker`) checks
files against these tables and the player executes what they mean. Conventions every step
shares:

* ``connection`` names a connection opened by an earlier ``connect`` (``as``); ``channel`` is a
  channel number, 0 for the connection class's methods, else opened by ``open_channel``.
* Method and field names are the spec model's: ``queue.declare``, ``routing_key``.
* Strings may hold ``${name}`` variables (:data:`VARIABLES`, or a name bound by ``save``); a
  string that is one whole variable takes the variable's value and type.
* A queue or exchange name starts with ``${prefix}`` so that a run only touches what it created,
  unless it is ``""`` (the default exchange, a server-named queue), an ``amq.`` name, or a saved
  variable.
* Deliveries (``basic.deliver`` with its content) are filed per channel for ``deliveries``; they
  are never "the next method" an ``expect`` looks at. A reply that carries content
  (``basic.return``) is read with its content.
* The connection class's methods (start, tune, ...) are the handshake's: a file sends or expects
  them only on a connection opened with ``handshake: false``.
* A client file (capability ``client``) is played against a client library's shim, amqpfuzz
  being its broker: one ``serve`` then one ``expect_client``.
* The send steps await nothing; ``open_channel``, ``get``, ``consume`` await their answer and
  fail the scenario at that step if it does not come. A refusal is tested with ``send`` and
  ``expect``.
"""

from __future__ import annotations

from collections.abc import Mapping

from amqpfuzz.spec.protocols import PROTOCOLS

from ..language import Language, StepKind

__all__ = ["EXTENSIONS", "LANGUAGE", "MATCHERS", "NAME_DOMAINS", "STEPS", "VARIABLES"]

# Queue and exchange names are fields of these domains (and the `queue`/`exchange` keys of the
# message steps): they must start with ${prefix} unless they are special names.
NAME_DOMAINS = frozenset({"queue-name", "exchange-name"})
# Files of a protocol may also use the methods that only its extended model has (RabbitMQ's
# confirm.select, basic.nack, exchange.bind for 0-9-1); everything else is checked against
# the protocol's own model.
EXTENSIONS: Mapping[str, str] = {p.name: p.extension for p in PROTOCOLS.values() if p.extension}

_CONN = ("connection",)
_CHAN = ("connection", "channel")
_SETTLE = "the N-th message received on the channel (from 1), `last`, or `all`"

STEPS: Mapping[str, StepKind] = {
    kind.name: kind
    for kind in (
        # -- connections and channels ---------------------------------------------------------
        StepKind(
            "connect",
            "open connection `as` through the whole handshake; with `handshake: false` only "
            "the socket (capability raw-bytes), the steps then speak the protocol themselves",
            ("as",),
            ("handshake",),
        ),
        StepKind("close_connection", "connection.close, close-ok awaited, socket closed", _CONN),
        StepKind("open_channel", "channel.open on `channel`, open-ok awaited", _CHAN),
        StepKind("close_channel", "channel.close on `channel`, close-ok awaited", _CHAN),
        # -- methods --------------------------------------------------------------------------
        StepKind(
            "send",
            "send `method` with `arguments` (unnamed fields take zero values); a content "
            "method also takes `body` (or `body_size` filler octets) and `properties`; "
            "`frame_size` (octets or a constant's name) pads the field named by `pad` so that "
            "the whole frame (header, payload, frame-end) has that size; nothing is awaited",
            ("connection", "channel", "method"),
            ("arguments", "body", "body_size", "properties", "frame_size", "pad"),
        ),
        StepKind(
            "expect",
            "exactly one of: `reply` (the next method on `channel` is that method, `fields` "
            "match, `save` binds fields to variables); `close: channel|connection` with an "
            "optional `code` (a constant whose hard/soft class matches); `nothing: seconds` "
            "(no frame on `channel`, or on the connection if none is given)",
            _CONN,
            ("channel", "reply", "fields", "save", "close", "code", "nothing"),
        ),
        # -- protocol headers and sockets ----------------------------------------------------
        StepKind(
            "send_raw", "send these bytes as they are", ("connection", "hex"), (), "raw-bytes"
        ),
        StepKind(
            "send_header",
            "send a protocol header: `name` (default AMQP) and the four `version` octets",
            ("connection", "version"),
            ("name",),
            "raw-bytes",
        ),
        StepKind(
            "expect_header",
            "the server answers with a protocol header (equal to `version` if given)",
            _CONN,
            ("version",),
            "raw-bytes",
        ),
        StepKind(
            "expect_greeting",
            "the server answers a protocol header with its own header and then closes the "
            "socket, or with connection.start; the runner records which, and the octets",
            _CONN,
            (),
            "raw-bytes",
        ),
        StepKind(
            "expect_closed",
            "the socket closes (within `within` seconds, default 5); with `no_frames: true` "
            "no frame arrives before it (a protocol header is not a frame)",
            _CONN,
            ("no_frames", "within"),
        ),
        # -- messages -------------------------------------------------------------------------
        StepKind(
            "publish",
            "basic.publish with content: `body` (or `body_size` filler octets), `properties`; "
            "`exchange` defaults to the default exchange",
            ("connection", "channel", "routing_key"),
            ("exchange", "body", "body_size", "properties", "mandatory", "immediate"),
        ),
        StepKind(
            "get",
            "basic.get, answer awaited; `expect: empty` (get-empty) or a mapping of body, "
            "redelivered, properties, message_count; without `expect` the answer is recorded. "
            "A get expecting a message asks again after get-empty for up to `within` seconds "
            "(default 1): a publish or a settle on another channel reaches the queue in its time",
            ("connection", "channel", "queue"),
            ("no_ack", "expect", "within"),
        ),
        StepKind(
            "consume",
            "basic.consume with consumer tag `tag`, consume-ok awaited",
            ("connection", "channel", "queue", "tag"),
            ("no_ack", "exclusive", "no_local", "arguments"),
            "consumer",
        ),
        StepKind(
            "deliveries",
            "within `within` seconds (default 1) exactly `count` messages are delivered on the "
            "channel (to consumer `tag` if given) since the last such check; `bodies`, "
            "`redelivered`, `properties`: lists in delivery order",
            ("connection", "channel", "count"),
            ("bodies", "redelivered", "properties", "tag", "within"),
            "consumer",
        ),
        StepKind(
            "ack",
            f"basic.ack of `delivery`: {_SETTLE} (`all`: multiple up to the last)",
            ("connection", "channel", "delivery"),
            ("multiple",),
        ),
        StepKind(
            "reject",
            f"basic.reject of `delivery`: {_SETTLE} (`all`: each), with `requeue`",
            ("connection", "channel", "delivery"),
            ("requeue",),
        ),
        StepKind(
            "nack",
            f"basic.nack (RabbitMQ extension) of `delivery`: {_SETTLE}, `requeue`, `multiple`",
            ("connection", "channel", "delivery"),
            ("requeue", "multiple"),
        ),
        # -- the broker and control ----------------------------------------------------------
        StepKind(
            "restart_broker",
            "stop and start the broker; every open connection is lost",
            (),
            (),
            "restart",
        ),
        StepKind("wait", "sleep this many seconds", scalar=True),
        StepKind(
            "repeat",
            "run `steps` `times` times, with ${i} = 1, 2, ... substituted",
            ("times", "steps"),
        ),
        StepKind(
            "eventually",
            "run `steps` again until they all hold, for at most `within` seconds (default 2): "
            "for a state the broker reaches in its own time, such as a queue's message count "
            "just after publishing to it",
            ("steps",),
            ("within",),
        ),
        # -- a client library's side (capability client: amqpfuzz scenarios --client) ------------
        StepKind(
            "serve",
            "amqpfuzz, the broker a client library connects to, strikes with server-side "
            "`operator` at its point (none: a valid connection)",
            (),
            ("operator",),
            "client",
        ),
        StepKind(
            "expect_client",
            "the client closes (`close`: connection, channel, socket; `none`: it carries on "
            "until the broker closes; `any`) with `code` if given; `frames: valid`: what it "
            "sends breaks nothing the broker checks",
            ("close",),
            ("code", "frames"),
            "client",
        ),
        StepKind(
            "until_limit",
            "run `steps` with ${i} = 1, 2, ... until one fails because the broker refuses "
            "(optionally with the close `expect_close` describes) or `max` rounds pass; the "
            "rounds completed must be at least `at_least`; the runner records the count",
            ("steps", "max"),
            ("at_least", "expect_close"),
            "many-queues",
        ),
    )
}

VARIABLES: Mapping[str, str] = {
    "prefix": "the run's prefix for every name it creates",
    "i": "the round of the innermost repeat or until_limit, from 1",
    "plain": "the SASL PLAIN response for the target's credentials (\\0user\\0password)",
}

# A field expectation is a literal (equal) or a mapping with one of these keys. A table literal
# whose only key is a matcher's name is read as the matcher.
MATCHERS: Mapping[str, str] = {
    "has_keys": "a table holding at least these keys",
    "contains": "a string whose space-separated words, or an array whose items, include this",
    "not_in": "a value equal to none of these",
}

LANGUAGE = Language(STEPS, VARIABLES, MATCHERS)
