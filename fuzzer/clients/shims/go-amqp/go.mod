module amqpfuzz/shims/go-amqp

go 1.25

require github.com/Azure/go-amqp v1.7.0
