package pyjoynr.oracle;

import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.function.Consumer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/** The harness's protocol: one JSON object a line on stdout, answers and events alike. */
final class Lines {
    static final ObjectMapper JSON = new ObjectMapper();
    private static final PrintStream OUT = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out),
                                                           true,
                                                           StandardCharsets.UTF_8);

    private Lines() {
    }

    static Properties loadProperties(String path) throws IOException {
        Properties properties = new Properties();
        try (InputStreamReader reader = new InputStreamReader(new FileInputStream(path), StandardCharsets.UTF_8)) {
            properties.load(reader);
        }
        return properties;
    }

    static synchronized void write(Map<String, Object> line) {
        try {
            OUT.println(JSON.writeValueAsString(line));
        } catch (IOException e) {
            OUT.println("{\"event\":\"harness-error\",\"message\":\"unserialisable line\"}");
        }
    }

    static void event(String name, Map<String, Object> fields) {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("event", name);
        line.putAll(fields);
        write(line);
    }

    /**
     * Reads one JSON command a line from stdin until "quit" or its end, each handed to
     * {@code answer} on one of {@code workers}: a blocking call must not hold up the others.
     */
    static void serve(ExecutorService workers, Consumer<JsonNode> answer) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String text;
        while ((text = in.readLine()) != null) {
            if (text.isBlank()) {
                continue;
            }
            JsonNode command = JSON.readTree(text);
            if ("quit".equals(command.path("cmd").asText())) {
                return;
            }
            workers.submit(() -> answer.accept(command));
        }
    }
}
