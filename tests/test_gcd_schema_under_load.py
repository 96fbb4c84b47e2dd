"""A GCD instance that starts, restarts or migrates the database while the other instances write.

``PostgresStore.open()`` must neither deadlock with the writers of the other instances nor stall
them: on a current schema it only reads the catalogs (no DDL, no table lock); a change (a new
database, a migration, a missing or invalid index) is serialised between instances and cannot
cross the writers' lock order. On the session's PostgreSQL server, whose log is searched for
deadlocks; every instance is a PostgresStore of its own (its own pool), as in a GCD cluster.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from pathlib import Path

import asyncpg
import pytest

from pyjoynr.gcd.postgres_store import PostgresStore
from pyjoynr.gcd.store import COLUMNS, INDEXES, StoreError
from pyjoynr.testing.postgres import PostgresServer
from tests.support.gcd_stores import fresh_postgres_dsn, shared_postgres
from tests.test_gcd_migration import ROWS, previous_version_database
from tests.test_gcd_postgres import LATER, NOW, row

pytestmark = pytest.mark.network

#: the stated bound: no write of another instance may take longer while an instance starts,
#: restarts, migrates the database or builds an index (a write usually takes milliseconds; a
#: deadlock costs at least PostgreSQL's deadlock_timeout, 1 s, and a blocked schema change the
#: statement timeout, 5 s)
WRITE_BOUND_S = 1.5
#: an instance starting on a current schema, past writers' open transactions
START_BOUND_S = 2.0
INDEX_NAMES = [s.split(" EXISTS ")[1].split()[0] for s in INDEXES]




class ServerLog:
    """What the PostgreSQL server logs from now on."""

    def __init__(self, server: PostgresServer) -> None:
        self.path = server.log
        self.start = self.path.stat().st_size

    def lines(self, containing: str) -> list[str]:
        with self.path.open("rb") as log:
            log.seek(self.start)
            text = log.read().decode(errors="replace")
        return [line for line in text.splitlines() if containing in line]


class Writers:
    """Writer tasks, each on a store (an instance): adds a participant in two GBIDs, touches
    it, removes every other one again, until stopped. Keeps the slowest write, every failure
    and how many writes committed (each took one version)."""

    def __init__(self) -> None:
        self.slowest = 0.0
        self.committed = 0
        self.failures: list[BaseException] = []
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def start(self, store: PostgresStore, name: str) -> None:
        self._tasks.append(asyncio.create_task(self._run(store, name)))

    async def stop(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks)

    async def _timed(self, write: Awaitable[object]) -> None:
        began = time.monotonic()
        try:
            await asyncio.wait_for(write, 20)
            self.committed += 1
        except (StoreError, TimeoutError) as exc:
            self.failures.append(exc)
        finally:
            self.slowest = max(self.slowest, time.monotonic() - began)

    async def _run(self, store: PostgresStore, name: str) -> None:
        cc = f"cc-{name}"
        for i in range(100_000):  # bounded; stopped long before
            if self._stop.is_set():
                return
            pid = f"{name}-{i}"
            await self._timed(store.add([row(pid, cc=cc), row(pid, "g2", cc=cc)]))
            await self._timed(store.touch(cc, [pid], NOW + i, LATER + i))
            if i % 2:
                await self._timed(store.remove(pid, ["g1", "g2"], NOW))


async def index_state(dsn: str) -> dict[str, tuple[bool, str]]:
    """Each index of the database: (valid, definition)."""
    conn = await asyncpg.connect(dsn)
    try:
        return {r[0]: (r[1], r[2]) for r in await conn.fetch(
            "SELECT c.relname, i.indisvalid AND i.indisready, pg_get_indexdef(c.oid) "
            "FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'")}
    finally:
        await conn.close()


async def test_a_start_on_a_current_schema_passes_open_writer_transactions(
        request: pytest.FixtureRequest) -> None:
    """The fault seen: one writer between its statements (its tombstone delete done, not
    committed) made a starting instance hold the entries table while waiting for the
    tombstones, stalling every other writer until its statement timed out (5 s). A start on a
    current schema takes no lock a writer holds or waits for: (1) past the tombstones held,
    with another instance writing; (2) past the meta row held too; (3) past every table
    locked against all but readers (no DDL, no table lock)."""
    dsn = await fresh_postgres_dsn(request.config)
    writer = PostgresStore(dsn, max_size=2)
    await writer.open()  # creates the schema
    tombstones = await asyncpg.connect(dsn)
    meta = await asyncpg.connect(dsn)
    try:
        await writer.add([row("p0")])
        await tombstones.execute("BEGIN")
        await tombstones.execute("DELETE FROM discovery_tombstones WHERE gbid = 'none'")

        # 1. another instance writes while this one starts
        starting = PostgresStore(dsn)
        writes = Writers()
        writes.start(writer, "w")
        began = time.monotonic()
        try:
            await asyncio.wait_for(starting.open(), 20)
            took = time.monotonic() - began
        finally:
            await writes.stop()
            await starting.close()
        assert took < START_BOUND_S, f"the start took {took:.2f} s"
        assert writes.failures == []
        assert writes.slowest < WRITE_BOUND_S, f"a write took {writes.slowest:.2f} s"

        # 2. a writer also holds the meta row (has taken its version, not committed)
        await meta.execute("BEGIN")
        await meta.execute("UPDATE discovery_meta SET version = version + 1 WHERE id = 1")
        again = PostgresStore(dsn)
        began = time.monotonic()
        try:
            await asyncio.wait_for(again.open(), 20)
            took = time.monotonic() - began
            # nobody waits for a lock of the started instance
            waiting = await tombstones.fetchval(
                "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                "WHERE NOT l.granted AND a.datname = current_database()")
        finally:
            await again.close()
        assert took < START_BOUND_S, f"the start took {took:.2f} s"
        assert waiting == 0
        await meta.execute("ROLLBACK")
        await tombstones.execute("ROLLBACK")

        # 3. no DDL, no table lock: a start passes tables locked against all but readers
        await tombstones.execute("BEGIN")
        await tombstones.execute("LOCK TABLE discovery_meta IN EXCLUSIVE MODE")
        await tombstones.execute("LOCK TABLE discovery_tombstones, discovery_entries "
                                 "IN ACCESS EXCLUSIVE MODE")
        third = PostgresStore(dsn)
        began = time.monotonic()
        try:
            await asyncio.wait_for(third.open(), 20)
            took = time.monotonic() - began
        finally:
            await third.close()
        assert took < START_BOUND_S, f"the start took {took:.2f} s"
        await tombstones.execute("ROLLBACK")
    finally:
        await tombstones.close()
        await meta.close()
        await writer.close()
    assert await index_state(dsn) == await index_state(await fresh_schema(request))


async def fresh_schema(request: pytest.FixtureRequest) -> str:
    """A new database with the store's schema."""
    dsn = await fresh_postgres_dsn(request.config)
    store = PostgresStore(dsn, min_size=1, max_size=1)
    await store.open()
    await store.close()
    return dsn


