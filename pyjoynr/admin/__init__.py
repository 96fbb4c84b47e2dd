"""The admin endpoint of the programs (cluster controller, GCD): metrics, health and a status
page on an HTTP port apart from the clients' one, on the loopback interface by default.

Modules:

- ``settings``    the ``[admin]`` section: where it listens, its limits
- ``http``        AdminServer: HTTP/1.1 (h11) over asyncio streams, a hostile-input entry point
- ``app``         the endpoints over what a program offers (the Operable protocol)
- ``exposition``  metrics read from the components' own counters at each scrape
- ``health``      checks with reasons; probes whose answers are reused
- ``status``      the shared sections of the status page's JSON
- ``page``        the status page (HTML, inline style and script, no framework)
- ``ops``         ProgramOps: the server, registry, probes and liveness a program shares

The programs' own parts: ``cluster_controller.operability``, ``gcd.operability``.
"""
