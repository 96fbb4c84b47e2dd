"""GCD index: memory per entry, build (load) time and in-process lookup latency at N entries.

Usage: .venv/bin/python bench/gcd_index_memory.py [--entries N] [--batch B] [--lookups L]
           [--per-key K] [--gbids G] [--no-memory]

The entries are those of bench/gcd_store.py: uuid-like participantIds, K entries (default 10)
per (domain, interface) over 5 interfaces, 1,000 cluster controllers, GBID joynrdefaultgbid
(``--gbids 2``: every participant in two GBIDs, so that pairs of rows share their parameters),
each row with its own last-seen time. Each field is a fresh object, as a database driver gives
them (the index interns what repeats); the entries are made and loaded in batches of B
(default 10,000) and dropped, as a start-up load streams them.

Two builds of the same index (a gc.collect() between them):

1. timed: ``DirectoryIndex.load`` of every batch then ``finish_load``; entries/s; then L
   lookups (default 20,000) of each kind with random keys: ``find([domain], interface, now)``
   (K entries back) and ``find_participant(pid, now)`` (G entries back), p50 / p99 in us;
2. measured (unless ``--no-memory``): the same load under tracemalloc; the memory the index
   holds afterwards (tracemalloc's current size minus before, the generator's batch freed) per
   row, and the split of the largest allocation sites.

The goal: <= 600 B per entry at 1M entries; in-process lookup p99 <= 100 us.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import random
import sys
import time
import tracemalloc
import uuid
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyjoynr.gcd.index import DirectoryIndex
from pyjoynr.gcd.store import StoredEntry

GBIDS = ("joynrdefaultgbid", "gbid-2")
INTERFACES = 5
CLUSTER_CONTROLLERS = 1000
EXPIRY_MS = 6 * 7 * 24 * 3600 * 1000
NOW = 1_790_000_000_000


def pid(i: int) -> str:
    return str(uuid.UUID(bytes=hashlib.blake2b(i.to_bytes(8, "little"), digest_size=16).digest()))


def domain_interface(i: int, keys: int) -> tuple[str, str]:
    key = (i * 7919) % keys
    return f"bench.domain.{key // INTERFACES:07d}", f"bench/Interface{key % INTERFACES}"


def entries(n: int, per_key: int, gbids: int, batch: int) -> Iterator[list[tuple[StoredEntry,
                                                                                   int]]]:
    """(entry, version) pairs in batches; ``n`` rows in all (n // gbids participants)."""
    participants = n // gbids
    keys = max(1, participants // per_key)
    rows: list[tuple[StoredEntry, int]] = []
    version = 0
    for i in range(participants):
        domain, interface_name = domain_interface(i, keys)
        cc = f"bench-cc-{i % CLUSTER_CONTROLLERS:04d}"
        last_seen = NOW - (i * 7919) % 3_600_000
        for g in range(gbids):
            version += 1
            # fresh objects for every field, as a driver gives them
            rows.append((StoredEntry(
                gbid="".join(GBIDS[g]), participant_id=pid(i), domain="".join(domain),
                interface_name="".join(interface_name), major_version=1, minor_version=0,
                priority=0, scope="".join("GLOBAL"), supports_on_change=True,
                custom_parameters="".join("[]"), last_seen_ms=last_seen + 0,
                expiry_ms=last_seen + EXPIRY_MS, public_key_id="".join(""),
                topic=f"joynr/cc/{cc}", cluster_controller_id="".join(cc)), version))
            if len(rows) == batch:
                yield rows
                rows = []
    if rows:
        yield rows


def build(n: int, per_key: int, gbids: int, batch: int) -> tuple[DirectoryIndex, float]:
    index = DirectoryIndex()
    load_time = 0.0
    version = 0
    for rows in entries(n, per_key, gbids, batch):
        t0 = time.perf_counter()
        index.load(rows)
        load_time += time.perf_counter() - t0
        version = rows[-1][1]
    t0 = time.perf_counter()
    index.finish_load(version)
    load_time += time.perf_counter() - t0
    return index, load_time


def percentile(sorted_us: list[float], p: float) -> float:
    return sorted_us[min(len(sorted_us) - 1, int(len(sorted_us) * p))]


def lookups(index: DirectoryIndex, n: int, per_key: int, gbids: int, count: int) -> None:
    participants = n // gbids
    keys = max(1, participants // per_key)
    rng = random.Random(7)
    timer = time.perf_counter_ns
    for what in ("find", "find_participant"):
        took: list[float] = []
        sizes = 0
        for _ in range(count):
            i = rng.randrange(participants)
            if what == "find":
                domain, interface_name = domain_interface(i, keys)
                t0 = timer()
                found = index.find([domain], interface_name, NOW)
                t1 = timer()
            else:
                p = pid(i)
                t0 = timer()
                found = index.find_participant(p, NOW)
                t1 = timer()
            took.append((t1 - t0) / 1000)
            sizes += len(found)
        took.sort()
        print(f"  {what:17s} p50 {percentile(took, 0.5):7.1f} us   p99 "
              f"{percentile(took, 0.99):7.1f} us   ({sizes / count:.1f} entries per call)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--lookups", type=int, default=20_000)
    parser.add_argument("--per-key", type=int, default=10)
    parser.add_argument("--gbids", type=int, choices=(1, 2), default=1)
    parser.add_argument("--no-memory", action="store_true")
    args = parser.parse_args()
    n, per_key, gbids = args.entries, args.per_key, args.gbids
    print(f"GCD index: {n:,} rows ({n // gbids:,} participants in {gbids} GBID(s)), "
          f"{per_key} per (domain, interface), Python {sys.version.split()[0]}")

    index, load_time = build(n, per_key, gbids, args.batch)
    print(f"  load             {load_time:7.2f} s     ({n / load_time:,.0f} rows/s)")
    lookups(index, n, per_key, gbids, args.lookups)
    stats = index.stats()
    print(f"  {stats}")
    del index
    gc.collect()

    if args.no_memory:
        return
    tracemalloc.start(1)
    before = tracemalloc.get_traced_memory()[0]
    snapshot_before = tracemalloc.take_snapshot()
    index, _ = build(n, per_key, gbids, args.batch)
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    snapshot = tracemalloc.take_snapshot()
    print(f"  memory           {held / n:7.1f} B per row   ({held / 2**20:,.1f} MiB for "
          f"{len(index):,} rows; goal <= 600 B at 1M)")
    top = snapshot.compare_to(snapshot_before, "lineno")[:8]
    for stat in top:
        frame = stat.traceback[0]
        print(f"    {stat.size_diff / n:6.1f} B/row  {Path(frame.filename).name}:{frame.lineno}")


if __name__ == "__main__":
    main()
