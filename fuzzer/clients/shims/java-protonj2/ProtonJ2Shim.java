// The Qpid ProtonJ2 client shim (org.apache.qpid:protonj2-client, its imperative API): the
// AMQP 1.0 shim contract in fuzzer/clients/shims/__init__.py. Events, arguments and the crash
// handler are Events.java's.
//
// One Client for the process; each case a new Connection (no reconnect, no idle-timeout, 10 s
// for the TCP connect and 10 s for the peer's open, no send or request timeout; its close waits
// up to the library's default 60 s for the peer's close). The steps wait on the library's
// futures until --linger (counted from `connected`) runs out; then the shim closes the
// connection, whatever step it is at.
//
// Clean outcomes: the peer's close ("closed" by server: the close frame came, read off the
// engine's connection), the socket's end (an IOException at the root of the library's failure:
// "closed" by socket), a link the peer detached or a session it ended ("detached", "ended",
// seen where a step or a receive fails with them; the case lingers on) and the library's own
// errors ("error", its root cause's class): the client's ClientException family and the
// engine's ProtonException, DecodeException, SaslException kin, and the IllegalArgument- or
// IllegalStateException the library throws itself (top frame in org.apache.qpid.protonj2 or
// io.netty: its own checks, e.g. "Specified UTF length:-1 cannot be negative"); no open within
// 10 s is class TimeoutError. The engine turns ANY exception out of its decoding into a failed
// connection (closed with amqp:internal-error): an exception anywhere in that failure's causes
// that is none of those (a NullPointerException, a ClassCastException, an
// IndexOutOfBoundsException out of its buffers, any Error) is a crash, found on the library's
// thread (the disconnected handler) or the shim's, stack trace on stderr, status 70.
//
// What ProtonJ2 cannot show: the sender's confirm comes at the peer's settlement only (a
// disposition that does not settle is not seen); a link or session the peer ends is seen only
// when the shim next waits on it (the sender's after its confirm is not seen at all), and
// whether a detach closed the link is not told; a described value the library knows (an
// outcome, say) is its own object (shown as its toString()); an amqp-value body is one
// section's value, several sections of data or amqp-sequence each an item. Values: binary
// "hex:<hex>", symbols and uuids as strings, timestamps integer milliseconds, unsigned longs as
// digits, described values {"descriptor", "value"}, decimals as the library prints them.

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.qpid.protonj2.client.Client;
import org.apache.qpid.protonj2.client.ClientOptions;
import org.apache.qpid.protonj2.client.Connection;
import org.apache.qpid.protonj2.client.ConnectionOptions;
import org.apache.qpid.protonj2.client.Delivery;
import org.apache.qpid.protonj2.client.DeliveryMode;
import org.apache.qpid.protonj2.client.DeliveryState;
import org.apache.qpid.protonj2.client.AdvancedMessage;
import org.apache.qpid.protonj2.client.Message;
import org.apache.qpid.protonj2.client.Receiver;
import org.apache.qpid.protonj2.client.ReceiverOptions;
import org.apache.qpid.protonj2.client.Sender;
import org.apache.qpid.protonj2.client.SenderOptions;
import org.apache.qpid.protonj2.client.Session;
import org.apache.qpid.protonj2.client.Tracker;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.apache.qpid.protonj2.client.exceptions.ClientLinkRemotelyClosedException;
import org.apache.qpid.protonj2.client.exceptions.ClientOperationTimedOutException;
import org.apache.qpid.protonj2.client.exceptions.ClientResourceRemotelyClosedException;
import org.apache.qpid.protonj2.client.exceptions.ClientSessionRemotelyClosedException;
import org.apache.qpid.protonj2.types.Binary;
import org.apache.qpid.protonj2.types.DescribedType;
import org.apache.qpid.protonj2.types.Symbol;
import org.apache.qpid.protonj2.types.UnsignedByte;
import org.apache.qpid.protonj2.types.UnsignedInteger;
import org.apache.qpid.protonj2.types.UnsignedLong;
import org.apache.qpid.protonj2.types.UnsignedShort;
import org.apache.qpid.protonj2.types.messaging.ApplicationProperties;
import org.apache.qpid.protonj2.types.messaging.Data;
import org.apache.qpid.protonj2.types.messaging.Header;
import org.apache.qpid.protonj2.types.messaging.MessageAnnotations;
import org.apache.qpid.protonj2.types.messaging.Properties;
import org.apache.qpid.protonj2.types.messaging.Section;

