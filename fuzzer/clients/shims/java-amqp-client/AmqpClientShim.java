// The amqp-client (RabbitMQ's Java client, com.rabbitmq:amqp-client) shim: the 0-9-1 shim
// contract in fuzzer/clients/shims/__init__.py. Events, arguments and the crash handler are
// Events.java's.
//
// One JVM, one ConnectionFactory; each case a new connection (no automatic recovery, no
// heartbeats, a 10 s TCP connect timeout, 10 s for connection.start and 20 s for the rest of
// the handshake, no RPC timeout). Deliveries and
// cancels come on the library's consumer thread, returns on its reader thread, in the order
// the library dispatches them; before a case's final event the shim waits for its consumer to
// be told the channel ended (the library dispatches that after every pending delivery).
//
// Clean outcomes: the connection.close of the server ("closed" by server), the socket's end
// (an EOFException out of reading a frame, or a SocketException, under the library's
// shutdown: "closed" by socket; an EOFException out of a truncated method is an "error"), a
// channel.close of the server ("error", ShutdownSignalException with its reply code), and the
// library's own errors ("error"): IOException and its kin (MalformedFrameException,
// PossibleAuthenticationFailureException, ...), the com.rabbitmq.client exceptions
// (ShutdownSignalException, UnexpectedFrameError, UnexpectedMethodError,
// UnknownChannelException, ...), TimeoutException, and the IllegalStateException or
// IllegalArgumentException the library throws itself (its top frame is com.rabbitmq's, e.g.
// "Negotiated frame max cannot be negative", "Unsolicited delivery"). Anything else -- an
// exception the library hands to its ExceptionHandler (say a NegativeArraySizeException or
// ArrayIndexOutOfBoundsException out of its decoding), a Java runtime exception on any
// thread, any Error -- is a crash: stack trace on stderr, status 70.
//
// What the library cannot show: a long string in a header table is decoded as UTF-8 (invalid
// octets become U+FFFD); a table that repeats a key keeps the first; a timestamp is kept as
// milliseconds in a long (seconds past +-2^63/1000 wrap). The rest it keeps as sent: every
// property with whether it was present (cluster-id too), unsigned header values widened.
// Header values: strings as strings, byte arrays "hex:...", decimals "<digits>E-<places>",
// timestamps integer seconds, floats JSON cannot carry as strings ("NaN", "Infinity").

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.Consumer;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.ExceptionHandler;
import com.rabbitmq.client.GetResponse;
import com.rabbitmq.client.LongString;
import com.rabbitmq.client.ShutdownSignalException;
import com.rabbitmq.client.TopologyRecoveryException;
import java.io.EOFException;
import java.io.IOException;
import java.math.BigDecimal;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

public final class AmqpClientShim {
    static final String NAME = "rabbitmq-java";
    // how long a case's end waits for the consumer thread to pass on what it still holds
    static final long DRAIN_MS = 5_000;

    private AmqpClientShim() {}

    public static void main(String[] argv) throws Exception {
        Events.Args args = Events.start("AmqpClientShim", argv);
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(args.url());
        if (factory.getVirtualHost().isEmpty()) {
            factory.setVirtualHost("/"); // amqp://host:port/ means the default, as in every shim
        }
        factory.setRequestedHeartbeat(0);
        factory.setConnectionTimeout(Events.CONNECT_TIMEOUT_MS);
        // the library waits half of it for connection.start: 10 s, as the contract says
        factory.setHandshakeTimeout(2 * Events.CONNECT_TIMEOUT_MS);
        factory.setChannelRpcTimeout(0); // none: whoever runs the shim judges hangs
        factory.setAutomaticRecoveryEnabled(false);
        factory.setTopologyRecoveryEnabled(false);
        factory.setExceptionHandler(new CrashingHandler());
        for (int n = 0; ; n++) {
            new Case(factory, n, args.lingerMillis()).run();
            if (args.once()) {
                System.out.flush();
                System.exit(0);
            }
        }
    }

