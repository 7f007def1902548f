"""The language of 1.0 scenario files, as data (:data:`LANGUAGE`).

A 1.0 file encodes one MUST or MUST NOT sentence of the specification with a few steps a client
takes (connect, begin a session, attach links, send and receive messages, settle them) and
checks on what the peer did. Conventions:

* ``connection`` names a connection opened by ``connect``; ``channel`` a session begun on it;
  ``handle`` a link attached on that session.
* A node's ``address`` starts with ``${prefix}`` (the run's prefix): only those are deleted.
* ``save`` binds what the peer sent (its attach, a message received) to a name; ``check``
  reads it by a dotted path: ``m.bare`` (the bare message's exact bytes), ``m.header.delivery-
  count``, ``m.message-annotations``, ``a.source.default-outcome``.
* ``frame`` sends one performative of the specification with the given fields (those of
  primitive types, written as the XML writes values: ``handle: 7``, ``role: receiver``), on
  any channel, for what a client library would not send: a handle in use, a channel beyond
  the peer's channel-max. Its answer is the next step's (``expect``).
* ``expect``'s ``condition`` is an error condition (``framing-error``), or the restricted type
  that lists several (``session-error``: any of them), or ``"*"`` (an error, whichever).
* A client scenario (capability ``client``, ``amqpfuzz scenarios --client NAME``) is played
  against a client library's shim, amqpfuzz being the peer it connects to: one ``serve`` (the
  peer's ``open`` and ``begin`` fields, and a server-side ``operator`` struck at its point; none:
  a valid connection) then one ``expect_client`` (what the client must do: ``close`` the
  connection, session or link with ``condition``, close the ``socket``, ``none``: carry on
  until the peer closes, or ``any``: whatever it does; ``frames``: the peer's checks of what
  the client sends that must find nothing, by name (``[session-flow]``), or ``valid``: all).
* A message is given by its sections: ``header``, ``message_annotations``, ``properties``,
  ``application_properties`` (mappings of their fields or entries) and ``body`` (text: an
  amqp-value).
"""

from __future__ import annotations

from ..language import Language, StepKind

__all__ = ["CHECKS", "CLIENT_CLOSES", "FRAME_CHECKS", "LANGUAGE", "OUTCOMES", "SECTIONS", "SERVED"]

_LINK = ("connection", "channel", "handle")
OUTCOMES = ("accepted", "rejected", "released", "modified")
SECTIONS = ("header", "message_annotations", "properties", "application_properties", "body")
CHECKS = ("equals", "same_as", "is_set", "is_not_set", "one_of", "each_in", "has_key")
CLIENT_CLOSES = ("connection", "session", "link", "socket", "none", "any")
SERVED = {"open": ("channel-max", "max-frame-size"), "begin": ("handle-max",)}
# the peer's checks of what a client sends, by name (amqpfuzz.fuzzer.protocols.amqp10.serving)
FRAME_CHECKS = (
    "malformed", "order", "header", "channel-max", "session-flow-delivery-count",
    "session-flow-link-credit", "session-flow-available", "session-flow-drain", "remote-channel",
    "handle-in-use", "handle-max", "link-name", "handle", "settlement", "credit",
    "content-encoding", "delivery-id", "disposition",
)  # fmt: skip

LANGUAGE = Language.of(
    StepKind("connect", "log in (SASL) and open connection `as`; the peer's open bound "
             "to `save`", ("as",), ("save",)),
    StepKind("begin", "begin a session on `channel`, the peer's begin awaited and bound "
             "to `save`", ("connection", "channel"), ("save",)),
    StepKind("attach",
             "attach link `handle` as `role` (sender or receiver) to `address` (or a "
             "`dynamic` node), `durable` terminus if asked; the peer's attach awaited and "
             "bound to `save`", (*_LINK, "role"), ("address", "dynamic", "durable", "save")),
    StepKind("credit", "grant `credit` on receiving link `handle`", (*_LINK, "credit")),
    StepKind("send",
             "a transfer of `message` on sending link `handle` (`settled`: true by "
             "default); what was sent bound to `save` (its `bare` bytes)",
             (*_LINK, "message"), ("settled", "save")),
    StepKind("settled", "the peer's disposition of the last unsettled transfer: `outcome`",
             ("connection", "channel", "outcome")),
    StepKind("receive", "the next transfer on the session, bound to `save`",
             ("connection", "channel", "save"), ("seconds",)),
    StepKind("settle",
             "settle received `message` with `outcome` (modified: `delivery_failed`, "
             "`undeliverable_here`)", ("connection", "channel", "message", "outcome"),
             ("delivery_failed", "undeliverable_here")),
    StepKind("nothing", "no transfer arrives on the session within `seconds`",
             ("connection", "channel", "seconds")),
    StepKind("expect", "the peer closes the `close` scope (link, session, connection), "
             "with `condition` if given", ("connection", "channel", "close"),
             ("condition",)),
    StepKind("detach", "detach link `handle` (closed), the peer's detach awaited and bound "
             "to `save`", _LINK, ("save",)),
    StepKind("frame", "send `performative` with `fields` on `channel` of `connection`",
             ("connection", "channel", "performative"), ("fields",)),
    StepKind("await", "the peer's next `performative` on the session (within `seconds`; "
             "with `where`, the first whose fields have those values), bound to `save`",
             ("connection", "channel", "performative", "save"), ("seconds", "where")),
    StepKind("close", "close the connection politely: the peer's close awaited",
             ("connection",)),
    StepKind("restart", "restart the broker (a throwaway one the run started)",
             capability="restart"),
    StepKind("check", "what `that` (a dotted path to a saved value) reads meets one of "
             f"{', '.join(CHECKS)}", ("that",), CHECKS),
    StepKind("serve", "amqpfuzz, the peer a client library connects to, sends its `open` and "
             "`begin` with these fields and strikes with server-side `operator` at its point",
             (), ("operator", "open", "begin"), capability="client"),
    StepKind("expect_client", "the client closes (`close`: connection, session, link, socket; "
             "`none`: it carries on; `any`) with `condition` if given; `frames: valid`: what it sends "
             "breaks nothing of the checks named (or `valid`: all)", ("close",), ("condition", "frames"), capability="client"),
)  # fmt: skip
