"""The MQTT transport: one broker connection per backend (transport.py: MqttTransport), the
seam to the MQTT client (client.py: the project's own, mqtt5/, or aiomqtt), the frame dialects
of a backend (dialect.py), the settings and broker URLs (settings.py) and the embedded broker
(broker.py)."""