    /** Whether an exception is one of the library's own errors (the file's comment says which);
     * an Error never is. */
    static boolean librarysOwn(Throwable error) {
        if (error instanceof Error) {
            return false;
        }
        if (error instanceof IOException || error instanceof TimeoutException) {
            return true;
        }
        if (error.getClass().getName().startsWith("com.rabbitmq.")) {
            return true;
        }
        if (error instanceof IllegalStateException || error instanceof IllegalArgumentException) {
            StackTraceElement[] frames = error.getStackTrace();
            return frames.length > 0 && frames[0].getClassName().startsWith("com.rabbitmq.");
        }
        return false;
    }

    /** The library's ExceptionHandler: its own errors are left to the shutdown that follows
     * them (the case's end says what it was), anything else is a crash; an exception out of the
     * shim's own callbacks (consumer, return listener) is always one. */
    static final class CrashingHandler implements ExceptionHandler {
        @Override
        public void handleUnexpectedConnectionDriverException(Connection conn, Throwable error) {
            if (!librarysOwn(error)) {
                Events.crash(error);
            }
        }

        @Override
        public void handleReturnListenerException(Channel channel, Throwable error) {
            Events.crash(error);
        }

        @Override
        public void handleConfirmListenerException(Channel channel, Throwable error) {
            Events.crash(error);
        }

        @Override
        public void handleBlockedListenerException(Connection connection, Throwable error) {
            Events.crash(error);
        }

        @Override
        public void handleConsumerException(Channel channel, Throwable error, Consumer consumer,
                String consumerTag, String methodName) {
            Events.crash(error);
        }

        @Override
        public void handleConnectionRecoveryException(Connection conn, Throwable error) {
            Events.crash(error); // no recovery is enabled
        }

        @Override
        public void handleChannelRecoveryException(Channel ch, Throwable error) {
            Events.crash(error);
        }

        @Override
        public void handleTopologyRecoveryException(Connection conn, Channel ch,
                TopologyRecoveryException error) {
            Events.crash(error);
        }
    }

    /** One case: one connection. */
    static final class Case {
        final ConnectionFactory factory;
        final int n;
        final long lingerMillis;
        final CountDownLatch ended = new CountDownLatch(1); // the connection or channel ended
        final CountDownLatch consumerGone = new CountDownLatch(1); // told of the end, or cancelled
        Connection conn;
        Channel channel;
        boolean consuming;

        Case(ConnectionFactory factory, int n, long lingerMillis) {
            this.factory = factory;
            this.n = n;
            this.lingerMillis = lingerMillis;
        }

        void run() {
            Events.emit("connecting", n);
            try {
                session();
                conn.close(); // waits for close-ok, with no timeout
                drain();
                Events.emit("closed", n, "by", "client", "code", null, "text", null);
                return;
            } catch (Throwable error) {
                Events.rethrowFatal(error);
                if (!librarysOwn(error)) { // not caught: a crash, with the library's frames
                    throw error instanceof RuntimeException r ? r : new RuntimeException(error);
                }
                ended(error);
            }
            if (conn != null && conn.isOpen()) {
                conn.abort(1000); // after an error: connection.close, not waited for long
            }
        }

