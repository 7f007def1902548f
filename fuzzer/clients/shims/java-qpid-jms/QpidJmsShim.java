// The Qpid JMS client shim (org.apache.qpid:qpid-jms-client, JMS 2/3 over AMQP 1.0): the AMQP
// 1.0 shim contract in fuzzer/clients/shims/__init__.py, as far as JMS lets a program see it.
// Events, arguments and the crash handler are Events.java's.
//
// One JVM; each case a new JmsConnectionFactory connection to amqp://host:port (the contract
// URL's user and password as JMS credentials with amqp.saslMechanisms=PLAIN, none: ANONYMOUS;
// amqp.idleTimeout=0, 10 s for the TCP connect and for the peer's open, credit 10 by
// jms.prefetchPolicy.all, no send or request timeout; its close waits up to 60 s, the library's
// jms.closeTimeout; jms.receiveLocalOnly: a timed receive waits for what the credit brings and
// never drains the link). A CLIENT_ACKNOWLEDGE session, a consumer and a producer on the queue
// amqpfuzz-shim; a persistent TextMessage sent synchronously (Qpid JMS waits for its outcome);
// then every message received until --linger (counted from `connected`) runs out, each
// acknowledged (accepted).
//
// Clean outcomes: the peer's close ("closed" by server, its condition and description read off
// the provider's proton-j connection), the socket's end (an IOException at the root of the
// failure the library reports: "closed" by socket), a consumer or session the peer closed
// ("detached" / "ended", as JMS reports them: see below) and the library's own errors
// ("error", the root cause's class): JMSException and Qpid JMS's ProviderException kin,
// proton-j's exceptions, IOException, and the IllegalArgument- or IllegalStateException the
// library throws itself (top frame in org.apache.qpid or io.netty). An exception anywhere in a
// failure's causes that is none of those (a NullPointerException, a ClassCastException, an
// IndexOutOfBoundsException, any Error) is a crash, found on the library's thread (the
// connection's ExceptionListener) or the shim's: stack trace on stderr, status 70.
//
// What JMS cannot show: links and sessions are hidden -- `receiving` and `sending` carry link
// null (Qpid JMS names its links itself), a link the peer detached shows only as the consumer
// failing ("detached" with link null, condition null, the library's message; the producer's
// only if the send fails with it), a session the peer ended likewise ("ended"); the message the
// shim sends has Qpid JMS's own message-id ("ID:..."), no content-type (a TextMessage is an
// amqp-value string), and the header and message annotations Qpid JMS adds; a rejected
// outcome's condition is not told (the confirm's condition is null, its description the
// library's message). Of a received message: the body as JMS types it (TextMessage: a value;
// BytesMessage: one data section, even from an amqp-value binary; MapMessage: a value;
// StreamMessage: one sequence; ObjectMessage: its object's text; a bare Message: no body);
// properties through Qpid JMS's AMQP message facade (message-id, user-id, subject,
// content-type, group-id, group-sequence but 0, reply-to-group-id, creation-time but 0; not to,
// reply-to, correlation-id or absolute-expiry-time, which it turns into JMS destinations,
// "ID:" strings and JMS expirations); application properties as the facade holds them; no
// message annotations; the header as JMS defaults it (durable, priority, delivery-count: absent reads as false, 4, 0);
// settled: null (JMS hides settlement). Values as the other 1.0 shims write them.

