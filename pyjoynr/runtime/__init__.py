"""The transport-agnostic core shared by the three programs (cluster controller, GCD, libjoynr).

Nothing here imports a transport. The pure modules (no asyncio, no sockets) are ``addresses``,
``routing``, ``rules``, ``router``, ``messages``, ``payloads``, ``multicast``,
``discovery_types``, ``interface`` and ``errors``; ``housekeeping`` and ``tasks`` own the timers
and background tasks; ``calls``, ``providers``, ``proxies``, ``subscriptions`` and
``joynr_runtime`` are the application side every program's runtime is built from.
"""
