"""The store contract of the Global Capabilities Directory: what every store keeps and answers.

A store keeps one row per (GBID, participantId): a provider registered in two backends has two
rows. Two implementations: ``gcd.sqlite_store.SqliteStore`` (a file, the embedded default) and
``gcd.postgres_store.PostgresStore`` (shared by several GCD instances). Both make the same
decisions, written once in :mod:`gcd.decisions`; the SQL they share (the schema and the
conditions on rows) is here.

The contract:

- Each method is one transaction: it happens completely or not at all.
- Any failure of the database raises :class:`StoreError` (the GCD answers INTERNAL_ERROR),
  with a ``reason`` code.
- A row is live while ``expiry_ms >= now_ms``. The reads (``find``, ``find_participant``) and
  ``remove`` see live rows only: an expired row is as if it were gone, until
  ``purge_expired(now_ms)`` deletes it. ``touch``, ``remove_in_backends`` and ``remove_stale`` act
  on the rows they select whether or not these have expired (a touch revives an expired row that
  is not purged yet).
- Text is compared and ordered by code point.
- Lists given to a method may name a value twice: each distinct value counts once, and counts
  returned are of distinct rows.

Both stores are versioned too (:class:`gcd.changes.VersionedStore`): each row carries the
version of the write that last changed it, its key's bucket and its row hash
(``VERSION_COLUMNS``); a deleted key leaves a tombstone; one meta row holds the version counter
(``NEXT_VERSION``, the first statement of every write transaction) and the highest purged
tombstone version. A database of the previous version (no version columns, no feed tables) is
migrated when a store opens it.
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, Final, Literal, Protocol, cast

__all__ = [
    "COLUMNS",
    "DIGESTS",
    "ENTRIES_TABLE",
    "EXPIRED",
    "FEED_TABLES",
    "INDEXES",
    "LIVE",
    "META",
    "NEXT_VERSION",
    "SCHEMA",
    "STALE",
    "VERSION_COLUMNS",
    "GcdStore",
    "RemoveOutcome",
    "StoreError",
    "StoreErrorReason",
    "StoredEntry",
    "entry_of",
    "new_entry",
    "row_values",
]

#: why a store operation failed (:attr:`StoreError.reason`):
#: ``not-open`` the store is not open (never opened, or closed);
#: ``unreachable`` the database cannot be reached (refused or failed connection);
#: ``timeout`` connecting, waiting for a connection or a statement took too long;
#: ``connection-lost`` the connection broke during the operation;
#: ``conflict`` the database kept aborting the transaction (deadlock, serialization failure);
#: ``database`` any other failure the database reported (SQL error, a refused value).
StoreErrorReason = Literal["not-open", "unreachable", "timeout", "connection-lost", "conflict",
                           "database"]


class StoreError(Exception):
    """The database failed; nothing of the operation was written.

    ``reason`` is a short code (:data:`StoreErrorReason`; for counters and log filters, never
    part of the message); ``str()`` says what failed and why."""

    def __init__(self, detail: str, *, reason: StoreErrorReason = "database") -> None:
        super().__init__(detail)
        self.reason: StoreErrorReason = reason


class RemoveOutcome(enum.Enum):
    """What ``GcdStore.remove`` did (see :func:`gcd.decisions.decide_remove`)."""

    REMOVED = "removed"
    NO_PARTICIPANT = "no entry for the participant"
    NOT_IN_ALL_SELECTED = "not registered in every selected backend"


@dataclass(frozen=True, slots=True)
class StoredEntry:
    gbid: str
    participant_id: str
    domain: str
    interface_name: str
    major_version: int
    minor_version: int
    priority: int
    scope: str
    supports_on_change: bool
    #: JSON list of [name, value] pairs
    custom_parameters: str
    last_seen_ms: int
    expiry_ms: int
    public_key_id: str
    #: the provider's MQTT topic (its address is MqttAddress(gbid, topic))
    topic: str
    cluster_controller_id: str

    @property
    def key(self) -> tuple[str, str]:
        """The row's primary key: (gbid, participant_id)."""
        return (self.gbid, self.participant_id)


COLUMNS = tuple(f.name for f in fields(StoredEntry))
#: the column values of an entry, in COLUMNS order (dataclasses.astuple deep-copies: slow)
row_values = operator.attrgetter(*COLUMNS)