import jakarta.jms.BytesMessage;
import jakarta.jms.Connection;
import jakarta.jms.JMSException;
import jakarta.jms.MapMessage;
import jakarta.jms.Message;
import jakarta.jms.MessageConsumer;
import jakarta.jms.MessageEOFException;
import jakarta.jms.MessageProducer;
import jakarta.jms.ObjectMessage;
import jakarta.jms.Queue;
import jakarta.jms.Session;
import jakarta.jms.StreamMessage;
import jakarta.jms.TextMessage;
import java.lang.reflect.Field;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Date;
import java.util.Enumeration;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.qpid.jms.JmsConnectionFactory;
import org.apache.qpid.jms.message.JmsMessage;
import org.apache.qpid.jms.provider.amqp.AmqpProvider;
import org.apache.qpid.jms.provider.amqp.message.AmqpJmsMessageFacade;
import org.apache.qpid.proton.amqp.Binary;
import org.apache.qpid.proton.amqp.DescribedType;
import org.apache.qpid.proton.amqp.Symbol;
import org.apache.qpid.proton.amqp.UnsignedByte;
import org.apache.qpid.proton.amqp.UnsignedInteger;
import org.apache.qpid.proton.amqp.UnsignedLong;
import org.apache.qpid.proton.amqp.UnsignedShort;
import org.apache.qpid.proton.amqp.transport.ErrorCondition;
import org.apache.qpid.proton.engine.EndpointState;

public final class QpidJmsShim {
    static final String NAME = "qpid-jms";

    private QpidJmsShim() {}

    public static void main(String[] argv) {
        Events.Args args = Events.start("QpidJmsShim", argv);
        for (int n = 0; ; n++) {
            new Case(args, n).run();
            if (args.once()) {
                System.exit(0);
            }
        }
    }

    /** The linger ran out. */
    static final class Lingered extends Exception {
        Lingered() {
            super(null, null, false, false);
        }
    }

    static String remoteUri(String url, boolean plain) {
        String ms = String.valueOf(Events.CONNECT_TIMEOUT_MS);
        return "amqp://" + Events.host(url) + ":" + Events.port(url)
                + "?amqp.idleTimeout=0"
                + "&amqp.saslMechanisms=" + (plain ? "PLAIN" : "ANONYMOUS")
                + "&transport.connectTimeout=" + ms
                + "&jms.connectTimeout=" + ms
                + "&jms.sendTimeout=-1&jms.requestTimeout=-1"
                + "&jms.prefetchPolicy.all=10"
                // a timed receive reads what the credit brought, no drain of the link's credit
                + "&jms.receiveLocalOnly=true"
                + "&jms.clientID=" + URLEncoder.encode(
                        "amqpfuzz-shim-qpid-jms-" + ProcessHandle.current().pid() + "-"
                                + System.nanoTime(), StandardCharsets.UTF_8);
    }

    /** One case: one connection. */
    static final class Case {
        final Events.Args args;
        final int n;
        final CountDownLatch down = new CountDownLatch(1); // the connection failed
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        Connection conn;
        Object proton; // the provider's proton-j Connection, read once connected
        long deadline = Long.MAX_VALUE;
        boolean opened;

        Case(Events.Args args, int n) {
            this.args = args;
            this.n = n;
        }

        void run() {
            Events.emit("connecting", n);
            try {
                session();
                if (down.getCount() == 0) {
                    ended(failure.get());
                    return;
                }
                conn.close();
                if (failure.get() != null) {
                    ended(failure.get());
                    return;
                }
                Events.emit("closed", n, "by", "client", "condition", null, "description", null);
            } catch (JMSException error) {
                ended(failure.get() != null ? failure.get() : error);
            } catch (InterruptedException error) {
                throw new IllegalStateException(error); // no one interrupts the shim: a crash
            } finally {
                if (conn != null && down.getCount() != 0) {
                    try {
                        conn.close();
                    } catch (JMSException | RuntimeException ignored) {
                        // closing after the case's end: nothing left to report
                    }
                }
            }
        }

        void session() throws JMSException, InterruptedException {
            String[] user = Events.credentials(args.url());
            JmsConnectionFactory factory = new JmsConnectionFactory(remoteUri(args.url(), user != null));
            conn = user == null ? factory.createConnection() : factory.createConnection(user[0], user[1]);
            // the library's thread: a failure whose causes are not the library's is a crash now
            conn.setExceptionListener(error -> {
                crashUnlessOwn(error);
                failure.compareAndSet(null, error);
                down.countDown();
            });
            conn.start(); // the peer's open, answered
            opened = true;
            deadline = System.nanoTime() + args.lingerMillis() * 1_000_000L;
            proton = protonConnection(conn);
            Events.emit("connected", n, "container_id", remoteContainer(), "properties", remoteProperties());
            try {
                steps();
            } catch (Lingered lingered) {
                // --linger ran out: the case closes as it is
            }
        }

