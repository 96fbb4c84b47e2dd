"""The project's own MQTT client: a sans-I/O protocol core and a thin asyncio protocol.

- :mod:`transports.mqtt.mqtt5.packets`: encode and strictly decode MQTT 5.0 and 3.1.1 packets;
- :mod:`transports.mqtt.mqtt5.session`: the session state (packet ids, in-flight window, resend
  order, keep-alive deadlines), pure;
- :mod:`transports.mqtt.mqtt5.client`: the asyncio protocol that moves bytes between a socket and
  these two, behind the seam of transports.mqtt.client.
"""
