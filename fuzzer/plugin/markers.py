"""The plugin's markers: one per kind of item, per AMQP class and per scenario capability,
registered in every run (so that ``--strict-markers`` accepts them). Plain data."""

from __future__ import annotations

__all__ = ["CAPABILITIES", "CLASSES", "MARKERS", "class_of"]

# The AMQP classes of every protocol amqpfuzz knows (and "domain" for rules on a domain): a
# marker each, registered at once (a test checks that every scenario's class is here).
CLASSES = (
    "connection",
    "channel",
    "access",
    "exchange",
    "queue",
    "basic",
    "file",
    "stream",
    "tx",
    "dtx",
    "tunnel",
    "confirm",
    "message",
    "session",
    "execution",
    "domain",
    # 1.0's messaging sections, whose MUST sentences are its scenario files
    "message_format",
    "delivery_state",
    "addressing",
    # and its transport part (a sentence's ``transport:links#19``)
    "transport",
)
# The capabilities of amqpfuzz.scenarios.vocabulary.CAPABILITIES (a test keeps them equal).
# (``client``: the client files, which client items play, share the client items' marker)
CAPABILITIES = ("second-connection", "restart", "many-queues", "raw-bytes", "consumer", "client")
MARKERS = {
    "amqp_scenario": "an amqpfuzz scenario file played against the target",
    "amqp_fuzz": "an amqpfuzz fuzz item: Hypothesis cases judged by the specification",
    **{f"amqp_class_{c}": f"amqpfuzz item about the AMQP {c} class" for c in CLASSES},
    **{
        f"amqp_{c.replace('-', '_')}": f"amqpfuzz scenario needing the {c} capability"
        for c in CAPABILITIES
    },
    "amqp_client": "an amqpfuzz client item: server scripts served to a client library",
}


def class_of(ref: str) -> str:
    """The AMQP class a spec reference is about (``queue.declare/queue/reserved``: queue; a 1.0
    sentence's ``delivery-state/released#1``: its section, delivery_state)."""
    return ref.split("#")[0].split(":")[0].split("/")[0].split(".")[0].replace("-", "_")