async def test_an_instance_restarts_under_the_write_load_of_others_without_a_deadlock(
        request: pytest.FixtureRequest) -> None:
    server = await shared_postgres(request.config)
    dsn = await fresh_postgres_dsn(request.config)
    others = [PostgresStore(dsn, max_size=4, application_name=f"joynr-gcd-w{i}")
              for i in range(4)]
    await others[0].open()
    await asyncio.gather(*(s.open() for s in others[1:]))
    server_log = ServerLog(server)
    writers = Writers()
    for i in range(12):  # 12 writers on 4 instances
        writers.start(others[i % 4], f"w{i}")
    failed_starts: list[StoreError] = []
    restarting = PostgresStore(dsn, max_size=2, application_name="joynr-gcd-restarting")
    try:
        await asyncio.sleep(0.3)
        for restart in range(10):
            try:
                await restarting.open()
            except StoreError as exc:
                failed_starts.append(exc)
                continue
            try:
                await restarting.add([row(f"restart-{restart}", cc="cc-restarting")])
            finally:
                await restarting.close()
            await asyncio.sleep(0.2)
    finally:
        await writers.stop()
        await asyncio.gather(*(s.close() for s in others))
    assert server_log.lines("deadlock detected") == []
    assert failed_starts == []
    assert writers.failures == []
    assert writers.slowest < WRITE_BOUND_S, f"a write took {writers.slowest:.2f} s"
    assert writers.committed > 100  # they did write all along


