"""The GCD's store in PostgreSQL, shared by several GCD instances (asyncpg, a connection pool).

Implements the contract of :mod:`gcd.store`; what it writes and answers is decided by
:mod:`gcd.decisions`, like the SQLite store's. Every method is one transaction, and any failure
of the database - refused or lost connection, timeout, SQL error - raises
:class:`~gcd.store.StoreError` (with its ``reason``) after the transaction has been rolled back
(PostgreSQL discards an unfinished transaction of a lost connection).

Concurrency: several stores (processes) may work on one database at the same time. Statements
that write several rows lock them in one order, by primary key ``(gbid, participant_id)``, so
they cannot deadlock each other; ``remove`` locks the participant's rows (``SELECT ... FOR
UPDATE``) before it decides, so concurrent removes behave as if one ran after the other. A
transaction that PostgreSQL aborts anyway (deadlock, serialization failure) runs again, at most
twice more. Concurrent adds and touches of one store are committed in groups, each group one
statement (a function of the session) at one version (see :class:`PostgresStore`).

Schema: GCD instances start, restart and upgrade while the others write, so ``open()`` must
neither stall the writers nor deadlock with them. Writers lock the meta row first (the next
version), then tombstones, then entries; DDL such as ``CREATE INDEX IF NOT EXISTS`` locks a
table against writers even when there is nothing to do, and it cannot be ordered the way the
writers go. So ``open()`` first checks the schema with plain reads (the tables, the version
columns, every index of :data:`gcd.store.INDEXES` by name and valid, the meta row) and, when it
is current - every start but the first and an upgrade's - returns without DDL or a table lock.
Otherwise it changes it on a connection of its own holding a session-level advisory lock (tried
every 50 ms, at most 60 s, never waited for in a statement), and checks again under it: another
instance may have done it meanwhile. A new database, missing tables, a missing meta row and the
migration of a database of the previous version take one transaction that first locks the
existing tables in the writers' order (meta, tombstones, entries; EXCLUSIVE, ACCESS EXCLUSIVE
for the entries it migrates), each waited for at most 500 ms (writers queue behind a waiting
request: a lock not granted by then rolls it back, and it tries again, at most 10 times); it
builds the indexes of the tables it creates or migrates. A missing index of an existing table
is built with ``CREATE INDEX CONCURRENTLY`` (outside a transaction: writers go on; it waits for
the transactions running, at most 300 s); an invalid one of the name (what a failed concurrent
build leaves) is dropped concurrently first. Instances starting meanwhile wait for it, then
write; a failed change is rolled back (a failed index build is redone by the next start) and
fails ``open()`` with StoreError.

Availability: connecting and every statement are bounded (``connect_timeout``,
``command_timeout``); while the server is down each operation fails quickly with StoreError,
and once it is back the pool reconnects by itself - the store need not be reopened.

Text is compared and ordered byte-wise (``COLLATE "C"``, i.e. by code point, like SQLite),
whatever the database's default collation.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import re
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import asyncpg

from pyjoynr.gcd.changes import (
    PROFILE_COLUMNS,
    ROW_LISTS,
    Change,
    ChangeBatch,
    ColumnBatch,
    Digest,
    LoadBatch,
    PlainWrites,
    RepairRows,
    TooFarBehind,
)
from pyjoynr.gcd.decisions import decide_remove, distinct, rows_to_add
from pyjoynr.gcd.feed import (
    MIGRATION_BATCH,
    buckets_of,
    changes_batch,
    deletion_changes,
    entry_changes,
    hashes_of,
    sort_changes,
)
from pyjoynr.gcd.group_commit import GroupCommitter
from pyjoynr.gcd.store import (
    COLUMNS,
    DIGESTS,
    ENTRIES_TABLE,
    EXPIRED,
    FEED_TABLES,
    INDEXES,
    LIVE,
    META,
    NEXT_VERSION,
    STALE,
    VERSION_COLUMNS,
    RemoveOutcome,
    StoredEntry,
    StoreError,
    StoreErrorReason,
    new_entry,
)
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.logs import get_logger

__all__ = ["PostgresNotifier", "PostgresStore", "channel_of"]

log = get_logger(__name__)

T = TypeVar("T")

#: errors of the database or of the way to it; all become StoreError
_DB_ERRORS: tuple[type[BaseException], ...] = (
    asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.InternalClientError,
    OSError, ConnectionError, TimeoutError,
)
#: PostgreSQL aborted the transaction and nothing of it is written: run it again
_RETRY_ERRORS: tuple[type[BaseException], ...] = (
    asyncpg.SerializationError, asyncpg.DeadlockDetectedError,
)
_MAX_RETRIES = 2
#: held (session-level) by the instance that changes the schema, so that GCD instances
#: starting together do not collide (concurrent CREATE TABLE IF NOT EXISTS can fail on the
#: catalog's unique index). Tried every _SCHEMA_POLL_S, never waited for in a statement: a
#: session blocked in pg_advisory_lock holds a snapshot that the holder's concurrent index
#: build waits for
_SCHEMA_LOCK_KEY = 0x6A6F796E72474344  # "joynrGCD"
#: how long a starting instance waits for another one to finish changing the schema
_SCHEMA_WAIT_S = 60.0
_SCHEMA_POLL_S = 0.05
#: the store's tables in the order every writer locks them: the meta row first (the next
#: version), then the tombstones, then the entries
_TABLES = ("discovery_meta", "discovery_tombstones", "discovery_entries")
#: how long a schema change waits for a table lock (writers queue behind a waiting request);
#: then it rolls back and tries again, at most _SCHEMA_ATTEMPTS times in all
_SCHEMA_LOCK_TIMEOUT_MS = 500
_SCHEMA_ATTEMPTS = 10
#: a concurrent index build (the writers go on meanwhile) may take this long
_INDEX_BUILD_TIMEOUT_S = 300.0
#: held (transaction-level, tried without waiting) by the instance that purges expired rows
_PURGE_LOCK_KEY = 0x6A6F796E72475047  # "joynrGPG"

_PG_TYPES = {
    "major_version": "integer", "minor_version": "integer", "priority": "bigint",
    "supports_on_change": "boolean", "last_seen_ms": "bigint", "expiry_ms": "bigint",
    "bucket": "integer", "row_hash": "bigint",
}
#: the order in which multi-row statements lock rows (the primary key), everywhere the same
_LOCK_ORDER = 'gbid COLLATE "C", participant_id COLLATE "C"'

_SELECT = f"SELECT {', '.join(COLUMNS)} FROM discovery_entries"
#: a row and its version
_SELECT_VERSIONED = f"SELECT {', '.join(COLUMNS)}, version FROM discovery_entries"
#: what a load reads: ColumnBatch records (a profile, then its rows' lists: every
#: aggregate of a group takes its rows in one order, so the n-th of each list is one row's)
_SELECT_COLUMNS = (
    f"SELECT {', '.join(PROFILE_COLUMNS)}, "
    + ", ".join(f"array_agg({c})" for c in ROW_LISTS)
    + f" FROM discovery_entries GROUP BY {', '.join(PROFILE_COLUMNS)}")
_WRITTEN = (*COLUMNS, "bucket", "row_hash")
_UPSERT = (
    f"INSERT INTO discovery_entries ({', '.join(_WRITTEN)}, version) "
    f"SELECT *, ${len(_WRITTEN) + 1}::bigint FROM unnest("
    + ", ".join(f"${i}::{_PG_TYPES.get(c, 'text')}[]" for i, c in enumerate(_WRITTEN, 1))
    + ") ON CONFLICT (gbid, participant_id) DO UPDATE SET "
    + ", ".join(f"{c} = EXCLUDED.{c}" for c in (*_WRITTEN, "version")
                if c not in ("gbid", "participant_id"))
)
_MIGRATE_ROWS = ("UPDATE discovery_entries d SET version = $1, bucket = k.b, row_hash = k.h "
                 "FROM unnest($2::text[], $3::text[], $4::integer[], $5::bigint[]) "
                 "AS k(g, p, b, h) WHERE d.gbid = k.g AND d.participant_id = k.p")
_FIND = (f"{_SELECT} WHERE interface_name = $1 AND domain = ANY($2::text[]) "
         f"AND {LIVE.format(now='$3')} "
         'ORDER BY participant_id COLLATE "C", gbid COLLATE "C"')
_FIND_PARTICIPANT = (f"{_SELECT} WHERE participant_id = $1 AND {LIVE.format(now='$2')} "
                     'ORDER BY gbid COLLATE "C"')
_LOCK_PARTICIPANT = ("SELECT gbid FROM discovery_entries WHERE participant_id = $1 "
                     f"AND {LIVE.format(now='$2')} ORDER BY {_LOCK_ORDER} FOR UPDATE")
#: the next version, and the notification of it (delivered at commit; a transaction that
#: changed nothing is rolled back, and its notification with it)
_NEXT_VERSION_NOTIFY = (f"WITH next AS ({NEXT_VERSION}) "
                        "SELECT version, pg_notify($1, version::text)::text FROM next")
#: the same for an add, which also deletes the tombstones of the keys it (re-)adds: one round
#: trip less. The tombstones are compared with the new version so that they are locked only
#: after the meta row (the subquery runs first): every writer locks the meta row first
_NEXT_VERSION_NOTIFY_UNBURY = (
    f"WITH next AS ({NEXT_VERSION}), "
    "unburied AS (DELETE FROM discovery_tombstones t "
    "USING unnest($2::text[], $3::text[]) AS k(g, p) "
    "WHERE t.gbid = k.g AND t.participant_id = k.p AND t.version < (SELECT version FROM next)) "
    "SELECT version, pg_notify($1, version::text)::text FROM next")
#: the purge of expired rows runs on one instance of the cluster at a time
_PURGE_LOCK = "SELECT pg_try_advisory_xact_lock($1)"


@dataclass(frozen=True, slots=True)
class _Index:
    """An index of :data:`gcd.store.INDEXES`: its name, its table, its statement."""

    name: str
    table: str
    create: str

    @property
    def create_concurrently(self) -> str:
        return self.create.replace("CREATE INDEX ", "CREATE INDEX CONCURRENTLY ", 1)


def _index(statement: str) -> _Index:
    match = re.fullmatch(r"CREATE INDEX IF NOT EXISTS (\w+) ON (\w+) \(.*\)", statement)
    if match is None:
        raise ValueError(f"not an index statement of the store's form: {statement!r}")
    return _Index(match[1], match[2], statement)


_INDEXES = tuple(_index(statement) for statement in INDEXES)
#: the tables and indexes of the store in the session's current schema (plain catalog reads:
#: they lock no table): name, kind, whether an index is valid, its table, and how many of the
#: version columns a table has NOT NULL
_CATALOG = (
    "SELECT c.relname, c.relkind::text, x.indisvalid AND x.indisready, t.relname, "
    "(SELECT count(*) FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 "
    "AND NOT a.attisdropped AND a.attnotnull AND a.attname = ANY($2::text[])) "
    "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "LEFT JOIN pg_index x ON x.indexrelid = c.oid LEFT JOIN pg_class t ON t.oid = x.indrelid "
    "WHERE n.nspname = current_schema() AND c.relname = ANY($1::text[])")
_META_ROW = "SELECT EXISTS (SELECT FROM discovery_meta WHERE id = 1)"


@dataclass(frozen=True, slots=True)
class _Schema:
    """What the catalogs say of the store's schema."""

    tables: frozenset[str]
    #: discovery_entries has every version column, NOT NULL (it is not of the previous version)
    versioned: bool
    meta_row: bool
    #: the indexes of INDEXES there and valid, on their table
    valid: frozenset[str]
    #: relations of an index's name that are no valid index of its table (e.g. what a failed
    #: CREATE INDEX CONCURRENTLY leaves behind)
    invalid: frozenset[str]

    @property
    def tables_current(self) -> bool:
        return self.tables == frozenset(_TABLES) and self.versioned and self.meta_row

    @property
    def current(self) -> bool:
        return self.tables_current and all(i.name in self.valid for i in _INDEXES)


