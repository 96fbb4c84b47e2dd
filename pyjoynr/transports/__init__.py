"""Transports: thin I/O layers that move frames between the router and the network.

One sub-package per I/O flavour, and what they share beside them:

- ``websocket/``: the CC end (server) and the libjoynr end (client) of the websocket link;
- ``uds/``: the CC end (server) and the libjoynr end (client) of the Unix domain socket
  link, on the CC's own host (joynr's UDS frames);
- ``mqtt/``: the CC's and the GCD's broker connections (transport), the seam to the client
  (client) and the project's own client (mqtt5/), the embedded broker;
- ``inprocess.py``: participants living in the same process (no I/O);
- ``coalescing.py``: the one write rule of the outboxes and the MQTT client;
- ``dialects.py``, ``outbox.py``, ``clients.py``, ``parent.py``: the init frames, frame codecs
  and bounded send queue of a client connection, a server's connected clients, and a
  runtime's link to its cluster controller (websocket and UDS).

The flavours do not import each other; all of them import only ``pyjoynr.runtime``
(tests/unit/test_layers.py keeps both rules)."""
