"""The Global Capabilities Directory (GCD): a program of its own (``pyjoynr-gcd``, ``python -m
pyjoynr.gcd``), which a cluster controller may also run inside its process.

Modules, from what other programs see to how one instance runs:

- :mod:`gcd.interface` - the joynr interface GlobalCapabilitiesDirectory 0.3 and the
  well-known values (participantId, topic, domain, interface name) to reach it. The only
  module cluster controllers import to talk to a GCD; they do so through joynr messages.
- :mod:`gcd.provider` - the directory's rules: GcdProvider, the provider of that interface
  (GBID checks, which entry a lookup answers, all-or-nothing removes, touch and removeStale,
  the purge of expired entries).
- :mod:`gcd.store` - the store contract: StoredEntry, StoreError (with reason codes),
  RemoveOutcome, the GcdStore protocol, the schema and the SQL conditions on rows.
- :mod:`gcd.decisions` - what both stores decide, once (pure): the rows an add writes, what a
  remove deletes or why it refuses, what a touch or a remove_in_backends counts.
- :mod:`gcd.changes` - the vocabulary of a GCD cluster's synchronisation: versions, changes,
  buckets and digests, the VersionedStore and Notifier protocols.
- :mod:`gcd.feed` - the change feed's logic both versioned stores share (pure): bucket and
  row hash columns, cutting ``changes_since`` into whole version groups.
- :mod:`gcd.sqlite_store` - the store in a SQLite file (one instance; the embedded default).
- :mod:`gcd.postgres_store` - the store in PostgreSQL (shared by several instances), and its
  PostgresNotifier (LISTEN on the cluster's channel).
- :mod:`gcd.index` - DirectoryIndex, the in-memory copy of the whole store that answers the
  lookups (pure); :mod:`gcd.params` - the shared, reference-counted entry parameters, a
  row's profile and the looked-up row the index answers (Found).
- :mod:`gcd.sync` - Synchronizer: keeps one instance's index equal to the store (start-up
  load, catch-up on notifications and a timer, drift repair, purges, outage, its figures).
- :mod:`gcd.service` - one instance assembled: its configuration (GcdSettings, GcdConfig), the
  provider on its store, reachable over MQTT, its background tasks under one supervisor.
- :mod:`gcd.operability` - an instance on the admin endpoint (package ``admin``): its
  metrics, health checks and status page, also shown by a cluster controller embedding it.
- :mod:`gcd.__main__` - the process: command line, signals, exit status (``bin/gcd``).
"""
