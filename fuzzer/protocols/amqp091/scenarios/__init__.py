"""Playing the specification's scenario files on a 0-8/0-9/0-9-1 broker: the player, a handler
per step kind, and the mailbox that sorts a connection's frames the way the steps read them."""

from .player import PLAYER, Player
from .state import codec_protocol

__all__ = ["PLAYER", "Player", "codec_protocol"]
