"""The commands of ``bin/pipeline``: each reads its inputs, runs the pure jobs
(:mod:`pipeline.jobs`) and writes their tables. They are given a session (never make one) so
that tests run them all on one.

Tables written under the output directory ``out``:

- ingest: ``audit`` (by ``date``), ``snapshots`` (by ``date``), ``audit_rejects``,
  ``snapshot_rejects``, ``ingest_files`` (one status row per input file);
- directory: ``directory/{summary,registrations,cluster_controllers,stale_over_time,expired,
  diverging,shared_participants}``;
- traffic: ``traffic/{outcomes,hourly,drops,top_senders,refusals,summary}``;
- drift: ``drift/{rows,summary}``;
- housekeeping: ``housekeeping/plan.jsonl`` (the calls), ``plan.json`` (what it was made
  from, counts, the directory's size), ``plan.txt`` (readable), ``housekeeping/planned_entries``
  (every row it removes).

The commands that judge expiry or staleness say which "now" they judge at (:class:`Run`) and
warn when the data's newest time is far from it (:func:`check_now`): old data judged against
the machine clock would show every cluster controller stale without a word.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pyjoynr.pipeline.config import PipelineConfig
from pyjoynr.pipeline.jobs import directory as directory_job
from pyjoynr.pipeline.jobs import drift as drift_job
from pyjoynr.pipeline.jobs import housekeeping as housekeeping_job
from pyjoynr.pipeline.jobs import ingest as ingest_job
from pyjoynr.pipeline.jobs import traffic as traffic_job
from pyjoynr.pipeline.readers import (
    DirectorySource,
    InputError,
    RecordFile,
    check_files,
    list_record_files,
    read_directory,
    read_lines,
    read_table,
)
from pyjoynr.pipeline.schemas import AUDIT, INGEST_FILES, SNAPSHOT, RecordSpec
from pyjoynr.pipeline.session import Progress
from pyjoynr.pipeline.writers import write_json, write_jsonl, write_split, write_table

__all__ = ["TABLES", "Run", "check_now", "directory", "drift", "housekeeping", "ingest",
           "load_directory", "traffic", "utc"]

log = logging.getLogger(__name__)

#: the table each kind of record lands in, and its rejects
TABLES = {AUDIT.source: ("audit", "audit_rejects"),
          SNAPSHOT.source: ("snapshots", "snapshot_rejects")}

_HOUR_MS = 3_600_000
#: stale cluster controllers listed in plan.txt at most (the table holds them all)
_PLAN_TXT_CONTROLLERS = 100
#: widths of the time bins of "stale over time", smallest first
_BINS_MS = (_HOUR_MS, 6 * _HOUR_MS, 24 * _HOUR_MS, 7 * 24 * _HOUR_MS, 30 * 24 * _HOUR_MS)


@dataclass
class Run:
    """What every command works with."""

    spark: SparkSession
    progress: Progress
    config: PipelineConfig
    #: the output directory (tables, plan, report)
    out: Path
    #: the time the run judges expiry and staleness at (epoch ms)
    now_ms: int
    #: where ``now_ms`` came from, for messages: "--now-ms" or "the machine clock"
    now_source: str = "--now-ms"
    #: the command judges something against ``now_ms`` (traffic does not): its data's newest
    #: time is checked against it (:func:`check_now`)
    checks_now: bool = True

    @property
    def params(self) -> directory_job.DirectoryParams:
        return directory_job.DirectoryParams(
            self.now_ms, int(self.config.jobs.stale_after_h * _HOUR_MS))


def utc(ms: int) -> str:
    """An epoch-ms time for people: ``2024-05-01 12:00:00 UTC``."""
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def check_now(run: Run, what: str, newest_ms: int | None) -> bool:
    """Warn when ``newest_ms`` (the newest time of the data: ``what``) is more than [jobs]
    now_gap_warn_h before or after the "now" the run judges at; True if it warned."""
    if not run.checks_now or newest_ms is None:
        return False
    gap_ms = run.now_ms - newest_ms
    if abs(gap_ms) <= run.config.jobs.now_gap_warn_h * _HOUR_MS:
        return False
    hint = (f"; to judge at the data's time: --now-ms {newest_ms}"
            if run.now_source != "--now-ms" else "")
    log.warning("%s (%s) is %.1f h %s the now this run judges at (%s, from %s; [jobs] "
                "now_gap_warn_h = %g): expiry and staleness are judged against that now%s",
                what, utc(newest_ms), abs(gap_ms) / _HOUR_MS,
                "before" if gap_ms > 0 else "after", utc(run.now_ms), run.now_source,
                run.config.jobs.now_gap_warn_h, hint)
    return True


def _every_controller_stale(run: Run, stale: int, controllers: int) -> None:
    """Warn when every cluster controller is stale: more likely a wrong now or threshold than
    a fleet that stopped."""
    if controllers and stale == controllers:
        log.warning("every cluster controller (%d) is stale: none has an entry seen in the %g h "
                    "before %s (from %s)", controllers, run.config.jobs.stale_after_h,
                    utc(run.now_ms), run.now_source)


def _small(frame: DataFrame) -> list[dict[str, Any]]:
    """The rows of a small result (a summary, a top-N) as dicts, for logs and the report."""
    return [row.asDict(recursive=True) for row in frame.collect()]


# ---------------------------------------------------------------------- ingest


def ingest(run: Run, audit_dir: str, snapshot_dir: str) -> list[dict[str, Any]]:
    """Raw record files -> the ingest tables. Returns the status rows of the files with
    problems (all of them: there is one row per file, not per record)."""
    if not audit_dir and not snapshot_dir:
        raise InputError("nothing to ingest: give --audit DIR and/or --snapshots DIR")
    specs: list[tuple[RecordSpec, list[RecordFile]]] = []
    for spec, directory in ((AUDIT, audit_dir), (SNAPSHOT, snapshot_dir)):
        if directory:
            specs.append((spec, list_record_files(directory, spec)))
    max_line = run.config.inputs.max_line_bytes
    every_file = [f for _, files in specs for f in files]
    with run.progress.step(f"ingest: checking {len(every_file)} file(s)"):
        checks = check_files(run.spark, every_file, max_line).collect()
    checked = {(row["source"], row["file"]): row for row in checks}
    run.out.mkdir(parents=True, exist_ok=True)
    writes = []
    for spec, files in specs:
        whole = [f for f in files if checked[(f.source, f.name)]["gzip"] == "ok"]
        cut = [f for f in files if checked[(f.source, f.name)]["gzip"] == "truncated"
               and checked[(f.source, f.name)]["lines"] > 0]
        records, rejects = TABLES[spec.source]
        classified = ingest_job.classify(read_lines(run.spark, whole, cut, max_line), spec)
        writes.append(lambda c=classified, r=records, j=rejects: write_split(c, run.out, r, j))
    with run.progress.step(f"ingest: reading {len(every_file)} file(s)"):
        run.progress.together(*writes)
    counts = None
    for spec, _ in specs:
        records, rejects = TABLES[spec.source]
        source = F.lit(spec.source).alias("source")
        spec_counts = ingest_job.kind_counts(
            run.spark.read.parquet(str(run.out / records)).select(source, "file"),
            run.spark.read.parquet(str(run.out / rejects)).select(source, "file", "verdict"))
        counts = spec_counts if counts is None else counts.unionByName(spec_counts)
    assert counts is not None
    with run.progress.step("ingest: file status"):
        status = ingest_job.file_status(run.spark.createDataFrame(checks, INGEST_FILES), counts)
        kept = _other_sources(run, {spec.source for spec, _ in specs})
        if kept is not None:
            status = status.unionByName(kept).orderBy("source", "file")
        write_table(status.coalesce(1), run.out, "ingest_files")
    table = run.spark.read.parquet(str(run.out / "ingest_files"))
    totals = _small(table.groupBy("source", "status").agg(
        F.count(F.lit(1)).alias("files"), F.sum("records").alias("records")))
    for total in sorted(totals, key=lambda t: (t["source"], t["status"])):
        log.info("ingest: %s %s: %d file(s), %d record(s)", total["source"], total["status"],
                 total["files"], total["records"] or 0)
    problems = _small(table.where(F.col("status") != "ok"))
    for problem in problems[:20]:
        # a badly named file's name is shown escaped (it may hold control characters)
        log.warning("ingest: %s %r: %s (%s)%s", problem["source"], problem["file"],
                    problem["status"], problem["gzip"],
                    f": {problem['detail']}" if problem["detail"] else "")
    if len(problems) > 20:
        log.warning("ingest: %d more file(s) with problems (table ingest_files)",
                    len(problems) - 20)
    return problems


def _other_sources(run: Run, sources: set[str]) -> DataFrame | None:
    """The status rows of the sources this ingest did not read (their tables stay as they
    were): one row per file, so they are taken through the driver (Spark cannot overwrite a
    table it is reading)."""
    path = run.out / "ingest_files"
    if not path.exists():
        return None
    previous = run.spark.read.parquet(str(path))
    rows = previous.where(~F.col("source").isin(*sources)).collect()
    return run.spark.createDataFrame(rows, previous.schema) if rows else None


# ---------------------------------------------------------------------- the directory


def load_directory(run: Run, source: DirectorySource) -> DataFrame:
    """The directory, read once per command (JDBC, parallel) and kept for its several uses;
    ``unpersist()`` it at the end."""
    frame = read_directory(run.spark, source, run.config.spark.jdbc_partitions)
    frame = frame.persist(StorageLevel.MEMORY_AND_DISK)
    with run.progress.step(f"directory: reading {source.description}"):
        read = frame.agg(F.count(F.lit(1)).alias("rows"),
                         F.max("last_seen_ms").alias("newest")).first()
    assert read is not None
    rows, newest = read["rows"], read["newest"]
    log.info("directory: %d row(s), newest last seen %s", rows,
             utc(newest) if newest is not None else "-")
    check_now(run, "the directory's newest last-seen", newest)
    return frame


def _bin_ms(first_ms: int | None, last_ms: int, max_bins: int) -> int:
    if first_ms is None:
        return _BINS_MS[0]
    for width in _BINS_MS:
        if (last_ms - first_ms) // width < max_bins:
            return width
    return _BINS_MS[-1]


def directory(run: Run, entries: DataFrame) -> dict[str, Any]:
    """The directory tables; returns the summary row."""
    params = run.params
    out = run.out / "directory"
    with run.progress.step("directory: cluster controllers"):
        write_table(directory_job.cluster_controllers(entries, params), out,
                    "cluster_controllers")
        controllers = run.spark.read.parquet(str(out / "cluster_controllers"))
        first = controllers.agg(F.min("stale_since_ms")).first()
    width = _bin_ms(first[0] if first else None, params.now_ms,
                    run.config.report.max_chart_bins)
    multi_row = directory_job.multi_row_participants(entries).persist()  # small: reused
    with run.progress.step("directory: registrations, expired, diverging, shared, summary"):
        multi_row.count()  # made once, before the two writes that read it start side by side
        run.progress.together(
            lambda: write_table(directory_job.registrations(entries, params), out,
                                "registrations"),
            lambda: write_table(directory_job.expired_entries(entries, params), out, "expired"),
            lambda: write_table(directory_job.diverging_registrations(multi_row), out,
                                "diverging"),
            lambda: write_table(directory_job.shared_participants(multi_row), out,
                                "shared_participants"),
            lambda: write_table(directory_job.stale_over_time(controllers, width)
                                .withColumn("bin_ms", F.lit(width)), out, "stale_over_time"),
            lambda: write_table(directory_job.summary(entries, controllers, params), out,
                                "summary"))
    multi_row.unpersist()
    summary = _small(run.spark.read.parquet(str(out / "summary")))[0]
    log.info("directory: %(entries)d entries (%(live)d live, %(expired)d expired), "
             "%(cluster_controllers)d cluster controllers, %(stale_cluster_controllers)d stale",
             summary)
    _every_controller_stale(run, summary["stale_cluster_controllers"],
                            summary["cluster_controllers"])
    return summary


# ---------------------------------------------------------------------- traffic


def traffic(run: Run, entries: DataFrame) -> dict[str, Any]:
    """The traffic tables from the ingested audit records; returns the summary row."""
    audit = read_table(run.spark, run.out, "audit", made_by="ingest --audit DIR")
    out = run.out / "traffic"
    # the one join of the records with the directory, alone: the jobs that read the records
    # once more (senders, refusals) run beside the small ones drawn from its result, filling
    # the cores those leave idle, instead of competing with the join
    with run.progress.step("traffic: per interface, GBID, hour, outcome"):
        write_table(traffic_job.outcomes(
            traffic_job.attributed(audit, traffic_job.interfaces(entries))), out, "outcomes")
    per_outcome = run.spark.read.parquet(str(out / "outcomes"))
    with run.progress.step("traffic: hourly, drops, summary; senders; refusals"):
        run.progress.together(
            lambda: write_table(traffic_job.hourly(per_outcome), out, "hourly"),
            lambda: write_table(traffic_job.drops(per_outcome), out, "drops"),
            lambda: write_table(traffic_job.summary(per_outcome), out, "summary"),
            lambda: write_table(traffic_job.top_senders(audit, run.config.jobs.top_n), out,
                                "top_senders"),
            lambda: write_table(traffic_job.refusals(audit), out, "refusals"))
    summary = _small(run.spark.read.parquet(str(out / "summary")))[0]
    log.info("traffic: %(records)d record(s), %(messages)d message(s): %(delivered)d delivered, "
             "%(dropped)d dropped, %(refused)d refused; %(unattributed)d to providers not in "
             "the directory", summary)
    return summary


# ---------------------------------------------------------------------- drift


def drift(run: Run, entries: DataFrame) -> dict[str, Any]:
    """The drift tables from the ingested snapshots; returns the totals."""
    snapshots = read_table(run.spark, run.out, "snapshots", made_by="ingest --snapshots DIR")
    # the status rows of the snapshot files tell the empty snapshots (no record to tell them)
    files = read_table(run.spark, run.out, "ingest_files", made_by="ingest --snapshots DIR")
    latest = drift_job.latest_taken(drift_job.snapshots_taken(snapshots, files))
    routes = drift_job.compared_routes(drift_job.latest_snapshots(snapshots, latest))
    out = run.out / "drift"
    with run.progress.step("drift: routes against the directory"):
        write_table(drift_job.drift(routes, entries, run.now_ms), out, "rows")
        rows = run.spark.read.parquet(str(out / "rows"))
        write_table(drift_job.summary(routes, rows, latest).coalesce(1), out, "summary")
    totals = _small(run.spark.read.parquet(str(out / "summary")).agg(
        F.count(F.lit(1)).alias("cluster_controllers"),
        *(F.coalesce(F.sum(c), F.lit(0)).alias(c) for c in (
            "routes", "compared", "local", "sticky", "expiring",
            *(k.replace("-", "_") for k in drift_job.DRIFT_KINDS))),
        F.max("taken_ms").alias("newest_taken_ms"),
        F.count(F.when(F.col("empty_snapshot"), 1)).alias("empty_snapshots"),
        F.array_sort(F.collect_list(F.when(F.col("empty_snapshot"), F.col("proc"))))
        .alias("empty")))[0]
    log.info("drift: %(cluster_controllers)d routing table(s), %(compared)d route(s) compared: "
             "%(not_in_directory)d not in the directory, %(expired_in_directory)d expired "
             "there, %(other_gbid)d in another GBID, %(other_topic)d to another topic", totals)
    empty = totals.pop("empty")
    if empty:
        log.warning("drift: the latest routing snapshot of %d cluster controller(s) is empty "
                    "(no route to compare): %s", len(empty),
                    ", ".join(repr(proc) for proc in empty[:20])
                    + (f" and {len(empty) - 20} more" if len(empty) > 20 else ""))
    check_now(run, "the newest routing snapshot", totals.pop("newest_taken_ms"))
    return totals


# ---------------------------------------------------------------------- housekeeping


def housekeeping(run: Run, entries: DataFrame, source: DirectorySource) -> Path:
    """The purge plan (see :mod:`pipeline.jobs.housekeeping`) in ``out/housekeeping``;
    returns that directory."""
    params = run.params
    out = run.out / "housekeeping"
    with run.progress.step("housekeeping: plan"):
        controllers = directory_job.cluster_controllers(entries, params)
        write_table(controllers.where("stale"), out, "stale_cluster_controllers")
        stale = run.spark.read.parquet(str(out / "stale_cluster_controllers"))
        stale_actions = housekeeping_job.remove_stale_actions(stale)
        removes = housekeeping_job.remove_actions(entries, stale, params)
        write_table(removes, out, "removes")
        removes = run.spark.read.parquet(str(out / "removes"))
        run.progress.together(
            lambda: write_jsonl(stale_actions.unionByName(removes, allowMissingColumns=True),
                                out / "plan.jsonl"),
            lambda: write_table(housekeeping_job.planned_entries(entries, stale_actions,
                                                                 removes), out,
                                "planned_entries"))
    counts = _small(run.spark.read.parquet(str(out / "planned_entries"))
                    .groupBy("action", "gbid").count())
    stale_count = stale.count()
    remove_count = removes.count()
    directory_entries = entries.count()  # kept in memory: no second read of the store
    controller_count = controllers.count()
    planned = sum(c["count"] for c in counts)
    share = planned / directory_entries if directory_entries else 0.0
    max_share = run.config.housekeeping.max_purge_share
    meta = {
        "made_ms": run.now_ms,
        "now_source": run.now_source,
        "directory": source.description,
        "stale_after_ms": params.stale_after_ms,
        "remove_stale_calls": stale_count,
        "remove_calls": remove_count,
        "entries": {f"{c['action']} {c['gbid']}": c["count"] for c in counts},
        # what --apply weighs the plan against ([housekeeping] max_purge_share)
        "directory_entries": directory_entries,
        "planned_entries": planned,
    }
    write_json(meta, out / "plan.json")
    shown = _small(stale.orderBy(F.desc("entries"), "cluster_controller_id")
                   .select("cluster_controller_id", "entries", "gbids", "last_seen_ms")
                   .limit(_PLAN_TXT_CONTROLLERS))
    lines = [
        f"Housekeeping plan made at {utc(run.now_ms)} ({run.now_ms} epoch ms, from "
        f"{run.now_source}) from {source.description}",
        f"stale: no entry seen for {params.stale_after_ms / _HOUR_MS:g} h",
        f"removes {planned} of the directory's {directory_entries} entries "
        f"({100 * share:.1f} %)" + (
            f": more than [housekeeping] max_purge_share = {max_share:g}, so --apply refuses "
            "it unless given --allow-large-purge" if share > max_share else ""),
        f"{stale_count} removeStale call(s), one per stale cluster controller",
        f"{remove_count} remove call(s), one per expired entry of the other cluster "
        "controllers",
        "entries removed, by action and GBID:",
        *(f"  {c['action']:<12} {c['gbid']:<24} {c['count']}"
          for c in sorted(counts, key=lambda c: (c["action"], c["gbid"]))),
        "stale cluster controllers (most entries first" + (
            f"; the first {len(shown)} of {stale_count}, all of them in "
            "stale_cluster_controllers" if stale_count > len(shown) else "") + "):"
        if shown else "stale cluster controllers: none",
        *(f"  {c['cluster_controller_id']}: {c['entries']} "
          f"{'entry' if c['entries'] == 1 else 'entries'} in {', '.join(c['gbids'])}, last "
          f"seen {utc(c['last_seen_ms'])}" for c in shown),
        f"calls: {out / 'plan.jsonl'}; every entry: {out / 'planned_entries'} (Parquet)",
        "apply with: bin/pipeline housekeeping --apply --plan "
        f"{out} --cc [GBID=]ws://host:port/",
    ]
    (out / "plan.txt").write_text("\n".join(lines) + "\n")
    log.info("housekeeping: %d removeStale and %d remove call(s) planned, %d of %d entries "
             "(%s)", stale_count, remove_count, planned, directory_entries, out / "plan.txt")
    _every_controller_stale(run, stale_count, controller_count)
    if share > max_share:
        log.warning("housekeeping: the plan removes %.1f %% of the directory, more than "
                    "[housekeeping] max_purge_share = %g: --apply refuses it unless given "
                    "--allow-large-purge", 100 * share, max_share)
    return out
