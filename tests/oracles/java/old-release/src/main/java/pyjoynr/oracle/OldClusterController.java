package pyjoynr.oracle;

import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.inject.Injector;
import com.google.inject.Module;
import com.google.inject.util.Modules;

import io.joynr.arbitration.ArbitrationStrategy;
import io.joynr.arbitration.DiscoveryQos;
import io.joynr.arbitration.DiscoveryScope;
import io.joynr.messaging.MessagingQos;
import io.joynr.provider.Deferred;
import io.joynr.provider.DeferredVoid;
import io.joynr.provider.Promise;
import io.joynr.runtime.CCWebSocketRuntimeModule;
import io.joynr.runtime.JoynrInjectorFactory;
import io.joynr.runtime.JoynrRuntime;
import joynr.exceptions.ApplicationException;
import joynr.exceptions.ProviderRuntimeException;
import joynr.example.Country;
import joynr.example.RadioAbstractProvider;
import joynr.example.RadioProxy;
import joynr.example.RadioStation;
import joynr.example.ShuffleError;
import joynr.types.ProviderQos;
import joynr.types.ProviderScope;

/**
 * The cluster controller of an old joynr release (1.8 and earlier: one broker, the Paho MQTT
 * client, Guice 3) with a radio provider and consumer in its own JVM: the cluster controller
 * runtime is a JoynrRuntime, so what an application does through it goes through this cluster
 * controller's discovery and routing. The first argument is the joynr properties file (the MQTT
 * module's class in "oracle.mqttModule"). Driven as the current release's RadioApp is: one JSON
 * command a line on stdin (with an "id"), one JSON answer a line on stdout with that "id".
 * Commands: register (domain, scope, priority), unregister (domain), providerState, proxy
 * (name, domain, scope, discoveryTimeoutMs, ttlMs), getCurrentStation, getVolume,
 * addFavoriteStation (station), describeStation (name), quit.
 */
public final class OldClusterController {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final PrintStream OUT = new PrintStream(new FileOutputStream(FileDescriptor.out),
                                                           true,
                                                           StandardCharsets.UTF_8);

    private final JoynrRuntime runtime;
    private final Radio provider = new Radio();
    private final Map<String, RadioProxy> proxies = new LinkedHashMap<>();
    private final ExecutorService workers = Executors.newCachedThreadPool();

    private OldClusterController(JoynrRuntime runtime) {
        this.runtime = runtime;
    }

