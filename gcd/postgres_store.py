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
twice more.

Availability: connecting and every statement are bounded (``connect_timeout``,
``command_timeout``); while the server is down each operation fails quickly with StoreError,
and once it is back the pool reconnects by itself - the store need not be reopened.

Text is compared and ordered byte-wise (``COLLATE "C"``, i.e. by code point, like SQLite),
whatever the database's default collation.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit

import asyncpg

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
)
from runtime.logs import get_logger

__all__ = ["PostgresStore"]

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
#: taken while creating the schema, so that GCD instances starting together do not collide
#: (concurrent CREATE TABLE IF NOT EXISTS can fail on the catalog's unique index)
_SCHEMA_LOCK_KEY = 0x6A6F796E72474344  # "joynrGCD"

_PG_TYPES = {
    "major_version": "integer", "minor_version": "integer", "priority": "bigint",
    "supports_on_change": "boolean", "last_seen_ms": "bigint", "expiry_ms": "bigint",
}
#: the order in which multi-row statements lock rows (the primary key), everywhere the same
_LOCK_ORDER = 'gbid COLLATE "C", participant_id COLLATE "C"'

_SELECT = f"SELECT {', '.join(COLUMNS)} FROM discovery_entries"
_UPSERT = (
    f"INSERT INTO discovery_entries ({', '.join(COLUMNS)}) "
    f"SELECT * FROM unnest("
    + ", ".join(f"${i}::{_PG_TYPES.get(c, 'text')}[]" for i, c in enumerate(COLUMNS, 1))
    + ") ON CONFLICT (gbid, participant_id) DO UPDATE SET "
    + ", ".join(f"{c} = EXCLUDED.{c}" for c in COLUMNS if c not in ("gbid", "participant_id"))
)
_FIND = (f"{_SELECT} WHERE interface_name = $1 AND domain = ANY($2::text[]) "
         f"AND {LIVE.format(now='$3')} "
         'ORDER BY participant_id COLLATE "C", gbid COLLATE "C"')
_FIND_PARTICIPANT = (f"{_SELECT} WHERE participant_id = $1 AND {LIVE.format(now='$2')} "
                     'ORDER BY gbid COLLATE "C"')
_LOCK_PARTICIPANT = ("SELECT gbid FROM discovery_entries WHERE participant_id = $1 "
                     f"AND {LIVE.format(now='$2')} ORDER BY {_LOCK_ORDER} FOR UPDATE")
_REMOVE_GBIDS = "DELETE FROM discovery_entries WHERE participant_id = $1 AND gbid = ANY($2::text[])"


def _locked(where: str) -> str:
    """A CTE ``locked`` of the keys of the rows matching ``where``, locked in key order."""
    return (f"WITH locked AS (SELECT gbid, participant_id FROM discovery_entries WHERE {where} "
            f"ORDER BY {_LOCK_ORDER} FOR UPDATE) ")


_JOIN_LOCKED = "d.gbid = locked.gbid AND d.participant_id = locked.participant_id"


def _delete_locked(where: str) -> str:
    return (f"{_locked(where)}DELETE FROM discovery_entries d USING locked "
            f"WHERE {_JOIN_LOCKED}")


def _update_locked(where: str, assignments: str) -> str:
    return (f"{_locked(where)}UPDATE discovery_entries d SET {assignments} FROM locked "
            f"WHERE {_JOIN_LOCKED}")


_REMOVE_IN = _delete_locked("gbid = $2 AND participant_id = ANY($1::text[])")
_TOUCH_ALL = _update_locked("cluster_controller_id = $3",
                            "last_seen_ms = $1, expiry_ms = $2")
_TOUCH_SOME = _update_locked("cluster_controller_id = $3 AND participant_id = ANY($4::text[])",
                             "last_seen_ms = $1, expiry_ms = $2")
_REMOVE_STALE = _delete_locked(STALE.format(cc="$1", before="$2"))
_PURGE_EXPIRED = _delete_locked(EXPIRED.format(now="$1"))


async def _reset(conn: asyncpg.Connection) -> None:
    """Nothing to reset when a connection goes back to the pool: the store keeps no session
    state (no SET, LISTEN, cursors or session advisory locks), and asyncpg itself rolls back a
    transaction left open. Saves the default reset query, a round trip per operation."""


def _rows_affected(status: str) -> int:
    """The row count of a command status such as ``"DELETE 3"`` or ``"UPDATE 0"``."""
    return int(status.rsplit(" ", 1)[-1])


def _entry(record: asyncpg.Record) -> StoredEntry:
    return StoredEntry(*record)


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


