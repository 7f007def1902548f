"""The language of 0-10 scenario files, as data (:data:`LANGUAGE`).

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

from ..language import Language, StepKind

__all__ = ["HEADERS", "LANGUAGE"]

HEADERS = ("0-10", "other", "any")

LANGUAGE = Language.of(
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
)  # fmt: skip
