"""The websocket transport: the cluster controller's server (server.py) and the libjoynr
runtime's client (client.py) over one connection protocol (connection.py, framing.py), the init
frames and bounded outbox both ends share (common.py), and their settings (settings.py)."""
