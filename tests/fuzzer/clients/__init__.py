"""The client shims, their registry and ``amqpfuzz client``."""
