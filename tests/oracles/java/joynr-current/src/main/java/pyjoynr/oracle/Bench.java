package pyjoynr.oracle;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import com.fasterxml.jackson.databind.JsonNode;

import joynr.example.Country;
import joynr.example.RadioProxy;
import joynr.example.RadioStation;

/**
 * A load the peer benchmark drives through a proxy: "count" calls of one method from
 * "concurrency" threads, each waiting for its answer (one-way methods return once sent).
 */
final class Bench {
    private Bench() {
    }

    static Map<String, Object> run(RadioProxy proxy, JsonNode c) throws Exception {
        final String op = c.path("op").asText();
        final int count = c.path("count").asInt(1000);
        final int concurrency = Math.max(1, c.path("concurrency").asInt(1));
        final String text = "x".repeat(c.path("textBytes").asInt(200));
        final RadioStation station = new RadioStation("Bench FM", Country.GERMANY, true);
        final long[] latencies = new long[count];
        final AtomicInteger next = new AtomicInteger();
        Thread[] threads = new Thread[concurrency];
        final Exception[] failure = new Exception[1];
        long start = System.nanoTime();
        for (int t = 0; t < concurrency; t++) {
            threads[t] = new Thread(() -> {
                int i;
                while ((i = next.getAndIncrement()) < count) {
                    long began = System.nanoTime();
                    try {
                        switch (op) {
                        case "describeStation":
                            proxy.describeStation(text);
                            break;
                        case "addFavoriteStation":
                            proxy.addFavoriteStation(station);
                            break;
                        case "logMessage":
                            proxy.logMessage(text);
                            break;
                        case "stationHeard":
                            proxy.stationHeard(station);
                            break;
                        default:
                            throw new IllegalArgumentException("unknown bench op: " + op);
                        }
                    } catch (Exception e) {
                        synchronized (failure) {
                            failure[0] = e;
                        }
                        return;
                    }
                    latencies[i] = System.nanoTime() - began;
                }
            });
            threads[t].start();
        }
        for (Thread thread : threads) {
            thread.join();
        }
        long elapsed = System.nanoTime() - start;
        if (failure[0] != null) {
            throw failure[0];
        }
        long[] sorted = latencies.clone();
        Arrays.sort(sorted);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("count", count);
        out.put("elapsedNs", elapsed);
        out.put("p50Us", sorted[(int) Math.floor(0.50 * (count - 1))] / 1000.0);
        out.put("p99Us", sorted[(int) Math.floor(0.99 * (count - 1))] / 1000.0);
        return out;
    }
}