        void steps() throws JMSException, InterruptedException, Lingered {
            Session session;
            try {
                session = conn.createSession(false, Session.CLIENT_ACKNOWLEDGE);
            } catch (JMSException error) {
                refused(error, "ended");
                return;
            }
            Events.emit("session", n);
            Queue queue = session.createQueue(Events.QUEUE);
            MessageConsumer consumer;
            try {
                consumer = session.createConsumer(queue);
            } catch (JMSException error) {
                refused(error, "detached");
                return;
            }
            Events.emit("receiving", n, "link", null);
            MessageProducer producer = null;
            try {
                producer = session.createProducer(queue);
            } catch (JMSException error) {
                refused(error, "detached");
            }
            if (producer != null) {
                Events.emit("sending", n, "link", null);
                send(session, producer);
            }
            receive(consumer);
        }

        void send(Session session, MessageProducer producer) throws JMSException, Lingered {
            TextMessage message = session.createTextMessage("amqpfuzz-shim-" + n);
            message.setStringProperty("shim", NAME);
            try {
                producer.send(message); // persistent: waits for the outcome, no timeout
                Events.emit("confirm", n, "outcome", "accepted");
            } catch (JMSException error) {
                live(error);
                String kind = rootOf(error).getClass().getSimpleName();
                String outcome = kind.contains("Released") ? "released"
                        : kind.contains("Modified") ? "modified" : "rejected";
                Events.emit("confirm", n, "outcome", outcome, "condition", null,
                        "description", String.valueOf(error.getMessage()));
            }
        }

        void receive(MessageConsumer consumer) throws JMSException, InterruptedException, Lingered {
            while (true) {
                long millis = Math.max(1, left() / 1_000_000L);
                Message message;
                try {
                    message = consumer.receive(millis);
                } catch (JMSException error) {
                    refused(error, "detached");
                    return;
                }
                if (message == null) {
                    left(); // throws when the linger is over
                    continue;
                }
                message(message);
                message.acknowledge();
            }
        }

        /** A step the peer refused or a consumer it closed, with the connection still up:
         * reported as `event` ("detached" or "ended"); the case then lingers on. */
        void refused(JMSException error, String event) throws JMSException, InterruptedException, Lingered {
            live(error);
            if (event.equals("detached")) {
                Events.emit("detached", n, "link", null, "condition", null,
                        "description", String.valueOf(error.getMessage()));
            } else {
                Events.emit("ended", n, "condition", null, "description", String.valueOf(error.getMessage()));
            }
            down.await(left(), TimeUnit.NANOSECONDS);
            if (down.getCount() != 0) {
                throw new Lingered();
            }
        }

        /** Rethrows an error that came with the connection's end (run() reports it). */
        void live(JMSException error) throws JMSException {
            crashUnlessOwn(error);
            if (down.getCount() == 0 || connectionEnded()) {
                throw error;
            }
        }

        boolean connectionEnded() {
            if (proton instanceof org.apache.qpid.proton.engine.Connection c) {
                return c.getRemoteState() == EndpointState.CLOSED;
            }
            return false;
        }

        long left() throws Lingered {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new Lingered();
            }
            return left;
        }