async def _read_schema(conn: asyncpg.Connection) -> _Schema:
    """The schema as the catalogs and the meta table tell: no DDL, and no lock but the meta
    table's ACCESS SHARE, which conflicts with no lock a store takes (not even a writer's or a
    schema change's)."""
    tables: set[str] = set()
    valid: set[str] = set()
    invalid: set[str] = set()
    versioned = False
    table_of = {i.name: i.table for i in _INDEXES}
    for name, kind, index_valid, on_table, not_null in await conn.fetch(
            _CATALOG, [*_TABLES, *table_of], list(VERSION_COLUMNS)):
        if name in _TABLES:
            if kind == "r":
                tables.add(name)
                if name == "discovery_entries":
                    versioned = not_null == len(VERSION_COLUMNS)
        elif kind == "i" and index_valid and on_table == table_of[name]:
            valid.add(name)
        else:
            invalid.add(name)
    meta_row = "discovery_meta" in tables and bool(await conn.fetchval(_META_ROW))
    return _Schema(frozenset(tables), versioned, meta_row, frozenset(valid), frozenset(invalid))


def _lock_keys(where: str) -> str:
    """The keys of the rows matching ``where``, locked in key order."""
    return (f"SELECT gbid, participant_id FROM discovery_entries WHERE {where} "
            f"ORDER BY {_LOCK_ORDER} FOR UPDATE")


def _delete_to_tombstones(where: str, version: str, deleted_ms: str) -> str:
    """Delete the rows matching ``where`` (locked in key order first) and leave a tombstone of
    each at ``version``; returns the deleted keys."""
    return (f"WITH locked AS ({_lock_keys(where)}), "
            "deleted AS (DELETE FROM discovery_entries d USING locked "
            "WHERE d.gbid = locked.gbid AND d.participant_id = locked.participant_id "
            "RETURNING d.gbid, d.participant_id, d.bucket) "
            "INSERT INTO discovery_tombstones (gbid, participant_id, version, bucket, deleted_ms) "
            f"SELECT gbid, participant_id, {version}, bucket, {deleted_ms} FROM deleted "
            "ON CONFLICT (gbid, participant_id) DO UPDATE SET version = EXCLUDED.version, "
            "bucket = EXCLUDED.bucket, deleted_ms = EXCLUDED.deleted_ms "
            "RETURNING gbid, participant_id")


_REMOVE_GBIDS = _delete_to_tombstones("participant_id = $1 AND gbid = ANY($2::text[])",
                                      "$3::bigint", "$4::bigint")
_REMOVE_IN = _delete_to_tombstones("gbid = $2 AND participant_id = ANY($1::text[])",
                                   "$3::bigint", "$4::bigint")
_REMOVE_STALE = _delete_to_tombstones(STALE.format(cc="$1", before="$2"),
                                      "$3::bigint", "$4::bigint")
_PURGE_EXPIRED = _delete_to_tombstones(EXPIRED.format(now="$1"), "$2::bigint", "$3::bigint")
#: whether remove_stale has anything to delete: a plain read, no lock
_ANY_STALE = ("SELECT EXISTS (SELECT FROM discovery_entries WHERE "
              f"{STALE.format(cc='$1', before='$2')})")


def _next_version_locking(where: str) -> str:
    """The next version (and its notification, channel $1) and the keys of the rows matching
    ``where``, locked in key order after the meta row, in one statement: (version, gbid,
    participant_id) rows; one row with NULL keys when nothing matches."""
    return (f"WITH next AS ({NEXT_VERSION}), locked AS ("
            f"{_lock_keys(f'{where} AND (SELECT version FROM next) > 0')}) "
            "SELECT next.version, pg_notify($1, next.version::text)::text, locked.gbid, "
            "locked.participant_id FROM next LEFT JOIN locked ON true")


#: the version and the rows a touch changes (the hashes of their new version: Python's)
_VERSION_LOCK_TOUCH_ALL = _next_version_locking("cluster_controller_id = $2")
_VERSION_LOCK_TOUCH_SOME = _next_version_locking(
    "cluster_controller_id = $2 AND participant_id = ANY($3::text[])")
#: the touched rows (locked before), each with its new row hash
_TOUCH = ("UPDATE discovery_entries d SET last_seen_ms = $1, expiry_ms = $2, version = $3, "
          "row_hash = k.h FROM unnest($4::text[], $5::text[], $6::bigint[]) AS k(g, p, h) "
          "WHERE d.gbid = k.g AND d.participant_id = k.p RETURNING "
          + ", ".join(f"d.{c}" for c in COLUMNS))
#: a group of touches (see group_commit), each of another cluster controller: the version and
#: the rows of the cluster controllers $2 (all their rows) and of the pairs ($3 cluster
#: controller, $4 participant), locked in key order after the meta row, in one statement:
#: (version, gbid, participant_id, cluster_controller_id) rows; one row with NULL keys when
#: nothing matches
_VERSION_LOCK_TOUCH_GROUP = (
    f"WITH next AS ({NEXT_VERSION}), locked AS ("
    "SELECT d.gbid, d.participant_id, d.cluster_controller_id FROM discovery_entries d "
    "WHERE (d.cluster_controller_id = ANY($2::text[]) OR (d.participant_id = ANY($4::text[]) "
    "AND (d.cluster_controller_id, d.participant_id) IN "
    "(SELECT c, p FROM unnest($3::text[], $4::text[]) AS k(c, p)))) "
    f"AND (SELECT version FROM next) > 0 ORDER BY {_LOCK_ORDER} FOR UPDATE OF d) "
    "SELECT next.version, pg_notify($1, next.version::text)::text, locked.gbid, "
    "locked.participant_id, locked.cluster_controller_id FROM next LEFT JOIN locked ON true")
