// A long-lived JaCoCo analysis for amqpfuzz (fuzzer/coverage/jvm.py): one per measured JVM
// broker, so that a sample costs a dump and an analysis, not a JVM start.
//
//   java -cp jacococore.jar:asm*.jar:. JacocoLines HOST PORT PREFIXES JAR_OR_DIR...
//
// PREFIXES: comma-separated class-name prefixes (org.apache.qpid.server.protocol.v0_10.) of
// the classes measured, read from the broker's own jars. Commands, one per line on stdin, each
// answered with one line of JSON on stdout:
//   layout   {"class": {"lines": [line, ...], "methods": {"name(desc)": lines, ...}}, ...}
//            every measured class's lines that hold code, and its methods' counts of them
//   sample   {"class": {"lines": [...], "methods": ["name(desc)", ...]}, ...}
//            the lines covered and the methods entered so far, dumped from the agent's
//            tcpserver at HOST:PORT (not reset), for the classes that ran at all (a class
//            whose probes did not change since the last sample is not analysed again)
// An error is {"error": "..."} on one line; the helper ends when stdin does.

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Enumeration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

import org.jacoco.core.analysis.Analyzer;
import org.jacoco.core.analysis.CoverageBuilder;
import org.jacoco.core.analysis.IClassCoverage;
import org.jacoco.core.analysis.ICounter;
import org.jacoco.core.analysis.IMethodCoverage;
import org.jacoco.core.data.ExecutionData;
import org.jacoco.core.data.ExecutionDataStore;
import org.jacoco.core.tools.ExecDumpClient;
import org.jacoco.core.tools.ExecFileLoader;

public final class JacocoLines {
    private final Map<String, byte[]> classes = new LinkedHashMap<>(); // vm name -> bytes
    private final Map<String, boolean[]> probes = new HashMap<>(); // name#id -> last probes
    private final Map<String, String> parts = new LinkedHashMap<>(); // vm name -> its part
    private final String host;
    private final int port;

    private JacocoLines(String host, int port) {
        this.host = host;
        this.port = port;
    }