public final class ProtonJ2Shim {
    static final String NAME = "protonj2";

    private ProtonJ2Shim() {}

    public static void main(String[] argv) throws Exception {
        Events.Args args = Events.start("ProtonJ2Shim", argv);
        Client client = Client.create(new ClientOptions()
                .id("amqpfuzz-shim-protonj2-" + ProcessHandle.current().pid()));
        for (int n = 0; ; n++) {
            new Case(client, args, n).run();
            if (args.once()) {
                System.exit(0);
            }
        }
    }

    /** The linger ran out while a step waited. */
    static final class Lingered extends Exception {
        Lingered() {
            super(null, null, false, false);
        }
    }

    /** One case: one connection. */
    static final class Case {
        final Client client;
        final Events.Args args;
        final int n;
        final CountDownLatch down = new CountDownLatch(1); // the connection failed
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        Connection conn;
        long deadline = Long.MAX_VALUE; // --linger's end, once connected
        boolean opened;

        Case(Client client, Events.Args args, int n) {
            this.client = client;
            this.args = args;
            this.n = n;
        }

        ConnectionOptions options() {
            ConnectionOptions o = new ConnectionOptions();
            o.idleTimeout(0);
            o.openTimeout(Events.CONNECT_TIMEOUT_MS);
            o.sendTimeout(ConnectionOptions.INFINITE);
            o.requestTimeout(ConnectionOptions.INFINITE);
            o.reconnectEnabled(false);
            o.transportOptions().connectTimeout(Events.CONNECT_TIMEOUT_MS);
            String[] user = Events.credentials(args.url());
            if (user == null) {
                o.saslOptions().addAllowedMechanism("ANONYMOUS");
            } else {
                o.user(user[0]).password(user[1]);
                o.saslOptions().addAllowedMechanism("PLAIN");
            }
            // the library's thread: a failure whose causes are not the library's is a crash now
            o.disconnectedHandler((c, event) -> {
                Throwable cause = event.failureCause();
                if (cause != null) {
                    crashUnlessOwn(cause);
                    failure.compareAndSet(null, cause);
                }
                down.countDown();
            });
            return o;
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
                if (failure.get() != null) { // it failed under the close
                    ended(failure.get());
                    return;
                }
                Events.emit("closed", n, "by", "client", "condition", null, "description", null);
            } catch (ClientException error) {
                ended(error);
            } catch (InterruptedException error) {
                throw new IllegalStateException(error); // no one interrupts the shim: a crash
            } finally {
                if (conn != null) {
                    conn.closeAsync(); // after an error: closed, not waited for
                }
            }
        }

        void session() throws ClientException, InterruptedException {
            conn = client.connect(Events.host(args.url()), Events.port(args.url()), options());
            try {
                conn.openFuture().get();
            } catch (ExecutionException e) {
                throw clientError(e);
            }
            opened = true;
            deadline = System.nanoTime() + args.lingerMillis() * 1_000_000L;
            Map<String, Object> properties = new LinkedHashMap<>();
            Map<String, Object> remote = conn.properties();
            if (remote != null) {
                for (Map.Entry<String, Object> e : remote.entrySet()) {
                    if (e.getValue() instanceof String s) {
                        properties.put(e.getKey(), s);
                    }
                }
            }
            Events.emit("connected", n, "container_id", remoteContainerId(conn),
                    "properties", properties);
            try {
                steps();
            } catch (Lingered lingered) {
                // --linger ran out while a step waited: the case closes as it is
            }
        }

