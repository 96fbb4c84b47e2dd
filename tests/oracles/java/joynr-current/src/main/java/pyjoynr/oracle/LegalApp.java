package pyjoynr.oracle;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import com.fasterxml.jackson.databind.JsonNode;

import io.joynr.arbitration.ArbitrationStrategy;
import io.joynr.arbitration.DiscoveryQos;
import io.joynr.arbitration.DiscoveryScope;
import io.joynr.exceptions.JoynrRuntimeException;
import io.joynr.messaging.MessagingQos;
import io.joynr.provider.AbstractJoynrProvider;
import io.joynr.provider.Deferred;
import io.joynr.provider.DeferredVoid;
import io.joynr.provider.Promise;
import io.joynr.proxy.Future;
import io.joynr.pubsub.subscription.AttributeSubscriptionAdapter;
import io.joynr.runtime.JoynrInjectorFactory;
import io.joynr.runtime.JoynrRuntime;
import io.joynr.runtime.LibjoynrWebSocketRuntimeModule;
import joynr.MulticastSubscriptionQos;
import joynr.OnChangeSubscriptionQos;
import joynr.legal.names.UnderscoresAbstractProvider;
import joynr.legal.names.UnderscoresBroadcastInterface;
import joynr.legal.names.UnderscoresProxy;
import joynr.legal.overloads.WidthsAbstractProvider;
import joynr.legal.overloads.WidthsProxy;
import joynr.types.ProviderQos;
import joynr.types.ProviderScope;

/**
 * A joynr Java application of the legal Franca in tests/franca/oracle: interface Widths (put
 * overloaded by integer width and Float/Double) and interface Underscores (members named with
 * '_'), as provider and as consumer, driven as RadioApp is: one JSON command a line on stdin,
 * each answered by one line with its "id"; publications and broadcasts are "event" lines. The
 * first argument is the joynr properties file.
 */
public final class LegalApp {
    private final JoynrRuntime runtime;
    private final Map<String, WidthsService> widths = new ConcurrentHashMap<>();
    private final Map<String, UnderscoresService> underscores = new ConcurrentHashMap<>();
    private final Map<String, WidthsProxy> widthsProxies = new ConcurrentHashMap<>();
    private final Map<String, UnderscoresProxy> underscoresProxies = new ConcurrentHashMap<>();
    private final ExecutorService workers = Executors.newCachedThreadPool();

    private LegalApp(JoynrRuntime runtime) {
        this.runtime = runtime;
    }

