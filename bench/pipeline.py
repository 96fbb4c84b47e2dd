"""The fleet data pipeline on a synthetic fleet: each job's time per input size, the driver's
peak memory, and the same work as one plain Spark query in the same run (the ratio).

The fleet: a GCD store (SQLite, the store's own schema) of 1M directory rows over 3 GBIDs and
10k cluster controllers, routing snapshots of 2,000 cluster controllers (50 routes each), and
audit logs of 1M, 3M and 10M records (gzip JSON Lines files to docs/records.md v1, 250k
records a file), generated once into --work and reused.

Each size runs in a process of its own (so that its peak memory is its own): ingest (the
checked reader) against a plain ``spark.read.json`` of the same files into the same Parquet
layout; traffic (all its tables) against one plain Spark SQL query of its main table
(per interface, GBID, hour: counts, bytes, p50/p99 queued); the cost of the per-file check
alone. The first size also runs directory, drift and housekeeping (their input does not grow
with the audit log). Memory: the Python driver's peak RSS, the driver JVM's peak heap (its
memory pools' peaks) and peak RSS (in local mode the driver JVM also runs the executors).
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyjoynr.gcd.changes import bucket_and_row_hash
from pyjoynr.gcd.store import SCHEMA

HOUR = 3_600_000
#: the fleet's "now" (fixed: the data and the figures do not depend on the day)
NOW = 1_795_601_600_000
GBIDS = ("gbid-a", "gbid-b", "gbid-c")
CCS = 10_000
DIRECTORY_ROWS = 1_000_000
#: participants with a row in two GBIDs (the rest have one): 900k participants, 1M rows
TWICE = DIRECTORY_ROWS - 900_000
PARTICIPANTS = 900_000
RECORDS_PER_FILE = 250_000
SNAPSHOT_CCS, ROUTES = 2_000, 50
SIZES = {"100k": 100_000, "1M": 1_000_000, "3M": 3_000_000, "10M": 10_000_000}


# ---------------------------------------------------------------------- the fleet


def make_directory(path: Path) -> None:
    """1M rows in the GCD store's schema (gcd.store.SCHEMA), bucket and row hash as the store
    computes them; every 20th cluster controller stale, 1% of the rows expired."""
    if path.exists():
        path.unlink()
    db = sqlite3.connect(path)
    for statement in SCHEMA:
        db.execute(statement)

    def rows() -> Any:
        for n in range(DIRECTORY_ROWS):
            if n < PARTICIPANTS:
                pid, gbid = f"p{n:07d}", GBIDS[n % 3]
            else:  # a second GBID for the first 100k participants
                m = n - PARTICIPANTS
                pid, gbid = f"p{m:07d}", GBIDS[(m + 1) % 3]
            cc = (n if n < PARTICIPANTS else n - PARTICIPANTS) % CCS
            stale = cc % 20 == 0
            last_seen = NOW - (48 + cc % 24) * HOUR if stale else NOW - (n % 60) * 60_000
            expiry = NOW - HOUR if n % 100 == 7 else NOW + 40 * 24 * HOUR
            bucket, row_hash = bucket_and_row_hash(gbid, pid, 1)
            yield (gbid, pid, f"domain-{n % 50}", f"vehicle/Interface{(n // 3) % 200}", 1, 0,
                   n % 3 if n >= PARTICIPANTS else 0, "GLOBAL", 1, "[]", last_seen, expiry, "",
                   f"joynr/cc/cc-{cc:05d}", f"cc-{cc:05d}", 1, bucket, row_hash)

    db.executemany("INSERT INTO discovery_entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                   "?, ?, ?, ?, ?, ?)", rows())
    db.execute("UPDATE discovery_meta SET version = 1")
    db.commit()
    db.close()


def make_snapshots(directory: Path) -> None:
    """One routing snapshot file per cluster controller (docs/records.md names)."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime((NOW - HOUR) // 1000))
    for cc in range(SNAPSHOT_CCS):
        proc = f"cc-{cc:05d}"
        lines = []
        for r in range(ROUTES):
            n = (cc * 7919 + r * 104_729) % (PARTICIPANTS + 50_000)  # a few gone ones
            remote = r % 5 != 0
            gbid = GBIDS[n % 3] if r % 17 else GBIDS[(n + 1) % 3]
            topic = f"joynr/cc/cc-{n % CCS:05d}"
            lines.append(json.dumps({
                "v": 1, "taken_ms": NOW - HOUR, "proc": proc, "participant_id": f"p{n:07d}",
                "kind": "mqtt" if remote else "websocket",
                "address": f"{gbid}/{topic}" if remote else f"client-{r}",
                "gbid": gbid if remote else None, "topic": topic if remote else None,
                "global": True, "expiry_ms": 2**63 - 1, "sticky": False},
                separators=(",", ":")))
        (directory / f"routing-{proc}-{stamp}-{(NOW - HOUR) % 1000:03d}.jsonl.gz").write_bytes(
            gzip.compress(("\n".join(lines) + "\n").encode(), 1))


