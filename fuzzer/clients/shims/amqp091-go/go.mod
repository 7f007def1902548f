module amqpfuzz/shims/amqp091-go

go 1.20

require github.com/rabbitmq/amqp091-go v1.16.0