        void steps() throws ClientException, InterruptedException, Lingered {
            Session session = conn.openSession();
            if (!opened(session.openFuture(), null)) {
                return;
            }
            Events.emit("session", n);
            String receiverName = "amqpfuzz-shim-receiver-" + n;
            Receiver receiver = session.openReceiver(Events.QUEUE, new ReceiverOptions()
                    .linkName(receiverName)
                    .creditWindow(10)
                    .deliveryMode(DeliveryMode.AT_LEAST_ONCE) // snd unsettled, rcv first
                    .autoAccept(false));
            if (!opened(receiver.openFuture(), receiverName)) {
                return;
            }
            Events.emit("receiving", n, "link", receiverName);
            String senderName = "amqpfuzz-shim-sender-" + n;
            Sender sender = session.openSender(Events.QUEUE, new SenderOptions()
                    .linkName(senderName)
                    .deliveryMode(DeliveryMode.AT_LEAST_ONCE));
            if (opened(sender.openFuture(), senderName)) {
                Events.emit("sending", n, "link", senderName);
                send(sender, senderName);
            }
            receive(receiver, receiverName);
        }

        /** Waits for a step's future: false when the peer refused it (reported; the case then
         * lingers on). */
        boolean opened(Future<?> future, String link) throws ClientException, InterruptedException, Lingered {
            try {
                future.get(left(), TimeUnit.NANOSECONDS);
                return true;
            } catch (TimeoutException e) {
                throw new Lingered();
            } catch (ExecutionException e) {
                ClientException error = clientError(e);
                if (peerEnded(error, link)) {
                    linger();
                    return false;
                }
                throw error;
            }
        }

        void send(Sender sender, String link) throws ClientException, InterruptedException, Lingered {
            String text = "amqpfuzz-shim-" + n;
            Message<String> message = Message.create(text)
                    .messageId(text)
                    .contentType("text/plain")
                    .property("shim", NAME);
            try {
                Tracker tracker = sender.send(message);
                tracker.awaitSettlement(left(), TimeUnit.NANOSECONDS);
                DeliveryState state = tracker.remoteState();
                // settled with no outcome: null; else accepted, rejected, released, modified or
                // the library's word (transactional)
                List<Object> fields = new ArrayList<>(Arrays.asList("outcome",
                        state == null ? null : state.getType().name().toLowerCase()));
                if (state != null && state.getType() == DeliveryState.Type.REJECTED) {
                    // (the client's Rejected interface is 1.1.0's: its methods read by name)
                    fields.addAll(Arrays.asList("condition", call(state, "getCondition"),
                            "description", call(state, "getDescription")));
                }
                Events.emit("confirm", n, fields.toArray());
            } catch (ClientOperationTimedOutException e) {
                throw new Lingered();
            } catch (ClientException error) {
                if (!peerEnded(error, link)) {
                    throw error;
                }
            }
        }

        void receive(Receiver receiver, String link) throws ClientException, InterruptedException, Lingered {
            while (true) {
                Delivery delivery;
                try {
                    delivery = receiver.receive(left(), TimeUnit.NANOSECONDS);
                } catch (ClientException error) {
                    if (peerEnded(error, link)) {
                        linger();
                        return;
                    }
                    throw error;
                }
                if (delivery == null) {
                    throw new Lingered();
                }
                message(delivery);
                delivery.accept();
            }
        }