async def test_instances_starting_on_a_previous_version_database_migrate_it_once(
        tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """A rolling upgrade: instances of the previous version go on writing (rows without
    versions) while six of this version start together; one migrates, the others wait for it
    and write as soon as they have started, while the later ones still start."""
    server = await shared_postgres(request.config)
    first, _ = await previous_version_database("postgres", tmp_path, request.config)
    assert isinstance(first, PostgresStore)
    dsn = first.dsn
    server_log = ServerLog(server)
    stop = asyncio.Event()
    insert = (f"INSERT INTO discovery_entries ({', '.join(COLUMNS)}) VALUES "
              f"({', '.join(f'${i}' for i in range(1, len(COLUMNS) + 1))})")

    async def previous_version_writer(name: str) -> tuple[int, BaseException | None]:
        """Rows of the previous version until the migration makes them impossible."""
        conn = await asyncpg.connect(dsn)
        try:
            for i in range(100_000):  # bounded; ends with the migration
                if stop.is_set():
                    return i, None
                entry = row(f"{name}-{i}", cc="cc-old")
                try:
                    await conn.execute(insert, *(getattr(entry, c) for c in COLUMNS))
                except asyncpg.NotNullViolationError as exc:  # migrated: rows need versions
                    return i, exc
            return 100_000, None
        finally:
            await conn.close()

    old_writers = [asyncio.create_task(previous_version_writer(f"old{i}")) for i in range(2)]
    stores = [PostgresStore(dsn, max_size=3, application_name=f"joynr-gcd-new{i}")
              for i in range(6)]
    writers = Writers()

    async def start(k: int) -> None:
        await stores[k].open()
        for j in range(2):
            writers.start(stores[k], f"new{k}-{j}")

    try:
        await asyncio.sleep(0.2)
        started = await asyncio.gather(*(start(k) for k in range(6)), return_exceptions=True)
        await asyncio.sleep(1.0)
    finally:
        stop.set()
        await writers.stop()
        old = await asyncio.gather(*old_writers)
    try:
        assert [s for s in started if s is not None] == []
        assert server_log.lines("deadlock detected") == []
        assert writers.failures == []
        assert writers.slowest < WRITE_BOUND_S, f"a write took {writers.slowest:.2f} s"
        # the previous version wrote until the migration, and not after it
        assert all(isinstance(failure, asyncpg.NotNullViolationError) for _, failure in old)
        old_rows = sum(written for written, _ in old)
        assert old_rows > 0
        # migrated once: every row of the previous version at version 1, and each write of
        # this version took one more
        check = stores[0]
        conn = await asyncpg.connect(dsn)
        try:
            migrated = await conn.fetchval(
                "SELECT count(*) FROM discovery_entries WHERE version = 1")
        finally:
            await conn.close()
        assert migrated == ROWS + old_rows
        assert await check.current_version() == 1 + writers.committed
        assert await index_state(dsn) == await index_state(await fresh_schema(request))
    finally:
        await asyncio.gather(*(s.close() for s in stores))


async def test_missing_indexes_are_built_without_stalling_writers(
        request: pytest.FixtureRequest) -> None:
    server = await shared_postgres(request.config)
    dsn = await fresh_postgres_dsn(request.config)
    others = [PostgresStore(dsn, max_size=4) for _ in range(3)]
    await others[0].open()
    await asyncio.gather(*(s.open() for s in others[1:]))
    await others[0].add([row(f"p{i:05}", f"g{i % 3}", cc=f"cc-{i % 11}") for i in range(6_000)])
    await others[0].remove_in_backends([f"p{i:05}" for i in range(0, 6_000, 3)], "g0")  # tombstones
    admin = await asyncpg.connect(dsn)
    try:
        for name in ("discovery_entries_version", "discovery_entries_bucket",
                     "discovery_tombstones_version"):
            await admin.execute(f"DROP INDEX {name}")
    finally:
        await admin.close()
    server_log = ServerLog(server)
    writers = Writers()
    for i in range(9):
        writers.start(others[i % 3], f"w{i}")
    starting = PostgresStore(dsn, max_size=2)
    try:
        await asyncio.sleep(0.3)
        await starting.open()
        await asyncio.sleep(0.3)
    finally:
        await writers.stop()
        await starting.close()
        await asyncio.gather(*(s.close() for s in others))
    assert server_log.lines("deadlock detected") == []
    assert writers.failures == []
    assert writers.slowest < WRITE_BOUND_S, f"a write took {writers.slowest:.2f} s"
    assert await index_state(dsn) == await index_state(await fresh_schema(request))


async def test_an_index_a_failed_concurrent_build_left_invalid_is_built_again(
        request: pytest.FixtureRequest) -> None:
    """A failed CREATE INDEX CONCURRENTLY leaves an invalid index of the name behind: a start
    must not take it for the index."""
    dsn = await fresh_schema(request)
    store = PostgresStore(dsn)
    await store.open()
    try:
        await store.add([row("p1"), row("p2"), row("p1", "g2")])
    finally:
        await store.close()
    admin = await asyncpg.connect(dsn)
    try:
        await admin.execute("DROP INDEX discovery_entries_cluster_controller")
        with pytest.raises(asyncpg.UniqueViolationError):
            await admin.execute("CREATE UNIQUE INDEX CONCURRENTLY "
                                "discovery_entries_cluster_controller "
                                "ON discovery_entries (cluster_controller_id)")
    finally:
        await admin.close()
    assert (await index_state(dsn))["discovery_entries_cluster_controller"][0] is False
    await store.open()
    try:
        assert len(await store.find_participant("p1", NOW)) == 2
    finally:
        await store.close()
    assert await index_state(dsn) == await index_state(await fresh_schema(request))
    assert set(INDEX_NAMES) <= set(await index_state(dsn))
