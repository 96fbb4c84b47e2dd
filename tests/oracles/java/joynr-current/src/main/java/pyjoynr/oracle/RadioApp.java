package pyjoynr.oracle;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import com.fasterxml.jackson.databind.JsonNode;

import io.joynr.arbitration.ArbitrationStrategy;
import io.joynr.arbitration.DiscoveryQos;
import io.joynr.arbitration.DiscoveryScope;
import io.joynr.exceptions.JoynrRuntimeException;
import io.joynr.messaging.MessagingQos;
import io.joynr.proxy.Future;
import io.joynr.pubsub.subscription.AttributeSubscriptionAdapter;
import io.joynr.runtime.JoynrInjectorFactory;
import io.joynr.runtime.JoynrRuntime;
import io.joynr.runtime.LibjoynrWebSocketRuntimeModule;
import joynr.MulticastSubscriptionQos;
import joynr.OnChangeSubscriptionQos;
import joynr.exceptions.ApplicationException;
import joynr.exceptions.ProviderRuntimeException;
import joynr.example.Country;
import joynr.example.RadioBroadcastInterface;
import joynr.example.RadioProxy;
import joynr.example.RadioStation;
import joynr.types.ProviderQos;
import joynr.types.ProviderScope;

/**
 * A joynr Java application on joynr's libjoynr websocket runtime, driven line by line: each
 * line on stdin is a JSON command with an "id", answered by one line on stdout with the same
 * "id"; what arrives unasked (publications, broadcasts, fire-and-forget calls) is written as an
 * "event" line. The first argument is the joynr properties file (the cluster controller's
 * websocket address among them).
 */
public final class RadioApp {
    private final JoynrRuntime runtime;
    // one radio per domain: what one test leaves in a radio (favorites, volume) stays there
    private final Map<String, RadioService> providers = new java.util.concurrent.ConcurrentHashMap<>();
    private final Map<String, RadioProxy> proxies = new LinkedHashMap<>();
    private final ExecutorService workers = Executors.newCachedThreadPool();

    private RadioApp(JoynrRuntime runtime) {
        this.runtime = runtime;
    }

    public static void main(String[] args) throws Exception {
        Properties properties = Lines.loadProperties(args[0]);
        JoynrRuntime runtime = new JoynrInjectorFactory(properties,
                                                        new LibjoynrWebSocketRuntimeModule()).getInjector()
                                                                                               .getInstance(JoynrRuntime.class);
        RadioApp app = new RadioApp(runtime);
        Lines.event("ready", Map.of("role", "application"));
        Lines.serve(app.workers, app::answer);
        runtime.shutdown(false);
        System.exit(0);
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
        Lines.write(reply);
    }

    private Object run(JsonNode c) throws Exception {
        String cmd = c.path("cmd").asText();
        switch (cmd) {
        case "register":
            return register(c);
        case "unregister":
            runtime.unregisterProvider(c.path("domain").asText(), provider(c));
            return null;
        case "setCurrentStation":
            provider(c).changeStation(station(c.path("station")));
            return null;
        case "setVolumeLocally":
            provider(c).changeVolume(c.path("volume").asInt());
            return null;
        case "fireNewStationDiscovered":
            provider(c).fireNewStationDiscovered(station(c.path("station")), strings(c.path("partitions")));
            return null;
        case "quiet":
            provider(c).setQuiet(c.path("on").asBoolean(true));
            return null;
        case "providerState":
            return provider(c).state();
        case "proxy":
            proxies.put(c.path("name").asText("default"), buildProxy(c));
            return null;
        default:
            return call(cmd, proxy(c), c);
        }
    }

    private Object register(JsonNode c) throws Exception {
        ProviderQos qos = new ProviderQos();
        qos.setScope(ProviderScope.valueOf(c.path("scope").asText("GLOBAL")));
        qos.setPriority(c.path("priority").asLong(System.currentTimeMillis()));
        var registrar = runtime.getProviderRegistrar(c.path("domain").asText(), provider(c)).withProviderQos(qos);
        if (c.has("gbids")) {
            registrar = registrar.withGbids(strings(c.path("gbids")));
        }
        if (c.path("awaitGlobal").asBoolean(true)) {
            registrar = registrar.awaitGlobalRegistration();
        }
        Future<Void> done = c.path("allBackends").asBoolean(false) ? registrar.registerInAllBackends()
                : registrar.register();
        done.get(c.path("timeoutMs").asLong(30000));
        return null;
    }

    /** The radio of the command's domain (made when first named). */
    private RadioService provider(JsonNode c) {
        return providers.computeIfAbsent(c.path("domain").asText(), domain -> new RadioService());
    }