    public static void main(String[] args) throws Exception {
        Properties properties = new Properties();
        try (InputStreamReader reader = new InputStreamReader(new FileInputStream(args[0]), StandardCharsets.UTF_8)) {
            properties.load(reader);
        }
        Module mqtt = (Module) Class.forName(properties.getProperty("oracle.mqttModule"))
                                    .getDeclaredConstructor()
                                    .newInstance();
        Module module = Modules.override(new CCWebSocketRuntimeModule()).with(mqtt);
        Injector injector = new JoynrInjectorFactory(properties, module).getInjector();
        final JoynrRuntime runtime = injector.getInstance(JoynrRuntime.class);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> runtime.shutdown(false)));
        Map<String, Object> ready = new LinkedHashMap<>();
        ready.put("event", "ready");
        ready.put("role", "cluster-controller");
        write(ready);
        new OldClusterController(runtime).serve();
        System.exit(0);
    }

    static synchronized void write(Map<String, Object> line) {
        try {
            OUT.println(JSON.writeValueAsString(line));
        } catch (IOException e) {
            OUT.println("{\"event\":\"harness-error\",\"message\":\"unserialisable line\"}");
        }
    }

    private void serve() throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String text;
        while ((text = in.readLine()) != null) {
            if (text.trim().isEmpty()) {
                continue;
            }
            JsonNode command = JSON.readTree(text);
            if ("quit".equals(command.path("cmd").asText())) {
                return;
            }
            // every command runs on a worker: a blocking call must not hold up the others
            workers.submit(() -> answer(command));
        }
    }

    private void answer(JsonNode command) {
        Map<String, Object> reply = new LinkedHashMap<>();
        reply.put("id", command.path("id").asLong());
        try {
            Object result = run(command);
            reply.put("ok", true);
            reply.put("result", result);
        } catch (ApplicationException e) {
            reply.put("ok", false);
            reply.put("error", "ApplicationException");
            reply.put("name", e.getError().toString());
            reply.put("message", String.valueOf(e.getMessage()));
        } catch (ProviderRuntimeException e) {
            reply.put("ok", false);
            reply.put("error", "ProviderRuntimeException");
            reply.put("message", String.valueOf(e.getMessage()));
        } catch (Exception e) {
            reply.put("ok", false);
            reply.put("error", e.getClass().getSimpleName());
            reply.put("message", String.valueOf(e.getMessage()));
        }
        write(reply);
    }

    private Object run(JsonNode c) throws Exception {
        String cmd = c.path("cmd").asText();
        switch (cmd) {
        case "register":
            ProviderQos qos = new ProviderQos();
            qos.setScope(ProviderScope.valueOf(c.path("scope").asText("GLOBAL")));
            qos.setPriority(c.path("priority").asLong(System.currentTimeMillis()));
            runtime.registerProvider(c.path("domain").asText(), provider, qos).get(c.path("timeoutMs").asLong(30000));
            return null;
        case "unregister":
            runtime.unregisterProvider(c.path("domain").asText(), provider);
            return null;
        case "providerState":
            return provider.state();
        case "proxy":
            proxies.put(c.path("name").asText("default"), buildProxy(c));
            return null;
        default:
            return call(cmd, proxy(c), c);
        }
    }

    private RadioProxy buildProxy(JsonNode c) {
        DiscoveryQos discoveryQos = new DiscoveryQos(c.path("discoveryTimeoutMs").asLong(10000),
                                                     ArbitrationStrategy.HighestPriority,
                                                     c.path("cacheMaxAgeMs").asLong(0),
                                                     DiscoveryScope.valueOf(c.path("scope")
                                                                             .asText("LOCAL_THEN_GLOBAL")));
        discoveryQos.setRetryIntervalMs(c.path("retryIntervalMs").asLong(500));
        // building is lazy: the first call waits for arbitration and fails when nothing is found
        return runtime.getProxyBuilder(c.path("domain").asText(), RadioProxy.class)
                      .setDiscoveryQos(discoveryQos)
                      .setMessagingQos(new MessagingQos(c.path("ttlMs").asLong(10000)))
                      .build();
    }

    private RadioProxy proxy(JsonNode c) {
        RadioProxy proxy = proxies.get(c.path("proxy").asText("default"));
        if (proxy == null) {
            throw new IllegalStateException("no proxy: send a proxy command first");
        }
        return proxy;
    }

    private Object call(String cmd, RadioProxy proxy, JsonNode c) throws Exception {
        switch (cmd) {
        case "getCurrentStation":
            return stationJson(proxy.getCurrentStation());
        case "getVolume":
            return proxy.getVolume();
        case "addFavoriteStation":
            return proxy.addFavoriteStation(station(c.path("station")));
        case "describeStation":
            return proxy.describeStation(c.path("name").asText());
        default:
            throw new IllegalArgumentException("unknown command " + cmd);
        }
    }

    static RadioStation station(JsonNode s) {
        return new RadioStation(s.path("name").asText(),
                                Country.valueOf(s.path("country").asText("AUSTRIA")),
                                s.path("trafficService").asBoolean(false));
    }

    static Map<String, Object> stationJson(RadioStation s) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("name", s.getName());
        out.put("country", s.getCountry().name());
        out.put("trafficService", s.getTrafficService());
        return out;
    }

    /** The radio provider: the behaviour of the example's provider, for what the tests call. */
    static final class Radio extends RadioAbstractProvider {
        private RadioStation current = new RadioStation("FM4", Country.AUSTRIA, true);
        private int volume = 50;
        private final List<RadioStation> favorites = new ArrayList<>();

        synchronized Map<String, Object> state() {
            Map<String, Object> out = new LinkedHashMap<>();
            List<Object> names = new ArrayList<>();
            favorites.forEach(s -> names.add(stationJson(s)));
            out.put("favorites", names);
            out.put("currentStation", stationJson(current));
            out.put("volume", volume);
            return out;
        }

        @Override
        public synchronized Promise<Deferred<RadioStation>> getCurrentStation() {
            Deferred<RadioStation> deferred = new Deferred<>();
            deferred.resolve(current);
            return new Promise<>(deferred);
        }

        @Override
        public synchronized Promise<Deferred<Integer>> getVolume() {
            Deferred<Integer> deferred = new Deferred<>();
            deferred.resolve(volume);
            return new Promise<>(deferred);
        }

        @Override
        public synchronized Promise<DeferredVoid> setVolume(Integer value) {
            volume = value;
            volumeChanged(value);
            DeferredVoid deferred = new DeferredVoid();
            deferred.resolve();
            return new Promise<>(deferred);
        }

        @Override
        public synchronized Promise<AddFavoriteStationDeferred> addFavoriteStation(RadioStation station) {
            AddFavoriteStationDeferred deferred = new AddFavoriteStationDeferred();
            boolean known = favorites.stream().anyMatch(s -> s.getName().equals(station.getName()));
            if (!known) {
                favorites.add(station);
            }
            deferred.resolve(!known);
            return new Promise<>(deferred);
        }

        @Override
        public synchronized Promise<ShuffleStationsDeferred> shuffleStations() {
            ShuffleStationsDeferred deferred = new ShuffleStationsDeferred();
            deferred.reject(ShuffleError.NO_STATIONS);
            return new Promise<>(deferred);
        }

        @Override
        public Promise<DescribeStationDeferred> describeStation(String name) {
            DescribeStationDeferred deferred = new DescribeStationDeferred();
            deferred.resolve(name);
            return new Promise<>(deferred);
        }

        @Override
        public void logMessage(String text) {
        }

        @Override
        public void stationHeard(RadioStation station) {
        }
    }
}