#: the rows of a group of touches (locked before), each with its touch's values and its new
#: row hash
_TOUCH_GROUP = (
    "UPDATE discovery_entries d SET last_seen_ms = k.l, expiry_ms = k.e, version = $1, "
    "row_hash = k.h FROM unnest($2::text[], $3::text[], $4::bigint[], $5::bigint[], "
    "$6::bigint[]) AS k(g, p, h, l, e) WHERE d.gbid = k.g AND d.participant_id = k.p "
    "RETURNING " + ", ".join(f"d.{c}" for c in COLUMNS))


# -- the writes in one round trip ----------------------------------------------------------------
#
# An add or a touch (or a group of them) is one call of a function of the session (created in
# its temporary schema when the session first needs it: no DDL in the database's schema, and
# nothing left behind when the session ends): one statement, committed on its own, that does
# what the transaction of the individual write does, statement after statement (each with a
# fresh snapshot, as in that transaction), so that the meta row stays locked only while the
# server works, never for a round trip to the client. The one thing the client cannot give
# then is the row hash of the new version: a row hash is the key's hash at version 0 XOR a
# function of the version only (CRC-32 is affine), and that function is XOR-linear in the
# version's bytes: the XOR of one table entry per byte (:func:`_version_hash_tables`).


def _version_hash_tables() -> list[list[int]]:
    """``row_hash(key, v) == row_hash(key, 0) ^ h(v)``, where ``h(v)`` is the XOR of
    ``tables[j][byte_j]`` over the 8 bytes of ``v`` (big-endian: j = 0 the highest)."""
    zero = zlib.crc32(bytes(8))
    return [[zlib.crc32(bytes(b if i == j else 0 for i in range(8))) ^ zero
             for b in range(256)] for j in range(8)]


_FN = "pg_temp.joynr_gcd_v1"
#: how the functions' statements are planned: once per session (a generic plan: planning
#: every call costs more than the work), and by index, driven by the arguments' arrays,
#: whatever the statistics say (a plan made before the table's first ANALYZE would scan it)
_PLANS = "SET plan_cache_mode = force_generic_plan SET enable_seqscan = off"
#: the keys (g, p) and cluster controller (c) of the rows a group of touches changes: every
#: row of the cluster controllers $2, and the rows of the pairs ($3 cluster controller, $4
#: participant)
_TOUCHED = (
    "SELECT e.gbid AS g, e.participant_id AS p, e.cluster_controller_id AS c "
    "FROM unnest($2) AS a(c) JOIN discovery_entries e ON e.cluster_controller_id = a.c "
    "UNION ALL SELECT e.gbid, e.participant_id, e.cluster_controller_id "
    "FROM unnest($3, $4) AS s(c, p) JOIN discovery_entries e ON e.participant_id = s.p "
    "AND e.cluster_controller_id = s.c")
_TYPE = {c: _PG_TYPES.get(c, "text") for c in (*COLUMNS, "bucket", "row_hash")}
#: the session's functions (one script, simple protocol)
_FUNCTIONS = (
    # h(v): inlined where it is used, the tables constants of the plan (parsed when a
    # statement using it is planned: once per session, see _PLANS)
    f"CREATE OR REPLACE FUNCTION {_FN}_version_hash(v bigint) RETURNS bigint LANGUAGE sql "
    f"IMMUTABLE PARALLEL SAFE AS $$ SELECT "
    + " # ".join(f"('{{{','.join(map(str, table))}}}'::bigint[])[1 + ((v >> {8 * (7 - j)}) & 255)]"
                 for j, table in enumerate(_version_hash_tables())) + " $$;\n"
    # an add: ($1 channel, then one array per column, the buckets, the hashes at version 0);
    # answers the version
    f"CREATE OR REPLACE FUNCTION {_FN}_add(text, "
    + ", ".join(f"{_TYPE[c]}[]" for c in (*COLUMNS, "bucket", "row_hash"))
    + f") RETURNS bigint LANGUAGE plpgsql {_PLANS} AS $$ DECLARE v bigint; BEGIN "
    f"{NEXT_VERSION} INTO v; PERFORM pg_notify($1, v::text); "
    "DELETE FROM discovery_tombstones t USING unnest($2, $3) AS k(g, p) "
    "WHERE t.gbid = k.g AND t.participant_id = k.p AND t.version < v; "
    # h(v) in the statement (a plan of the session keeps its table as a constant; as an
    # expression of its own it would be evaluated - the table parsed - at every call)
    f"INSERT INTO discovery_entries ({', '.join(_WRITTEN)}, version) SELECT "
    + ", ".join(f"u.c{i}" for i in range(1, len(COLUMNS) + 2))
    + f", u.c{len(COLUMNS) + 2} # {_FN}_version_hash(v), v FROM unnest("
    + ", ".join(f"${i}" for i in range(2, len(COLUMNS) + 4))
    + ") AS u(" + ", ".join(f"c{i}" for i in range(1, len(COLUMNS) + 3)) + ") "
    "ON CONFLICT (gbid, participant_id) DO UPDATE SET "
    + ", ".join(f"{c} = EXCLUDED.{c}" for c in (*_WRITTEN, "version")
                if c not in ("gbid", "participant_id"))
    + "; RETURN v; END $$;\n"
    # touches: ($1 channel, $2 cluster controllers all of whose rows are touched, the pairs
    # ($3 cluster controller, $4 participant) touched, and each cluster controller's ($5)
    # last seen ($6) and expiry ($7)); answers the touched rows at their new version, raises
    # no_data_found when there is none (nothing written, no version spent)
    f"CREATE OR REPLACE FUNCTION {_FN}_touch(text, text[], text[], text[], text[], bigint[], "
    "bigint[]) RETURNS TABLE ("
    + ", ".join(f"c{i} {_TYPE[c]}" for i, c in enumerate(COLUMNS, 1))
    + f", c_version bigint) LANGUAGE plpgsql {_PLANS} AS $$ DECLARE v bigint; BEGIN "
    f"{NEXT_VERSION} INTO v; PERFORM pg_notify($1, v::text); "
    f"PERFORM FROM discovery_entries d JOIN ({_TOUCHED}) x ON d.gbid = x.g "
    "AND d.participant_id = x.p ORDER BY d.gbid COLLATE \"C\", d.participant_id COLLATE \"C\" "
    "FOR UPDATE OF d; "
    "RETURN QUERY WITH u AS (UPDATE discovery_entries d SET last_seen_ms = k.l, "
    f"expiry_ms = k.e, version = v, row_hash = d.row_hash # {_FN}_version_hash(d.version) "
    f"# {_FN}_version_hash(v) FROM ({_TOUCHED}) x JOIN unnest($5, $6, $7) AS k(c, l, e) "
    "ON k.c = x.c WHERE d.gbid = x.g AND d.participant_id = x.p "
    "RETURNING " + ", ".join(f"d.{c}" for c in COLUMNS) + ", d.version) SELECT * FROM u; "
    "IF NOT FOUND THEN RAISE EXCEPTION 'nothing to touch' USING ERRCODE = 'no_data_found'; "
    "END IF; RETURN; END $$;\n")
_CALL_ADD = (f"SELECT {_FN}_add($1, "
             + ", ".join(f"${i}::{_TYPE[c]}[]"
                         for i, c in enumerate((*COLUMNS, "bucket", "row_hash"), 2)) + ")")
_CALL_TOUCH = (f"SELECT * FROM {_FN}_touch($1, $2::text[], $3::text[], $4::text[], $5::text[], "
               "$6::bigint[], $7::bigint[])")

_ORDER_CHANGES = f'ORDER BY version, {_LOCK_ORDER}'
_ROWS_SINCE = f"{_SELECT_VERSIONED} WHERE version > $1 {_ORDER_CHANGES} LIMIT $2"
_TOMBSTONES_SINCE = ("SELECT gbid, participant_id, version FROM discovery_tombstones "
                     f"WHERE version > $1 {_ORDER_CHANGES} LIMIT $2")
_ROWS_AT = f"{_SELECT_VERSIONED} WHERE version = $1"
_TOMBSTONES_AT = ("SELECT gbid, participant_id, version FROM discovery_tombstones "
                  "WHERE version = $1")
_ROWS_IN_BUCKETS = f"{_SELECT_VERSIONED} WHERE bucket = ANY($1::integer[])"
_PURGE_TOMBSTONES = (
    "WITH gone AS (DELETE FROM discovery_tombstones WHERE deleted_ms < $1 RETURNING version) "
    "UPDATE discovery_meta SET purged_version = GREATEST(purged_version, "
    "(SELECT coalesce(max(version), 0) FROM gone)) WHERE id = 1 "
    "RETURNING (SELECT count(*) FROM gone)")

#: a cluster's name: what the notification channel is named after
_CLUSTER_NAME = re.compile(r"[a-z0-9_]{1,40}")


