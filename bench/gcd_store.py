"""GCD store: add throughput and lookup latency with N stored entries, for SQLite and
PostgreSQL, beside the same SQL run directly on the same database.

Usage: .venv/bin/python bench/gcd_store.py [--entries N] [--batch B] [--adds A]
           [--lookups L] [--rounds R] [--stores sqlite,postgres] [--no-analyze]

For each store, in a fresh database (SQLite: a file in a temporary directory; PostgreSQL: a
throwaway server, pyjoynr/testing/postgres.PostgresServer, started by this script with its
durability switched off - fsync, synchronous_commit, full_page_writes):

- fill: N entries in batches of B rows (default 10,000), alternating between the project
  (``GcdStore.add`` of StoredEntry objects) and the raw path (the store's own upsert statement
  on a connection of our own: sqlite3 ``executemany`` in one transaction; asyncpg ``execute``
  of the ``unnest`` upsert), so both fill the same table under the same conditions; rows/s of
  each over the whole fill. The entries: participantIds like uuid4 strings (in random order),
  10 entries (``--per-key``) per (domain, interface) over 5 interfaces, 1,000 cluster
  controllers, all in GBID joynrdefaultgbid (valid GBIDs: it and gbid-2), expiring in 6 weeks;
- single adds: A sequential ``GcdProvider.add_in_backends(entry, [gbid])`` of new participants
  beside A one-row upserts of plain SQL (autocommit), alternating in chunks of 100; entries/s;
- lookups, in R alternating rounds of L calls of each path, with fresh random keys:
  ``GcdProvider.lookup_in_backends([domain], interface, [gbid])`` (10 entries back),
  ``GcdStore.find`` alone and the raw SELECT (the store's own statement, its rows fetched);
  ``GcdProvider.lookup_participant_in(pid, [gbid])``, ``GcdStore.find_participant`` and the
  raw SELECT. p50 / p99 in microseconds, the best of the R rounds (the machine is
  noisy). Beside them, to split the store's overhead, the raw find with one ingredient of the
  store added: SQLite in BEGIN IMMEDIATE .. COMMIT, or in a worker thread; PostgreSQL in a
  transaction, or on a connection of an asyncpg pool (acquire .. release, without a reset
  query, like the store's pool).

Ratios are costs: project / raw time per operation (for rates: raw rate / project rate), so
2.0x means the store + provider layers take twice the time of the bare query. The raw paths
run the statements on the event loop's thread (sqlite3 blocks it; asyncpg does not): that is
the cost of the query itself, without the layers. After the lookups the query plans are
printed (SQLite: EXPLAIN QUERY PLAN; PostgreSQL: EXPLAIN (ANALYZE, BUFFERS) of one lookup).
After the fill the PostgreSQL table gets a VACUUM ANALYZE: the steady state of a table that
autovacuum has analyzed (it had not, 90 s after a 1,000,000-row fill, in a trial run);
``--no-analyze`` leaves it as the fill left it, without statistics (see the plan of
find_participant then). SQLite is never analyzed (the store does not).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import hashlib
import math
import random
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any, Protocol

import asyncpg
import uvloop
from _common import Latency, help_text, setup_logging

from pyjoynr.gcd.postgres_store import PostgresStore
from pyjoynr.gcd.provider import GcdProvider
from pyjoynr.gcd.sqlite_store import SqliteStore
from pyjoynr.gcd.store import COLUMNS, GcdStore, StoredEntry
from pyjoynr.programming.discovery_types import (
    DEFAULT_PROVIDER_EXPIRY_MS,
    GlobalDiscoveryEntry,
    ProviderQos,
    ProviderScope,
    Version,
)
from pyjoynr.programming.system_interfaces import address_to_json
from pyjoynr.runtime.addresses import MqttAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.testing.postgres import PostgresServer

GBID = "joynrdefaultgbid"
VALID_GBIDS = (GBID, "gbid-2")
INTERFACES = 5
CLUSTER_CONTROLLERS = 1_000
#: a prime: scatters consecutive entries over the (domain, interface) keys
KEY_STRIDE = 1_000_003
CHUNK = 100  # single adds alternate in chunks of this many

Row = tuple[Any, ...]
#: a raw find(domain, interface_name, now)
FindCall = Callable[[str, str, int], Awaitable[object]]

# ---------------------------------------------------------------------- the raw statements
# The stores' own statements (gcd/sqlite_store.py, gcd/postgres_store.py), written out.

_COLS = ", ".join(COLUMNS)
# The raw upserts write the version columns as constants (0): the bare statement, without the
# store's version counter, tombstones and hashes (the stores compute those per write).
_VERSIONED = "version, bucket, row_hash"
SQLITE_UPSERT = (f"INSERT OR REPLACE INTO discovery_entries ({_COLS}, {_VERSIONED}) "
                 f"VALUES ({', '.join('?' * len(COLUMNS))}, 0, 0, 0)")
SQLITE_FIND = (f"SELECT {_COLS} FROM discovery_entries WHERE interface_name = ? AND domain IN "
               "(?) AND expiry_ms >= ? ORDER BY participant_id, gbid")
SQLITE_FIND_PARTICIPANT = (f"SELECT {_COLS} FROM discovery_entries WHERE participant_id = ? "
                           "AND expiry_ms >= ? ORDER BY gbid")

_PG_TYPES = {"major_version": "integer", "minor_version": "integer", "priority": "bigint",
             "supports_on_change": "boolean", "last_seen_ms": "bigint", "expiry_ms": "bigint"}
_PG_UPDATE = ("ON CONFLICT (gbid, participant_id) DO UPDATE SET "
              + ", ".join(f"{c} = EXCLUDED.{c}" for c in COLUMNS
                          if c not in ("gbid", "participant_id")))
PG_UPSERT = (f"INSERT INTO discovery_entries ({_COLS}, {_VERSIONED}) SELECT *, 0, 0, 0 "
             "FROM unnest("
             + ", ".join(f"${i}::{_PG_TYPES.get(c, 'text')}[]" for i, c in enumerate(COLUMNS, 1))
             + f") {_PG_UPDATE}")
PG_UPSERT_ONE = (f"INSERT INTO discovery_entries ({_COLS}, {_VERSIONED}) VALUES "
                 f"({', '.join(f'${i}' for i in range(1, len(COLUMNS) + 1))}, 0, 0, 0) "
                 f"{_PG_UPDATE}")
PG_FIND = (f"SELECT {_COLS} FROM discovery_entries WHERE interface_name = $1 AND "
           "domain = ANY($2::text[]) AND expiry_ms >= $3 "
           'ORDER BY participant_id COLLATE "C", gbid COLLATE "C"')
PG_FIND_PARTICIPANT = (f"SELECT {_COLS} FROM discovery_entries WHERE participant_id = $1 AND "
                       'expiry_ms >= $2 ORDER BY gbid COLLATE "C"')


# ---------------------------------------------------------------------- the entries


@dataclass(frozen=True)
class Workload:
    """Entry ``i``: a uuid-like participantId, (domain, interface) key ``i * KEY_STRIDE mod
    keys`` (so each key has ``per_key`` entries, scattered over the fill), cluster controller
    ``i mod 1000``."""

    entries: int
    per_key: int
    now: int

    @property
    def keys(self) -> int:
        return max(1, self.entries // self.per_key)

    def domain_interface(self, key: int) -> tuple[str, str]:
        return f"bench.domain.{key // INTERFACES:07d}", f"bench/Interface{key % INTERFACES}"

    @staticmethod
    def pid(i: int) -> str:
        digest = hashlib.blake2b(i.to_bytes(8, "little"), digest_size=16).digest()
        return str(uuid.UUID(bytes=digest))

    def row(self, i: int) -> Row:
        """The StoredEntry fields of entry ``i``, in COLUMNS order."""
        stride = KEY_STRIDE if math.gcd(KEY_STRIDE, self.keys) == 1 else 1
        domain, interface_name = self.domain_interface((i * stride) % self.keys)
        cc = f"bench-cc-{i % CLUSTER_CONTROLLERS:04d}"
        return (GBID, self.pid(i), domain, interface_name, 1, 0, 0, "GLOBAL", True, "[]",
                self.now, self.now + DEFAULT_PROVIDER_EXPIRY_MS, "", f"joynr/cc/{cc}", cc)

    def global_entry(self, i: int) -> GlobalDiscoveryEntry:
        row = self.row(i)
        return GlobalDiscoveryEntry(
            provider_version=Version(1, 0), domain=row[2], interface_name=row[3],
            participant_id=row[1], qos=ProviderQos(scope=ProviderScope.GLOBAL),
            last_seen_date_ms=row[10], expiry_date_ms=row[11],
            address=address_to_json(MqttAddress(GBID, row[13])))


# ---------------------------------------------------------------------- the two stores


class Backend(Protocol):
    name: str
    store: GcdStore

    async def open(self) -> None: ...
    async def close(self) -> None: ...
    async def raw_add(self, rows: list[Row]) -> None: ...
    async def raw_add_one(self, row: Row) -> None: ...
    async def raw_find(self, domain: str, interface_name: str, now: int) -> Sequence[Any]: ...
    async def raw_find_participant(self, pid: str, now: int) -> Sequence[Any]: ...
    def find_variants(self) -> dict[str, FindCall]: ...
    async def after_fill(self, analyze: bool) -> str: ...
    async def plans(self, domain: str, interface_name: str, pid: str) -> list[str]: ...
    async def describe(self) -> str: ...


class SqliteBackend:
    """SqliteStore on a file; raw: a second sqlite3 connection to it (WAL, synchronous=NORMAL
    as the store's), used on the event loop's thread."""

    name = "SQLite"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.store = SqliteStore(path)
        self._conn: sqlite3.Connection | None = None
        self._executor: ThreadPoolExecutor | None = None

    @property
    def conn(self) -> sqlite3.Connection:
        assert self._conn is not None
        return self._conn

    async def open(self) -> None:
        await self.store.open()
        self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA busy_timeout=5000")
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bench-sqlite")

    async def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown()
        if self._conn is not None:
            self._conn.close()
        await self.store.close()

    async def raw_add(self, rows: list[Row]) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.executemany(SQLITE_UPSERT, rows)
        self.conn.execute("COMMIT")

    async def raw_add_one(self, row: Row) -> None:
        self.conn.execute(SQLITE_UPSERT, row)

    async def raw_find(self, domain: str, interface_name: str, now: int) -> Sequence[Any]:
        return self.conn.execute(SQLITE_FIND, (interface_name, domain, now)).fetchall()

    async def raw_find_participant(self, pid: str, now: int) -> Sequence[Any]:
        return self.conn.execute(SQLITE_FIND_PARTICIPANT, (pid, now)).fetchall()

    def find_variants(self) -> dict[str, FindCall]:
        """The raw find with what the store adds, one thing at a time."""
        conn = self.conn

        async def in_transaction(domain: str, interface_name: str, now: int) -> object:
            conn.execute("BEGIN IMMEDIATE")
            rows = conn.execute(SQLITE_FIND, (interface_name, domain, now)).fetchall()
            conn.execute("COMMIT")
            return rows

        async def in_thread(domain: str, interface_name: str, now: int) -> object:
            return await asyncio.get_running_loop().run_in_executor(
                self._executor,
                lambda: conn.execute(SQLITE_FIND, (interface_name, domain, now)).fetchall())

        return {"+ BEGIN IMMEDIATE/COMMIT": in_transaction, "+ worker thread": in_thread}

    async def after_fill(self, analyze: bool) -> str:
        return "no ANALYZE (the store never runs it, so a SQLite GCD has no statistics)"

    async def plans(self, domain: str, interface_name: str, pid: str) -> list[str]:
        lines = []
        for name, query, args in (
                ("find", SQLITE_FIND, (interface_name, domain, now_ms())),
                ("find_participant", SQLITE_FIND_PARTICIPANT, (pid, now_ms()))):
            steps = [r[3] for r in self.conn.execute(f"EXPLAIN QUERY PLAN {query}", args)]
            lines.append(f"{name}: {' | '.join(steps)}")
        return lines

    async def describe(self) -> str:
        size = sum(p.stat().st_size for p in self.path.parent.glob(f"{self.path.name}*"))
        return f"SQLite {sqlite3.sqlite_version}, file of {size / 2**20:,.0f} MB (with WAL)"


async def _no_reset(conn: asyncpg.Connection) -> None:
    """A pool connection needs no reset here (and the store's pool does none either)."""


class PostgresBackend:
    """PostgresStore (its pool) on a database; raw: one asyncpg connection of our own."""

    name = "PostgreSQL"

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.store = PostgresStore(dsn)
        self._conn: asyncpg.Connection | None = None
        self._pool: asyncpg.Pool | None = None

    @property
    def conn(self) -> asyncpg.Connection:
        assert self._conn is not None
        return self._conn

    async def open(self) -> None:
        await self.store.open()
        self._conn = await asyncpg.connect(self.dsn)
        # as the store's pool: no reset query when a connection goes back
        self._pool = await asyncpg.create_pool(self.dsn, min_size=1, max_size=1,
                                               reset=_no_reset)

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
        if self._conn is not None:
            await self._conn.close()
        await self.store.close()

    async def raw_add(self, rows: list[Row]) -> None:
        await self.conn.execute(PG_UPSERT, *(list(column) for column in zip(*rows, strict=True)))

    async def raw_add_one(self, row: Row) -> None:
        await self.conn.execute(PG_UPSERT_ONE, *row)

    async def raw_find(self, domain: str, interface_name: str, now: int) -> Sequence[Any]:
        return await self.conn.fetch(PG_FIND, interface_name, [domain], now)

    async def raw_find_participant(self, pid: str, now: int) -> Sequence[Any]:
        return await self.conn.fetch(PG_FIND_PARTICIPANT, pid, now)

    def find_variants(self) -> dict[str, FindCall]:
        """The raw find with what the store adds, one thing at a time."""
        conn, pool = self.conn, self._pool
        assert pool is not None

        async def in_transaction(domain: str, interface_name: str, now: int) -> object:
            async with conn.transaction():
                return await conn.fetch(PG_FIND, interface_name, [domain], now)

        async def through_pool(domain: str, interface_name: str, now: int) -> object:
            async with pool.acquire() as pooled:
                return await pooled.fetch(PG_FIND, interface_name, [domain], now)

        return {"+ BEGIN/COMMIT": in_transaction, "+ pool acquire/release": through_pool}

    async def after_fill(self, analyze: bool) -> str:
        if not analyze:
            return "no ANALYZE after the fill (--no-analyze): as autovacuum left it"
        started = time.perf_counter()
        await self.conn.execute("VACUUM ANALYZE discovery_entries")
        return (f"VACUUM ANALYZE after the fill ({time.perf_counter() - started:.1f} s), "
                "as autovacuum does eventually")

    async def plans(self, domain: str, interface_name: str, pid: str) -> list[str]:
        lines = []
        for name, query, args in (
                ("find", PG_FIND, (interface_name, [domain], now_ms())),
                ("find_participant", PG_FIND_PARTICIPANT, (pid, now_ms()))):
            # a custom plan for these values; the prepared statements may use a generic one
            rows = await self.conn.fetch(f"EXPLAIN (ANALYZE, BUFFERS) {query}", *args)
            lines.append(f"{name}:")
            lines += [f"    {r[0]}" for r in rows]
        analyzed = await self.conn.fetchrow(
            "SELECT last_analyze, last_autoanalyze, n_live_tup FROM pg_stat_user_tables "
            "WHERE relname = 'discovery_entries'")
        lines.append(f"statistics: last ANALYZE {analyzed[0]}, last autoanalyze {analyzed[1]}, "
                     f"live rows {analyzed[2]:,}")
        return lines

    async def describe(self) -> str:
        server = await self.conn.fetchval("SHOW server_version")
        table = await self.conn.fetchval("SELECT pg_table_size('discovery_entries')")
        indexes = await self.conn.fetchval("SELECT pg_indexes_size('discovery_entries')")
        buffers = await self.conn.fetchval("SHOW shared_buffers")
        return (f"PostgreSQL {server} (asyncpg {version('asyncpg')}, shared_buffers {buffers}), "
                f"table {table / 2**20:,.0f} MB + indexes {indexes / 2**20:,.0f} MB")


# ---------------------------------------------------------------------- measuring


@dataclass
class Figures:
    fill_s: float = 0.0
    fill_rows: dict[str, int] | None = None
    fill_time: dict[str, float] | None = None
    adds: dict[str, float] | None = None  # path -> entries/s
    latency: dict[str, Latency] | None = None
    prepared: str = ""


async def fill(backend: Backend, work: Workload, batch: int) -> Figures:
    """Alternate project and raw batches; rows/s of each over the whole fill."""
    rows = {"project": 0, "raw": 0}
    seconds = {"project": 0.0, "raw": 0.0}
    started = time.perf_counter()
    clock = time.perf_counter
    next_report = 0.1
    for number, start in enumerate(range(0, work.entries, batch)):
        indexes = range(start, min(start + batch, work.entries))
        data = [work.row(i) for i in indexes]
        path = "project" if number % 2 == 0 else "raw"
        if path == "project":
            entries = [StoredEntry(*row) for row in data]
            gc.collect()
            t0 = clock()
            await backend.store.add(entries)
        else:
            gc.collect()
            t0 = clock()
            await backend.raw_add(data)
        seconds[path] += clock() - t0
        rows[path] += len(data)
        done = (start + len(data)) / work.entries
        if done >= next_report and work.entries >= 200_000:
            print(f"  ... {start + len(data):,} rows ({time.perf_counter() - started:.0f} s)",
                  file=sys.stderr, flush=True)
            next_report += 0.1
    return Figures(fill_s=time.perf_counter() - started, fill_rows=rows, fill_time=seconds)


async def single_adds(backend: Backend, provider: GcdProvider, work: Workload, adds: int
                      ) -> dict[str, float]:
    """``adds`` new entries through each path, alternating chunks; entries/s of each."""
    seconds = {"project": 0.0, "raw": 0.0}
    clock = time.perf_counter
    for chunk_start in range(0, adds, CHUNK):
        chunk = range(chunk_start, min(chunk_start + CHUNK, adds))
        entries = [work.global_entry(work.entries + i) for i in chunk]
        rows = [work.row(work.entries + adds + i) for i in chunk]
        gc.collect()
        t0 = clock()
        for entry in entries:
            await provider.add_in_backends(entry, [GBID])
        t1 = clock()
        for row in rows:
            await backend.raw_add_one(row)
        t2 = clock()
        seconds["project"] += t1 - t0
        seconds["raw"] += t2 - t1
    return {path: adds / s for path, s in seconds.items()}


async def timed(call: Callable[[], Awaitable[object]], n: int) -> Latency:
    samples = [0] * n
    clock = time.perf_counter_ns
    for i in range(n):
        t0 = clock()
        await call()
        samples[i] = clock() - t0
    return Latency.of(samples)


def lookup_paths(backend: Backend, provider: GcdProvider, work: Workload, rng: random.Random
                 ) -> dict[str, Callable[[], Awaitable[object]]]:
    """The lookup paths, each drawing a fresh random key per call."""
    keys = work.keys

    def key() -> tuple[str, str]:
        return work.domain_interface(rng.randrange(keys))

    def pid() -> str:
        return work.pid(rng.randrange(work.entries))

    async def lookup_in_backends() -> object:
        domain, interface_name = key()
        return await provider.lookup_in_backends([domain], interface_name, [GBID])

    async def find() -> object:
        domain, interface_name = key()
        return await backend.store.find([domain], interface_name, now_ms())

    async def raw_find() -> object:
        domain, interface_name = key()
        return await backend.raw_find(domain, interface_name, now_ms())

    async def lookup_participant_in() -> object:
        return await provider.lookup_participant_in(pid(), [GBID])

    async def find_participant() -> object:
        return await backend.store.find_participant(pid(), now_ms())

    async def raw_find_participant() -> object:
        return await backend.raw_find_participant(pid(), now_ms())

    def variant(call: FindCall) -> Callable[[], Awaitable[object]]:
        async def run() -> object:
            domain, interface_name = key()
            return await call(domain, interface_name, now_ms())

        return run

    paths = {"lookup_in_backends": lookup_in_backends, "find": find, "raw find": raw_find}
    paths.update({f"raw find {name}": variant(call)
                  for name, call in backend.find_variants().items()})
    paths.update({"lookup_participant_in": lookup_participant_in,
                  "find_participant": find_participant,
                  "raw find_participant": raw_find_participant})
    return paths


async def check_answers(backend: Backend, provider: GcdProvider, work: Workload) -> list[str]:
    """Problems with what the lookups return (none expected)."""
    problems = []
    domain, interface_name = work.domain_interface(work.keys // 2)
    found = await provider.lookup_in_backends([domain], interface_name, [GBID])
    raw = await backend.raw_find(domain, interface_name, now_ms())
    if len(found) != len(raw) or not work.per_key <= len(found) <= work.per_key + 1:
        problems.append(f"lookup_in_backends returned {len(found)} entries, raw {len(raw)}, "
                        f"expected {work.per_key}")
    pid = work.pid(work.entries // 3)
    entry = await provider.lookup_participant_in(pid, [GBID])
    if entry.participant_id != pid:
        problems.append(f"lookup_participant_in({pid}) returned {entry.participant_id}")
    return problems


async def lookups(backend: Backend, provider: GcdProvider, work: Workload, n: int,
                  rounds: int) -> dict[str, Latency]:
    rng = random.Random(4711)
    paths = lookup_paths(backend, provider, work, rng)
    print(f"  lookup paths, in this order: {', '.join(paths)}")
    for call in paths.values():  # warm up: statements prepared, caches
        await timed(call, max(10, n // 10))
    best: dict[str, Latency] = {}
    for number in range(1, rounds + 1):
        figures = []
        for name, call in paths.items():
            gc.collect()
            latency = await timed(call, n)
            best[name] = latency.best(best.get(name))
            figures.append(f"{latency.p50_us:.0f}/{latency.p99_us:.0f}")
        print(f"  round {number}, p50/p99 us: {'  '.join(figures)}", flush=True)
    return best


# ---------------------------------------------------------------------- reporting


def table_row(name: str, project: str, raw: str, ratio: float) -> str:
    return f"  {name:<52} {project:>16} {raw:>16} {ratio:8.2f}x"


def report(backend_name: str, description: str, work: Workload, batch: int,
           figures: Figures) -> None:
    assert figures.fill_rows and figures.fill_time and figures.adds and figures.latency
    print(f"=== {backend_name}: {work.entries:,} entries; {description} ===")
    print(f"  {'figure':<52} {'project':>16} {'raw SQL':>16} {'ratio':>9}")
    rate = {p: figures.fill_rows[p] / figures.fill_time[p] for p in ("project", "raw")}
    print(table_row(f"add, batches of {batch:,} (GcdStore.add), rows/s",
                    f"{rate['project']:,.0f}", f"{rate['raw']:,.0f}",
                    rate["raw"] / rate["project"]))
    adds = figures.adds
    print(table_row("add one entry (GcdProvider.add_in_backends), entries/s",
                    f"{adds['project']:,.0f}", f"{adds['raw']:,.0f}",
                    adds["raw"] / adds["project"]))
    lat = figures.latency
    for query, layers in (("find", ("lookup_in_backends", "find")),
                          ("find_participant", ("lookup_participant_in", "find_participant"))):
        raw = lat[f"raw {query}"]
        provider, store = (lat[name] for name in layers)
        what = (f"GcdProvider.{layers[0]}" + (f" ({work.per_key} entries)"
                                              if query == "find" else ""))
        for label, figure in ((what, provider), (f"  GcdStore.{layers[1]} alone", store)):
            for stat in ("p50", "p99"):
                project_us = getattr(figure, f"{stat}_us")
                raw_us = getattr(raw, f"{stat}_us")
                print(table_row(f"{label} {stat}, us", f"{project_us:,.1f}", f"{raw_us:,.1f}",
                                project_us / raw_us))
    raw = lat["raw find"]
    for name, figure in lat.items():
        if name.startswith("raw find "):
            print(table_row(f"  ({name}) p50, us",
                            f"{figure.p50_us:,.1f}", f"{raw.p50_us:,.1f}",
                            figure.p50_us / raw.p50_us))
    print(f"  fill of {work.entries:,} rows took {figures.fill_s:.1f} s "
          f"({figures.fill_rows['project']:,} rows through the store, "
          f"{figures.fill_rows['raw']:,} raw); {figures.prepared}")


async def bench_backend(backend: Backend, args: argparse.Namespace) -> None:
    work = Workload(args.entries, args.per_key, now_ms())
    await backend.open()
    try:
        provider = GcdProvider(backend.store, GBID, VALID_GBIDS)
        print(f"--- {backend.name}: filling {work.entries:,} entries ...", flush=True)
        figures = await fill(backend, work, args.batch)
        figures.prepared = await backend.after_fill(args.analyze)
        figures.adds = await single_adds(backend, provider, work, args.adds)
        for problem in await check_answers(backend, provider, work):
            print(f"ERROR: {problem}")
        figures.latency = await lookups(backend, provider, work, args.lookups, args.rounds)
        report(backend.name, await backend.describe(), work, args.batch, figures)
        domain, interface_name = work.domain_interface(work.keys // 3)
        print("  query plans:")
        for line in await backend.plans(domain, interface_name, work.pid(7)):
            print(f"    {line}")
    finally:
        await backend.close()


async def run(args: argparse.Namespace) -> int:
    print(f"GCD store with {args.entries:,} entries: project (GcdProvider / GcdStore) beside "
          f"the same SQL on the same database; {args.lookups:,} lookups per path per round, "
          f"best of {args.rounds} rounds; Python {sys.version.split()[0]}, "
          f"uvloop {version('uvloop')}")
    if "sqlite" in args.stores:
        with tempfile.TemporaryDirectory(prefix="bench-gcd-") as directory:
            await bench_backend(SqliteBackend(Path(directory) / "gcd.sqlite"), args)
    if "postgres" in args.stores:
        async with PostgresServer() as pg:
            dsn = await pg.create_database("gcd_bench")
            await bench_backend(PostgresBackend(dsn), args)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=help_text(__doc__))
    parser.add_argument("--entries", type=int, default=100_000, help="entries stored")
    parser.add_argument("--batch", type=int, default=10_000, help="rows per add() in the fill")
    parser.add_argument("--per-key", type=int, default=10,
                        help="entries per (domain, interface): what lookup_in_backends returns")
    parser.add_argument("--adds", type=int, default=2_000,
                        help="single adds of each path (add_in_backends / one-row upsert)")
    parser.add_argument("--lookups", type=int, default=1_000,
                        help="lookups of each path per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each (alternating)")
    parser.add_argument("--stores", default="sqlite,postgres",
                        help="comma-separated: sqlite, postgres")
    parser.add_argument("--no-analyze", dest="analyze", action="store_false",
                        help="no VACUUM ANALYZE of the PostgreSQL table after the fill")
    args = parser.parse_args()
    args.stores = {s.strip() for s in args.stores.split(",") if s.strip()}
    if not args.stores <= {"sqlite", "postgres"} or not args.stores:
        parser.error("--stores: sqlite and/or postgres")
    if (args.entries < 2 * args.batch or args.batch < 1 or args.per_key < 1 or args.adds < 1
            or args.lookups < 1 or args.rounds < 1):
        parser.error("need --entries >= 2 * --batch, and positive numbers")
    setup_logging()
    return uvloop.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