        void session() throws IOException, TimeoutException, InterruptedException {
            conn = factory.newConnection("amqpfuzz-shim-" + NAME + "-" + n);
            conn.addShutdownListener(cause -> ended.countDown());
            Map<String, Object> server = new LinkedHashMap<>();
            for (Map.Entry<String, Object> e : conn.getServerProperties().entrySet()) {
                if (e.getValue() instanceof LongString s) {
                    server.put(e.getKey(), s.toString());
                } else if (e.getValue() instanceof String s) {
                    server.put(e.getKey(), s);
                }
            }
            Events.emit("connected", n, "server_properties", server);
            Channel ch = conn.createChannel();
            if (ch == null) { // the library's word for "no channel number left"
                throw new IOException("createChannel returned null: no channel available");
            }
            channel = ch;
            int number = ch.getChannelNumber();
            Events.emit("channel", n, "channel", number);
            ch.addShutdownListener(cause -> ended.countDown());
            ch.addReturnListener(r -> message("return", number, null, null, r.getExchange(),
                    r.getRoutingKey(), r.getProperties(), r.getBody()));
            ch.confirmSelect();
            AMQP.Queue.DeclareOk declared = ch.queueDeclare(Events.QUEUE, false, false, false, null);
            Events.emit("declared", n, "queue", declared.getQueue(),
                    "message_count", declared.getMessageCount(),
                    "consumer_count", declared.getConsumerCount());
            String tag = ch.basicConsume(Events.QUEUE, false, new DefaultConsumer(ch) {
                @Override
                public void handleDelivery(String consumerTag, Envelope envelope,
                        AMQP.BasicProperties props, byte[] body) {
                    message("deliver", number, envelope.getDeliveryTag(), envelope.isRedeliver(),
                            envelope.getExchange(), envelope.getRoutingKey(), props, body);
                    ack(envelope.getDeliveryTag());
                }

                @Override
                public void handleCancel(String consumerTag) {
                    Events.emit("cancelled", n, "tag", consumerTag);
                    consumerGone.countDown();
                }

                @Override
                public void handleShutdownSignal(String consumerTag, ShutdownSignalException sig) {
                    consumerGone.countDown();
                }
            });
            consuming = true;
            Events.emit("consuming", n, "tag", tag);
            AMQP.BasicProperties props = new AMQP.BasicProperties.Builder()
                    .contentType("text/plain")
                    .deliveryMode(1)
                    .headers(Map.of("shim", NAME))
                    .build();
            byte[] body = ("amqpfuzz-shim-" + n).getBytes(StandardCharsets.US_ASCII);
            ch.basicPublish("", Events.QUEUE, true, props, body);
            boolean ack = ch.waitForConfirms(); // no timeout; a nack is false
            Events.emit("confirm", n, "ack", ack);
            GetResponse got = ch.basicGet(Events.QUEUE, false);
            if (got == null) {
                Events.emit("get-empty", n);
            } else {
                Envelope e = got.getEnvelope();
                message("get", number, e.getDeliveryTag(), e.isRedeliver(), e.getExchange(),
                        e.getRoutingKey(), got.getProps(), got.getBody());
                ch.basicAck(e.getDeliveryTag(), false);
            }
            if (ended.await(lingerMillis, TimeUnit.MILLISECONDS)) {
                // the channel or the connection ended while lingering: the case ends with it
                ShutdownSignalException why = conn.isOpen() ? ch.getCloseReason() : conn.getCloseReason();
                if (why != null) {
                    throw why;
                }
                throw new IOException("ended without a reason");
            }
        }

        void ack(long tag) {
            try {
                channel.basicAck(tag, false);
            } catch (IOException | ShutdownSignalException e) {
                // the channel is closing: the case's end reports why
            }
        }

        void message(String via, int channelNumber, Long tag, Boolean redelivered,
                String exchange, String routingKey, AMQP.BasicProperties props, byte[] body) {
            Events.emit("message", n, "via", via, "channel", channelNumber, "delivery_tag", tag,
                    "redelivered", redelivered, "exchange", exchange, "routing_key", routingKey,
                    "body", Events.hex(body), "properties", properties(props));
        }

        /** Waits for the consumer thread to pass on the deliveries it still holds. */
        void drain() throws InterruptedException {
            if (consuming) {
                consumerGone.await(DRAIN_MS, TimeUnit.MILLISECONDS);
            }
        }

        /** The case's final event, after `error` ended it (the file's comment says how). */
        void ended(Throwable error) {
            try {
                drain();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            ShutdownSignalException why = null;
            if (conn != null && !conn.isOpen()) {
                why = conn.getCloseReason();
            }
            if (why == null) {
                why = shutdownIn(error);
            }
            Throwable cause = error;
            if (why != null) {
                Object reason = why.getReason();
                if (!why.isInitiatedByApplication() && reason instanceof AMQP.Connection.Close c) {
                    Events.emit("closed", n, "by", "server", "code", c.getReplyCode(), "text",
                            c.getReplyText());
                    return;
                }
                if (!why.isInitiatedByApplication() && reason instanceof AMQP.Channel.Close c) {
                    Events.emit("error", n, "class", why.getClass().getName(), "code",
                            c.getReplyCode(), "message", c.getReplyText());
                    return;
                }
                if (why.getCause() != null) {
                    cause = why.getCause();
                }
            }
            if (socketEnd(error) || socketEnd(cause)) {
                Events.emit("closed", n, "by", "socket", "code", null, "text",
                        String.valueOf(rootOf(cause)));
                return;
            }
            Events.emit("error", n, "class", cause.getClass().getName(), "code", null,
                    "message", String.valueOf(cause.getMessage()));
        }
    }