def channel_of(cluster: str) -> str:
    """The notification channel of the GCD cluster ``cluster`` (lower-case letters, digits and
    ``_``, 1 to 40 characters): ``gcd_<cluster>``; ValueError for any other name."""
    if not isinstance(cluster, str) or not _CLUSTER_NAME.fullmatch(cluster):
        raise ValueError(f"a GCD cluster name is 1 to 40 of a-z, 0-9 and _, not {cluster!r}")
    return f"gcd_{cluster}"


class _Unchanged(Exception):
    """Raised inside a write transaction that changed nothing: it is rolled back (no version
    taken, no notification) and the write answers ``result``."""

    def __init__(self, result: object) -> None:
        super().__init__("nothing changed")
        self.result = result


async def _reset(conn: asyncpg.Connection) -> None:
    """Nothing to reset when a connection goes back to the pool: the store keeps no session
    state (no SET, LISTEN, cursors or session advisory locks), and asyncpg itself rolls back a
    transaction left open. Saves the default reset query, a round trip per operation."""


def _rows_affected(status: str) -> int:
    """The row count of a command status such as ``"DELETE 3"`` or ``"UPDATE 0"``."""
    return int(status.rsplit(" ", 1)[-1])


def _entry(record: asyncpg.Record) -> StoredEntry:
    return new_entry(*record)


def _key(entry: StoredEntry) -> tuple[str, str]:
    return entry.key


@dataclass(frozen=True, slots=True)
class _Touch:
    """A touch waiting in the group commit: the rows of ``cluster_controller_id`` (of
    ``targets``, distinct, or all of them when None)."""

    cluster_controller_id: str
    targets: list[str] | None
    last_seen_ms: int
    expiry_ms: int


#: a write in the group commit: an add's rows (rows_to_add) or a touch
_Grouped = list[StoredEntry] | _Touch


def _touch_targets(touches: list[_Touch]) -> tuple[dict[str, int], list[str],
                                                   list[tuple[str, str]]]:
    """For a group of touches (each of another cluster controller): where each cluster
    controller's touch is in ``touches``, the cluster controllers touched whole, and the
    (cluster controller, participant) pairs of the others."""
    of = {t.cluster_controller_id: i for i, t in enumerate(touches)}
    every = [t.cluster_controller_id for t in touches if t.targets is None]
    pairs = [(t.cluster_controller_id, p) for t in touches if t.targets is not None
             for p in t.targets]
    return of, every, pairs


def _rows_by_touch(of: dict[str, int], count: int, entries: Iterable[StoredEntry]
                   ) -> list[list[StoredEntry]]:
    """The touched rows, per touch of the group (``of``: see _touch_targets)."""
    rows: list[list[StoredEntry]] = [[] for _ in range(count)]
    for entry in entries:
        rows[of[entry.cluster_controller_id]].append(entry)
    return rows


class _NoFunctions(Exception):
    """The session may not create its functions: write with transactions instead."""


def _common_failure(exc: BaseException) -> bool:
    """A failure of a group that no write of it caused and that running them again alone
    would only repeat: the store is not open, or the server cannot be reached."""
    return isinstance(exc, StoreError) and exc.reason in ("not-open", "unreachable")


def _original(exc: BaseException) -> BaseException:
    """The first database error of a chain: when the connection is lost in a transaction,
    asyncpg raises "cannot call Transaction.__aexit__(): the underlying connection is closed"
    from the failed ROLLBACK, with the real cause as its context."""
    for _ in range(10):  # a chain, not a cycle
        if not isinstance(exc.__context__, _DB_ERRORS):
            break
        exc = exc.__context__
    return exc


def _reason(exc: BaseException, *, lost: bool = False) -> StoreErrorReason:
    """The StoreError reason of a database error (the first of its chain)."""
    exc = _original(exc)
    if lost:
        return "connection-lost"
    if isinstance(exc, TimeoutError):
        return "timeout"
    if isinstance(exc, _RETRY_ERRORS):
        return "conflict"
    if isinstance(exc, OSError | ConnectionError | asyncpg.CannotConnectNowError):
        return "unreachable"
    if isinstance(exc, asyncpg.ConnectionDoesNotExistError):
        return "connection-lost"
    return "database"


def _describe(exc: BaseException) -> str:
    exc = _original(exc)
    text = str(exc).strip()
    name = type(exc).__name__
    if isinstance(exc, TimeoutError):
        return f"{name} (timed out){': ' + text if text else ''}"
    return f"{name}: {text}" if text else name


