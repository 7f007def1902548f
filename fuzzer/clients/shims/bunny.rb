# frozen_string_literal: true

# The Bunny client shim: the shim contract in fuzzer/clients/shims.py.
#
# Clean outcomes are Bunny::Exception and its subclasses, except a Bunny::NetworkFailure
# wrapping something that is not a socket's end: Bunny's reader thread wraps every exception
# it meets that way ("caught an unexpected exception in the network loop"), so the shim
# raises what it wraps (a crash). Bunny's RPC timeout (continuation_timeout) is set to a day.
# Header values: UTF-8 strings as they are, other strings "hex:...", decimals
# "<digits>E-<places>", timestamps integer seconds, floats JSON cannot carry as strings.

require "bunny"
require "json"
require "logger"
require "uri"

QUEUE = "amqpfuzz-shim"
NAME = "bunny"
A_DAY_MS = 86_400_000
SOCKET_ENDS = [IOError, SystemCallError, Timeout::Error, AMQ::Protocol::EmptyResponseError].freeze
PROPERTY_NAMES = {
  content_type: "content-type", content_encoding: "content-encoding", headers: "headers",
  delivery_mode: "delivery-mode", priority: "priority", correlation_id: "correlation-id",
  reply_to: "reply-to", expiration: "expiration", message_id: "message-id",
  timestamp: "timestamp", type: "type", user_id: "user-id", app_id: "app-id",
  cluster_id: "cluster-id"
}.freeze

$case = 0
$out = Mutex.new

def emit(event, fields = {})
  line = JSON.generate({ event: event, case: $case }.merge(fields))
  $out.synchronize do
    $stdout.write("#{line}\n")
    $stdout.flush
  end
end

def text(value)
  return nil if value.nil?

  s = value.to_s.dup.force_encoding(Encoding::UTF_8)
  s.valid_encoding? ? s : s.scrub("\uFFFD")
end

def jsonable(value)
  case value
  when String
    s = value.dup.force_encoding(Encoding::UTF_8)
    s.valid_encoding? ? s : "hex:#{value.unpack1('H*')}"
  when Symbol then value.to_s
  when Time then value.to_i
  when Float then value.finite? ? value : value.to_s
  when Hash then value.to_h { |k, v| [jsonable(k.to_s), jsonable(v)] }
  when Array then value.map { |v| jsonable(v) }
  when Integer, true, false, nil then value
  else
    if defined?(BigDecimal) && value.is_a?(BigDecimal)
      sign, digits, _base, exponent = value.split
      places = digits.length - exponent
      "#{sign.negative? ? '-' : ''}#{digits}E-#{places}"
    else
      value.to_s
    end
  end
end

def message(via, channel, info, props, body)
  properties = {}
  props.to_hash.each do |name, value|
    properties[PROPERTY_NAMES[name]] = jsonable(value) if PROPERTY_NAMES.key?(name) && !value.nil?
  end
  returned = via == "return"
  emit("message", via: via, channel: channel,
                  delivery_tag: returned ? nil : info.delivery_tag.to_i,
                  redelivered: returned ? nil : info.redelivered,
                  exchange: jsonable(info.exchange), routing_key: jsonable(info.routing_key),
                  body: body.to_s.unpack1("H*"), properties: properties)
end

def connection(opts)
  Bunny.new(
    host: opts[:host], port: opts[:port], user: opts[:user], pass: opts[:password],
    vhost: opts[:vhost], heartbeat: 0, connection_timeout: 10, automatically_recover: false,
    # (by default Bunny takes a server's connection.close for a network failure to recover
    # from: nothing is raised, and the application never hears how the connection ended)
    recover_from_connection_close: false,
    continuation_timeout: A_DAY_MS, logger: Logger.new($stderr, level: Logger::FATAL)
  )
end

