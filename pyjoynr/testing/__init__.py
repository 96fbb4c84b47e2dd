"""Real parts for integration tests of joynr applications, and the pytest plugin that offers
them as fixtures (:mod:`pyjoynr.testing.plugin`, registered as the ``pytest11`` entry point
``pyjoynr``: installing the package with its ``testing`` extra is all it takes).

- :mod:`pyjoynr.testing.cluster`: cluster controller configurations on free loopback ports,
  ``free_port``, ``eventually``;
- :mod:`pyjoynr.testing.brokers`: ``Mosquitto``, a mosquitto process on a free port, configured
  as a production broker should be (persistence that survives a crash);
- :mod:`pyjoynr.testing.postgres`: ``PostgresServer``, a throwaway PostgreSQL server.

Nothing here is mocked: the fixtures start the project's real cluster controller, GCD and
runtimes, and real brokers and databases. A part the machine lacks (mosquitto, PostgreSQL) fails
the test that asks for it, naming what is missing.
"""