        void message(Message message) throws JMSException {
            Map<String, Object> properties = new LinkedHashMap<>();
            Map<String, Object> application = new LinkedHashMap<>();
            Map<String, Object> header = new LinkedHashMap<>();
            header.put("durable", message.getJMSDeliveryMode() == jakarta.jms.DeliveryMode.PERSISTENT);
            header.put("priority", message.getJMSPriority());
            if (message instanceof JmsMessage jms && jms.getFacade() instanceof AmqpJmsMessageFacade f) {
                put(properties, "message-id", value(f.getProviderMessageIdObject()));
                if (f.getUserIdBytes() != null) {
                    properties.put("user-id", Events.hex(f.getUserIdBytes()));
                }
                put(properties, "subject", f.getType());
                put(properties, "content-type", f.getContentType() == null ? null : f.getContentType().toString());
                put(properties, "group-id", f.getGroupId());
                if (f.getGroupSequence() != 0) {
                    properties.put("group-sequence", f.getGroupSequence() & 0xffffffffL);
                }
                put(properties, "reply-to-group-id", f.getReplyToGroupId());
                if (f.getTimestamp() != 0) {
                    properties.put("creation-time", f.getTimestamp());
                }
                for (String key : f.getApplicationPropertyNames(new HashSet<>())) {
                    application.put(key, value(f.getApplicationProperty(key)));
                }
                header.put("delivery-count", f.getRedeliveryCount()); // the header's (JMSXDeliveryCount is one more)
            } else {
                Enumeration<?> names = message.getPropertyNames();
                while (names.hasMoreElements()) {
                    String key = (String) names.nextElement();
                    application.put(key, value(message.getObjectProperty(key)));
                }
            }
            Events.emit("message", n, "body", body(message), "properties", properties,
                    "application_properties", application, "header", header, "settled", null);
        }

        /** The case's final event, after `error` ended it (the file's comment says how). */
        void ended(Throwable error) {
            if (error != null) {
                crashUnlessOwn(error);
            }
            if (proton instanceof org.apache.qpid.proton.engine.Connection c
                    && c.getRemoteState() == EndpointState.CLOSED) {
                ErrorCondition condition = c.getRemoteCondition();
                Events.emit("closed", n, "by", "server",
                        "condition", condition == null || condition.getCondition() == null
                                ? null : condition.getCondition().toString(),
                        "description", condition == null ? null : condition.getDescription());
                return;
            }
            if (error == null) {
                Events.emit("closed", n, "by", "socket", "condition", null, "description", null);
                return;
            }
            Throwable root = rootOf(error);
            if (root instanceof java.io.IOException) {
                Events.emit("closed", n, "by", "socket", "condition", null,
                        "description", String.valueOf(root.getMessage()));
                return;
            }
            String kind = root.getClass().getName();
            if (!opened && kind.contains("TimedOut")) {
                kind = "TimeoutError";
            }
            Events.emit("error", n, "class", kind, "condition", null,
                    "message", String.valueOf(root.getMessage()));
        }

        Object remoteContainer() {
            if (proton instanceof org.apache.qpid.proton.engine.Connection c) {
                return c.getRemoteContainer();
            }
            return null;
        }

