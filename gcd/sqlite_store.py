"""The GCD's store in a SQLite file: :class:`SqliteStore`, the embedded default (one instance).

Implements the contract of :mod:`gcd.store`; what it writes and answers is decided by
:mod:`gcd.decisions`, like the PostgreSQL store's.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from gcd.decisions import decide_remove, distinct, rows_to_add
from gcd.store import (
    COLUMNS,
    EXPIRED,
    LIVE,
    SCHEMA,
    STALE,
    RemoveOutcome,
    StoredEntry,
    StoreError,
    StoreErrorReason,
    row_values,
)

__all__ = ["SqliteStore"]

T = TypeVar("T")


def _placeholders(n: int) -> str:
    return ", ".join("?" * n)


_SELECT = f"SELECT {', '.join(COLUMNS)} FROM discovery_entries"
_UPSERT = (f"INSERT OR REPLACE INTO discovery_entries ({', '.join(COLUMNS)}) "
           f"VALUES ({_placeholders(len(COLUMNS))})")
_FIND_PARTICIPANT = (f"{_SELECT} WHERE participant_id = ? AND {LIVE.format(now='?')} "
                     "ORDER BY gbid")
_REGISTERED = (f"SELECT gbid FROM discovery_entries WHERE participant_id = ? AND "
               f"{LIVE.format(now='?')}")
_DELETE_ROW = "DELETE FROM discovery_entries WHERE participant_id = ? AND gbid = ?"
_TOUCH = ("UPDATE discovery_entries SET last_seen_ms = ?, expiry_ms = ? "
          "WHERE cluster_controller_id = ?")
_TOUCH_PARTICIPANT = f"{_TOUCH} AND participant_id = ?"
_REMOVE_STALE = f"DELETE FROM discovery_entries WHERE {STALE.format(cc='?', before='?')}"
_PURGE_EXPIRED = f"DELETE FROM discovery_entries WHERE {EXPIRED.format(now='?')}"


def _find_query(domain_count: int) -> str:
    return (f"{_SELECT} WHERE interface_name = ? AND domain IN "
            f"({_placeholders(domain_count)}) AND {LIVE.format(now='?')} "
            "ORDER BY participant_id, gbid")


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
                for statement in SCHEMA:
                    conn.execute(statement)
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite ({self.path}): cannot open: {exc}",
                                 reason="unreachable") from exc
            self._conn = conn

        try:
            await self._run_raw(connect)
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        executor, self._executor = self._executor, None
        if conn is not None and executor is not None:
            await asyncio.get_running_loop().run_in_executor(executor, conn.close)
        if executor is not None:
            executor.shutdown(wait=False)

    async def _run_raw(self, fn: Callable[[], T]) -> T:
        if self._executor is None:
            raise StoreError(f"the SQLite store ({self.path}) is not open", reason="not-open")
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    async def _transaction(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def run() -> T:
            conn = self._conn
            if conn is None:
                raise StoreError(f"the SQLite store ({self.path}) is not open",
                                 reason="not-open")
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    result = fn(conn)
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
                return result
            except sqlite3.OperationalError as exc:
                # "database is locked": another process held it longer than busy_timeout
                reason: StoreErrorReason = "timeout" if "locked" in str(exc) else "database"
                raise StoreError(f"SQLite ({self.path}): {exc}", reason=reason) from exc
            except (sqlite3.Error, OverflowError) as exc:  # Overflow: an int beyond 64 bits
                raise StoreError(f"SQLite ({self.path}): {exc}") from exc

        return await self._run_raw(run)

    # -- the GcdStore protocol -----------------------------------------------------------------

    async def add(self, entries: Sequence[StoredEntry]) -> None:
        rows = [row_values(e) for e in rows_to_add(entries)]

        def run(conn: sqlite3.Connection) -> None:
            conn.executemany(_UPSERT, rows)

        await self._transaction(run)

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

    async def remove(self, participant_id: str, gbids: Sequence[str], now_ms: int
                     ) -> RemoveOutcome:
        def run(conn: sqlite3.Connection) -> RemoveOutcome:
            registered = [row[0] for row in conn.execute(_REGISTERED, (participant_id, now_ms))]
            decision = decide_remove(registered, gbids)
            conn.executemany(_DELETE_ROW, [(participant_id, gbid) for gbid in decision.delete])
            return decision.outcome

        return await self._transaction(run)

    async def remove_in(self, participant_ids: Sequence[str], gbid: str) -> int:
        targets = distinct(participant_ids)

        def run(conn: sqlite3.Connection) -> int:
            return sum(conn.execute(_DELETE_ROW, (pid, gbid)).rowcount for pid in targets)

        return await self._transaction(run)

    async def touch(self, cluster_controller_id: str, participant_ids: Sequence[str] | None,
                    last_seen_ms: int, expiry_ms: int) -> int:
        targets = None if participant_ids is None else distinct(participant_ids)

        def run(conn: sqlite3.Connection) -> int:
            if targets is None:
                return conn.execute(_TOUCH, (last_seen_ms, expiry_ms,
                                             cluster_controller_id)).rowcount
            return sum(conn.execute(_TOUCH_PARTICIPANT, (last_seen_ms, expiry_ms,
                                                         cluster_controller_id, pid)).rowcount
                       for pid in targets)

        return await self._transaction(run)

    async def remove_stale(self, cluster_controller_id: str, max_last_seen_ms: int) -> int:
        def run(conn: sqlite3.Connection) -> int:
            return conn.execute(_REMOVE_STALE, (cluster_controller_id,
                                                max_last_seen_ms)).rowcount

        return await self._transaction(run)

    async def purge_expired(self, now_ms: int) -> int:
        def run(conn: sqlite3.Connection) -> int:
            return conn.execute(_PURGE_EXPIRED, (now_ms,)).rowcount

        return await self._transaction(run)

    async def count(self) -> int:
        def run(conn: sqlite3.Connection) -> int:
            return int(conn.execute("SELECT count(*) FROM discovery_entries").fetchone()[0])

        return await self._transaction(run)
