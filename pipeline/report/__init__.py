"""The report: every job's tables, and one HTML page (``OUT/report/index.html``) with charts
(registrations per backend and interface, stale cluster controllers over time, traffic and
drops per interface and hour, drops and refusals by reason) and the first rows of the tables.

Only small aggregates reach the driver: top-K series and at most [report] max_chart_bins time
bins per chart, at most [report] max_table_rows rows per table (the Parquet tables hold all).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipeline import commands
from pipeline.jobs import traffic as traffic_job
from pipeline.readers import DirectorySource
from pipeline.report.page import Chart, Section, Table, render
from pipeline.schemas import REJECT_KINDS

__all__ = ["build_report", "time_bin_ms"]

log = logging.getLogger(__name__)

_HOUR_MS = 3_600_000
_WIDTHS_MS = (_HOUR_MS, 2 * _HOUR_MS, 3 * _HOUR_MS, 6 * _HOUR_MS, 12 * _HOUR_MS, 24 * _HOUR_MS,
              7 * 24 * _HOUR_MS, 30 * 24 * _HOUR_MS)
OTHER = "other"


def time_bin_ms(first_ms: int, last_ms: int, max_bins: int) -> int:
    """The narrowest bin (1 h, 2 h, ..., 30 days) that covers first..last in max_bins bins."""
    for width in _WIDTHS_MS:
        if last_ms // width - first_ms // width < max_bins:
            return width
    return _WIDTHS_MS[-1]


def _rows(frame: DataFrame, columns: Sequence[str], limit: int) -> list[list[Any]]:
    return [[row[c] for c in columns] for row in frame.select(*columns).limit(limit).collect()]


def _table(run: commands.Run, title: str, frame: DataFrame, columns: Sequence[str],
           source: str) -> Table:
    limit = run.config.report.max_table_rows
    rows = _rows(frame, columns, limit)
    total = frame.count() if len(rows) == limit else len(rows)
    return Table(title, columns, rows, total, source)


def _top(frame: DataFrame, key: Column, weight: str, k: int) -> list[Any]:
    """The ``k`` values of ``key`` with the largest sum of ``weight``."""
    return [row[0] for row in frame.groupBy(key.alias("key")).agg(F.sum(weight).alias("w"))
            .orderBy(F.desc("w"), "key").limit(k).collect()]


def _label(key: Column, top: list[Any]) -> Column:
    return F.when(key.isin(*top), key).otherwise(F.lit(OTHER)) if top else F.lit(OTHER)


def _read(run: commands.Run, name: str) -> DataFrame:
    return run.spark.read.parquet(str(run.out / name))


# ---------------------------------------------------------------------- sections


def _directory_section(run: commands.Run, summary: dict[str, Any]) -> Section:
    k = run.config.report.chart_series
    registrations = _read(run, "directory/registrations")
    interface = F.col("interface_name")
    top_interfaces = _top(registrations, interface, "entries", k)
    top_gbids = _top(registrations, F.col("gbid"), "entries", 10)
    cells = (registrations
             .groupBy(_label(interface, top_interfaces).alias("i"),
                      _label(F.col("gbid"), top_gbids).alias("g"))
             .agg(F.sum("entries").alias("n")).collect())
    categories = [*top_interfaces, *([OTHER] if any(c["i"] == OTHER for c in cells) else [])]
    gbids = [*top_gbids, *([OTHER] if any(c["g"] == OTHER for c in cells) else [])]
    values = {(c["i"], c["g"]): c["n"] for c in cells}
    registrations_chart = Chart("registrations", "Registrations per backend (GBID) and interface",
                                {"kind": "bars", "categories": categories, "yLabel": "entries",
                                 "series": [{"name": g, "values": [values.get((i, g), 0)
                                                                   for i in categories]}
                                            for g in gbids],
                                 "empty": "the directory is empty"})
    stale_bins = _read(run, "directory/stale_over_time").orderBy("bin_start_ms").collect()
    stale_chart: dict[str, Any] = {"kind": "lines", "x": [], "series": [], "yLabel": "stale",
                                   "empty": "no stale cluster controller"}
    if stale_bins:
        width = stale_bins[0]["bin_ms"]
        first = stale_bins[0]["bin_start_ms"]
        xs = list(range(first, run.now_ms // width * width + 1, width))
        counts, level, index = [], 0, 0
        for x in xs:
            while index < len(stale_bins) and stale_bins[index]["bin_start_ms"] <= x:
                level = stale_bins[index]["stale"]
                index += 1
            counts.append(level)
        stale_chart = {"kind": "lines", "x": xs, "binMs": width, "yLabel": "stale",
                       "series": [{"name": "stale cluster controllers", "values": counts}]}
    controllers = _read(run, "directory/cluster_controllers")
    return Section(
        "directory", "Directory",
        text=[f"The GCD store as of {_utc(run.now_ms)}. A cluster controller is stale when no "
              f"entry of it was seen for {run.config.jobs.stale_after_h:g} h."],
        facts=[("entries", summary["entries"]), ("live", summary["live"]),
               ("expired", summary["expired"]), ("participants", summary["participants"]),
               ("GBIDs", summary["gbids"]),
               ("cluster controllers", summary["cluster_controllers"]),
               ("stale", summary["stale_cluster_controllers"])],
        charts=[registrations_chart,
                Chart("stale", "Stale cluster controllers over time (the ones stale now, by "
                      "when they went stale)", stale_chart)],
        tables=[
            _table(run, "Stale cluster controllers, longest silent first",
                   controllers.where("stale").orderBy("last_seen_ms", "cluster_controller_id"),
                   ["cluster_controller_id", "entries", "gbids", "last_seen_ms",
                    "stale_since_ms"], "directory/cluster_controllers"),
            _table(run, "Registrations", registrations.orderBy(F.desc("entries"), "gbid",
                                                               "domain", "interface_name"),
                   ["gbid", "domain", "interface_name", "major_version", "minor_version",
                    "entries", "live", "expired"], "directory/registrations"),
            _table(run, "Expired entries still stored",
                   _read(run, "directory/expired").orderBy("expiry_ms", "gbid",
                                                           "participant_id"),
                   ["gbid", "participant_id", "domain", "interface_name",
                    "cluster_controller_id", "expiry_ms"], "directory/expired"),
            _table(run, "Participants in several GBIDs with diverging parameters",
                   _read(run, "directory/diverging"), ["participant_id", "gbids", "fields"],
                   "directory/diverging"),
            _table(run, "Participants registered by several cluster controllers",
                   _read(run, "directory/shared_participants"),
                   ["participant_id", "cluster_controller_ids", "gbids"],
                   "directory/shared_participants"),
        ])


def _traffic_sections(run: commands.Run, summary: dict[str, Any] | None) -> list[Section]:
    if summary is None:
        note = "No audit records ingested (bin/pipeline ingest --audit DIR)."
        return [Section("traffic", "Traffic", text=[note]),
                Section("security", "Refusals", text=[note])]
    settings = run.config.report
    hourly = _read(run, "traffic/hourly")
    label = F.when(F.col("domain") == traffic_job.UNKNOWN, F.lit(traffic_job.UNKNOWN)).otherwise(
        F.concat_ws("/", "domain", "interface_name"))
    top = _top(hourly, label, "messages", settings.chart_series)
    # epoch ms computed by Spark: Python's datetimes would be in the local time zone
    span = hourly.agg(F.unix_millis(F.min("hour")), F.unix_millis(F.max("hour"))).first()
    charts: list[Chart] = []
    if span is not None and span[0] is not None:
        first, last = int(span[0]), int(span[1])
        width = time_bin_ms(first, last, settings.max_chart_bins)
        bin_start = (F.floor(F.unix_millis("hour") / width) * width).cast("long")
        cells = (hourly.groupBy(_label(label, top).alias("i"), bin_start.alias("bin"))
                 .agg(F.sum("messages").alias("messages"),
                      F.sum(F.col("dropped") + F.col("refused")).alias("drops"))
                 .collect())
        xs = list(range(first // width * width, last // width * width + 1, width))
        names = [*top, *([OTHER] if any(c["i"] == OTHER for c in cells) else [])]
        for key, measure, caption in (
                ("traffic", "messages", "Messages per interface and "
                 f"{_width_text(width)} (UTC)"),
                ("drops", "drops", "Dropped and refused messages per interface and "
                 f"{_width_text(width)} (UTC)")):
            values = {(c["i"], c["bin"]): c[measure] for c in cells}
            charts.append(Chart(key, caption, {
                "kind": "lines", "x": xs, "binMs": width, "yLabel": measure,
                "series": [{"name": n, "values": [values.get((n, x), 0) for x in xs]}
                           for n in names]}))
    drops = _read(run, "traffic/drops")
    by_reason = (drops.where(F.col("outcome") == "dropped").groupBy("reason")
                 .agg(F.sum("messages").alias("n")).orderBy(F.desc("n"), "reason")
                 .limit(30).collect())
    charts.append(Chart("drop-reasons", "Dropped messages by reason", {
        "kind": "bars", "categories": [str(r["reason"]) for r in by_reason], "yLabel": "messages",
        "series": [{"name": "dropped", "values": [r["n"] for r in by_reason]}],
        "empty": "nothing dropped"}))
    refusals = _read(run, "traffic/refusals")
    refused = (refusals.groupBy("reason").agg(F.sum("messages").alias("n"))
               .orderBy(F.desc("n"), "reason").limit(30).collect())
    per_interface = (hourly.groupBy("domain", "interface_name")
                     .agg(F.sum("messages").alias("messages"), F.sum("bytes").alias("bytes"),
                          F.sum("dropped").alias("dropped"), F.sum("refused").alias("refused"),
                          F.max("queued_p99_ms").alias("worst_hour_p99_queued_ms"))
                     .orderBy(F.desc("messages"), "domain", "interface_name"))
    traffic = Section(
        "traffic", "Traffic",
        text=["Messages are the records of a final outcome (delivered, dropped, refused), "
              "attributed to the provider's domain and interface through the directory."],
        facts=[(name, summary[name]) for name in ("records", "messages", "delivered", "queued",
                                                  "dropped", "refused", "bytes",
                                                  "unattributed")],
        charts=charts,
        tables=[
            _table(run, "Per interface", per_interface,
                   ["domain", "interface_name", "messages", "bytes", "dropped", "refused",
                    "worst_hour_p99_queued_ms"], "traffic/hourly"),
            _table(run, "Top senders", _read(run, "traffic/top_senders"),
                   ["sender", "messages", "bytes"], "traffic/top_senders"),
        ])
    security = Section(
        "security", "Refusals",
        text=["Messages refused on admission (spoofed senders, relays, hostile input that "
              "still decoded to a message), by reason and by the peer they came from."],
        charts=[Chart("refusals", "Refusals by reason", {
            "kind": "bars", "categories": [str(r["reason"]) for r in refused],
            "yLabel": "messages", "series": [{"name": "refused",
                                              "values": [r["n"] for r in refused]}],
            "empty": "nothing refused"})],
        tables=[_table(run, "Refusals by reason and peer", refusals,
                       ["reason", "peer", "messages", "first_ms", "last_ms"],
                       "traffic/refusals")])
    return [traffic, security]


def _drift_section(run: commands.Run, totals: dict[str, Any] | None) -> Section:
    if totals is None:
        return Section("drift", "Drift", text=[
            "No routing table snapshots ingested (bin/pipeline ingest --snapshots DIR)."])
    return Section(
        "drift", "Drift",
        text=["The latest routing table of each cluster controller against the directory: its "
              "routes to remote providers (MQTT, not sticky, without expiry)."],
        facts=[("routing tables", totals["cluster_controllers"]),
               ("routes", totals["routes"]), ("compared", totals["compared"]),
               ("not in directory", totals["not_in_directory"]),
               ("expired there", totals["expired_in_directory"]),
               ("other GBID", totals["other_gbid"]), ("other topic", totals["other_topic"])],
        tables=[_table(run, "Drifted routes", _read(run, "drift/rows"),
                       ["proc", "participant_id", "drift", "route_gbid", "route_topic",
                        "directory_gbids", "directory_topic", "taken_ms"], "drift/rows")])


def _housekeeping_section(run: commands.Run, plan_dir: Path) -> Section:
    plan_text = (plan_dir / "plan.txt").read_text(encoding="utf-8").splitlines()
    return Section(
        "housekeeping", "Housekeeping plan", text=plan_text,
        tables=[_table(run, "removeStale calls", _read(run, "housekeeping/stale_cluster_"
                                                          "controllers")
                       .orderBy("cluster_controller_id"),
                       ["cluster_controller_id", "entries", "gbids", "last_seen_ms"],
                       "housekeeping/stale_cluster_controllers"),
                _table(run, "remove calls (expired entries)", _read(run, "housekeeping/removes"),
                       ["gbid", "participant_id", "cluster_controller_id", "expiry_ms"],
                       "housekeeping/removes")])


def _ingest_section(run: commands.Run) -> Section:
    path = run.out / "ingest_files"
    if not path.exists():
        return Section("ingest", "Input files", text=["Nothing ingested yet."])
    files = _read(run, "ingest_files")
    totals = files.agg(
        F.count(F.lit(1)).alias("files"),
        F.count(F.when(F.col("status") != "ok", 1)).alias("problems"),
        F.coalesce(F.sum("records"), F.lit(0)).alias("records"),
        *(F.coalesce(F.sum(k.replace("-", "_")), F.lit(0)).alias(k.replace("-", "_"))
          for k in REJECT_KINDS)).first()
    assert totals is not None
    return Section(
        "ingest", "Input files",
        text=["Every audit and snapshot file of the last ingest, checked: a truncated file "
              "keeps its lines before the cut, a corrupt one is not read; rejected lines are "
              "counted by kind (tables audit_rejects, snapshot_rejects)."],
        facts=[("files", totals["files"]), ("with problems", totals["problems"]),
               ("records", totals["records"]),
               *((k, totals[k.replace("-", "_")]) for k in REJECT_KINDS)],
        tables=[_table(run, "Files with problems",
                       files.where(F.col("status") != "ok").orderBy("source", "file"),
                       ["source", "file", "status", "gzip", "lines", "records", "corrupt_json",
                        "unknown_version", "bad_field", "too_long", "detail"],
                       "ingest_files")])


# ---------------------------------------------------------------------- the page


def _utc(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _width_text(width_ms: int) -> str:
    hours = width_ms // _HOUR_MS
    if hours == 1:
        return "hour"
    return f"{hours} hours" if hours < 24 else f"{hours // 24} day(s)"


def build_report(run: commands.Run, entries: DataFrame, source: DirectorySource) -> Path:
    """Run every job on the inputs (the ingested tables that exist) and write the page."""
    directory_summary = commands.directory(run, entries)
    traffic_summary = (commands.traffic(run, entries) if (run.out / "audit").exists()
                       else None)
    drift_totals = commands.drift(run, entries) if (run.out / "snapshots").exists() else None
    for missing, name in ((traffic_summary, "audit"), (drift_totals, "snapshots")):
        if missing is None:
            log.warning("report: no ingested %s table in %s: that section stays empty", name,
                        run.out)
    plan_dir = commands.housekeeping(run, entries, source)
    with run.progress.step("report: the page"):
        sections = [_directory_section(run, directory_summary),
                    *_traffic_sections(run, traffic_summary),
                    _drift_section(run, drift_totals),
                    _housekeeping_section(run, plan_dir),
                    _ingest_section(run)]
        page = render("Fleet report",
                      [f"Made {_utc(run.now_ms)} from {source.description}",
                       f"Tables: {run.out}"], sections)
        target = run.out / "report" / "index.html"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(page, encoding="utf-8")
    return target