    public static void main(String[] args) throws Exception {
        Properties properties = Lines.loadProperties(args[0]);
        JoynrRuntime runtime = new JoynrInjectorFactory(properties,
                                                        new LibjoynrWebSocketRuntimeModule()).getInjector()
                                                                                               .getInstance(JoynrRuntime.class);
        LegalApp app = new LegalApp(runtime);
        Lines.event("ready", Map.of("role", "legal-application"));
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
        } catch (Exception e) {
            reply.put("ok", false);
            reply.put("error", e.getClass().getSimpleName());
            reply.put("message", String.valueOf(e.getMessage()));
        }
        Lines.write(reply);
    }

    private boolean isWidths(JsonNode c) {
        String name = c.path("interface").asText();
        if (!"Widths".equals(name) && !"Underscores".equals(name)) {
            throw new IllegalArgumentException("interface must be Widths or Underscores, not " + name);
        }
        return "Widths".equals(name);
    }

    private Object run(JsonNode c) throws Exception {
        String cmd = c.path("cmd").asText();
        String domain = c.path("domain").asText();
        switch (cmd) {
        case "register":
            register(c, isWidths(c) ? widthsService(domain) : underscoresService(domain));
            return null;
        case "unregister":
            runtime.unregisterProvider(domain, isWidths(c) ? widthsService(domain) : underscoresService(domain));
            return null;
        case "providerState":
            return isWidths(c) ? widthsService(domain).state() : underscoresService(domain).state();
        case "setMyAttrLocally":
            underscoresService(domain).changeMyAttr(c.path("value").asInt());
            return null;
        case "fireMyEvent":
            underscoresService(domain).fireMy_event(c.path("level").asInt());
            return null;
        case "proxy":
            buildProxy(c);
            return null;
        default:
            return call(cmd, c);
        }
    }

    private WidthsService widthsService(String domain) {
        return widths.computeIfAbsent(domain, d -> new WidthsService());
    }

    private UnderscoresService underscoresService(String domain) {
        return underscores.computeIfAbsent(domain, d -> new UnderscoresService());
    }

    private void register(JsonNode c, AbstractJoynrProvider provider) throws Exception {
        ProviderQos qos = new ProviderQos();
        qos.setScope(ProviderScope.valueOf(c.path("scope").asText("LOCAL")));
        qos.setPriority(System.currentTimeMillis());
        var registrar = runtime.getProviderRegistrar(c.path("domain").asText(), provider).withProviderQos(qos);
        if (c.path("awaitGlobal").asBoolean(false)) {
            registrar = registrar.awaitGlobalRegistration();
        }
        registrar.register().get(c.path("timeoutMs").asLong(30000));
    }

    private void buildProxy(JsonNode c) {
        DiscoveryQos discoveryQos = new DiscoveryQos(c.path("discoveryTimeoutMs").asLong(10000),
                                                     ArbitrationStrategy.HighestPriority,
                                                     0,
                                                     DiscoveryScope.valueOf(c.path("scope").asText("LOCAL_ONLY")));
        discoveryQos.setRetryIntervalMs(500);
        MessagingQos messagingQos = new MessagingQos(c.path("ttlMs").asLong(10000));
        String name = c.path("name").asText("default");
        String domain = c.path("domain").asText();
        if (isWidths(c)) {
            widthsProxies.put(name,
                              runtime.getProxyBuilder(domain, WidthsProxy.class)
                                     .setDiscoveryQos(discoveryQos)
                                     .setMessagingQos(messagingQos)
                                     .build());
        } else {
            underscoresProxies.put(name,
                                   runtime.getProxyBuilder(domain, UnderscoresProxy.class)
                                          .setDiscoveryQos(discoveryQos)
                                          .setMessagingQos(messagingQos)
                                          .build());
        }
    }

    private static <T> T named(Map<String, T> proxies, JsonNode c) {
        T proxy = proxies.get(c.path("proxy").asText("default"));
        if (proxy == null) {
            throw new IllegalStateException("no such proxy: send a proxy command first");
        }
        return proxy;
    }

    private Object call(String cmd, JsonNode c) throws Exception {
        switch (cmd) {
        case "put":
            return put(named(widthsProxies, c), c.path("kind").asText(), c.path("value"));
        case "scale":
            return named(widthsProxies, c).scale(c.path("factor").asInt());
        case "doIt":
            return named(underscoresProxies, c).do_it(c.path("count").asInt());
        case "doItTwice":
            return named(underscoresProxies, c).do_it(c.path("text").asText());
        case "plainCall":
            return named(underscoresProxies, c).plainCall(c.path("n").asInt());
        case "getMyAttr":
            return named(underscoresProxies, c).getMy_attr();
        case "setMyAttr":
            named(underscoresProxies, c).setMy_attr(c.path("value").asInt());
            return null;
        case "subscribeMyAttr":
            return subscribeMyAttr(named(underscoresProxies, c), c);
        case "unsubscribeMyAttr":
            named(underscoresProxies, c).unsubscribeFromMy_attr(c.path("subscriptionId").asText());
            return null;
        case "subscribeMyEvent":
            return subscribeMyEvent(named(underscoresProxies, c), c);
        case "unsubscribeMyEvent":
            named(underscoresProxies, c).unsubscribeFromMy_eventBroadcast(c.path("subscriptionId").asText());
            return null;
        default:
            throw new IllegalArgumentException("unknown command: " + cmd);
        }
    }

    /** The overload of put whose Java parameter type is named by kind, called with value. */
    private static String put(WidthsProxy proxy, String kind, JsonNode value) {
        switch (kind) {
        case "Byte":
            return proxy.put(Byte.valueOf((byte) value.asInt()));
        case "Short":
            return proxy.put(Short.valueOf((short) value.asInt()));
        case "Integer":
            return proxy.put(Integer.valueOf(value.asInt()));
        case "Long":
            return proxy.put(Long.valueOf(value.asLong()));
        case "Float":
            return proxy.put(Float.valueOf((float) value.asDouble()));
        case "Double":
            return proxy.put(Double.valueOf(value.asDouble()));
        case "Integer[]":
            List<Integer> ints = new ArrayList<>();
            value.forEach(n -> ints.add(n.asInt()));
            return proxy.put(ints.toArray(new Integer[0]));
        case "Long[]":
            List<Long> longs = new ArrayList<>();
            value.forEach(n -> longs.add(n.asLong()));
            return proxy.put(longs.toArray(new Long[0]));
        default:
            throw new IllegalArgumentException("no put of " + kind);
        }
    }

    private Object subscribeMyAttr(UnderscoresProxy proxy, JsonNode c) throws Exception {
        OnChangeSubscriptionQos qos = new OnChangeSubscriptionQos();
        qos.setMinIntervalMs(0);
        qos.setValidityMs(600000);
        Future<String> subscribed = proxy.subscribeToMy_attr(new AttributeSubscriptionAdapter<Integer>() {
            @Override
            public void onReceive(Integer value) {
                Map<String, Object> fields = new LinkedHashMap<>();
                fields.put("attribute", "my_attr");
                fields.put("value", value);
                Lines.event("publication", fields);
            }

            @Override
            public void onError(JoynrRuntimeException error) {
                Lines.event("subscription-error", Map.of("attribute", "my_attr", "message", String.valueOf(error)));
            }
        }, qos);
        return subscribed.get(c.path("timeoutMs").asLong(10000));
    }

    private Object subscribeMyEvent(UnderscoresProxy proxy, JsonNode c) throws Exception {
        MulticastSubscriptionQos qos = new MulticastSubscriptionQos();
        qos.setValidityMs(600000);
        Future<String> subscribed = proxy.subscribeToMy_eventBroadcast(new UnderscoresBroadcastInterface.My_eventBroadcastAdapter() {
            @Override
            public void onReceive(Integer level) {
                Map<String, Object> fields = new LinkedHashMap<>();
                fields.put("broadcast", "my_event");
                fields.put("level", level);
                Lines.event("broadcast", fields);
            }
        }, qos);
        return subscribed.get(c.path("timeoutMs").asLong(10000));
    }

    /** Widths as a provider: each overload answers the Java type of its parameter and notes
     * the call, in order. */
    static final class WidthsService extends WidthsAbstractProvider {
        private final List<Object> got = new ArrayList<>();

        private synchronized Promise<Put1Deferred> ran(String kind, Object value) {
            List<Object> call = new ArrayList<>();
            call.add(kind);
            call.add(value);
            got.add(call);
            Put1Deferred deferred = new Put1Deferred();
            deferred.resolve(kind);
            return new Promise<>(deferred);
        }

        synchronized Map<String, Object> state() {
            return Map.of("got", new ArrayList<>(got));
        }

        @Override
        public Promise<Put1Deferred> put(Byte value) {
            return ran("Byte", value);
        }

        @Override
        public Promise<Put1Deferred> put(Short value) {
            return ran("Short", value);
        }

        @Override
        public Promise<Put1Deferred> put(Integer value) {
            return ran("Integer", value);
        }

        @Override
        public Promise<Put1Deferred> put(Long value) {
            return ran("Long", value);
        }

        @Override
        public Promise<Put1Deferred> put(Float value) {
            return ran("Float", value);
        }

        @Override
        public Promise<Put1Deferred> put(Double value) {
            return ran("Double", value);
        }

        @Override
        public Promise<Put1Deferred> put(Integer[] values) {
            return ran("Integer[]", List.of(values));
        }

        @Override
        public Promise<Put1Deferred> put(Long[] values) {
            return ran("Long[]", List.of(values));
        }

        @Override
        public Promise<ScaleDeferred> scale(Integer factor) {
            ScaleDeferred deferred = new ScaleDeferred();
            deferred.resolve(factor * 10);
            return new Promise<>(deferred);
        }
    }

    /** Underscores as a provider: my_attr starts at 5, do_it doubles, do_it(String) repeats,
     * plainCall adds one. */
    static final class UnderscoresService extends UnderscoresAbstractProvider {
        private int myAttr = 5;
        private String plainName = "p";

        synchronized void changeMyAttr(int value) {
            myAttr = value;
            my_attrChanged(value);
        }

        synchronized Map<String, Object> state() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("my_attr", myAttr);
            out.put("plainName", plainName);
            return out;
        }

        @Override
        public synchronized Promise<Deferred<Integer>> getMy_attr() {
            Deferred<Integer> deferred = new Deferred<>();
            deferred.resolve(myAttr);
            return new Promise<>(deferred);
        }

        @Override
        public Promise<DeferredVoid> setMy_attr(Integer value) {
            changeMyAttr(value);
            DeferredVoid deferred = new DeferredVoid();
            deferred.resolve();
            return new Promise<>(deferred);
        }

        @Override
        public synchronized Promise<Deferred<String>> getPlainName() {
            Deferred<String> deferred = new Deferred<>();
            deferred.resolve(plainName);
            return new Promise<>(deferred);
        }

        @Override
        public synchronized Promise<DeferredVoid> setPlainName(String value) {
            plainName = value;
            plainNameChanged(value);
            DeferredVoid deferred = new DeferredVoid();
            deferred.resolve();
            return new Promise<>(deferred);
        }

        @Override
        public Promise<Do_it1Deferred> do_it(Integer count) {
            Do_it1Deferred deferred = new Do_it1Deferred();
            deferred.resolve(count * 2);
            return new Promise<>(deferred);
        }

        @Override
        public Promise<Do_it2Deferred> do_it(String text) {
            Do_it2Deferred deferred = new Do_it2Deferred();
            deferred.resolve(text + text);
            return new Promise<>(deferred);
        }

        @Override
        public Promise<PlainCallDeferred> plainCall(Integer n) {
            PlainCallDeferred deferred = new PlainCallDeferred();
            deferred.resolve(n + 1);
            return new Promise<>(deferred);
        }
    }
}
