// What the Java client shims share (java-amqp-client, java-protonj2, java-qpid-jms): their
// command line, the JSON lines they print, hex, and the crash handler.
//
// Copied beside each shim's own source at build time (no package: one directory of sources).
// JSON is written here, by hand (no JSON library on the class path): strings escaped per
// RFC 8259 (every character outside printable ASCII as a backslash-u escape, so the output is ASCII and a
// lone surrogate survives), integers as digits, floating-point numbers that JSON can carry as
// numbers and the others (NaN, infinities) as strings, booleans, null, lists and maps in their
// own order (a LinkedHashMap's: insertion order).
//
// A crash: any Throwable no one catches, on any thread (the library's own included), and any
// the shims hand to crash(): its stack trace goes to stderr and the JVM halts with status 70
// (halt: no shutdown hook or finalizer can swallow it or hang). OutOfMemoryError and
// StackOverflowError end the process the same way.

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.lang.reflect.Array;
import java.math.BigInteger;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

final class Events {
    static final String QUEUE = "amqpfuzz-shim"; // 0-9-1's queue, 1.0's source and target
    static final int CONNECT_TIMEOUT_MS = 10_000;
    static final int CRASH_STATUS = 70;
    static final int FRAMES = 40; // of each error's stack, printed when it crashes

