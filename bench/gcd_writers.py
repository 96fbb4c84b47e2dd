"""GCD store: write throughput of single-row writes, one writer beside many concurrent writers
on one or several store instances (GCD instances) sharing one PostgreSQL database.

Usage: PYTHONPATH=. .venv/bin/python bench/gcd_writers.py [--writes N] [--rounds R]

Every write transaction of a versioned store takes the next version from one counter row and
holds its lock until it commits, so writers are serialised on it; this measures what that
costs, and what the store's group commit (concurrent writes of one instance at one version, in
one statement) wins back. Only ``GcdStore.add`` and ``GcdStore.touch`` are used, so the same
script measures an older store for a before/after: run a copy of ``bench/`` placed in an older
checkout (``_common`` puts the checkout it is in first on ``sys.path``, so PYTHONPATH alone does
not do it).

For each configuration (writers, store instances) on a throwaway PostgreSQL server (durability
off, pyjoynr/testing/postgres.PostgresServer): N single-row adds of new participants spread over
the writers (each writer a task, writers assigned to the instances round robin), then N touches
of one participant's row each; writes/s, the best of R rounds (fresh database each round).

The baseline beside them ("plain upserts/s"): N plain single-row upserts (``INSERT ... ON
CONFLICT DO UPDATE``, one statement, no transaction around it, no version) of the same rows into
a table like the store's (same columns and indexes), made in the same run by the same writers
over the same connections (the stores' pools): what the database gives without the store's
versions and bookkeeping.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

import uvloop
from _common import help_text, setup_logging

from pyjoynr.gcd.postgres_store import PostgresStore
from pyjoynr.gcd.store import COLUMNS, StoredEntry
from pyjoynr.testing.postgres import PostgresServer

NOW = 1_800_000_000_000
CONFIGS = [(1, 1), (8, 1), (8, 3), (32, 3)]  # (writers, instances)
_PLAIN_TABLE = ("CREATE TABLE bench_plain_entries (LIKE discovery_entries INCLUDING ALL)")
_PLAIN_UPSERT = (
    f"INSERT INTO bench_plain_entries ({', '.join(COLUMNS)}, version, bucket, row_hash) "
    f"VALUES ({', '.join(f'${i}' for i in range(1, len(COLUMNS) + 4))}) "
    "ON CONFLICT (gbid, participant_id) DO UPDATE SET "
    + ", ".join(f"{c} = EXCLUDED.{c}" for c in (*COLUMNS[2:], "version", "bucket", "row_hash")))


def entry(i: int) -> StoredEntry:
    return StoredEntry(
        gbid="joynrdefaultgbid", participant_id=f"p-{i:08}", domain="vehicle",
        interface_name="test/Radio", major_version=1, minor_version=0, priority=1,
        scope="GLOBAL", supports_on_change=False, custom_parameters="[]", last_seen_ms=NOW,
        expiry_ms=NOW + 3_600_000, public_key_id="", topic="joynr/cc/cc-1",
        cluster_controller_id=f"cc-{i:08}")


async def measure(pg: PostgresServer, name: str, writers: int, instances: int, writes: int
                  ) -> tuple[float, float, float]:
    dsn = await pg.create_database(name)
    stores = [PostgresStore(dsn, max_size=max(1, writers // instances + 1))
              for _ in range(instances)]
    await asyncio.gather(*(s.open() for s in stores))
    try:
        async def adds(k: int) -> None:
            store = stores[k % instances]
            for i in range(k, writes, writers):
                await store.add([entry(i)])

        async def touches(k: int) -> None:
            store = stores[k % instances]
            for i in range(k, writes, writers):
                await store.touch(f"cc-{i:08}", None, NOW + 1, NOW + 7_200_000)

        async def plain(k: int) -> None:
            pool = stores[k % instances]._pool
            assert pool is not None
            for i in range(k, writes, writers):
                row = entry(i)
                async with pool.acquire() as conn:
                    await conn.execute(_PLAIN_UPSERT, *(getattr(row, c) for c in COLUMNS),
                                       1, 0, 0)

        async with stores[0]._pool.acquire() as conn:  # type: ignore[union-attr]
            await conn.execute(_PLAIN_TABLE)
        rates = []
        for work in (plain, adds, touches):
            began = time.perf_counter()
            await asyncio.gather(*(work(k) for k in range(writers)))
            rates.append(writes / (time.perf_counter() - began))
        assert await stores[0].count() == writes
        return rates[0], rates[1], rates[2]
    finally:
        await asyncio.gather(*(s.close() for s in stores))


async def run(args: argparse.Namespace) -> None:
    async with PostgresServer() as pg:
        print(f"single-row writes on PostgreSQL, {args.writes} adds then {args.writes} "
              f"touches per configuration, best of {args.rounds} rounds")
        print(f"  {'writers':>8} {'instances':>9} {'adds/s':>10} {'touches/s':>10} "
              f"{'plain upserts/s':>16}")
        for writers, instances in CONFIGS:
            best = (0.0, 0.0, 0.0)
            for r in range(args.rounds):
                rates = await measure(pg, f"w{writers}_{instances}_{r}", writers, instances,
                                      args.writes)
                best = (max(best[0], rates[1]), max(best[1], rates[2]),
                        max(best[2], rates[0]))
            print(f"  {writers:>8} {instances:>9} {best[0]:>10,.0f} {best[1]:>10,.0f} "
                  f"{best[2]:>16,.0f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=help_text(__doc__))
    parser.add_argument("--writes", type=int, default=3_000, help="writes per configuration")
    parser.add_argument("--rounds", type=int, default=2, help="rounds (the best counts)")
    args = parser.parse_args()
    if args.writes < 1 or args.rounds < 1:
        parser.error("--writes and --rounds must be positive")
    setup_logging()
    uvloop.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
