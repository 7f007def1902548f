"""amqpfuzz's driving layer: the command line now; targets, engine, oracles and records later."""
