"""The websocket transport: the cluster controller's server (server.py) and the libjoynr
runtime's client (client.py) over one connection protocol (connection.py, framing.py), and
their settings (settings.py). The init frames and the bounded outbox are shared with the Unix
domain socket transport (transports.dialects, transports.outbox)."""
