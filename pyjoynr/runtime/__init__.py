"""The routing core shared by the three programs (cluster controller, GCD, libjoynr): what a
message is, how it is read and written, and where it goes.

Nothing here imports a transport or the programming model (:mod:`pyjoynr.programming`), which
is built on it. The pure modules (no asyncio, no sockets) are ``addresses``, ``routing``
(the table), ``rules``, ``router``, ``queues``, ``quotas``, ``messages``, ``smrf`` (the codecs
of the two frame dialects), ``payloads``, ``joynr_json`` and ``bodies`` (the codecs of the two
body formats), ``interface`` (the value types the bodies carry and the description of an
interface that types joynr's JSON), ``multicast`` and ``errors``; ``housekeeping`` and
``tasks`` own the timers and background tasks; ``telemetry``, ``audit``, ``logs`` and
``metrics`` are what a process counts, records and logs.
"""