# Steps 2 to 9; returns when --linger passed with the connection open.
def session(opts, conn)
  conn.start
  server = (conn.server_properties || {}).select { |_k, v| v.is_a?(String) }
  emit("connected", server_properties: server.to_h { |k, v| [text(k), text(v)] })
  ch = conn.create_channel
  emit("channel", channel: ch.id)
  ch.confirm_select
  declared = ch.queue_declare(QUEUE, durable: false, exclusive: false, auto_delete: false)
  emit("declared", queue: text(declared.queue), message_count: declared.message_count,
                   consumer_count: declared.consumer_count)
  ch.default_exchange.on_return do |info, props, body|
    message("return", ch.id, info, props, body)
  end
  consumer = Bunny::Consumer.new(ch, QUEUE, ch.generate_consumer_tag, false)
  consumer.on_delivery do |info, props, body|
    message("deliver", ch.id, info, props, body)
    ch.ack(info.delivery_tag)
  end
  consumer.on_cancellation { |cancel| emit("cancelled", tag: text(cancel.consumer_tag)) }
  consuming = ch.basic_consume_with(consumer)
  emit("consuming", tag: text(consuming.consumer_tag))
  ch.basic_publish("amqpfuzz-shim-#{$case}", "", QUEUE,
                   mandatory: true, content_type: "text/plain", delivery_mode: 1,
                   headers: { "shim" => NAME })
  emit("confirm", ack: ch.wait_for_confirms)
  info, props, body = ch.basic_get(QUEUE, manual_ack: true)
  if info.nil?
    emit("get-empty")
  else
    message("get", ch.id, info, props, body)
    ch.ack(info.delivery_tag)
  end
  # Bunny raises what ends the connection into this thread, waking it up
  sleep(opts[:linger])
end

def run_case(opts)
  emit("connecting")
  conn = connection(opts)
  begin
    session(opts, conn)
    conn.close
    emit("closed", by: "client", code: nil, text: nil)
  rescue Bunny::ConnectionLevelException, Bunny::NotAllowedError => e
    close = e.connection_close
    if close
      emit("closed", by: "server", code: close.reply_code, text: text(close.reply_text))
    else
      emit("error", class: e.class.name, code: nil, message: text(e.message))
    end
  rescue Bunny::NetworkFailure => e
    raise e.cause unless e.cause.nil? || SOCKET_ENDS.any? { |kind| e.cause.is_a?(kind) }

    emit("closed", by: "socket", code: nil, text: text(e.message))
  rescue Bunny::TCPConnectionFailed, *SOCKET_ENDS => e
    emit("closed", by: "socket", code: nil, text: text(e.message))
  rescue Bunny::Exception => e
    code = e.respond_to?(:channel_close) && e.channel_close ? e.channel_close.reply_code : nil
    emit("error", class: e.class.name, code: code, message: text(e.message))
  ensure
    conn.transport&.close # the socket closed, no closing handshake
  end
end

def options(argv)
  url = nil
  once = false
  linger = 10.0
  args = argv.dup
  until args.empty?
    arg = args.shift
    if arg == "--once" then once = true
    elsif arg == "--linger" && !args.empty? then linger = Float(args.shift)
    elsif url.nil? && !arg.start_with?("-") then url = arg
    else
      warn "usage: bunny.rb URL [--once] [--linger SECONDS]"
      exit 2
    end
  end
  parts = URI.parse(url.to_s)
  if parts.host.nil?
    warn "usage: bunny.rb URL [--once] [--linger SECONDS]"
    exit 2
  end
  path = URI.decode_www_form_component(parts.path.to_s.delete_prefix("/"))
  { host: parts.host, port: parts.port || 5672,
    user: URI.decode_www_form_component(parts.user || "guest"),
    password: URI.decode_www_form_component(parts.password || "guest"),
    vhost: path.empty? ? "/" : path, once: once, linger: linger }
end

opts = options(ARGV)
loop do
  run_case(opts)
  break if opts[:once]

  $case += 1
end