    public static void main(String[] args) throws IOException {
        JacocoLines helper = new JacocoLines(args[0], Integer.parseInt(args[1]));
        String[] prefixes = args[2].split(",");
        for (int i = 3; i < args.length; i++) {
            helper.read(new File(args[i]), prefixes);
        }
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            String answer;
            try {
                answer = switch (line.trim()) {
                    case "layout" -> helper.layout();
                    case "sample" -> helper.sample();
                    default -> "{\"error\": \"unknown command\"}";
                };
            } catch (IOException | RuntimeException e) {
                answer = "{\"error\": " + quote(e.toString()) + "}";
            }
            out.println(answer);
            out.flush();
        }
    }

    private void read(File file, String[] prefixes) throws IOException {
        if (file.isDirectory()) {
            File[] inside = file.listFiles();
            if (inside != null) {
                java.util.Arrays.sort(inside);
                for (File each : inside) {
                    if (each.getName().endsWith(".jar")) {
                        read(each, prefixes);
                    }
                }
            }
            return;
        }
        try (JarFile jar = new JarFile(file)) {
            Enumeration<JarEntry> entries = jar.entries();
            while (entries.hasMoreElements()) {
                JarEntry entry = entries.nextElement();
                String name = entry.getName();
                if (!name.endsWith(".class") || name.startsWith("META-INF/")) {
                    continue;
                }
                String vm = name.substring(0, name.length() - ".class".length());
                String dotted = vm.replace('/', '.');
                boolean wanted = false;
                for (String prefix : prefixes) {
                    wanted |= dotted.startsWith(prefix);
                }
                if (wanted && !classes.containsKey(vm)) {
                    try (InputStream stream = jar.getInputStream(entry)) {
                        classes.put(vm, stream.readAllBytes());
                    }
                }
            }
        }
    }

    /** Every measured class, analysed against ``store``. */
    private List<IClassCoverage> analyze(ExecutionDataStore store) throws IOException {
        CoverageBuilder builder = new CoverageBuilder();
        Analyzer analyzer = new Analyzer(store, builder);
        for (Map.Entry<String, byte[]> entry : classes.entrySet()) {
            analyzer.analyzeClass(entry.getValue(), entry.getKey());
        }
        return new ArrayList<>(builder.getClasses());
    }

    private String layout() throws IOException {
        StringBuilder json = new StringBuilder("{");
        for (IClassCoverage c : analyze(new ExecutionDataStore())) {
            if (json.length() > 1) {
                json.append(", ");
            }
            json.append(quote(c.getName().replace('/', '.'))).append(": {\"lines\": [");
            appendLines(json, c, false);
            json.append("], \"methods\": {");
            boolean first = true;
            for (IMethodCoverage m : c.getMethods()) {
                int count = 0;
                for (int line = m.getFirstLine(); line >= 0 && line <= m.getLastLine(); line++) {
                    count += m.getLine(line).getStatus() == ICounter.EMPTY ? 0 : 1;
                }
                json.append(first ? "" : ", ").append(quote(m.getName() + m.getDesc())).append(": ").append(count);
                first = false;
            }
            json.append("}}");
        }
        return json.append("}").toString();
    }

    private String sample() throws IOException {
        ExecDumpClient client = new ExecDumpClient();
        client.setDump(true);
        client.setReset(false);
        client.setRetryCount(0);
        ExecFileLoader loader = client.dump(host, port);
        // Only the classes whose probes changed since the last sample are analysed again (ASM
        // reads each class's bytes: the dearest part of a sample, taken after every round of a
        // campaign with feedback); the others keep the part of the answer they had.
        ExecutionDataStore store = loader.getExecutionDataStore();
        CoverageBuilder builder = new CoverageBuilder();
        Analyzer analyzer = new Analyzer(store, builder);
        for (ExecutionData data : store.getContents()) {
            String key = data.getName() + "#" + Long.toHexString(data.getId());
            byte[] bytes = classes.get(data.getName());
            if (bytes == null || Arrays.equals(data.getProbes(), probes.get(key))) {
                continue;
            }
            probes.put(key, Arrays.copyOf(data.getProbes(), data.getProbes().length));
            analyzer.analyzeClass(bytes, data.getName());
        }
        for (IClassCoverage c : builder.getClasses()) {
            parts.put(c.getName(), part(c));
        }
        StringBuilder json = new StringBuilder("{");
        for (String part : parts.values()) {
            if (!part.isEmpty()) {
                json.append(json.length() > 1 ? ", " : "").append(part);
            }
        }
        return json.append("}").toString();
    }

    /** A class's part of a sample: its covered lines and entered methods ("" if none ran). */
    private static String part(IClassCoverage c) {
        if (c.getLineCounter().getCoveredCount() == 0) {
            return "";
        }
        StringBuilder json = new StringBuilder();
        json.append(quote(c.getName().replace('/', '.'))).append(": {\"lines\": [");
        appendLines(json, c, true);
        json.append("], \"methods\": [");
        boolean first = true;
        for (IMethodCoverage m : c.getMethods()) {
            if (m.getInstructionCounter().getCoveredCount() > 0) {
                json.append(first ? "" : ", ").append(quote(m.getName() + m.getDesc()));
                first = false;
            }
        }
        return json.append("]}").toString();
    }

    private static void appendLines(StringBuilder json, IClassCoverage c, boolean coveredOnly) {
        boolean first = true;
        for (int line = c.getFirstLine(); line >= 0 && line <= c.getLastLine(); line++) {
            int status = c.getLine(line).getStatus();
            boolean wanted = coveredOnly
                    ? status == ICounter.FULLY_COVERED || status == ICounter.PARTLY_COVERED
                    : status != ICounter.EMPTY;
            if (wanted) {
                json.append(first ? "" : ", ").append(line);
                first = false;
            }
        }
    }

    private static String quote(String text) {
        StringBuilder quoted = new StringBuilder("\"");
        for (char ch : text.toCharArray()) {
            if (ch == '"' || ch == '\\') {
                quoted.append('\\').append(ch);
            } else if (ch < 0x20) {
                quoted.append(String.format("\\u%04x", (int) ch));
            } else {
                quoted.append(ch);
            }
        }
        return quoted.append('"').toString();
    }
}
