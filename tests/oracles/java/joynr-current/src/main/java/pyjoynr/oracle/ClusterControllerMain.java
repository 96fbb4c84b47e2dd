package pyjoynr.oracle;

import com.google.inject.Module;
import com.google.inject.util.Modules;

import io.joynr.runtime.CCWebSocketRuntimeModule;
import io.joynr.runtime.JoynrInjectorFactory;
import io.joynr.runtime.JoynrRuntime;

/**
 * joynr's websocket cluster controller with its MQTT client, configured only by joynr's
 * properties (the file given as the first argument). Prints one line when the runtime is up
 * and runs until the process is stopped.
 */
public final class ClusterControllerMain {
    private ClusterControllerMain() {
    }

    public static void main(String[] args) throws Exception {
        java.util.Properties properties = Lines.loadProperties(args[0]);
        String mqttModule = properties.getProperty("oracle.mqttModule",
                                                   "io.joynr.messaging.mqtt.hivemq.client.HivemqMqttClientModule");
        Module mqtt = (Module) Class.forName(mqttModule).getDeclaredConstructor().newInstance();
        Module module = Modules.override(new CCWebSocketRuntimeModule()).with(mqtt);
        final JoynrRuntime runtime = new JoynrInjectorFactory(properties, module).getInjector()
                                                                                   .getInstance(JoynrRuntime.class);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> runtime.shutdown(false)));
        Lines.event("ready", java.util.Map.of("role", "cluster-controller"));
        Thread.currentThread().join();
    }
}