    private static final PrintStream OUT =
            new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.US_ASCII);
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private Events() {}

    /** The command line: {@code URL [--once] [--linger SECONDS]}, the URL before or after. */
    record Args(String url, boolean once, double linger) {
        long lingerMillis() {
            return Math.round(linger * 1000);
        }
    }

    /** Parses the command line (a wrong one: usage on stderr, status 2) and installs the
     * crash handler: the first thing every shim's main does. */
    static Args start(String shim, String[] argv) {
        installCrashHandler();
        String url = null;
        boolean once = false;
        double linger = 10;
        boolean wrong = false;
        for (int i = 0; i < argv.length; i++) {
            String arg = argv[i];
            if (arg.equals("--once")) {
                once = true;
            } else if (arg.equals("--linger") && i + 1 < argv.length) {
                try {
                    linger = Double.parseDouble(argv[++i]);
                } catch (NumberFormatException e) {
                    wrong = true;
                }
            } else if (url == null && !arg.startsWith("-")) {
                url = arg;
            } else {
                wrong = true;
            }
        }
        if (wrong || url == null || !(linger >= 0)) {
            System.err.println("usage: " + shim + " URL [--once] [--linger SECONDS]");
            System.exit(2);
        }
        return new Args(url, once, linger);
    }

    // ---- crashes

    static void installCrashHandler() {
        Thread.setDefaultUncaughtExceptionHandler((thread, error) -> crash(thread, error));
    }

    /** A crash found on the current thread (an error a library handed to its own handler). */
    static void crash(Throwable error) {
        crash(Thread.currentThread(), error);
    }

    static void crash(Thread thread, Throwable error) {
        try {
            OUT.flush();
            System.err.println("amqpfuzz shim: uncaught on thread \"" + thread.getName() + "\"");
            printTrace(error);
            System.err.flush();
        } catch (Throwable ignored) {
            // out of memory even for the trace: the status still says it
        } finally {
            Runtime.getRuntime().halt(CRASH_STATUS);
        }
    }

    /** The error and its causes, each with its innermost {@value #FRAMES} frames at most: a
     * deep recursion's 1024 would push its name out of what amqpfuzz keeps of stderr. */
    private static void printTrace(Throwable error) {
        String prefix = "";
        for (Throwable cause = error; cause != null; cause = cause.getCause()) {
            System.err.println(prefix + cause);
            StackTraceElement[] frames = cause.getStackTrace();
            for (int i = 0; i < Math.min(frames.length, FRAMES); i++) {
                System.err.println("\tat " + frames[i]);
            }
            if (frames.length > FRAMES) {
                System.err.println("\t... " + (frames.length - FRAMES) + " more");
            }
            prefix = "Caused by: ";
            if (cause.getCause() == cause) {
                break;
            }
        }
    }

    /** Errors no shim may take for a library's outcome: they end the process, always. */
    static void rethrowFatal(Throwable error) {
        if (error instanceof Error fatal) {
            throw fatal;
        }
    }

    // ---- events

    /** One event, one line, flushed: {"event": event, "case": n, then the pairs in order}. */
    static synchronized void emit(String event, int n, Object... pairs) {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("event", event);
        line.put("case", n);
        line.putAll(map(pairs));
        OUT.print(json(line));
        OUT.print('\n');
        OUT.flush();
    }

    /** A map of key, value pairs in their order (the keys: strings). */
    static Map<String, Object> map(Object... pairs) {
        if (pairs.length % 2 != 0) {
            throw new IllegalArgumentException("key without a value"); // a shim bug: a crash
        }
        Map<String, Object> found = new LinkedHashMap<>();
        for (int i = 0; i < pairs.length; i += 2) {
            found.put((String) pairs[i], pairs[i + 1]);
        }
        return found;
    }

    static String hex(byte[] bytes) {
        return hex(bytes, 0, bytes.length);
    }

    static String hex(byte[] bytes, int offset, int length) {
        char[] out = new char[length * 2];
        for (int i = 0; i < length; i++) {
            int b = bytes[offset + i] & 0xff;
            out[2 * i] = HEX[b >> 4];
            out[2 * i + 1] = HEX[b & 0xf];
        }
        return new String(out);
    }

    // ---- JSON

    static String json(Object value) {
        StringBuilder out = new StringBuilder();
        write(out, value);
        return out.toString();
    }

    private static void write(StringBuilder out, Object value) {
        if (value == null) {
            out.append("null");
        } else if (value instanceof Boolean b) {
            out.append(b ? "true" : "false");
        } else if (value instanceof Byte || value instanceof Short || value instanceof Integer
                || value instanceof Long || value instanceof BigInteger) {
            out.append(value);
        } else if (value instanceof Float || value instanceof Double) {
            double d = ((Number) value).doubleValue(); // a float widens exactly
            if (Double.isFinite(d)) {
                out.append(Double.toString(d)); // "1.0E10": JSON's grammar allows it
            } else {
                string(out, Double.toString(d));
            }
        } else if (value instanceof Map<?, ?> m) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : m.entrySet()) {
                if (!first) {
                    out.append(',');
                }
                first = false;
                string(out, String.valueOf(e.getKey()));
                out.append(':');
                write(out, e.getValue());
            }
            out.append('}');
        } else if (value instanceof Collection<?> c) {
            out.append('[');
            boolean first = true;
            for (Object item : c) {
                if (!first) {
                    out.append(',');
                }
                first = false;
                write(out, item);
            }
            out.append(']');
        } else if (value instanceof byte[] bytes) {
            string(out, "hex:" + hex(bytes));
        } else if (value.getClass().isArray()) {
            List<Object> items = new ArrayList<>();
            for (int i = 0; i < Array.getLength(value); i++) {
                items.add(Array.get(value, i));
            }
            write(out, items);
        } else {
            string(out, value.toString()); // strings, characters, uuids, decimals
        }
    }

    private static void string(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                case '\b' -> out.append("\\b");
                case '\f' -> out.append("\\f");
                default -> {
                    if (c < 0x20 || c > 0x7e) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }

    // ---- the 1.0 shims' URL: amqp://[user:pass@]host:port

    /** The URL's user and password (SASL PLAIN), or null without a user (SASL ANONYMOUS). */
    static String[] credentials(String url) {
        String info = URI.create(url).getRawUserInfo();
        if (info == null) {
            return null;
        }
        int colon = info.indexOf(':');
        String user = colon < 0 ? info : info.substring(0, colon);
        String password = colon < 0 ? "" : info.substring(colon + 1);
        return new String[] {decode(user), decode(password)};
    }

    static String host(String url) {
        String host = URI.create(url).getHost();
        return host == null ? "127.0.0.1" : host;
    }

    static int port(String url) {
        int port = URI.create(url).getPort();
        return port < 0 ? 5672 : port;
    }

    private static String decode(String part) {
        return URLDecoder.decode(part.replace("+", "%2B"), StandardCharsets.UTF_8);
    }
}
