"""Transports: thin I/O layers that move frames between the router and the network.

One sub-package per I/O flavour, and what they share beside them:

- ``websocket/``: the CC end (server) and the libjoynr end (client) of the websocket link;
- ``mqtt/``: the CC's and the GCD's broker connections (transport), the seam to the client
  (client) and the project's own client (mqtt5/), the embedded broker;
- ``inprocess.py``: participants living in the same process (no I/O);
- ``coalescing.py``: the one write rule of the websocket outbox and the MQTT client.

The flavours do not import each other; all of them import only ``pyjoynr.runtime``
(tests/unit/test_layers.py keeps both rules)."""