    static ShutdownSignalException shutdownIn(Throwable error) {
        for (Throwable t = error; t != null; t = t.getCause()) {
            if (t instanceof ShutdownSignalException s) {
                return s;
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return null;
    }

    /** The socket's end: an EOFException or a SocketException (not a timeout), directly or
     * under the library's wrapping IOExceptions and shutdown signals -- and nothing of the
     * library's own, say a MalformedFrameException, on the way. */
    static boolean socketEnd(Throwable error) {
        for (Throwable t = error; t != null; t = t.getCause()) {
            if (t instanceof EOFException) {
                return readingFrames(t); // not one out of decoding a method's arguments
            }
            if (t instanceof SocketException) {
                return true;
            }
            boolean wrapper = t.getClass() == IOException.class || t instanceof ShutdownSignalException;
            if (!wrapper || t instanceof SocketTimeoutException || t.getCause() == t) {
                return false;
            }
        }
        return false;
    }

    /** Whether an exception came out of reading a frame off the socket (the library takes any
     * EOFException for the socket's end, even one out of a truncated method's arguments). */
    static boolean readingFrames(Throwable error) {
        for (StackTraceElement frame : error.getStackTrace()) {
            if (frame.getClassName().equals("com.rabbitmq.client.impl.Frame")
                    && frame.getMethodName().equals("readFrom")) {
                return true;
            }
        }
        return false;
    }

    static Throwable rootOf(Throwable error) {
        Throwable t = error;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t;
    }

    /** The properties present, by the specification's names. */
    static Map<String, Object> properties(AMQP.BasicProperties p) {
        Map<String, Object> found = new LinkedHashMap<>();
        if (p == null) {
            return found;
        }
        put(found, "content-type", p.getContentType());
        put(found, "content-encoding", p.getContentEncoding());
        if (p.getHeaders() != null) {
            found.put("headers", jsonable(p.getHeaders()));
        }
        put(found, "delivery-mode", p.getDeliveryMode());
        put(found, "priority", p.getPriority());
        put(found, "correlation-id", p.getCorrelationId());
        put(found, "reply-to", p.getReplyTo());
        put(found, "expiration", p.getExpiration());
        put(found, "message-id", p.getMessageId());
        if (p.getTimestamp() != null) {
            found.put("timestamp", seconds(p.getTimestamp()));
        }
        put(found, "type", p.getType());
        put(found, "user-id", p.getUserId());
        put(found, "app-id", p.getAppId());
        put(found, "cluster-id", p.getClusterId());
        return found;
    }

    static void put(Map<String, Object> found, String key, Object value) {
        if (value != null) {
            found.put(key, value);
        }
    }

    static long seconds(Date date) {
        return Math.floorDiv(date.getTime(), 1000L);
    }

    /** A header table's value as JSON (the file's comment says how). */
    static Object jsonable(Object value) {
        if (value instanceof LongString s) {
            return s.toString();
        }
        if (value instanceof byte[] bytes) {
            return "hex:" + Events.hex(bytes);
        }
        if (value instanceof BigDecimal d) {
            return d.unscaledValue() + "E-" + d.scale();
        }
        if (value instanceof Date date) {
            return seconds(date);
        }
        if (value instanceof Map<?, ?> m) {
            Map<String, Object> table = new LinkedHashMap<>();
            for (Map.Entry<?, ?> e : m.entrySet()) {
                table.put(String.valueOf(e.getKey()), jsonable(e.getValue()));
            }
            return table;
        }
        if (value instanceof List<?> l) {
            List<Object> items = new ArrayList<>();
            for (Object item : l) {
                items.add(jsonable(item));
            }
            return items;
        }
        return value; // numbers, booleans, null, strings: Events writes them
    }
}
