"""A property of the broker under test, over amqpfuzz's strategies: every queue name the
specification's queue-name domain allows is accepted and kept as given."""

from hypothesis import HealthCheck, given, settings

from amqpfuzz.strategies import domain_values


# One channel serves every example of the test (the fixture is set up once per test function),
# which is what we want here: Hypothesis's health check about it is not for this case.
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=domain_values("queue-name"))
def test_a_valid_queue_name_is_kept(amqp_channel, amqp_prefix, name):
    queue = amqp_prefix + name  # our prefix: never amq.*, and the run's cleanup finds it
    reply = amqp_channel.call("queue.declare", queue=queue, exclusive=True)
    assert amqp_channel.closed is None, f"the broker closed the channel: {amqp_channel.closed}"
    assert reply.name == "queue.declare-ok"
    assert reply.arguments["queue"] == queue
