"""Stateful programs on a 0-8/0-9/0-9-1 broker through pika: the model and its steps, the
state machine that makes programs, and the replay of a program's steps."""

from .machine import machine_for
from .model import Program, Stored
from .replay import replay_program

__all__ = ["Program", "Stored", "machine_for", "replay_program"]