        /** What is left of --linger, in nanoseconds (none left: Lingered). */
        long left() throws Lingered {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new Lingered();
            }
            return left;
        }

        /** Lingers on, until --linger runs out or the connection fails. */
        void linger() throws InterruptedException, Lingered {
            down.await(left(), TimeUnit.NANOSECONDS);
            if (down.getCount() == 0) {
                return; // run() reports the failure
            }
            throw new Lingered();
        }

        /** A link the peer detached ("detached") or a session it ended ("ended"): true when the
         * error says one of those, false for anything else. */
        boolean peerEnded(ClientException error, String link) {
            crashUnlessOwn(error);
            if (error instanceof ClientLinkRemotelyClosedException closed && link != null) {
                Map<String, Object> condition = condition(closed);
                Events.emit("detached", n, "link", link, "condition", condition.get("condition"),
                        "description", condition.get("description"));
                return true;
            }
            if (error instanceof ClientSessionRemotelyClosedException closed) {
                Map<String, Object> condition = condition(closed);
                Events.emit("ended", n, "condition", condition.get("condition"),
                        "description", condition.get("description"));
                return true;
            }
            return false;
        }

        void message(Delivery delivery) throws ClientException {
            Message<Object> message = delivery.message();
            AdvancedMessage<Object> advanced = message.toAdvancedMessage();
            ApplicationProperties application = advanced.applicationProperties();
            MessageAnnotations annotations = advanced.annotations();
            Events.emit("message", n,
                    "body", body(advanced.bodySections()),
                    "properties", properties(advanced.properties()),
                    "application_properties",
                    application == null || application.getValue() == null
                            ? Map.of() : value(application.getValue()),
                    "annotations", annotations == null || annotations.getValue() == null
                            ? Map.of() : value(annotations.getValue()),
                    "header", header(advanced.header()),
                    "settled", delivery.remoteSettled());
        }

        /** The case's final event, after `error` ended it (the file's comment says how). */
        void ended(Throwable error) {
            if (error != null) {
                crashUnlessOwn(error);
            }
            Object proton = protonConnection(conn);
            if (proton instanceof org.apache.qpid.protonj2.engine.Connection c && c.isRemotelyClosed()) {
                org.apache.qpid.protonj2.types.transport.ErrorCondition condition = c.getRemoteCondition();
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
            if (!opened && error instanceof ClientOperationTimedOutException) {
                Events.emit("error", n, "class", "TimeoutError", "condition", null,
                        "message", error.getMessage());
                return;
            }
            Throwable root = rootOf(error);
            if (root instanceof java.io.IOException) {
                Events.emit("closed", n, "by", "socket", "condition", null,
                        "description", String.valueOf(root.getMessage()));
                return;
            }
            Object condition = null;
            if (error instanceof ClientResourceRemotelyClosedException closed) {
                condition = condition(closed).get("condition");
            }
            Events.emit("error", n, "class", root.getClass().getName(), "condition", condition,
                    "message", String.valueOf(root.getMessage()));
        }
    }

    static Map<String, Object> condition(ClientResourceRemotelyClosedException closed) {
        Map<String, Object> found = new LinkedHashMap<>();
        found.put("condition", closed.getErrorCondition() == null ? null : closed.getErrorCondition().condition());
        found.put("description", closed.getErrorCondition() == null ? null : closed.getErrorCondition().description());
        return found;
    }

    static ClientException clientError(ExecutionException e) {
        Throwable cause = e.getCause();
        crashUnlessOwn(cause);
        if (cause instanceof ClientException error) {
            return error;
        }
        Events.crash(cause); // a future that failed with something not the library's own
        throw new AssertionError("unreachable");
    }

    /** Whether an exception is one of the library's own errors (the file's comment says which). */
    static boolean librarysOwn(Throwable error) {
        if (error instanceof Error) {
            return false;
        }
        String name = error.getClass().getName();
        if (name.startsWith("org.apache.qpid.protonj2.") || name.startsWith("io.netty.")
                || error instanceof java.io.IOException
                || error instanceof javax.security.sasl.SaslException
                || error instanceof TimeoutException || error instanceof ExecutionException) {
            return true;
        }
        if (error instanceof IllegalArgumentException || error instanceof IllegalStateException) {
            StackTraceElement[] frames = error.getStackTrace();
            return frames.length > 0 && (frames[0].getClassName().startsWith("org.apache.qpid.protonj2.")
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

    /** A getter of the library's object, by name: its value as a string, or null. */
    static Object call(Object target, String getter) {
        try {
            Method method = target.getClass().getMethod(getter);
            method.setAccessible(true);
            Object found = method.invoke(target);
            return found == null ? null : found.toString();
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    /** The engine's connection (the client does not hand it over: read by reflection). */
    static Object protonConnection(Connection conn) {
        if (conn == null) {
            return null;
        }
        try {
            Field field = conn.getClass().getDeclaredField("protonConnection");
            field.setAccessible(true);
            return field.get(conn);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    static Object remoteContainerId(Connection conn) {
        Object proton = protonConnection(conn);
        if (proton instanceof org.apache.qpid.protonj2.engine.Connection c) {
            return c.getRemoteContainerId();
        }
        return null;
    }

    static Map<String, Object> body(Collection<Section<?>> sections) {
        Map<String, Object> found = new LinkedHashMap<>();
        if (sections == null || sections.isEmpty()) {
            return found;
        }
        List<Object> items = new ArrayList<>();
        String kind = null;
        for (Section<?> section : sections) {
            String type = section.getType().name();
            if (kind == null) {
                kind = type;
            }
            if (section instanceof Data data) {
                byte[] bytes = data.getValue();
                items.add(bytes == null ? null : Events.hex(bytes));
            } else {
                items.add(value(section.getValue()));
            }
        }
        switch (kind) {
            case "Data" -> found.put("data", items);
            case "AmqpSequence" -> found.put("sequence", items);
            default -> found.put("value", items.size() == 1 ? items.get(0) : items);
        }
        return found;
    }

    static Map<String, Object> properties(Properties p) {
        Map<String, Object> found = new LinkedHashMap<>();
        if (p == null) {
            return found;
        }
        if (p.hasMessageId()) {
            found.put("message-id", value(p.getMessageId()));
        }
        if (p.hasUserId()) {
            Binary user = p.getUserId();
            found.put("user-id", user == null ? null : Events.hex(user.asByteArray()));
        }
        if (p.hasTo()) {
            found.put("to", p.getTo());
        }
        if (p.hasSubject()) {
            found.put("subject", p.getSubject());
        }
        if (p.hasReplyTo()) {
            found.put("reply-to", p.getReplyTo());
        }
        if (p.hasCorrelationId()) {
            found.put("correlation-id", value(p.getCorrelationId()));
        }
        if (p.hasContentType()) {
            found.put("content-type", p.getContentType());
        }
        if (p.hasContentEncoding()) {
            found.put("content-encoding", p.getContentEncoding());
        }
        if (p.hasAbsoluteExpiryTime()) {
            found.put("absolute-expiry-time", p.getAbsoluteExpiryTime());
        }
        if (p.hasCreationTime()) {
            found.put("creation-time", p.getCreationTime());
        }
        if (p.hasGroupId()) {
            found.put("group-id", p.getGroupId());
        }
        if (p.hasGroupSequence()) {
            found.put("group-sequence", p.getGroupSequence());
        }
        if (p.hasReplyToGroupId()) {
            found.put("reply-to-group-id", p.getReplyToGroupId());
        }
        return found;
    }

    static Map<String, Object> header(Header h) {
        Map<String, Object> found = new LinkedHashMap<>();
        if (h == null) {
            return found;
        }
        if (h.hasDurable()) {
            found.put("durable", h.isDurable());
        }
        if (h.hasPriority()) {
            found.put("priority", h.getPriority() & 0xff);
        }
        if (h.hasTimeToLive()) {
            found.put("ttl", h.getTimeToLive());
        }
        if (h.hasFirstAcquirer()) {
            found.put("first-acquirer", h.isFirstAcquirer());
        }
        if (h.hasDeliveryCount()) {
            found.put("delivery-count", h.getDeliveryCount());
        }
        return found;
    }

    /** A decoded AMQP value as JSON (the file's comment says how). */
    static Object value(Object v) {
        if (v == null || v instanceof Boolean || v instanceof String) {
            return v;
        }
        if (v instanceof Binary b) {
            return "hex:" + Events.hex(b.asByteArray());
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
            return v; // Byte, Short, Integer, Long, Float, Double: Events writes them; decimals as text
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
        return v.toString(); // the library's own object (a known described type, a decimal)
    }
}
