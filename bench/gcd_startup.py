"""GCD start-up at N rows: where the time to a ready index goes, its memory and its lookups,
each beside the raw read of the same rows in the same run.

Usage: .venv/bin/python bench/gcd_startup.py [--entries N] [--stores postgres,sqlite]
           [--runs R] [--lookups L] [--profile]

The rows are those of bench/gcd_store.py (uuid-like participantIds, 10 per (domain,
interface), 1,000 cluster controllers), written once per store with the version columns as
the store computes them: PostgreSQL (a throwaway pyjoynr.testing.postgres.PostgresServer,
COPY, as bench/gcd_cluster.py fills it) and SQLite (a file in a temporary directory). Then
per store, R times (default 3):

- ``raw``: the rows read one record per row (one snapshot, batches of 10,000; asyncpg
  cursor / sqlite3 fetchmany in a thread), nothing kept: the floor of any load;
- ``raw read grouped`` (PostgreSQL): the query PostgresStore.load makes (the rows grouped by
  profile, a list per column; batches of 1,000 groups), nothing kept;
- ``store read``: ``store.load()`` iterated, nothing kept (the raw read plus the store's own
  work per batch);
- ``split``: the same read into a DirectoryIndex by hand (the collector paused, as the
  Synchronizer does): seconds waiting for the store, in ``DirectoryIndex.load``, in
  ``finish_load``; and the garbage collection the Synchronizer runs before a load;
- ``ready``: a fresh store and ``Synchronizer.start()`` (listen, collect, load, finish,
  catch up, freeze) until it returns: the figure a restarted instance feels;
- ``memory`` (first run only): the bytes the index of the ``split`` holds (tracemalloc),
  per row;
- ``lookups``: L random ``find([domain], interface, now)`` (ten rows each), the same as
  ``find_shared`` (the rows the GCD provider answers from) and ``find_participant`` on the
  ready index: p50 / p99 in us.

``--profile``: one more ``Synchronizer.start()`` per store under cProfile (top functions).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import os
import pstats
import random
import sqlite3
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import asyncpg
import uvloop
from _common import setup_logging
from gcd_cluster import CLUSTER, fill
from gcd_store import Workload

from pyjoynr.gcd.changes import VersionedStore, bucket_of, row_hash
from pyjoynr.gcd.index import DirectoryIndex
from pyjoynr.gcd.postgres_store import _SELECT_COLUMNS, PostgresStore
from pyjoynr.gcd.sqlite_store import SqliteStore
from pyjoynr.gcd.store import COLUMNS, VERSION_COLUMNS
from pyjoynr.gcd.sync import Synchronizer, SyncSettings
from pyjoynr.testing.postgres import PostgresServer

BATCH = 10_000
#: goals at 1,000,000 rows
GOAL_READY_S = 3.0
GOAL_BYTES = 250.0
GOAL_P99_US = 35.0
_LOADED = f"SELECT {', '.join((*COLUMNS, *VERSION_COLUMNS))} FROM discovery_entries"


def load_average() -> str:
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


# ---------------------------------------------------------------------- filling


async def fill_sqlite(path: Path, work: Workload) -> None:
    store = SqliteStore(path)
    await store.open()  # the schema, as a GCD creates it
    await store.close()
    conn = sqlite3.connect(path)
    try:
        columns = [*COLUMNS, "version", "bucket", "row_hash"]
        insert = (f"INSERT INTO discovery_entries ({', '.join(columns)}) "
                  f"VALUES ({', '.join('?' * len(columns))})")
        version = 0
        for start in range(0, work.entries, BATCH):
            version += 1
            rows = []
            for i in range(start, min(start + BATCH, work.entries)):
                row = work.row(i)
                rows.append((*row, version, bucket_of(row[0], row[1]),
                             row_hash(row[0], row[1], version)))
            conn.executemany(insert, rows)
        conn.execute("UPDATE discovery_meta SET version = ? WHERE id = 1", (version,))
        conn.commit()
    finally:
        conn.close()


# ---------------------------------------------------------------------- the raw reads


async def raw_postgres(dsn: str, query: str = _LOADED, batch: int = BATCH) -> float:
    """The raw read of ``query``'s records through a cursor in one snapshot, ``batch`` at a
    time, nothing kept (by default the rows as a row-by-row load reads them)."""
    conn = await asyncpg.connect(dsn)
    try:
        started = time.perf_counter()
        async with conn.transaction(isolation="repeatable_read", readonly=True):
            await conn.fetchrow("SELECT version FROM discovery_meta WHERE id = 1")
            cursor = await conn.cursor(query)
            while await cursor.fetch(batch):
                pass
        return time.perf_counter() - started
    finally:
        await conn.close()


async def raw_sqlite(path: Path) -> float:
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        started = time.perf_counter()
        conn.execute("BEGIN")
        conn.execute("SELECT version FROM discovery_meta WHERE id = 1").fetchone()
        cursor = conn.execute(_LOADED)
        while await asyncio.to_thread(cursor.fetchmany, BATCH):
            pass
        conn.execute("ROLLBACK")
        return time.perf_counter() - started
    finally:
        conn.close()


# ---------------------------------------------------------------------- the project's


async def store_read(store: VersionedStore) -> float:
    started = time.perf_counter()
    async for _ in store.load(BATCH):
        pass
    return time.perf_counter() - started


async def split(store: VersionedStore) -> tuple[DirectoryIndex, dict[str, float]]:
    """The load by hand, timed per step (the collector paused, as the Synchronizer does)."""
    clock = time.perf_counter
    times = dict.fromkeys(("collect", "store", "index.load", "finish_load"), 0.0)
    t0 = clock()
    gc.collect()
    times["collect"] = clock() - t0
    index = DirectoryIndex()
    snapshot = 0
    gc.disable()
    try:
        loading = store.load(BATCH).__aiter__()
        while True:
            t0 = clock()
            try:
                item = await loading.__anext__()
            except StopAsyncIteration:
                break
            t1 = clock()
            times["store"] += t1 - t0
            if isinstance(item, int):
                snapshot = item
                continue
            index.load(item)
            times["index.load"] += clock() - t1
        t0 = clock()
        index.finish_load(snapshot)
        times["finish_load"] = clock() - t0
    finally:
        gc.enable()
    return index, times


async def ready(make: Callable[[], Any]) -> tuple[Synchronizer, Any, float]:
    store = make()
    await store.open()
    sync = Synchronizer(store, settings=SyncSettings(stats_interval_s=0), name="bench")
    started = time.perf_counter()
    await sync.start()
    return sync, store, time.perf_counter() - started


async def held_bytes(store: VersionedStore) -> tuple[float, list[str]]:
    gc.collect()
    tracemalloc.start(1)
    try:
        before_snapshot = tracemalloc.take_snapshot()
        before = tracemalloc.get_traced_memory()[0]
        index, _ = await split(store)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
        after_snapshot = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    rows = max(1, len(index))
    sites = []
    for stat in after_snapshot.compare_to(before_snapshot, "lineno")[:6]:
        frame = stat.traceback[0]
        sites.append(f"      {stat.size_diff / rows:6.1f} B/row  "
                     f"{Path(frame.filename).name}:{frame.lineno}")
    return held / rows, sites


def percentile(sorted_us: list[float], p: float) -> float:
    return sorted_us[min(len(sorted_us) - 1, int(len(sorted_us) * p))]


def lookups(index: DirectoryIndex, work: Workload, count: int) -> str:
    rng = random.Random(7)
    timer = time.perf_counter_ns
    now = work.now
    out = []
    for what in ("find", "find_shared", "find_participant"):
        took = []
        found = 0
        for _ in range(count):
            if what in ("find", "find_shared"):
                domain, interface_name = work.domain_interface(rng.randrange(work.keys))
                find = index.find if what == "find" else index.find_shared
                t0 = timer()
                found += len(find([domain], interface_name, now))
            else:
                pid = work.pid(rng.randrange(work.entries))
                t0 = timer()
                found += len(index.find_participant(pid, now))
            took.append((timer() - t0) / 1000)
        took.sort()
        out.append(f"{what} p50 {percentile(took, 0.5):.1f} / p99 {percentile(took, 0.99):.1f}"
                   f" us ({found / count:.0f} rows)")
    return "; ".join(out)


async def measure(name: str, make: Callable[[], Any], raw: Callable[[], Any], work: Workload,
                  args: argparse.Namespace, *, raw_columns: Callable[[], Any] | None = None
                  ) -> None:
    print(f"=== {name}, {work.entries:,} rows ===", flush=True)
    for run in range(1, args.runs + 1):
        print(f"  run {run} ({load_average()})", flush=True)
        raw_s = await raw()
        columns_s = await raw_columns() if raw_columns is not None else None
        store = make()
        await store.open()
        try:
            read_s = await store_read(store)
            index, times = await split(store)
            del index
            gc.collect()
            if run == 1:
                per_row, sites = await held_bytes(store)
                print(f"    memory           {per_row:8.1f} B per row (goal <= {GOAL_BYTES:.0f})"
                      "; largest sites:")
                print("\n".join(sites))
        finally:
            await store.close()
        sync, ready_store, ready_s = await ready(make)
        try:
            looked = lookups(sync.index, work, args.lookups)
        finally:
            await sync.stop()
            await ready_store.close()
            gc.collect()
        print(f"    raw read         {raw_s:8.2f} s")
        if columns_s is not None:
            print(f"    raw read grouped {columns_s:8.2f} s   {columns_s / raw_s:5.2f}x raw   "
                  "(the query of PostgresStore.load)")
        print(f"    store read       {read_s:8.2f} s   {read_s / raw_s:5.2f}x raw")
        print("    split            " + ", ".join(f"{k} {v:.2f} s" for k, v in times.items()))
        print(f"    index ready      {ready_s:8.2f} s   {ready_s / raw_s:5.2f}x raw   "
              f"(goal <= {GOAL_READY_S:.0f} s: {'met' if ready_s <= GOAL_READY_S else 'MISSED'})")
        print(f"    lookups          {looked}", flush=True)
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        sync, ready_store, ready_s = await ready(make)
        profile.disable()
        await sync.stop()
        await ready_store.close()
        out = io.StringIO()
        pstats.Stats(profile, stream=out).strip_dirs().sort_stats("tottime").print_stats(20)
        print(f"  --- profile of one start ({ready_s:.2f} s under cProfile), by own time ---")
        print("\n".join(line for line in out.getvalue().splitlines()[5:] if line.strip()))


async def run(args: argparse.Namespace) -> None:
    work = Workload(args.entries, 10, int(time.time() * 1000))
    print(f"GCD start-up bench: {work.entries:,} rows, Python {sys.version.split()[0]}, "
          f"asyncpg {asyncpg.__version__}, {load_average()}", flush=True)
    if "sqlite" in args.stores:
        with tempfile.TemporaryDirectory(prefix="gcd-startup-") as tmp:
            path = Path(tmp) / "gcd.sqlite"
            t0 = time.perf_counter()
            await fill_sqlite(path, work)
            print(f"  SQLite filled in {time.perf_counter() - t0:.0f} s", flush=True)
            await measure("SQLite", lambda: SqliteStore(path), lambda: raw_sqlite(path), work,
                          args)
    if "postgres" in args.stores:
        async with PostgresServer() as pg:
            dsn = await pg.create_database("gcd_startup")
            t0 = time.perf_counter()
            await fill(dsn, work)
            print(f"  PostgreSQL filled in {time.perf_counter() - t0:.0f} s", flush=True)
            await measure("PostgreSQL", lambda: PostgresStore(dsn, cluster=CLUSTER),
                          lambda: raw_postgres(dsn), work, args,
                          raw_columns=lambda: raw_postgres(dsn, _SELECT_COLUMNS, BATCH // 10))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--stores", default="postgres,sqlite")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--lookups", type=int, default=20_000)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    args.stores = {s.strip() for s in args.stores.split(",")}
    if not args.stores <= {"postgres", "sqlite"} or min(args.entries, args.runs,
                                                        args.lookups) < 1:
        parser.error("--stores: postgres and/or sqlite; counts positive")
    setup_logging()
    uvloop.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
