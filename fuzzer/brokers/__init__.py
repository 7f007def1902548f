"""The brokers amqpfuzz talks to: targets (where a broker is and how to log in), throwaway
brokers it starts itself, the parent's broker as a worker process sees it, and the expectation
profiles that say where a broker knowingly departs from the specification."""

from .broker import Broker, free_port, log_tail
from .errors import BrokerError
from .guardian import running as process_running
from .processes import BROKERS, RABBITMQCTL, GarageMQ, QpidProton, RabbitMQ, refuses, throwaway
from .targets import Target, TargetError, parse_target

__all__ = [
    "BROKERS",
    "RABBITMQCTL",
    "Broker",
    "BrokerError",
    "GarageMQ",
    "QpidProton",
    "RabbitMQ",
    "Target",
    "TargetError",
    "free_port",
    "log_tail",
    "parse_target",
    "process_running",
    "refuses",
    "throwaway",
]
