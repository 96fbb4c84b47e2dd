"""Storage of the Global Capabilities Directory: one row per (GBID, participantId).

Two implementations behind :class:`GcdStore`: :class:`SqliteStore` (a file, the embedded
default) and ``gcd.postgres_store.PostgresStore`` (shared by several GCD instances). Each
method is one transaction: it happens completely or not at all. Any failure of the database
raises :class:`StoreError` (the GCD answers INTERNAL_ERROR). Methods that take ``now_ms``
ignore expired rows (expiry_ms < now_ms), as if they were gone; ``purge_expired`` deletes them.
"""

from __future__ import annotations

import asyncio
import enum
import operator
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Protocol, TypeVar

__all__ = ["GcdStore", "RemoveOutcome", "SqliteStore", "StoreError", "StoredEntry"]

T = TypeVar("T")


class StoreError(Exception):
    """The database failed; nothing of the operation was written."""


class RemoveOutcome(enum.Enum):
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


COLUMNS = tuple(f.name for f in fields(StoredEntry))
#: the column values of an entry, in COLUMNS order (dataclasses.astuple deep-copies: slow)
_row_values = operator.attrgetter(*COLUMNS)

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS discovery_entries (
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
        PRIMARY KEY (gbid, participant_id)
    )""",
    "CREATE INDEX IF NOT EXISTS discovery_entries_domain_interface "
    "ON discovery_entries (domain, interface_name)",
    # with the expiry, so that a participant lookup needs no statistics to pick its plan
    "CREATE INDEX IF NOT EXISTS discovery_entries_participant_expiry "
    "ON discovery_entries (participant_id, expiry_ms)",
    "CREATE INDEX IF NOT EXISTS discovery_entries_cluster_controller "
    "ON discovery_entries (cluster_controller_id)",
    "CREATE INDEX IF NOT EXISTS discovery_entries_expiry ON discovery_entries (expiry_ms)",
)


class GcdStore(Protocol):
    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def add(self, entries: Sequence[StoredEntry]) -> None:
        """Insert or replace the rows (gbid, participant_id) of ``entries``."""
        ...

    async def find(self, domains: Sequence[str], interface_name: str, now_ms: int
                   ) -> list[StoredEntry]:
        """Rows of any GBID in one of ``domains`` with ``interface_name``, ordered by
        participant_id, gbid."""
        ...

    async def find_participant(self, participant_id: str, now_ms: int) -> list[StoredEntry]:
        """Rows of ``participant_id`` (one per GBID), ordered by gbid."""
        ...

    async def remove(self, participant_id: str, gbids: Sequence[str], now_ms: int
                     ) -> RemoveOutcome:
        """Remove the participant from every one of ``gbids`` - or, when it is not registered
        in all of them, from none."""
        ...

    async def remove_in(self, participant_ids: Sequence[str], gbid: str) -> int:
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

    async def purge_expired(self, now_ms: int) -> int: ...

    async def count(self) -> int: ...


def _placeholders(n: int) -> str:
    return ", ".join("?" * n)


_SELECT = f"SELECT {', '.join(COLUMNS)} FROM discovery_entries"
_UPSERT = (f"INSERT OR REPLACE INTO discovery_entries ({', '.join(COLUMNS)}) "
           f"VALUES ({_placeholders(len(COLUMNS))})")


def _entry(row: Sequence[object]) -> StoredEntry:
    values = list(row)
    values[8] = bool(values[8])  # supports_on_change: SQLite keeps 0/1
    return StoredEntry(*values)  # type: ignore[arg-type]


class SqliteStore:
    """The GCD's store in a SQLite file (``":memory:"`` for a private in-memory one).

    One connection, used by one worker thread: operations run one after another, each in its
    own transaction (BEGIN IMMEDIATE ... COMMIT, ROLLBACK on any error)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._conn: sqlite3.Connection | None = None
        self._executor: ThreadPoolExecutor | None = None

    async def open(self) -> None:
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gcd-sqlite")

        def connect() -> None:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=5000")
            for statement in SCHEMA:
                conn.execute(statement)
            self._conn = conn

        await self._run_raw(connect)

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        executor, self._executor = self._executor, None
        if conn is not None and executor is not None:
            await asyncio.get_running_loop().run_in_executor(executor, conn.close)
        if executor is not None:
            executor.shutdown(wait=False)

    async def _run_raw(self, fn: Callable[[], T]) -> T:
        if self._executor is None:
            raise StoreError("the store is not open")
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    async def _transaction(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def run() -> T:
            conn = self._conn
            if conn is None:
                raise StoreError("the store is closed")
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
                raise StoreError(f"SQLite ({self.path}): {exc}") from exc

        return await self._run_raw(run)

    async def add(self, entries: Sequence[StoredEntry]) -> None:
        rows = [_row_values(e) for e in entries]

        def run(conn: sqlite3.Connection) -> None:
            conn.executemany(_UPSERT, rows)

        await self._transaction(run)

    async def find(self, domains: Sequence[str], interface_name: str, now_ms: int
                   ) -> list[StoredEntry]:
        if not domains:
            return []
        query = (f"{_SELECT} WHERE interface_name = ? AND domain IN "
                 f"({_placeholders(len(domains))}) AND expiry_ms >= ? "
                 "ORDER BY participant_id, gbid")
        args = (interface_name, *domains, now_ms)

        def run(conn: sqlite3.Connection) -> list[StoredEntry]:
            return [_entry(row) for row in conn.execute(query, args)]

        return await self._transaction(run)

    async def find_participant(self, participant_id: str, now_ms: int) -> list[StoredEntry]:
        query = f"{_SELECT} WHERE participant_id = ? AND expiry_ms >= ? ORDER BY gbid"

        def run(conn: sqlite3.Connection) -> list[StoredEntry]:
            return [_entry(row) for row in conn.execute(query, (participant_id, now_ms))]

        return await self._transaction(run)

    async def remove(self, participant_id: str, gbids: Sequence[str], now_ms: int
                     ) -> RemoveOutcome:
        def run(conn: sqlite3.Connection) -> RemoveOutcome:
            registered = {row[0] for row in conn.execute(
                "SELECT gbid FROM discovery_entries WHERE participant_id = ? AND expiry_ms >= ?",
                (participant_id, now_ms))}
            if not registered:
                return RemoveOutcome.NO_PARTICIPANT
            if not set(gbids) <= registered:
                return RemoveOutcome.NOT_IN_ALL_SELECTED
            conn.executemany(
                "DELETE FROM discovery_entries WHERE participant_id = ? AND gbid = ?",
                [(participant_id, gbid) for gbid in gbids])
            return RemoveOutcome.REMOVED

        return await self._transaction(run)

    async def remove_in(self, participant_ids: Sequence[str], gbid: str) -> int:
        def run(conn: sqlite3.Connection) -> int:
            removed = 0
            for pid in participant_ids:
                removed += conn.execute(
                    "DELETE FROM discovery_entries WHERE participant_id = ? AND gbid = ?",
                    (pid, gbid)).rowcount
            return removed

        return await self._transaction(run)

    async def touch(self, cluster_controller_id: str, participant_ids: Sequence[str] | None,
                    last_seen_ms: int, expiry_ms: int) -> int:
        def run(conn: sqlite3.Connection) -> int:
            update = ("UPDATE discovery_entries SET last_seen_ms = ?, expiry_ms = ? "
                      "WHERE cluster_controller_id = ?")
            if participant_ids is None:
                return conn.execute(update, (last_seen_ms, expiry_ms,
                                             cluster_controller_id)).rowcount
            touched = 0
            for pid in participant_ids:
                touched += conn.execute(f"{update} AND participant_id = ?",
                                        (last_seen_ms, expiry_ms, cluster_controller_id,
                                         pid)).rowcount
            return touched

        return await self._transaction(run)

    async def remove_stale(self, cluster_controller_id: str, max_last_seen_ms: int) -> int:
        def run(conn: sqlite3.Connection) -> int:
            return conn.execute(
                "DELETE FROM discovery_entries WHERE cluster_controller_id = ? "
                "AND last_seen_ms < ?", (cluster_controller_id, max_last_seen_ms)).rowcount

        return await self._transaction(run)

    async def purge_expired(self, now_ms: int) -> int:
        def run(conn: sqlite3.Connection) -> int:
            return conn.execute("DELETE FROM discovery_entries WHERE expiry_ms < ?",
                                (now_ms,)).rowcount

        return await self._transaction(run)

    async def count(self) -> int:
        def run(conn: sqlite3.Connection) -> int:
            return int(conn.execute("SELECT count(*) FROM discovery_entries").fetchone()[0])

        return await self._transaction(run)