def make_audit(spark: Any, directory: Path, records: int) -> None:
    """``records`` audit records over 24 hours, written by Spark itself (in parallel) as
    gzip JSON Lines with exactly the documented keys (nulls written), renamed to the
    documented file names."""
    from pyspark.sql import functions as F  # noqa: PLC0415

    staging = directory.with_name(directory.name + ".staging")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(directory, ignore_errors=True)
    files = max(1, records // RECORDS_PER_FILE)
    n = F.col("n")
    pick = F.abs(F.xxhash64(n)) % 100
    mtype = F.element_at(F.array(*(F.lit(t) for t in ("rq", "rp", "o", "p", "m"))),
                         (F.abs(F.xxhash64(n, F.lit(1))) % 5 + 1).cast("int"))
    provider = F.concat(F.lit("p"), F.lpad((F.abs(F.xxhash64(n, F.lit(2))) % (
        PARTICIPANTS + 20_000)).cast("string"), 7, "0"))
    consumer = F.concat(F.lit("c"), (F.abs(F.xxhash64(n, F.lit(3))) % 50_000).cast("string"))
    provider_sends = mtype.isin("rp", "p", "m")
    outcome = (F.when(pick < 94, F.lit("delivered")).when(pick < 96, F.lit("queued"))
               .when(pick < 99, F.lit("dropped")).otherwise(F.lit("refused")))
    mqtt = F.abs(F.xxhash64(n, F.lit(4))) % 3 != 0
    frame = (spark.range(0, records, numPartitions=files).withColumnRenamed("id", "n")
             .select(
                 F.lit(1).alias("v"),
                 (F.lit(NOW - 24 * HOUR) + (n * (24 * HOUR) / records).cast("long")).alias("ts"),
                 F.concat(F.lit("cc-"), F.lpad((n % CCS).cast("string"), 5, "0")).alias("proc"),
                 F.concat(F.lit("m"), n.cast("string")).alias("id"),
                 mtype.alias("type"),
                 F.when(provider_sends, provider).otherwise(consumer).alias("sender"),
                 F.when(provider_sends, consumer).otherwise(provider).alias("recipient"),
                 F.when(outcome.isin("delivered"), F.when(mqtt, F.lit("mqtt"))
                        .otherwise(F.lit("websocket"))).alias("hop"),
                 F.when(outcome.isin("delivered") & mqtt,
                        F.element_at(F.array(*(F.lit(g) for g in GBIDS)),
                                     (n % 3 + 1).cast("int"))).alias("gbid"),
                 (F.abs(F.xxhash64(n, F.lit(5))) % 2000 + 100).alias("bytes"),
                 outcome.alias("outcome"),
                 F.when(outcome == "dropped", F.element_at(
                     F.array(F.lit("expired"), F.lit("queue-full"), F.lit("no-route")),
                     (n % 3 + 1).cast("int")))
                 .when(outcome == "refused", F.lit("spoofed-sender")).alias("reason"),
                 F.when(outcome == "refused", F.concat(F.lit("client c"), (n % 97).cast(
                     "string"), F.lit(" from 127.0.0.1"))).alias("peer"),
                 F.when(outcome == "delivered",
                        F.when(pick < 80, F.lit(0)).otherwise(
                            F.abs(F.xxhash64(n, F.lit(6))) % 5000)).alias("queued_ms")))
    (frame.write.option("compression", "gzip").option("ignoreNullFields", "false")
     .json(str(staging)))
    directory.mkdir(parents=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime((NOW - 24 * HOUR) // 1000))
    for seq, part in enumerate(sorted(staging.glob("part-*.json.gz")), 1):
        part.rename(directory / f"audit-cc-gen-{stamp}-{seq:06d}.jsonl.gz")
    shutil.rmtree(staging)


def generate(work: Path, sizes: list[str]) -> None:
    from pyjoynr.pipeline.config import SparkSettings  # noqa: PLC0415
    from pyjoynr.pipeline.session import build_session  # noqa: PLC0415

    work.mkdir(parents=True, exist_ok=True)
    done = work / "generated.json"
    made = json.loads(done.read_text()) if done.exists() else {}
    if not made.get("directory"):
        started = time.monotonic()
        make_directory(work / "gcd.sqlite")
        made["directory"] = True
        print(f"generated the directory: {DIRECTORY_ROWS:,} rows in "
              f"{time.monotonic() - started:.0f} s", flush=True)
    if not made.get("snapshots"):
        make_snapshots(work / "snapshots")
        made["snapshots"] = True
    missing = [s for s in sizes if not made.get(f"audit-{s}")]
    if missing:
        spark = build_session(SparkSettings(progress_interval_s=0), max_line_bytes=1 << 20)
        try:
            for size in missing:
                started = time.monotonic()
                make_audit(spark, work / f"audit-{size}", SIZES[size])
                made[f"audit-{size}"] = True
                done.write_text(json.dumps(made))
                print(f"generated the audit log of {size} records in "
                      f"{time.monotonic() - started:.0f} s", flush=True)
        finally:
            spark.stop()
    done.write_text(json.dumps(made))


# ---------------------------------------------------------------------- one size


class Memory:
    """The driver's memory: the Python process's peak RSS (getrusage), the JVM's heap (used,
    sampled every 0.5 s; and what is live after a full GC at the end) and its peak RSS (/proc
    VmHWM). In local mode the driver JVM runs the executors' tasks too."""

    def __init__(self, spark: Any) -> None:
        self.jvm = spark._jvm
        self.pid = int(self.jvm.java.lang.ProcessHandle.current().pid())
        self.heap_sampled = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        bean = self.jvm.java.lang.management.ManagementFactory.getMemoryMXBean()
        while not self._stop.wait(0.5):
            try:
                self.heap_sampled = max(self.heap_sampled,
                                        int(bean.getHeapMemoryUsage().getUsed()))
            except Exception:  # the session is stopping
                return

    def figures(self) -> dict[str, int]:
        self._stop.set()
        self._thread.join(timeout=5)
        runtime = self.jvm.java.lang.Runtime.getRuntime()
        runtime.gc()  # what stays: the driver's live heap at the end of the run
        live = int(runtime.totalMemory()) - int(runtime.freeMemory())
        rss = 0
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                rss = int(line.split()[1]) * 1024
        return {"python_rss_peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                "jvm_heap_sampled_peak": self.heap_sampled, "jvm_heap_live_end": live,
                "jvm_heap_max": int(runtime.maxMemory()), "jvm_rss_peak": rss}


def timed(what: str, call: Any, times: dict[str, float]) -> Any:
    started = time.monotonic()
    result = call()
    times[what] = time.monotonic() - started
    print(f"  {what}: {times[what]:.1f} s", file=sys.stderr, flush=True)
    return result


def side_by_side(attempt: int, times: dict[str, float], *runs: tuple[str, Any]) -> None:
    """The project's job and the plain one, each timed; the one that runs first (in a JVM
    less warm) alternates between attempts, so that neither always pays for the warm-up."""
    for what, call in (runs if attempt % 2 == 0 else runs[::-1]):
        timed(what, call, times)


PLAIN_HOURLY = """
SELECT coalesce(i.domain, '(not in directory)') AS domain,
       coalesce(i.interface_name, '(not in directory)') AS interface_name,
       a.gbid, date_trunc('hour', timestamp_millis(a.ts)) AS hour,
       count_if(a.outcome <> 'queued') AS messages,
       count_if(a.outcome = 'delivered') AS delivered,
       count_if(a.outcome = 'queued') AS queued,
       count_if(a.outcome = 'dropped') AS dropped,
       count_if(a.outcome = 'refused') AS refused,
       sum(CASE WHEN a.outcome = 'delivered' THEN a.bytes ELSE 0 END) AS bytes,
       percentile_approx(CASE WHEN a.outcome = 'delivered' THEN a.queued_ms END,
                         array(0.5, 0.99)) AS queued_ms
FROM audit a LEFT JOIN (
    SELECT participant_id, min(struct(domain, interface_name)).domain AS domain,
           min(struct(domain, interface_name)).interface_name AS interface_name
    FROM directory GROUP BY participant_id) i
  ON i.participant_id = CASE WHEN a.type IN ('rp', 'srp', 'p', 'm') THEN a.sender
                             ELSE a.recipient END
GROUP BY 1, 2, 3, 4
"""


def measure(work: Path, size: str, first: bool, repeat: int) -> dict[str, Any]:
    """One size, in this process: the figures as a dict."""
    from pyspark.sql import functions as F  # noqa: PLC0415

    from pyjoynr.pipeline import commands  # noqa: PLC0415
    from pyjoynr.pipeline.config import PipelineConfig  # noqa: PLC0415
    from pyjoynr.pipeline.readers import check_files, directory_source, list_record_files  # noqa: PLC0415
    from pyjoynr.pipeline.schemas import AUDIT, AUDIT_V1  # noqa: PLC0415
    from pyjoynr.pipeline.session import Progress, build_session  # noqa: PLC0415

    config = PipelineConfig.load(None, env={})
    spark = build_session(config.spark, max_line_bytes=config.inputs.max_line_bytes)
    memory = Memory(spark)
    out = work / f"out-{size}"
    shutil.rmtree(out, ignore_errors=True)
    run = commands.Run(spark, Progress(spark, 0), config, out, NOW)
    times: dict[str, float] = {}
    audit_dir = work / f"audit-{size}"
    files = list_record_files(str(audit_dir), AUDIT)
    timed("check (the per-file gzip check alone)",
          lambda: check_files(spark, files, config.inputs.max_line_bytes).collect(), times)
    for attempt in range(repeat):
        side_by_side(attempt, times, (
            f"ingest #{attempt + 1}", lambda: commands.ingest(run, str(audit_dir), "")), (
            f"plain read.json -> Parquet #{attempt + 1}", lambda: (
                spark.read.schema(AUDIT_V1).json([f.path for f in files])
                .withColumn("date", F.date_format(F.timestamp_millis("ts"), "yyyy-MM-dd"))
                .write.mode("overwrite").partitionBy("date").parquet(str(out / "plain-audit")))))
    source = directory_source(str(work / "gcd.sqlite"), "")
    entries = timed("directory read (JDBC, 1M rows)",
                    lambda: commands.load_directory(run, source), times)
    spark.read.parquet(str(out / "audit")).createOrReplaceTempView("audit")
    entries.createOrReplaceTempView("directory")
    for attempt in range(repeat):
        side_by_side(attempt, times, (
            f"traffic #{attempt + 1}", lambda: commands.traffic(run, entries)), (
            f"plain SQL hourly #{attempt + 1}", lambda: spark.sql(PLAIN_HOURLY).write.mode(
                "overwrite").parquet(str(out / "plain-hourly"))))
    plain_rows = spark.read.parquet(str(out / "plain-hourly")).count()
    job_rows = spark.read.parquet(str(out / "traffic" / "hourly")).count()
    assert plain_rows == job_rows, (plain_rows, job_rows)
    records = spark.read.parquet(str(out / "audit")).count()
    if first:
        timed("directory job", lambda: commands.directory(run, entries), times)
        timed("ingest snapshots", lambda: commands.ingest(run, "", str(work / "snapshots")),
              times)
        timed("drift", lambda: commands.drift(run, entries), times)
        timed("housekeeping plan", lambda: commands.housekeeping(run, entries, source), times)
    entries.unpersist()
    figures = {"size": size, "records": records, "files": len(files),
               "bytes": sum(f.bytes for f in files), "times": times,
               "hourly_rows": job_rows, **memory.figures()}
    spark.stop()
    return figures


# ---------------------------------------------------------------------- the table


def best(times: dict[str, float], prefix: str) -> float:
    return min(v for k, v in times.items() if k.startswith(prefix))


def report(results: list[dict[str, Any]]) -> None:
    print()
    print(f"{'records':>10} {'files':>5} {'MB gz':>6} | {'ingest':>7} {'plain':>7} {'ratio':>5}"
          f" {'check':>6} | {'traffic':>7} {'plainSQL':>8} {'ratio':>5} | {'py RSS':>7} "
          f"{'heap pk':>7} {'live':>6} {'JVM RSS':>7}")
    for r in results:
        t = r["times"]
        ingest, plain = best(t, "ingest #"), best(t, "plain read.json")
        traffic, sql = best(t, "traffic #"), best(t, "plain SQL hourly")
        mb = 1 << 20
        check = t["check (the per-file gzip check alone)"]
        print(f"{r['records']:>10,} {r['files']:>5} {r['bytes'] / mb:>6.0f} | {ingest:>6.1f}s "
              f"{plain:>6.1f}s {ingest / plain:>5.2f} {check:>5.1f}s"
              f" | {traffic:>6.1f}s {sql:>7.1f}s {traffic / sql:>5.2f} | "
              f"{r['python_rss_peak'] / mb:>5.0f}MB {r['jvm_heap_sampled_peak'] / mb:>5.0f}MB "
              f"{r['jvm_heap_live_end'] / mb:>4.0f}MB {r['jvm_rss_peak'] / mb:>5.0f}MB")
    print(f"(times: the best of --repeat runs; ratio: the pipeline's over plain Spark; heap "
          f"max {results[0]['jvm_heap_max'] / mb:.0f} MB, [spark] driver_memory)")
    if len(results) > 1:
        base = results[0]
        print("\ngrowth against the smallest size (time ratio / record ratio):")
        for r in results[1:]:
            factor = r["records"] / base["records"]
            growth = {name: best(r["times"], prefix) / best(base["times"], prefix)
                      for name, prefix in (("ingest", "ingest #"), ("traffic", "traffic #"),
                                           ("plain SQL", "plain SQL"))}
            print(f"  {r['size']}: x{factor:.1f} records -> "
                  + ", ".join(f"{name} x{g:.2f}" for name, g in growth.items()))
    first = results[0]["times"]
    print("\nfixed inputs (1M directory rows, "
          f"{SNAPSHOT_CCS * ROUTES:,} routes in {SNAPSHOT_CCS:,} snapshots):")
    for name in ("directory read (JDBC, 1M rows)", "directory job", "ingest snapshots",
                 "drift", "housekeeping plan"):
        if name in first:
            print(f"  {name}: {first[name]:.1f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1M,3M,10M",
                        help="audit log sizes, of " + ", ".join(SIZES) + " (default: all)")
    parser.add_argument("--work", type=Path, default=Path("var/bench-pipeline"),
                        help="where the fleet is generated (kept and reused)")
    parser.add_argument("--repeat", type=int, default=2,
                        help="runs of each timed job and its plain query (the best counts)")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--first", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    work = args.work.resolve()
    if args.measure:
        print(json.dumps(measure(work, args.measure, args.first, args.repeat)))
        return 0
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    unknown = [s for s in sizes if s not in SIZES]
    if unknown:
        parser.error(f"unknown size(s) {unknown}; choose from {list(SIZES)}")
    print(f"pipeline benchmark: {os.cpu_count()} cores, local[*], fleet in {work}", flush=True)
    generate(work, sizes)
    results = []
    for index, size in enumerate(sizes):
        print(f"measuring {size} ...", flush=True)
        done = subprocess.run(
            [sys.executable, __file__, "--measure", size, "--work", str(work), "--repeat",
             str(args.repeat), *(["--first"] if index == 0 else [])],
            stdout=subprocess.PIPE, text=True, check=True)
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    report(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