class _Unfrozen:
    """StoredEntry's slots without its frozen ``__setattr__`` (see :func:`new_entry`)."""

    __slots__ = COLUMNS


def _entry_maker(name: str, parameters: str, value_of: Any) -> Any:
    """A function ``name(parameters)`` that makes a StoredEntry, each field ``value_of(field)``
    (an expression of the parameters), as plain slot stores on an :class:`_Unfrozen` that
    then becomes the StoredEntry (``__class__``: the same slots, the same memory layout)."""
    lines = [f"def {name}({parameters}):", "    entry = new(_Unfrozen)"]
    lines += [f"    entry.{field} = {value_of(field)}" for field in COLUMNS]
    lines += ["    become(entry, '__class__', StoredEntry)", "    return entry"]
    namespace: dict[str, Any] = {"new": object.__new__, "_Unfrozen": _Unfrozen,
                                 "become": object.__setattr__, "StoredEntry": StoredEntry}
    exec("\n".join(lines), namespace)  # the names are StoredEntry's fields (identifiers)
    return namespace[name]


_new_entry: Final = _entry_maker("new_entry", ", ".join(COLUMNS), lambda field: field)
_entry_of: Final = _entry_maker(
    "entry_of", "gbid, source", lambda field: "gbid" if field == "gbid" else f"source.{field}")


def new_entry(*values: Any) -> StoredEntry:
    """``StoredEntry(*values)``, made about four times faster: a frozen dataclass sets each
    field through ``object.__setattr__`` (1.5 us for an entry's 15 fields, most of a lookup
    of ten rows); this sets them as plain slot stores on an object of the same slots, then
    makes it the StoredEntry it is. The result is an ordinary StoredEntry: frozen, equal and
    hashed as one (a test holds the two equal). No check of the values' types, as the
    dataclass makes none."""
    return cast(StoredEntry, _new_entry(*values))


def entry_of(gbid: str, source: Any) -> StoredEntry:
    """The StoredEntry in ``gbid`` whose other fields are the attributes of the same names of
    ``source`` (e.g. gcd.params.SharedParams), made as :func:`new_entry` makes one."""
    return cast(StoredEntry, _entry_of(gbid, source))


#: the columns a versioned store keeps beside an entry's (see :mod:`gcd.changes`): the version
#: of the write that created or last changed the row, the key's bucket and the row's hash
VERSION_COLUMNS = ("version", "bucket", "row_hash")

#: the table of the rows, as a store of this version creates it
ENTRIES_TABLE = """CREATE TABLE IF NOT EXISTS discovery_entries (
        gbid TEXT NOT NULL,
        participant_id TEXT NOT NULL,
        domain TEXT NOT NULL,
        interface_name TEXT NOT NULL,
        major_version INTEGER NOT NULL,
        minor_version INTEGER NOT NULL,
        priority BIGINT NOT NULL,
        scope TEXT NOT NULL,
        supports_on_change BOOLEAN NOT NULL,
        custom_parameters TEXT NOT NULL,
        last_seen_ms BIGINT NOT NULL,
        expiry_ms BIGINT NOT NULL,
        public_key_id TEXT NOT NULL,
        topic TEXT NOT NULL,
        cluster_controller_id TEXT NOT NULL,
        version BIGINT NOT NULL,
        bucket INTEGER NOT NULL,
        row_hash BIGINT NOT NULL,
        PRIMARY KEY (gbid, participant_id)
    )"""

#: the tables of the change feed: a deleted key's tombstone (its deletion's version, for
#: ``deleted_ms`` plus the retention), and one row of store-wide state: the version counter
#: (every write transaction takes the next one and holds this row's lock until it commits) and
#: the highest version of a purged tombstone (a reader behind it is too far behind)
FEED_TABLES = (
    """CREATE TABLE IF NOT EXISTS discovery_tombstones (
        gbid TEXT NOT NULL,
        participant_id TEXT NOT NULL,
        version BIGINT NOT NULL,
        bucket INTEGER NOT NULL,
        deleted_ms BIGINT NOT NULL,
        PRIMARY KEY (gbid, participant_id)
    )""",
    """CREATE TABLE IF NOT EXISTS discovery_meta (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        version BIGINT NOT NULL,
        purged_version BIGINT NOT NULL
    )""",
    "INSERT INTO discovery_meta (id, version, purged_version) VALUES (1, 0, 0) "
    "ON CONFLICT (id) DO NOTHING",
)