class PostgresStore(PlainWrites):
    """The GCD's store in the PostgreSQL database at ``dsn`` (a ``postgresql://`` URL).

    ``open()`` creates the pool (``min_size`` to ``max_size`` connections) and checks the
    schema, creating, migrating or completing it only when it is not current (see the module
    docstring); the sessions are named ``application_name`` (the schema change's with
    ``-schema``, a :meth:`notifier`'s with ``-listen``).
    ``connect_timeout`` bounds establishing a connection, ``command_timeout`` every statement,
    ``acquire_timeout`` waiting for a connection of the pool (busy pool, or connecting) - all in
    seconds.

    Versioned (:class:`gcd.changes.VersionedStore`): every write transaction first takes the
    next version from the meta row (``UPDATE ... RETURNING``: the row stays locked until it
    commits, so writers take versions one after another and versions become visible in
    order) and notifies the channel of ``cluster`` (:func:`channel_of`) with it, delivered at
    commit; a write that changed nothing is rolled back (no version spent, no notification).
    ``clock_ms`` (epoch ms) dates tombstones. A database of the previous version is migrated
    by ``open()``, in one transaction.

    Group commit (:mod:`gcd.group_commit`): adds and touches of this instance that wait at the
    same moment are committed together, in one transaction that takes one version for all of
    them - adds as one upsert of all their rows, touches as one statement - at most
    ``write_groups`` such transactions at a time, at most ``group_rows`` rows in one (a larger
    add goes alone). Writes whose keys (adds) or cluster controllers (touches) meet never go
    into one group: no key changes twice at one version, and every caller gets exactly its own
    changes. When a group's transaction fails, each of its writes runs again alone (adds and
    touches leave the same rows when run twice), so one write's failure - a value the database
    refuses, a row lock waited for too long - never fails or loses another. The other writes
    (removes, purges) each take a transaction of their own.

    One round trip: a group (or a lone add or touch) is one call of a function of the session
    (created in its temporary schema on first use), a statement committed on its own that runs
    the transaction's statements server-side, so the meta row is never held across a round
    trip to this process (with ``session_functions=False``, or when the role may not create
    temporary objects, the same writes take client-side transactions)."""

    def __init__(self, dsn: str, *, min_size: int = 1, max_size: int = 10,
                 connect_timeout: float = 5.0, command_timeout: float = 5.0,
                 acquire_timeout: float = 10.0, cluster: str = "default",
                 clock_ms: Callable[[], int] = now_ms,
                 application_name: str = "joynr-gcd", write_groups: int = 1,
                 group_rows: int = 2_000, session_functions: bool = True) -> None:
        self.channel = channel_of(cluster)
        self.application_name = application_name
        self.cluster = cluster
        self._clock_ms = clock_ms
        self.dsn = dsn
        self.min_size = min_size
        self.max_size = max_size
        self.connect_timeout = connect_timeout
        self.command_timeout = command_timeout
        self.acquire_timeout = acquire_timeout
        self._pool: asyncpg.Pool | None = None
        self._functions = session_functions
        self._groups: GroupCommitter[_Grouped, list[Change]] = GroupCommitter(
            self._run_group, self._run_alone, shared=_common_failure, max_groups=write_groups,
            max_rows=group_rows, name="gcd-write-group")

    def __repr__(self) -> str:
        return f"PostgresStore({self._where()!r})"

    def _where(self) -> str:
        """The DSN without a password, for messages."""
        try:
            parts = urlsplit(self.dsn)
            host = parts.hostname or ""
            port = f":{parts.port}" if parts.port else ""
            return f"{parts.scheme}://{host}{port}{parts.path}"
        except ValueError:
            return "(unparsable DSN)"

    # -- life cycle ----------------------------------------------------------------------------

    async def open(self) -> None:
        if self._pool is not None:
            return
        try:
            pool = await asyncpg.create_pool(
                self.dsn, min_size=self.min_size, max_size=self.max_size,
                timeout=self.connect_timeout, command_timeout=self.command_timeout,
                server_settings={"application_name": self.application_name},
                reset=_reset)
        except _DB_ERRORS as exc:
            raise StoreError(f"PostgreSQL ({self._where()}): cannot connect: "
                             f"{_describe(exc)}",
                             reason="timeout" if isinstance(exc, TimeoutError)
                             else "unreachable") from exc
        self._pool = pool
        try:
            await self._ensure_schema()
        except BaseException:
            self._pool = None
            await self._close_pool(pool)
            raise

    async def _ensure_schema(self) -> None:
        """Check the schema with plain reads; change it only when it is not current (see the
        module docstring, "Schema")."""
        schema = await self._transaction("check the schema", _read_schema)
        if not schema.current:
            await self._change_schema()

    async def _change_schema(self) -> None:
        """Create, migrate or complete the schema, on a connection of its own that holds the
        schema lock (session-level: the indexes are built outside a transaction); checked
        again under the lock, as another instance may have done it meanwhile."""
        what = "create the schema"
        try:
            conn = await asyncpg.connect(
                self.dsn, timeout=self.connect_timeout, command_timeout=self.command_timeout,
                server_settings={"application_name": f"{self.application_name}-schema"})
        except _DB_ERRORS as exc:
            raise self._error(what, exc, 1) from exc
        failures = tries = 0
        try:
            await self._take_schema_lock(conn)
            for _ in range(_SCHEMA_ATTEMPTS + 3):  # each round changes something, or failed
                schema = await _read_schema(conn)
                if schema.current:
                    return
                tries += 1
                try:
                    if schema.tables_current:
                        await self._build_indexes(conn, schema)
                    else:
                        await self._change_tables(conn, schema)
                except (asyncpg.LockNotAvailableError, *_RETRY_ERRORS) as exc:
                    failures += 1
                    if failures >= _SCHEMA_ATTEMPTS:
                        raise
                    log.info("%s: changing the schema gave way (%s); trying again", self,
                             _describe(exc))
                    await asyncio.sleep(random.uniform(0.05, 0.2) * failures)
            raise StoreError(f"PostgreSQL ({self._where()}): {what} failed: still not "
                             f"current after {_SCHEMA_ATTEMPTS + 3} changes")
        except _DB_ERRORS as exc:
            raise self._error(what, exc, max(tries, 1), lost=conn.is_closed()) from exc
        finally:  # ends the session: releases the schema lock
            try:
                await asyncio.wait_for(conn.close(), self.command_timeout)
            except _DB_ERRORS:
                conn.terminate()
            except BaseException:
                conn.terminate()
                raise

    async def _take_schema_lock(self, conn: asyncpg.Connection) -> None:
        """The schema lock, tried every _SCHEMA_POLL_S for at most _SCHEMA_WAIT_S."""
        deadline = time.monotonic() + _SCHEMA_WAIT_S
        for attempt in range(int(_SCHEMA_WAIT_S / _SCHEMA_POLL_S) + 1):
            if await conn.fetchval("SELECT pg_try_advisory_lock($1)", _SCHEMA_LOCK_KEY):
                return
            if attempt == 0:
                log.info("%s: waiting for another instance to change the schema", self)
            if time.monotonic() >= deadline:
                break
            await asyncio.sleep(_SCHEMA_POLL_S)
        raise StoreError(f"PostgreSQL ({self._where()}): create the schema failed: another "
                         f"instance has been changing it for {_SCHEMA_WAIT_S:.0f} s",
                         reason="timeout")

    async def _change_tables(self, conn: asyncpg.Connection, schema: _Schema) -> None:
        """Tables, the meta row and the migration of a previous version, in one transaction
        that first locks the existing tables in the writers' order (EXCLUSIVE: no writer
        holds one of them then, readers may go on; ACCESS EXCLUSIVE for the entries it
        migrates), each waited for at most _SCHEMA_LOCK_TIMEOUT_MS. The indexes of the tables
        it creates or migrates (no other transaction can use them yet) are built in it too."""
        migrate = "discovery_entries" in schema.tables and not schema.versioned
        async with conn.transaction():
            await conn.execute(f"SET LOCAL lock_timeout = {_SCHEMA_LOCK_TIMEOUT_MS}")
            for table in _TABLES:
                if table in schema.tables:
                    mode = ("ACCESS EXCLUSIVE" if migrate and table == "discovery_entries"
                            else "EXCLUSIVE")
                    await conn.execute(f"LOCK TABLE {table} IN {mode} MODE")
            for statement in (ENTRIES_TABLE, *FEED_TABLES):
                await conn.execute(statement)
            await self._migrate(conn)
            built = {t for t in _TABLES if t not in schema.tables or
                     (migrate and t == "discovery_entries")}
            for index in _INDEXES:
                if index.table in built and index.name not in schema.invalid:
                    await conn.execute(index.create)
        if not schema.tables:
            log.info("%s: created the schema", self)

    async def _build_indexes(self, conn: asyncpg.Connection, schema: _Schema) -> None:
        """The missing indexes of existing tables, each built concurrently (outside a
        transaction: the writers go on); an invalid one (a failed concurrent build leaves
        one) is dropped concurrently first."""
        for index in _INDEXES:
            if index.name in schema.valid:
                continue
            if index.name in schema.invalid:
                log.warning("%s: index %s is not valid (a failed build?); building it again",
                            self, index.name)
                await conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {index.name}",
                                   timeout=_INDEX_BUILD_TIMEOUT_S)
            log.info("%s: building the missing index %s concurrently", self, index.name)
            await conn.execute(index.create_concurrently, timeout=_INDEX_BUILD_TIMEOUT_S)

    async def _migrate(self, conn: asyncpg.Connection) -> None:
        """A discovery_entries of the previous version (without the version columns): add
        them and fill them for every row (all rows get one new version), in the transaction
        that creates the schema. Nothing to do on a table of this version."""
        present = {r[0] for r in await conn.fetch(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = 'discovery_entries'")}
        if all(c in present for c in VERSION_COLUMNS):
            return
        await conn.execute("ALTER TABLE discovery_entries ADD COLUMN IF NOT EXISTS version BIGINT, "
                           "ADD COLUMN IF NOT EXISTS bucket INTEGER, "
                           "ADD COLUMN IF NOT EXISTS row_hash BIGINT")
        version = int(await conn.fetchval(NEXT_VERSION))
        # a cursor of its own, closed before the ALTER below (a portal would keep it in use)
        await conn.execute("DECLARE discovery_migration NO SCROLL CURSOR FOR "
                           "SELECT gbid, participant_id FROM discovery_entries")
        migrated = 0
        while records := await conn.fetch(
                f"FETCH FORWARD {MIGRATION_BATCH} FROM discovery_migration"):
            keys = [(r[0], r[1]) for r in records]
            await conn.execute(_MIGRATE_ROWS, version, [k[0] for k in keys],
                               [k[1] for k in keys], buckets_of(keys), hashes_of(keys, version))
            migrated += len(keys)
        await conn.execute("CLOSE discovery_migration")
        await conn.execute("ALTER TABLE discovery_entries ALTER COLUMN version SET NOT NULL, "
                           "ALTER COLUMN bucket SET NOT NULL, "
                           "ALTER COLUMN row_hash SET NOT NULL")
        log.info("%s: migrated a database of the previous version: %d rows now at version %d, "
                 "tombstone and meta tables created", self, migrated, version)

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await self._close_pool(pool)

    async def _close_pool(self, pool: asyncpg.Pool) -> None:
        try:
            await asyncio.wait_for(pool.close(), self.command_timeout)
        except _DB_ERRORS as exc:
            # a dead server or a stuck connection: do not wait for it
            log.debug("closing the pool of %s failed (%s); terminating it", self, exc)
            pool.terminate()
        except BaseException:
            pool.terminate()
            raise

    # -- transactions --------------------------------------------------------------------------

    async def _transaction(self, what: str, fn: Callable[[asyncpg.Connection], Awaitable[T]],
                           *, snapshot: bool = False, idempotent: bool = False) -> T:
        """``fn`` in one transaction on a connection of the pool; failures as StoreError.

        Runs ``fn`` again when PostgreSQL aborted the transaction for a deadlock or a
        serialization failure, and once more when the connection failed before the
        transaction began (a pooled connection the server closed, e.g. by a restart): in
        both cases nothing of it was written. ``snapshot``: a read-only REPEATABLE READ
        transaction (every statement of ``fn`` sees one snapshot). ``idempotent``: ``fn`` is
        one statement, its own transaction (no BEGIN, no COMMIT: one round trip), that leaves
        the same rows when it runs twice; run again once when the connection was lost."""
        attempt = 0
        while True:
            pool = self._pool
            if pool is None:
                raise StoreError(f"the PostgreSQL store ({self._where()}) is not open",
                                 reason="not-open")
            attempt += 1
            begun = False
            lost = False
            try:
                conn = await pool.acquire(timeout=self.acquire_timeout)
                try:
                    if idempotent:
                        begun = True
                        return await fn(conn)
                    transaction = (conn.transaction(isolation="repeatable_read", readonly=True)
                                   if snapshot else conn.transaction())
                    async with transaction:
                        begun = True
                        result = await fn(conn)
                    return result  # committed: whatever happens to the connection now
                except _DB_ERRORS:
                    lost = conn.is_closed()
                    raise
                finally:
                    await self._release(pool, conn)
            except _RETRY_ERRORS as exc:
                if attempt > _MAX_RETRIES:
                    raise self._error(what, exc, attempt) from exc
                log.debug("%s: %s; running it again", what, _describe(exc))
                await asyncio.sleep(random.uniform(0.005, 0.03) * attempt)
            except _DB_ERRORS as exc:
                # before BEGIN nothing was sent: a stale pooled connection is worth one retry
                # (a refused connection or a timeout are not: fail fast)
                stale = ((not begun or (idempotent and lost))
                         and not isinstance(exc, TimeoutError | ConnectionRefusedError))
                if stale and attempt == 1:
                    log.debug("%s: %s before the transaction began; retrying", what,
                              _describe(exc))
                    continue
                raise self._error(what, exc, attempt, lost=lost) from exc

    @staticmethod
    async def _release(pool: asyncpg.Pool, conn: asyncpg.Connection) -> None:
        """Give the connection back; if that fails, the pool has dropped it (and will make a
        new one): that is no failure of the operation, which has ended already."""
        try:
            await pool.release(conn)
        except _DB_ERRORS as exc:
            log.debug("releasing a connection failed (%s); the pool replaces it",
                      _describe(exc))

    def _error(self, what: str, exc: BaseException, attempts: int, *, lost: bool = False
               ) -> StoreError:
        tries = f" (after {attempts} attempts)" if attempts > 1 else ""
        why = "the connection to the server was lost: " if lost else ""
        return StoreError(f"PostgreSQL ({self._where()}): {what} failed{tries}: {why}"
                          f"{_describe(exc)}", reason=_reason(exc, lost=lost))

    # -- the GcdStore protocol -----------------------------------------------------------------

    async def add(self, entries: Sequence[StoredEntry]) -> None:
        await self.add_changes(entries)

    async def find(self, domains: Sequence[str], interface_name: str, now_ms: int
                   ) -> list[StoredEntry]:
        asked = list(distinct(domains))
        if not asked:
            return []

        async def run(conn: asyncpg.Connection) -> list[StoredEntry]:
            return [_entry(r) for r in await conn.fetch(_FIND, interface_name, asked, now_ms)]

        return await self._transaction("find", run)

    async def find_participant(self, participant_id: str, now_ms: int) -> list[StoredEntry]:
        async def run(conn: asyncpg.Connection) -> list[StoredEntry]:
            return [_entry(r) for r in await conn.fetch(_FIND_PARTICIPANT, participant_id,
                                                        now_ms)]

        return await self._transaction("find_participant", run)

    async def count(self) -> int:
        async def run(conn: asyncpg.Connection) -> int:
            return int(await conn.fetchval("SELECT count(*) FROM discovery_entries"))

        return await self._transaction("count", run)

    # -- the VersionedStore protocol: writes ---------------------------------------------------

    async def _write(self, what: str,
                     body: Callable[[asyncpg.Connection, int], Awaitable[tuple[T, list[Change]]]],
                     *, purge_lock: bool = False, unbury: Sequence[tuple[str, str]] = ()
                     ) -> tuple[T, list[Change]]:
        """``body(conn, version)`` in one transaction that takes the next version first (and
        notifies the cluster of it); rolled back when ``body`` changed nothing, so that no
        version is spent and nobody is notified. With ``purge_lock``, the transaction first
        takes the cluster's purge lock, or, when another instance holds it, ends at once
        answering (None, []). The tombstones of the keys ``unbury`` are deleted with the
        version taken (a (re-)added key has none)."""

        async def run(conn: asyncpg.Connection) -> tuple[T, list[Change]]:
            if purge_lock and not await conn.fetchval(_PURGE_LOCK, _PURGE_LOCK_KEY):
                raise _Unchanged((None, []))
            if unbury:
                version = int(await conn.fetchval(
                    _NEXT_VERSION_NOTIFY_UNBURY, self.channel, [k[0] for k in unbury],
                    [k[1] for k in unbury]))
            else:
                version = int(await conn.fetchval(_NEXT_VERSION_NOTIFY, self.channel))
            result, changes = await body(conn, version)
            if not changes:
                raise _Unchanged((result, changes))
            return result, changes

        try:
            return await self._transaction(what, run)
        except _Unchanged as unchanged:
            return unchanged.result  # type: ignore[return-value]

    async def add_changes(self, entries: Sequence[StoredEntry]) -> list[Change]:
        # one row per key (INSERT ... ON CONFLICT cannot change a row twice in one statement),
        # in key order: the lock order of every statement
        rows = rows_to_add(entries)
        if not rows:
            await self._transaction("add", self._nothing)
            return []
        return await self._groups.submit("add", frozenset(e.key for e in rows), len(rows),
                                         rows)

    async def _add_rows(self, what: str, rows: list[StoredEntry]) -> list[Change]:
        """Upsert ``rows`` (one per key, in key order) at one new version."""
        # one array per column (not dataclasses.astuple: it deep-copies, 25 us a row)
        columns: list[list[Any]] = [[getattr(e, name) for e in rows] for name in COLUMNS]
        keys = [e.key for e in rows]
        buckets = buckets_of(keys)

        async def run(conn: asyncpg.Connection, version: int) -> tuple[None, list[Change]]:
            await conn.execute(_UPSERT, *columns, buckets, hashes_of(keys, version), version)
            return None, entry_changes(version, rows)

        return (await self._write(what, run, unbury=keys))[1]

    async def _run_alone(self, kind: str, write: _Grouped) -> list[Change]:
        """A write of the group commit in a transaction of its own."""
        if self._functions:
            with contextlib.suppress(_NoFunctions):
                return (await self._call_group(kind, [write]))[0]
        if isinstance(write, _Touch):
            return await self._touch(write)
        return await self._add_rows(f"add of {len(write)} rows", write)

    async def _run_group(self, kind: str, writes: list[_Grouped]) -> list[list[Change]]:
        """Writes of one kind, whose keys (adds) or cluster controllers (touches) are
        disjoint, in one transaction at one version; each write's changes, in order."""
        if self._functions:
            with contextlib.suppress(_NoFunctions):
                return await self._call_group(kind, writes)
        if kind == "touch":
            return await self._touch_group([w for w in writes if isinstance(w, _Touch)])
        adds = [w for w in writes if not isinstance(w, _Touch)]
        # the keys are disjoint: all rows in key order (the lock order) in one upsert
        rows = sorted((e for add in adds for e in add), key=_key)
        changes = await self._add_rows(f"add of {len(rows)} rows (a group of {len(adds)} adds)",
                                       rows)
        version = changes[0].version
        return [entry_changes(version, add) for add in adds]

    async def _call_group(self, kind: str, writes: list[_Grouped]) -> list[list[Change]]:
        """Writes of one kind, disjoint as in a group, in one call of the session's function
        (one round trip, one version); each write's changes, in order. _NoFunctions when the
        session cannot have them."""
        if kind == "touch":
            touches = [w for w in writes if isinstance(w, _Touch)]
            of, every, pairs = _touch_targets(touches)
            args = (self.channel, every, [p[0] for p in pairs], [p[1] for p in pairs],
                    [t.cluster_controller_id for t in touches],
                    [t.last_seen_ms for t in touches], [t.expiry_ms for t in touches])
            what = "touch" if len(touches) == 1 else f"touch (a group of {len(touches)})"
            records = await self._transaction(
                what, lambda conn: self._call(conn, _CALL_TOUCH, args), idempotent=True)
            rows = _rows_by_touch(of, len(touches), (_entry(r[:-1]) for r in records))
            return [entry_changes(int(records[0][-1]), r) if r else [] for r in rows]
        adds = [w for w in writes if not isinstance(w, _Touch)]
        added = (adds[0] if len(adds) == 1
                 else sorted((e for add in adds for e in add), key=_key))  # keys disjoint
        columns: list[list[Any]] = [[getattr(e, name) for e in added] for name in COLUMNS]
        keys = [e.key for e in added]
        values = (self.channel, *columns, buckets_of(keys), hashes_of(keys, 0))
        what = (f"add of {len(added)} rows" if len(adds) == 1
                else f"add of {len(added)} rows (a group of {len(adds)} adds)")
        records = await self._transaction(
            what, lambda conn: self._call(conn, _CALL_ADD, values), idempotent=True)
        version = int(records[0][0])
        return [entry_changes(version, add) for add in adds]

    async def _call(self, conn: asyncpg.Connection, query: str, args: Sequence[object]
                    ) -> list[asyncpg.Record]:
        """``query`` (a call of a function of the session), the functions created first
        when the session has none yet; [] when the function found nothing to change."""
        for attempt in range(2):
            try:
                return list(await conn.fetch(query, *args))
            except asyncpg.NoDataFoundError:
                return []
            except (asyncpg.UndefinedFunctionError, asyncpg.InvalidSchemaNameError):
                # no function, or not even a temporary schema yet
                if attempt:
                    raise
            try:
                await conn.execute(_FUNCTIONS)
            except asyncpg.InsufficientPrivilegeError as exc:
                # no temporary objects allowed: the writes take the way of transactions
                log.warning("%s: cannot create the session's functions (%s); writing "
                            "without them", self, _describe(exc))
                self._functions = False
                raise _NoFunctions from exc
        raise AssertionError("unreachable")

    @staticmethod
    async def _nothing(conn: asyncpg.Connection) -> None:
        """An empty transaction: the store answers like for any other call (open, reachable)."""

    async def remove_changes(self, participant_id: str, gbids: Sequence[str], now_ms: int
                             ) -> tuple[RemoveOutcome, list[Change]]:
        async def run(conn: asyncpg.Connection, version: int
                      ) -> tuple[RemoveOutcome, list[Change]]:
            # lock the participant's rows: a concurrent remove/touch/add of them waits, so the
            # decision still holds when the rows are deleted
            registered = [r[0] for r in await conn.fetch(_LOCK_PARTICIPANT, participant_id,
                                                         now_ms)]
            decision = decide_remove(registered, gbids)
            if not decision.delete:
                return decision.outcome, []
            deleted = await conn.fetch(_REMOVE_GBIDS, participant_id, list(decision.delete),
                                       version, self._clock_ms())
            return decision.outcome, deletion_changes(version, map(tuple, deleted))

        return await self._write("remove", run)

    async def _delete(self, what: str, statement: str, *args: object) -> list[Change]:
        async def run(conn: asyncpg.Connection, version: int) -> tuple[None, list[Change]]:
            deleted = await conn.fetch(statement, *args, version, self._clock_ms())
            return None, deletion_changes(version, map(tuple, deleted))

        return (await self._write(what, run))[1]

    async def remove_in_changes(self, participant_ids: Sequence[str], gbid: str
                                ) -> list[Change]:
        return await self._delete("remove_in_backends", _REMOVE_IN, list(distinct(participant_ids)),
                                  gbid)

    async def touch_changes(self, cluster_controller_id: str,
                            participant_ids: Sequence[str] | None, last_seen_ms: int,
                            expiry_ms: int) -> list[Change]:
        targets = None if participant_ids is None else list(distinct(participant_ids))
        touch = _Touch(cluster_controller_id, targets, last_seen_ms, expiry_ms)
        if targets == []:
            return await self._touch(touch)
        return await self._groups.submit("touch", frozenset([cluster_controller_id]),
                                         1 if targets is None else len(targets), touch)

    async def _touch(self, touch: _Touch) -> list[Change]:
        """One touch in a transaction of its own."""
        cluster_controller_id, targets = touch.cluster_controller_id, touch.targets
        last_seen_ms, expiry_ms = touch.last_seen_ms, touch.expiry_ms

        async def run(conn: asyncpg.Connection) -> list[Change]:
            # the version and the locked rows in one round trip
            if targets is None:
                locked = await conn.fetch(_VERSION_LOCK_TOUCH_ALL, self.channel,
                                          cluster_controller_id)
            else:
                locked = await conn.fetch(_VERSION_LOCK_TOUCH_SOME, self.channel,
                                          cluster_controller_id, targets)
            version = int(locked[0][0])
            keys = [(r[2], r[3]) for r in locked if r[2] is not None]
            if not keys:
                raise _Unchanged([])
            touched = await conn.fetch(_TOUCH, last_seen_ms, expiry_ms, version,
                                       [k[0] for k in keys], [k[1] for k in keys],
                                       hashes_of(keys, version))
            return entry_changes(version, map(_entry, touched))

        try:
            return await self._transaction("touch", run)
        except _Unchanged:
            return []

    async def _touch_group(self, touches: list[_Touch]) -> list[list[Change]]:
        """Touches of distinct cluster controllers in one transaction at one version."""
        of, every, pairs = _touch_targets(touches)

        async def run(conn: asyncpg.Connection) -> list[list[Change]]:
            locked = await conn.fetch(_VERSION_LOCK_TOUCH_GROUP, self.channel, every,
                                      [p[0] for p in pairs], [p[1] for p in pairs])
            version = int(locked[0][0])
            keys = [(r[2], r[3]) for r in locked if r[2] is not None]
            if not keys:
                raise _Unchanged([[] for _ in touches])
            values = [touches[of[r[4]]] for r in locked if r[2] is not None]
            touched = await conn.fetch(_TOUCH_GROUP, version, [k[0] for k in keys],
                                       [k[1] for k in keys], hashes_of(keys, version),
                                       [t.last_seen_ms for t in values],
                                       [t.expiry_ms for t in values])
            rows = _rows_by_touch(of, len(touches), map(_entry, touched))
            return [entry_changes(version, r) for r in rows]

        try:
            return await self._transaction(f"touch (a group of {len(touches)})", run)
        except _Unchanged as unchanged:
            return unchanged.result  # type: ignore[return-value]

    async def remove_stale_changes(self, cluster_controller_id: str, max_last_seen_ms: int
                                   ) -> list[Change]:
        """Every cluster controller calls removeStale when it starts and when it reconnects,
        mostly with nothing stale: a write transaction takes the next version first (the meta
        row, locked until it ends: every writer of every instance waits for it), so a fleet
        reconnecting at once would queue all its writes behind a removeStale each that deletes
        nothing. First one plain read (one round trip, no lock): nothing stale, nothing to do.
        The answer is the same as if the delete had run then; rows a concurrent write commits
        after that read are its own rows of now, not stale (a limit in the future aside, which
        the locking delete handles as before when the read finds a row)."""
        if not await self._transaction(
                "remove_stale", lambda conn: conn.fetchval(
                    _ANY_STALE, cluster_controller_id, max_last_seen_ms), idempotent=True):
            return []
        return await self._delete("remove_stale", _REMOVE_STALE, cluster_controller_id,
                                  max_last_seen_ms)

    async def purge_expired_changes(self, now_ms: int) -> list[Change] | None:
        async def run(conn: asyncpg.Connection, version: int) -> tuple[bool, list[Change]]:
            deleted = await conn.fetch(_PURGE_EXPIRED, now_ms, version, self._clock_ms())
            return True, deletion_changes(version, map(tuple, deleted))

        ran, changes = await self._write("purge_expired", run, purge_lock=True)
        return changes if ran else None

    async def purge_tombstones(self, older_than_ms: int) -> int:
        async def run(conn: asyncpg.Connection) -> int:
            return int(await conn.fetchval(_PURGE_TOMBSTONES, older_than_ms))

        return await self._transaction("purge_tombstones", run)

    # -- the VersionedStore protocol: reads ----------------------------------------------------

    async def current_version(self) -> int:
        async def run(conn: asyncpg.Connection) -> int:
            return int((await conn.fetchrow(META))[0])

        return await self._transaction("current_version", run)

    async def changes_since(self, version: int, limit: int = 10_000) -> ChangeBatch:
        async def run(conn: asyncpg.Connection) -> ChangeBatch:
            current, purged = await conn.fetchrow(META)
            if version < purged:
                raise TooFarBehind(f"changes after version {version} asked, but tombstones "
                                   f"up to version {purged} are purged")
            rows = [_row_change(r) for r in await conn.fetch(_ROWS_SINCE, version, limit + 1)]
            gone = [_tombstone_change(r) for r in await conn.fetch(_TOMBSTONES_SINCE, version,
                                                                   limit + 1)]
            batch = changes_batch(rows, gone, limit, int(current))
            if isinstance(batch, ChangeBatch):
                return batch
            group = sort_changes([*(_row_change(r) for r in await conn.fetch(_ROWS_AT, batch)),
                                  *(_tombstone_change(r)
                                    for r in await conn.fetch(_TOMBSTONES_AT, batch))])
            return ChangeBatch(group, batch)

        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        return await self._transaction("changes_since", run, snapshot=True)

    async def load(self, batch_size: int = 10_000) -> AsyncIterator[LoadBatch | int]:
        """One REPEATABLE READ transaction: every row through a cursor, grouped by profile in
        the query (a list per column of each profile's rows, which asyncpg decodes in C and
        the index takes as lists: LoadBatch.grouped), in batches of ``batch_size`` rows (a
        profile's lists cut where a batch ends), then the snapshot's version."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        width = len(PROFILE_COLUMNS)
        held: list[Sequence[Any]] = []
        rows = 0
        async for records in self._read_snapshot(_SELECT_COLUMNS, max(1, batch_size // 10)):
            if isinstance(records, int):
                if held:
                    yield LoadBatch.grouped(ColumnBatch(held))
                yield records  # (the last item)
                continue
            for record in records:
                group, count = record, len(record[width])
                while rows + count >= batch_size:  # (this group ends a batch)
                    cut = batch_size - rows
                    held.append((*group[:width], *(values[:cut] for values in group[width:])))
                    yield LoadBatch.grouped(ColumnBatch(held))
                    held, rows = [], 0
                    group = (*group[:width], *(values[cut:] for values in group[width:]))
                    count -= cut
                if count:
                    held.append(group)
                    rows += count

    async def _read_snapshot(self, query: str, batch_size: int
                             ) -> AsyncIterator[list[asyncpg.Record] | int]:
        """One REPEATABLE READ transaction: ``query``'s records through a cursor in lists of
        ``batch_size``, then the snapshot's version as the last item. The next list is asked
        for before this one is handed over: the server reads it while the caller takes this
        one in (one list ahead, no more)."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        pool = self._pool
        if pool is None:
            raise StoreError(f"the PostgreSQL store ({self._where()}) is not open",
                             reason="not-open")
        try:
            conn = await pool.acquire(timeout=self.acquire_timeout)
        except _DB_ERRORS as exc:
            raise self._error("load", exc, 1) from exc
        transaction: Any = None
        ahead: asyncio.Future[list[asyncpg.Record]] | None = None
        try:
            transaction = conn.transaction(isolation="repeatable_read", readonly=True)
            try:
                await transaction.start()
                version = int((await conn.fetchrow(META))[0])
                cursor = await conn.cursor(query)
            except _DB_ERRORS as exc:
                raise self._error("load", exc, 1, lost=conn.is_closed()) from exc
            ahead = asyncio.ensure_future(cursor.fetch(batch_size))
            while True:
                try:
                    records = await ahead
                except _DB_ERRORS as exc:
                    raise self._error("load", exc, 1, lost=conn.is_closed()) from exc
                if not records:
                    break
                ahead = asyncio.ensure_future(cursor.fetch(batch_size))
                await asyncio.sleep(0)  # (the request goes out before the caller takes over)
                yield records
            yield version
        finally:
            if ahead is not None and not ahead.done():  # (the caller stopped early)
                ahead.cancel()
                with contextlib.suppress(asyncio.CancelledError, *_DB_ERRORS):
                    await ahead
            with contextlib.suppress(*_DB_ERRORS):
                if (transaction is not None and not conn.is_closed()
                        and conn.is_in_transaction()):
                    # the transaction's own rollback: after a bare ROLLBACK asyncpg still
                    # holds it open, and the release logs an ERROR and rolls back again
                    await transaction.rollback()
            await self._release(pool, conn)

    async def digests(self) -> dict[int, Digest]:
        async def run(conn: asyncpg.Connection) -> dict[int, Digest]:
            # sum(bigint) is numeric: asyncpg answers Decimal
            return {int(bucket): Digest(int(count), int(versions), int(hashes))
                    for bucket, count, versions, hashes in await conn.fetch(DIGESTS)}

        return await self._transaction("digests", run)

    async def rows_in_buckets(self, buckets: Sequence[int]) -> RepairRows:
        asked = sorted(set(buckets))

        async def run(conn: asyncpg.Connection) -> RepairRows:
            current = int((await conn.fetchrow(META))[0])
            records = await conn.fetch(_ROWS_IN_BUCKETS, asked) if asked else []
            return RepairRows([(_entry(r[:-1]), r[-1]) for r in records], current)

        return await self._transaction("rows_in_buckets", run, snapshot=True)

    def notifier(self, **options: Any) -> PostgresNotifier:
        """A notifier listening to this store's cluster (``options``: PostgresNotifier's; its
        ``application_name`` is this store's plus ``-listen`` unless given)."""
        options.setdefault("application_name", f"{self.application_name}-listen")
        return PostgresNotifier(self.dsn, cluster=self.cluster, **options)


def _row_change(record: asyncpg.Record) -> Change:
    entry = _entry(record[:-1])
    return Change(int(record[-1]), entry.gbid, entry.participant_id, entry)


def _tombstone_change(record: asyncpg.Record) -> Change:
    return Change(int(record[2]), record[0], record[1], None)


class PostgresNotifier:
    """The wake-ups of a GCD cluster (:class:`gcd.changes.Notifier`): LISTEN on the cluster's
    channel (:func:`channel_of`) on a dedicated connection, named ``application_name``.

    Each notification's payload is the version a write committed: ``on_version(version)``. A
    payload that is not a version is ignored and counted (``ignored``). When the connection is
    lost (the server ended it, a restart, a network failure found by a ``SELECT 1`` every
    ``ping_interval_s``), it is made again with backoff (``reconnect_min_s`` doubling up to
    ``reconnect_max_s``), and once it listens again ``on_reconnected()`` tells that
    notifications may have been missed meanwhile. A first connection that fails in ``start``
    is retried the same way (``on_reconnected()`` when it succeeds). ``stop()`` ends it all.

    Counters for an operator: ``received`` (versions delivered), ``ignored``, ``reconnects``;
    ``listening`` tells whether the connection is up now."""

    def __init__(self, dsn: str, *, cluster: str = "default", connect_timeout: float = 5.0,
                 ping_interval_s: float = 5.0, reconnect_min_s: float = 0.05,
                 reconnect_max_s: float = 5.0,
                 application_name: str = "joynr-gcd-listen") -> None:
        if not 0 < reconnect_min_s <= reconnect_max_s:
            raise ValueError("0 < reconnect_min_s <= reconnect_max_s is required")
        if ping_interval_s <= 0 or connect_timeout <= 0:
            raise ValueError("ping_interval_s and connect_timeout must be positive")
        self.dsn = dsn
        self.channel = channel_of(cluster)
        self.application_name = application_name
        self.connect_timeout = connect_timeout
        self.ping_interval_s = ping_interval_s
        self.reconnect_min_s = reconnect_min_s
        self.reconnect_max_s = reconnect_max_s
        self.received = 0
        self.ignored = 0
        self.reconnects = 0
        self._conn: asyncpg.Connection | None = None
        self._lost = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._on_version: Callable[[int], None] = _ignore_version
        self._on_reconnected: Callable[[], None] = _ignore

    def __repr__(self) -> str:
        return f"PostgresNotifier({self.channel!r})"

    @property
    def listening(self) -> bool:
        conn = self._conn
        return conn is not None and not conn.is_closed()

    async def start(self, on_version: Callable[[int], None],
                    on_reconnected: Callable[[], None]) -> None:
        if self._task is not None:
            raise RuntimeError(f"{self} is started already")
        self._on_version, self._on_reconnected = on_version, on_reconnected
        try:
            await self._connect()
            missed = False
        except _DB_ERRORS as exc:
            log.warning("%s: cannot listen (%s); trying again in the background", self,
                        _describe(exc))
            missed = True
        self._task = asyncio.create_task(self._keep_listening(missed),
                                         name=f"gcd-notifier-{self.channel}")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._disconnect()

    async def _connect(self) -> None:
        conn = await asyncpg.connect(self.dsn, timeout=self.connect_timeout,
                                     command_timeout=self.connect_timeout,
                                     server_settings={"application_name": self.application_name})
        try:
            self._lost.clear()
            conn.add_termination_listener(self._terminated)
            await conn.add_listener(self.channel, self._notified)
        except BaseException:
            conn.terminate()
            raise
        self._conn = conn

    async def _disconnect(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None or conn.is_closed():
            return
        try:
            await asyncio.wait_for(conn.close(), self.connect_timeout)
        except _DB_ERRORS:
            conn.terminate()
        except BaseException:  # cancelled: do not leave the connection behind
            conn.terminate()
            raise

    def _terminated(self, conn: asyncpg.Connection) -> None:
        if conn is self._conn:
            self._lost.set()

    def _notified(self, conn: object, pid: int, channel: str, payload: object) -> None:
        if not (isinstance(payload, str) and payload.isascii() and payload.isdigit()
                and len(payload) <= 19):
            self.ignored += 1
            log.debug("%s: ignored a notification that is no version: %r", self, payload)
            return
        self.received += 1
        try:
            self._on_version(int(payload))
        except Exception:
            log.exception("%s: the handler of version %s failed", self, payload)

    async def _keep_listening(self, missed: bool) -> None:
        delay = self.reconnect_min_s
        while True:
            if self._conn is None:
                try:
                    await self._connect()
                except _DB_ERRORS as exc:
                    log.debug("%s: reconnecting failed (%s); next try in %.2f s", self,
                              _describe(exc), delay)
                    await asyncio.sleep(delay * random.uniform(0.8, 1.2))
                    delay = min(delay * 2, self.reconnect_max_s)
                    continue
                delay = self.reconnect_min_s
                if missed:
                    self.reconnects += 1
                    log.info("%s: listening again; notifications may have been missed", self)
                    try:
                        self._on_reconnected()
                    except Exception:
                        log.exception("%s: the reconnection handler failed", self)
            missed = True  # from now on, any loss may miss notifications
            if not await self._alive():
                log.warning("%s: the listening connection was lost; reconnecting", self)
                await self._disconnect()

    async def _alive(self) -> bool:
        """Wait ``ping_interval_s`` (or until the connection is lost); whether it still works."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._lost.wait(), self.ping_interval_s)
        conn = self._conn
        if self._lost.is_set() or conn is None or conn.is_closed():
            return False
        try:
            await asyncio.wait_for(conn.fetchval("SELECT 1"), self.connect_timeout)
        except _DB_ERRORS:
            return False
        return True


def _ignore_version(version: int) -> None:
    """Before start()."""


def _ignore() -> None:
    """Before start()."""