        Map<String, Object> remoteProperties() {
            Map<String, Object> found = new LinkedHashMap<>();
            if (proton instanceof org.apache.qpid.proton.engine.Connection c && c.getRemoteProperties() != null) {
                for (Map.Entry<Symbol, Object> e : c.getRemoteProperties().entrySet()) {
                    if (e.getValue() instanceof String s) {
                        found.put(String.valueOf(e.getKey()), s);
                    }
                }
            }
            return found;
        }
    }

    static void put(Map<String, Object> found, String key, Object value) {
        if (value != null) {
            found.put(key, value);
        }
    }

    /** The body as JMS types it (the file's comment says how). */
    static Map<String, Object> body(Message message) throws JMSException {
        Map<String, Object> found = new LinkedHashMap<>();
        if (message instanceof TextMessage text) {
            found.put("value", text.getText());
        } else if (message instanceof BytesMessage bytes) {
            byte[] all = new byte[(int) bytes.getBodyLength()];
            bytes.readBytes(all);
            found.put("data", List.of(Events.hex(all)));
        } else if (message instanceof MapMessage map) {
            Map<String, Object> items = new LinkedHashMap<>();
            Enumeration<?> names = map.getMapNames();
            while (names.hasMoreElements()) {
                String key = (String) names.nextElement();
                items.put(key, value(map.getObject(key)));
            }
            found.put("value", items);
        } else if (message instanceof StreamMessage stream) {
            List<Object> items = new ArrayList<>();
            while (true) {
                try {
                    items.add(value(stream.readObject()));
                } catch (MessageEOFException end) {
                    break;
                }
            }
            found.put("sequence", List.of(items));
        } else if (message instanceof ObjectMessage object) {
            Object inside = object.getObject();
            found.put("value", inside == null ? null : value(inside));
        }
        return found;
    }

    /** Whether an exception is one of the library's own errors (the file's comment says which). */
    static boolean librarysOwn(Throwable error) {
        if (error instanceof Error) {
            return false;
        }
        String name = error.getClass().getName();
        if (name.startsWith("org.apache.qpid.") || name.startsWith("jakarta.jms.")
                || name.startsWith("io.netty.") || error instanceof java.io.IOException
                || error instanceof javax.security.sasl.SaslException
                || error instanceof java.util.concurrent.TimeoutException) {
            return true;
        }
        if (error instanceof IllegalArgumentException || error instanceof IllegalStateException) {
            StackTraceElement[] frames = error.getStackTrace();
            return frames.length > 0 && (frames[0].getClassName().startsWith("org.apache.qpid.")
                    || frames[0].getClassName().startsWith("io.netty."));
        }
        return false;
    }

    /** A crash, with the first cause that is not the library's own, if there is one. */
    static void crashUnlessOwn(Throwable error) {
        for (Throwable t = error; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (!librarysOwn(t)) {
                Events.crash(t);
            }
        }
    }

    static Throwable rootOf(Throwable error) {
        Throwable t = error;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t;
    }

    /** The provider's proton-j connection (JMS hands over neither: read by reflection). */
    static Object protonConnection(Connection conn) {
        try {
            Field field = conn.getClass().getDeclaredField("provider");
            field.setAccessible(true);
            Object provider = field.get(conn);
            if (provider instanceof AmqpProvider amqp) {
                return amqp.getProtonConnection();
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            // not found: the connection's details read as unknown
        }
        return null;
    }

    /** A decoded AMQP value as JSON, as the other 1.0 shims write it. */
    static Object value(Object v) {
        if (v == null || v instanceof Boolean || v instanceof String) {
            return v;
        }
        if (v instanceof Binary b) {
            return "hex:" + Events.hex(b.getArray(), b.getArrayOffset(), b.getLength());
        }
        if (v instanceof byte[] bytes) {
            return "hex:" + Events.hex(bytes);
        }
        if (v instanceof Symbol || v instanceof UUID || v instanceof Character) {
            return v.toString();
        }
        if (v instanceof UnsignedLong u) {
            return u.bigIntegerValue();
        }
        if (v instanceof UnsignedByte || v instanceof UnsignedShort || v instanceof UnsignedInteger) {
            return ((Number) v).longValue();
        }
        if (v instanceof Number) {
            return v;
        }
        if (v instanceof Date d) {
            return d.getTime();
        }
        if (v instanceof DescribedType d) {
            Map<String, Object> found = new LinkedHashMap<>();
            found.put("descriptor", value(d.getDescriptor()));
            found.put("value", value(d.getDescribed()));
            return found;
        }
        if (v instanceof Map<?, ?> m) {
            Map<String, Object> found = new LinkedHashMap<>();
            for (Map.Entry<?, ?> e : m.entrySet()) {
                found.put(String.valueOf(value(e.getKey())), value(e.getValue()));
            }
            return found;
        }
        if (v instanceof Collection<?> c) {
            List<Object> items = new ArrayList<>();
            for (Object item : c) {
                items.add(value(item));
            }
            return items;
        }
        if (v.getClass().isArray()) {
            List<Object> items = new ArrayList<>();
            for (int i = 0; i < java.lang.reflect.Array.getLength(v); i++) {
                items.add(value(java.lang.reflect.Array.get(v, i)));
            }
            return items;
        }
        return v.toString();
    }
}