INDEXES = (
    "CREATE INDEX IF NOT EXISTS discovery_entries_domain_interface "
    "ON discovery_entries (domain, interface_name)",
    # with the expiry, so that a participant lookup needs no statistics to pick its plan
    "CREATE INDEX IF NOT EXISTS discovery_entries_participant_expiry "
    "ON discovery_entries (participant_id, expiry_ms)",
    "CREATE INDEX IF NOT EXISTS discovery_entries_cluster_controller "
    "ON discovery_entries (cluster_controller_id)",
    "CREATE INDEX IF NOT EXISTS discovery_entries_expiry ON discovery_entries (expiry_ms)",
    "CREATE INDEX IF NOT EXISTS discovery_entries_version ON discovery_entries (version)",
    "CREATE INDEX IF NOT EXISTS discovery_entries_bucket ON discovery_entries (bucket)",
    "CREATE INDEX IF NOT EXISTS discovery_tombstones_version ON discovery_tombstones (version)",
)

#: the whole schema of a new database; a database of the previous version (discovery_entries
#: without VERSION_COLUMNS, no feed tables) is migrated by the store when it opens it
SCHEMA = (ENTRIES_TABLE, *FEED_TABLES, *INDEXES)

#: takes the next version (the first statement of every write transaction): the meta row stays
#: locked until the transaction ends, so the next writer gets its version after this commit
NEXT_VERSION = "UPDATE discovery_meta SET version = version + 1 WHERE id = 1 RETURNING version"
#: the store's version and the highest purged tombstone version
META = "SELECT version, purged_version FROM discovery_meta WHERE id = 1"
#: bucket, rows, sum of versions, sum of row hashes: every non-empty bucket's digest
DIGESTS = ("SELECT bucket, count(*), sum(version), sum(row_hash) FROM discovery_entries "
           "GROUP BY bucket")

# The conditions on rows, as SQL over the schema's columns; each store fills in its own
# placeholders (``str.format``), e.g. ``LIVE.format(now="?")`` or ``LIVE.format(now="$3")``.
#: the row has not expired at ``now``: reads and remove see it
LIVE = "expiry_ms >= {now}"
#: the row has expired at ``now``: purge_expired deletes it
EXPIRED = "expiry_ms < {now}"
#: a row of cluster controller ``cc`` last seen before ``before``: remove_stale deletes it
STALE = "cluster_controller_id = {cc} AND last_seen_ms < {before}"


class GcdStore(Protocol):
    """The store of a GCD (see the module docstring for what every method guarantees)."""

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def add(self, entries: Sequence[StoredEntry]) -> None:
        """Insert or replace the rows (gbid, participant_id) of ``entries``; where a key is
        named twice, the last entry of it is written."""
        ...

    async def find(self, domains: Sequence[str], interface_name: str, now_ms: int
                   ) -> list[StoredEntry]:
        """Live rows of any GBID in one of ``domains`` with ``interface_name``, each once,
        ordered by participant_id, gbid."""
        ...

    async def find_participant(self, participant_id: str, now_ms: int) -> list[StoredEntry]:
        """Live rows of ``participant_id`` (one per GBID), ordered by gbid."""
        ...

    async def remove(self, participant_id: str, gbids: Sequence[str], now_ms: int
                     ) -> RemoveOutcome:
        """Remove the participant from every one of ``gbids`` - or, when it is not registered
        (live) in all of them, from none."""
        ...

    async def remove_in_backends(self, participant_ids: Sequence[str], gbid: str) -> int:
        """Remove these participants from one GBID; how many rows went."""
        ...

    async def touch(self, cluster_controller_id: str, participant_ids: Sequence[str] | None,
                    last_seen_ms: int, expiry_ms: int) -> int:
        """Set last seen and expiry of that cluster controller's rows (of these participants,
        or all of them), in every GBID; how many rows."""
        ...

    async def remove_stale(self, cluster_controller_id: str, max_last_seen_ms: int) -> int:
        """Delete that cluster controller's rows last seen before ``max_last_seen_ms``."""
        ...

    async def purge_expired(self, now_ms: int) -> int:
        """Delete the rows expired at ``now_ms``; how many."""
        ...

    async def count(self) -> int:
        """How many rows the store keeps (expired ones included)."""
        ...