class PostgresStore:
    """The GCD's store in the PostgreSQL database at ``dsn`` (a ``postgresql://`` URL).

    ``open()`` creates the pool (``min_size`` to ``max_size`` connections) and the schema.
    ``connect_timeout`` bounds establishing a connection, ``command_timeout`` every statement,
    ``acquire_timeout`` waiting for a connection of the pool (busy pool, or connecting) - all in
    seconds."""

    def __init__(self, dsn: str, *, min_size: int = 1, max_size: int = 10,
                 connect_timeout: float = 5.0, command_timeout: float = 5.0,
                 acquire_timeout: float = 10.0) -> None:
        self.dsn = dsn
        self.min_size = min_size
        self.max_size = max_size
        self.connect_timeout = connect_timeout
        self.command_timeout = command_timeout
        self.acquire_timeout = acquire_timeout
        self._pool: asyncpg.Pool | None = None

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
                server_settings={"application_name": "joynr-gcd"}, reset=_reset)
        except _DB_ERRORS as exc:
            raise StoreError(f"PostgreSQL ({self._where()}): cannot connect: "
                             f"{_describe(exc)}",
                             reason="timeout" if isinstance(exc, TimeoutError)
                             else "unreachable") from exc
        self._pool = pool
        try:
            await self._transaction("create the schema", self._create_schema)
        except BaseException:
            self._pool = None
            await self._close_pool(pool)
            raise

    @staticmethod
    async def _create_schema(conn: asyncpg.Connection) -> None:
        await conn.execute("SELECT pg_advisory_xact_lock($1)", _SCHEMA_LOCK_KEY)
        for statement in SCHEMA:
            await conn.execute(statement)

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

    async def _transaction(self, what: str, fn: Callable[[asyncpg.Connection], Awaitable[T]]
                           ) -> T:
        """``fn`` in one transaction on a connection of the pool; failures as StoreError.

        Runs ``fn`` again when PostgreSQL aborted the transaction for a deadlock or a
        serialization failure, and once more when the connection failed before the
        transaction began (a pooled connection the server closed, e.g. by a restart): in
        both cases nothing of it was written."""
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
                    async with conn.transaction():
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
                stale = not begun and not isinstance(exc, TimeoutError | ConnectionRefusedError)
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
        # one row per key (INSERT ... ON CONFLICT cannot change a row twice in one statement),
        # in key order: the lock order of every statement
        rows = rows_to_add(entries)
        if not rows:
            await self._transaction("add", self._nothing)
            return
        # one array per column (not dataclasses.astuple: it deep-copies, 25 us a row)
        columns: list[list[Any]] = [[getattr(e, name) for e in rows] for name in COLUMNS]

        async def run(conn: asyncpg.Connection) -> None:
            await conn.execute(_UPSERT, *columns)

        await self._transaction(f"add of {len(rows)} rows", run)

    @staticmethod
    async def _nothing(conn: asyncpg.Connection) -> None:
        """An empty transaction: the store answers like for any other call (open, reachable)."""

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

    async def remove(self, participant_id: str, gbids: Sequence[str], now_ms: int
                     ) -> RemoveOutcome:
        async def run(conn: asyncpg.Connection) -> RemoveOutcome:
            # lock the participant's rows: a concurrent remove/touch/add of them waits, so the
            # decision still holds when the rows are deleted
            registered = [r[0] for r in await conn.fetch(_LOCK_PARTICIPANT, participant_id,
                                                         now_ms)]
            decision = decide_remove(registered, gbids)
            if decision.delete:
                await conn.execute(_REMOVE_GBIDS, participant_id, list(decision.delete))
            return decision.outcome

        return await self._transaction("remove", run)

    async def remove_in(self, participant_ids: Sequence[str], gbid: str) -> int:
        targets = list(distinct(participant_ids))

        async def run(conn: asyncpg.Connection) -> int:
            return _rows_affected(await conn.execute(_REMOVE_IN, targets, gbid))

        return await self._transaction("remove_in", run)

    async def touch(self, cluster_controller_id: str, participant_ids: Sequence[str] | None,
                    last_seen_ms: int, expiry_ms: int) -> int:
        targets = None if participant_ids is None else list(distinct(participant_ids))

        async def run(conn: asyncpg.Connection) -> int:
            if targets is None:
                status = await conn.execute(_TOUCH_ALL, last_seen_ms, expiry_ms,
                                            cluster_controller_id)
            else:
                status = await conn.execute(_TOUCH_SOME, last_seen_ms, expiry_ms,
                                            cluster_controller_id, targets)
            return _rows_affected(status)

        return await self._transaction("touch", run)

    async def remove_stale(self, cluster_controller_id: str, max_last_seen_ms: int) -> int:
        async def run(conn: asyncpg.Connection) -> int:
            return _rows_affected(await conn.execute(_REMOVE_STALE, cluster_controller_id,
                                                     max_last_seen_ms))

        return await self._transaction("remove_stale", run)

    async def purge_expired(self, now_ms: int) -> int:
        async def run(conn: asyncpg.Connection) -> int:
            return _rows_affected(await conn.execute(_PURGE_EXPIRED, now_ms))

        return await self._transaction("purge_expired", run)

    async def count(self) -> int:
        async def run(conn: asyncpg.Connection) -> int:
            return int(await conn.fetchval("SELECT count(*) FROM discovery_entries"))

        return await self._transaction("count", run)
