"""The GCD's store in a SQLite file: :class:`SqliteStore`, the embedded default (one instance).

Implements the contract of :mod:`gcd.store`; what it writes and answers is decided by
:mod:`gcd.decisions`, like the PostgreSQL store's.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import sqlite3
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from pyjoynr.gcd.changes import (
    Change,
    ChangeBatch,
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
    row_values,
)
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.logs import get_logger

__all__ = ["SqliteStore"]

log = get_logger(__name__)

T = TypeVar("T")


def _placeholders(n: int) -> str:
    return ", ".join("?" * n)


_SELECT = f"SELECT {', '.join(COLUMNS)} FROM discovery_entries"
_SELECT_VERSIONED = f"SELECT {', '.join(COLUMNS)}, version FROM discovery_entries"
#: what a load reads: LoadBatch records (COLUMNS, version, bucket, row hash)
_SELECT_LOADED = f"SELECT {', '.join((*COLUMNS, *VERSION_COLUMNS))} FROM discovery_entries"
_WRITTEN = (*COLUMNS, "version", "bucket", "row_hash")
_UPSERT = (f"INSERT OR REPLACE INTO discovery_entries ({', '.join(_WRITTEN)}) "
           f"VALUES ({_placeholders(len(_WRITTEN))})")
_FIND_PARTICIPANT = (f"{_SELECT} WHERE participant_id = ? AND {LIVE.format(now='?')} "
                     "ORDER BY gbid")
_REGISTERED = (f"SELECT gbid FROM discovery_entries WHERE participant_id = ? AND "
               f"{LIVE.format(now='?')}")
_DELETE_ROW = ("DELETE FROM discovery_entries WHERE participant_id = ? AND gbid = ? "
               "RETURNING gbid, participant_id, bucket")
_TOUCHED = f"{_SELECT} WHERE cluster_controller_id = ?"
_TOUCHED_PARTICIPANT = f"{_TOUCHED} AND participant_id = ?"
_TOUCH = ("UPDATE discovery_entries SET last_seen_ms = ?, expiry_ms = ?, version = ?, "
          "row_hash = ? WHERE gbid = ? AND participant_id = ?")
_DELETED = "RETURNING gbid, participant_id, bucket"
_REMOVE_STALE = (f"DELETE FROM discovery_entries WHERE {STALE.format(cc='?', before='?')} "
                 f"{_DELETED}")
_PURGE_EXPIRED = f"DELETE FROM discovery_entries WHERE {EXPIRED.format(now='?')} {_DELETED}"
_BURY = ("INSERT OR REPLACE INTO discovery_tombstones "
         "(gbid, participant_id, version, bucket, deleted_ms) VALUES (?, ?, ?, ?, ?)")
_UNBURY = "DELETE FROM discovery_tombstones WHERE gbid = ? AND participant_id = ?"
_ROWS_SINCE = (f"{_SELECT_VERSIONED} WHERE version > ? "
               "ORDER BY version, gbid, participant_id LIMIT ?")
_TOMBSTONES_SINCE = ("SELECT gbid, participant_id, version FROM discovery_tombstones "
                     "WHERE version > ? ORDER BY version, gbid, participant_id LIMIT ?")
_ROWS_AT = f"{_SELECT_VERSIONED} WHERE version = ?"
_TOMBSTONES_AT = ("SELECT gbid, participant_id, version FROM discovery_tombstones "
                  "WHERE version = ?")
_PURGE_TOMBSTONES = "DELETE FROM discovery_tombstones WHERE deleted_ms < ? RETURNING version"
_PURGED = "UPDATE discovery_meta SET purged_version = max(purged_version, ?) WHERE id = 1"
#: buckets asked per statement (SQLite bounds the number of parameters)
_BUCKETS_PER_QUERY = 500


def _find_query(domain_count: int) -> str:
    return (f"{_SELECT} WHERE interface_name = ? AND domain IN "
            f"({_placeholders(domain_count)}) AND {LIVE.format(now='?')} "
            "ORDER BY participant_id, gbid")


def _entry(row: Sequence[object]) -> StoredEntry:
    values = list(row)
    values[8] = bool(values[8])  # supports_on_change: SQLite keeps 0/1
    return new_entry(*values)


def _load_record(row: Sequence[Any]) -> tuple[Any, ...]:
    """A row of _SELECT_LOADED as a LoadBatch holds it (supports_on_change a bool)."""
    return (*row[:8], bool(row[8]), *row[9:])


class _Unchanged(Exception):
    """Raised inside a write transaction that changed nothing: it is rolled back (no version
    taken) and the write answers ``result``."""

    def __init__(self, result: object) -> None:
        super().__init__("nothing changed")
        self.result = result


class SqliteStore(PlainWrites):
    """The GCD's store in a SQLite file (``":memory:"`` for a private in-memory one).

    One connection, used by one worker thread: operations run one after another, each in its
    own transaction (BEGIN IMMEDIATE ... COMMIT, ROLLBACK on any error).

    Versioned (:class:`gcd.changes.VersionedStore`, without peers: nothing to notify): every
    write transaction takes the next version first; a write that changed nothing is rolled
    back. ``clock_ms`` (epoch ms) dates tombstones. ``load`` reads its snapshot on a
    connection of its own (a read transaction, which WAL keeps consistent while writes go on);
    a ``":memory:"`` store has no second connection and reads everything in one step. A
    database of the previous version is migrated by ``open()`` in one transaction."""

    def __init__(self, path: str | Path, *, clock_ms: Callable[[], int] = now_ms) -> None:
        self.path = str(path)
        self._clock_ms = clock_ms
        self._conn: sqlite3.Connection | None = None
        self._executor: ThreadPoolExecutor | None = None

    def __repr__(self) -> str:
        return f"SqliteStore({self.path!r})"

    async def open(self) -> None:
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gcd-sqlite")

        def connect() -> None:
            try:
                conn = sqlite3.connect(self.path, isolation_level=None,
                                       check_same_thread=False)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute("PRAGMA busy_timeout=5000")
                conn.execute("BEGIN IMMEDIATE")
                try:
                    for statement in (ENTRIES_TABLE, *FEED_TABLES):
                        conn.execute(statement)
                    self._migrate(conn)
                    for statement in INDEXES:
                        conn.execute(statement)
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite ({self.path}): cannot open: {exc}",
                                 reason="unreachable") from exc
            self._conn = conn

        try:
            await self._run_raw(connect)
        except BaseException:
            await self.close()
            raise

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """A discovery_entries of the previous version (without the version columns): copy
        it into a table of this version, every row at one new version, and put that table in
        its place (SQLite cannot add NOT NULL columns without a default). In the transaction
        that opens the store."""
        present = {row[1] for row in conn.execute("PRAGMA table_info(discovery_entries)")}
        if all(c in present for c in VERSION_COLUMNS):
            return
        conn.execute(ENTRIES_TABLE.replace("discovery_entries (",
                                           "discovery_entries_migrating (", 1))
        version = int(conn.execute(NEXT_VERSION).fetchone()[0])
        insert = _UPSERT.replace("discovery_entries", "discovery_entries_migrating", 1)
        rows = conn.execute(_SELECT)
        migrated = 0
        while batch := rows.fetchmany(MIGRATION_BATCH):
            keys = [(r[0], r[1]) for r in batch]
            conn.executemany(insert, [
                (*r, version, bucket, hashed) for r, bucket, hashed in
                zip(batch, buckets_of(keys), hashes_of(keys, version), strict=True)])
            migrated += len(batch)
        conn.execute("DROP TABLE discovery_entries")
        conn.execute("ALTER TABLE discovery_entries_migrating RENAME TO discovery_entries")
        log.info("%s: migrated a database of the previous version: %d rows now at version %d, "
                 "tombstone and meta tables created", self, migrated, version)

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        executor, self._executor = self._executor, None
        if conn is not None and executor is not None:
            await asyncio.get_running_loop().run_in_executor(executor, conn.close)
        if executor is not None:
            executor.shutdown(wait=False)

    def _not_open(self) -> StoreError:
        return StoreError(f"the SQLite store ({self.path}) is not open", reason="not-open")

    async def _run_raw(self, fn: Callable[[], T]) -> T:
        if self._executor is None:
            raise self._not_open()
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    async def _transaction(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def run() -> T:
            conn = self._conn
            if conn is None:
                raise self._not_open()
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    result = fn(conn)
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
                return result
            except sqlite3.Error as exc:
                raise self._error(exc) from exc
            except OverflowError as exc:  # an int beyond 64 bits
                raise StoreError(f"SQLite ({self.path}): {exc}") from exc

        return await self._run_raw(run)

    def _error(self, exc: sqlite3.Error) -> StoreError:
        # "database is locked": another process held it longer than busy_timeout
        reason: StoreErrorReason = ("timeout" if isinstance(exc, sqlite3.OperationalError)
                                    and "locked" in str(exc) else "database")
        return StoreError(f"SQLite ({self.path}): {exc}", reason=reason)

    # -- the GcdStore protocol -----------------------------------------------------------------

    async def add(self, entries: Sequence[StoredEntry]) -> None:
        await self.add_changes(entries)

    async def find(self, domains: Sequence[str], interface_name: str, now_ms: int
                   ) -> list[StoredEntry]:
        asked = distinct(domains)
        if not asked:
            return []
        query = _find_query(len(asked))
        args = (interface_name, *asked, now_ms)

        def run(conn: sqlite3.Connection) -> list[StoredEntry]:
            return [_entry(row) for row in conn.execute(query, args)]

        return await self._transaction(run)

    async def find_participant(self, participant_id: str, now_ms: int) -> list[StoredEntry]:
        def run(conn: sqlite3.Connection) -> list[StoredEntry]:
            return [_entry(row) for row in conn.execute(_FIND_PARTICIPANT,
                                                        (participant_id, now_ms))]

        return await self._transaction(run)

    async def count(self) -> int:
        def run(conn: sqlite3.Connection) -> int:
            return int(conn.execute("SELECT count(*) FROM discovery_entries").fetchone()[0])

        return await self._transaction(run)

    # -- the VersionedStore protocol: writes ---------------------------------------------------

    async def _write(self, body: Callable[[sqlite3.Connection, int], tuple[T, list[Change]]]
                     ) -> tuple[T, list[Change]]:
        """``body(conn, version)`` in one transaction that takes the next version first;
        rolled back when ``body`` changed nothing (no version spent)."""

        def run(conn: sqlite3.Connection) -> tuple[T, list[Change]]:
            version = int(conn.execute(NEXT_VERSION).fetchone()[0])
            result, changes = body(conn, version)
            if not changes:
                raise _Unchanged((result, changes))
            return result, changes

        try:
            return await self._transaction(run)
        except _Unchanged as unchanged:
            return unchanged.result  # type: ignore[return-value]

    def _bury(self, conn: sqlite3.Connection, version: int,
              deleted: Sequence[Sequence[Any]]) -> list[Change]:
        """Tombstones of the deleted rows (gbid, participant_id, bucket) at ``version``."""
        deleted_ms = self._clock_ms()
        conn.executemany(_BURY, [(g, p, version, b, deleted_ms) for g, p, b in deleted])
        return deletion_changes(version, ((g, p) for g, p, _ in deleted))

    async def add_changes(self, entries: Sequence[StoredEntry]) -> list[Change]:
        written = rows_to_add(entries)
        if not written:
            await self._transaction(_nothing)
            return []
        rows = [row_values(e) for e in written]
        keys = [e.key for e in written]
        buckets = buckets_of(keys)

        def run(conn: sqlite3.Connection, version: int) -> tuple[None, list[Change]]:
            conn.executemany(_UPSERT, [
                (*r, version, bucket, hashed) for r, bucket, hashed in
                zip(rows, buckets, hashes_of(keys, version), strict=True)])
            conn.executemany(_UNBURY, keys)
            return None, entry_changes(version, written)

        return (await self._write(run))[1]

    async def remove_changes(self, participant_id: str, gbids: Sequence[str], now_ms: int
                             ) -> tuple[RemoveOutcome, list[Change]]:
        def run(conn: sqlite3.Connection, version: int) -> tuple[RemoveOutcome, list[Change]]:
            registered = [row[0] for row in conn.execute(_REGISTERED, (participant_id, now_ms))]
            decision = decide_remove(registered, gbids)
            deleted = [row for gbid in decision.delete
                       for row in conn.execute(_DELETE_ROW, (participant_id, gbid)).fetchall()]
            return decision.outcome, self._bury(conn, version, deleted)

        return await self._write(run)

    async def remove_in_changes(self, participant_ids: Sequence[str], gbid: str
                                ) -> list[Change]:
        targets = distinct(participant_ids)

        def run(conn: sqlite3.Connection, version: int) -> tuple[None, list[Change]]:
            deleted = [row for pid in targets
                       for row in conn.execute(_DELETE_ROW, (pid, gbid)).fetchall()]
            return None, self._bury(conn, version, deleted)

        return (await self._write(run))[1]

    async def touch_changes(self, cluster_controller_id: str,
                            participant_ids: Sequence[str] | None, last_seen_ms: int,
                            expiry_ms: int) -> list[Change]:
        targets = None if participant_ids is None else distinct(participant_ids)

        def run(conn: sqlite3.Connection, version: int) -> tuple[None, list[Change]]:
            if targets is None:
                found = conn.execute(_TOUCHED, (cluster_controller_id,)).fetchall()
            else:
                found = [row for pid in targets for row in
                         conn.execute(_TOUCHED_PARTICIPANT, (cluster_controller_id, pid))]
            touched = [dataclasses.replace(_entry(row), last_seen_ms=last_seen_ms,
                                           expiry_ms=expiry_ms) for row in found]
            keys = [e.key for e in touched]
            conn.executemany(_TOUCH, [
                (last_seen_ms, expiry_ms, version, hashed, gbid, pid)
                for (gbid, pid), hashed in zip(keys, hashes_of(keys, version), strict=True)])
            return None, entry_changes(version, touched)

        return (await self._write(run))[1]

    async def _delete(self, statement: str, args: tuple[object, ...]) -> list[Change]:
        def run(conn: sqlite3.Connection, version: int) -> tuple[None, list[Change]]:
            return None, self._bury(conn, version, conn.execute(statement, args).fetchall())

        return (await self._write(run))[1]

    async def remove_stale_changes(self, cluster_controller_id: str, max_last_seen_ms: int
                                   ) -> list[Change]:
        return await self._delete(_REMOVE_STALE, (cluster_controller_id, max_last_seen_ms))

    async def purge_expired_changes(self, now_ms: int) -> list[Change] | None:
        # one instance: the write lock of BEGIN IMMEDIATE is the purge lock
        return await self._delete(_PURGE_EXPIRED, (now_ms,))

    async def purge_tombstones(self, older_than_ms: int) -> int:
        def run(conn: sqlite3.Connection) -> int:
            purged = [row[0] for row in
                      conn.execute(_PURGE_TOMBSTONES, (older_than_ms,)).fetchall()]
            if purged:
                conn.execute(_PURGED, (max(purged),))
            return len(purged)

        return await self._transaction(run)

    # -- the VersionedStore protocol: reads ----------------------------------------------------

    async def current_version(self) -> int:
        def run(conn: sqlite3.Connection) -> int:
            return int(conn.execute(META).fetchone()[0])

        return await self._transaction(run)

    async def changes_since(self, version: int, limit: int = 10_000) -> ChangeBatch:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")

        def run(conn: sqlite3.Connection) -> ChangeBatch:
            current, purged = conn.execute(META).fetchone()
            if version < purged:
                raise TooFarBehind(f"changes after version {version} asked, but tombstones "
                                   f"up to version {purged} are purged")
            rows = [_row_change(r) for r in conn.execute(_ROWS_SINCE, (version, limit + 1))]
            gone = [Change(v, g, p, None) for g, p, v in
                    conn.execute(_TOMBSTONES_SINCE, (version, limit + 1))]
            batch = changes_batch(rows, gone, limit, int(current))
            if isinstance(batch, ChangeBatch):
                return batch
            group = sort_changes([*(_row_change(r) for r in conn.execute(_ROWS_AT, (batch,))),
                                  *(Change(v, g, p, None) for g, p, v in
                                    conn.execute(_TOMBSTONES_AT, (batch,)))])
            return ChangeBatch(group, batch)

        return await self._transaction(run)

    async def load(self, batch_size: int = 10_000) -> AsyncIterator[LoadBatch | int]:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        if self._executor is None:
            raise self._not_open()
        if self.path == ":memory:":
            def everything(conn: sqlite3.Connection) -> tuple[int, list[tuple[Any, ...]]]:
                return (int(conn.execute(META).fetchone()[0]),
                        [_load_record(r) for r in conn.execute(_SELECT_LOADED)])

            version, rows = await self._transaction(everything)
            for start in range(0, len(rows), batch_size):
                yield LoadBatch(rows[start:start + batch_size])
            yield version
            return

        def begin() -> tuple[sqlite3.Connection, int, sqlite3.Cursor]:
            reader = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            try:
                reader.execute("PRAGMA busy_timeout=5000")
                reader.execute("BEGIN")  # the snapshot starts with the first read
                version = int(reader.execute(META).fetchone()[0])
                return reader, version, reader.execute(_SELECT_LOADED)
            except BaseException:
                reader.close()
                raise

        def end(reader: sqlite3.Connection) -> None:
            with contextlib.suppress(sqlite3.Error):
                reader.execute("ROLLBACK")
            reader.close()

        try:
            reader, version, cursor = await asyncio.to_thread(begin)
        except sqlite3.Error as exc:
            raise self._error(exc) from exc
        try:
            while True:
                try:
                    rows = await asyncio.to_thread(cursor.fetchmany, batch_size)
                except sqlite3.Error as exc:
                    raise self._error(exc) from exc
                if not rows:
                    break
                yield LoadBatch([_load_record(r) for r in rows])
            yield version
        finally:
            await asyncio.to_thread(end, reader)

    async def digests(self) -> dict[int, Digest]:
        def run(conn: sqlite3.Connection) -> dict[int, Digest]:
            return {bucket: Digest(count, versions, hashes)
                    for bucket, count, versions, hashes in conn.execute(DIGESTS)}

        return await self._transaction(run)

    async def rows_in_buckets(self, buckets: Sequence[int]) -> RepairRows:
        asked = sorted(set(buckets))

        def run(conn: sqlite3.Connection) -> RepairRows:
            version = int(conn.execute(META).fetchone()[0])
            rows: list[tuple[StoredEntry, int]] = []
            for start in range(0, len(asked), _BUCKETS_PER_QUERY):
                part = asked[start:start + _BUCKETS_PER_QUERY]
                rows.extend((_entry(r[:-1]), r[-1]) for r in conn.execute(
                    f"{_SELECT_VERSIONED} WHERE bucket IN ({_placeholders(len(part))})", part))
            return RepairRows(rows, version)

        return await self._transaction(run)


def _nothing(conn: sqlite3.Connection) -> None:
    """An empty transaction: the store answers like for any other call (open, reachable)."""


def _row_change(row: Sequence[Any]) -> Change:
    entry = _entry(row[:-1])
    return Change(int(row[-1]), entry.gbid, entry.participant_id, entry)