    private RadioProxy buildProxy(JsonNode c) {
        DiscoveryQos discoveryQos = new DiscoveryQos(c.path("discoveryTimeoutMs").asLong(10000),
                                                     ArbitrationStrategy.HighestPriority,
                                                     c.path("cacheMaxAgeMs").asLong(0),
                                                     DiscoveryScope.valueOf(c.path("scope")
                                                                             .asText("LOCAL_THEN_GLOBAL")));
        discoveryQos.setRetryIntervalMs(c.path("retryIntervalMs").asLong(500));
        var builder = runtime.getProxyBuilder(c.path("domain").asText(), RadioProxy.class)
                             .setDiscoveryQos(discoveryQos)
                             .setMessagingQos(new MessagingQos(c.path("ttlMs").asLong(10000)));
        if (c.has("gbids")) {
            builder = builder.setGbids(strings(c.path("gbids")));
        }
        RadioProxy proxy = builder.build();
        // building is lazy: the first call waits for arbitration and fails when nothing is found
        return proxy;
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
        case "setVolume":
            proxy.setVolume(c.path("volume").asInt());
            return null;
        case "addFavoriteStation":
            return proxy.addFavoriteStation(station(c.path("station")));
        case "shuffleStations":
            proxy.shuffleStations();
            return null;
        case "describeStation":
            return proxy.describeStation(c.path("name").asText());
        case "logMessage":
            proxy.logMessage(c.path("text").asText());
            return null;
        case "stationHeard":
            proxy.stationHeard(station(c.path("station")));
            return null;
        case "subscribeAttribute":
            return subscribeAttribute(proxy, c);
        case "unsubscribeAttribute":
            if ("volume".equals(c.path("attribute").asText())) {
                proxy.unsubscribeFromVolume(c.path("subscriptionId").asText());
            } else {
                proxy.unsubscribeFromCurrentStation(c.path("subscriptionId").asText());
            }
            return null;
        case "subscribeBroadcast":
            return subscribeBroadcast(proxy, c);
        case "unsubscribeBroadcast":
            proxy.unsubscribeFromNewStationDiscoveredBroadcast(c.path("subscriptionId").asText());
            return null;
        case "bench":
            return Bench.run(proxy, c);
        default:
            throw new IllegalArgumentException("unknown command: " + cmd);
        }
    }

    private Object subscribeAttribute(RadioProxy proxy, JsonNode c) throws Exception {
        OnChangeSubscriptionQos qos = new OnChangeSubscriptionQos();
        qos.setMinIntervalMs(c.path("minIntervalMs").asLong(0));
        qos.setValidityMs(c.path("validityMs").asLong(600000));
        final String attribute = c.path("attribute").asText("currentStation");
        Future<String> subscribed;
        if ("volume".equals(attribute)) {
            subscribed = proxy.subscribeToVolume(new Listener<Integer>(attribute) {
            }, qos);
        } else {
            subscribed = proxy.subscribeToCurrentStation(new Listener<RadioStation>(attribute) {
            }, qos);
        }
        return subscribed.get(c.path("timeoutMs").asLong(10000));
    }

    private Object subscribeBroadcast(RadioProxy proxy, JsonNode c) throws Exception {
        MulticastSubscriptionQos qos = new MulticastSubscriptionQos();
        qos.setValidityMs(c.path("validityMs").asLong(600000));
        Future<String> subscribed = proxy.subscribeToNewStationDiscoveredBroadcast(new RadioBroadcastInterface.NewStationDiscoveredBroadcastAdapter() {
            @Override
            public void onReceive(RadioStation station) {
                Map<String, Object> fields = new LinkedHashMap<>();
                fields.put("broadcast", "newStationDiscovered");
                fields.put("station", stationJson(station));
                Lines.event("broadcast", fields);
            }
        }, qos, strings(c.path("partitions")));
        return subscribed.get(c.path("timeoutMs").asLong(10000));
    }

    /** Writes each publication of an attribute as an event line. */
    private static class Listener<T> extends AttributeSubscriptionAdapter<T> {
        private final String attribute;

        Listener(String attribute) {
            this.attribute = attribute;
        }

        @Override
        public void onReceive(T value) {
            Map<String, Object> fields = new LinkedHashMap<>();
            fields.put("attribute", attribute);
            fields.put("value", value instanceof RadioStation ? stationJson((RadioStation) value) : value);
            Lines.event("publication", fields);
        }

        @Override
        public void onError(JoynrRuntimeException error) {
            Lines.event("subscription-error", Map.of("attribute", attribute, "message", String.valueOf(error)));
        }
    }

    static RadioStation station(JsonNode s) {
        return new RadioStation(s.path("name").asText(),
                                Country.valueOf(s.path("country").asText("AUSTRIA")),
                                s.path("trafficService").asBoolean(false));
    }

    static Map<String, Object> stationJson(RadioStation s) {
        if (s == null) {
            return null;
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("name", s.getName());
        out.put("country", s.getCountry() == null ? null : s.getCountry().name());
        out.put("trafficService", s.getTrafficService());
        return out;
    }

    static String[] strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asText()));
        return out.toArray(new String[0]);
    }
}
