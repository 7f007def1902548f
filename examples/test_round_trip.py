"""Plain tests with the plugin's fixtures: a pika connection and the target it points at."""


def test_a_message_comes_back_as_published(amqp_pika, amqp_prefix):
    channel = amqp_pika.channel()
    queue = channel.queue_declare(amqp_prefix + "round-trip", exclusive=True).method.queue
    channel.basic_publish(exchange="", routing_key=queue, body=b"hello")
    method, _properties, body = channel.basic_get(queue, auto_ack=True)
    assert method is not None and body == b"hello"


def test_the_target_is_on_this_machine(amqp_target):
    assert amqp_target.is_loopback
    assert "guest@" in amqp_target.safe_url and ":guest@" not in amqp_target.safe_url
