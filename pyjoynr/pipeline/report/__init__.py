"""The report: every job's tables, and one HTML page (``OUT/report/index.html``): a header
naming the "now" the figures are judged at; a summary first (the figures an operator wants at
a glance, with what changed: the directory's in the 24 h up to now, the traffic's in the
newest hour of the audit records against the hour before); then a section per job with charts
(registrations per backend and interface, stale cluster controllers over time, traffic and
drops per interface and hour, drops and refusals by reason) and the first rows of the tables;
the housekeeping section lists the cluster controllers whose entries the plan removes.

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

from pyjoynr.pipeline import commands
from pyjoynr.pipeline.jobs import drift as drift_job
from pyjoynr.pipeline.jobs import housekeeping as housekeeping_job
from pyjoynr.pipeline.jobs import traffic as traffic_job
from pyjoynr.pipeline.readers import DirectorySource
from pyjoynr.pipeline.report.page import Chart, Fact, Section, Table, byte_text, render
from pyjoynr.pipeline.schemas import REJECT_KINDS

__all__ = ["build_report", "time_bin_ms", "write_page"]

log = logging.getLogger(__name__)

_HOUR_MS = 3_600_000
_WIDTHS_MS = (_HOUR_MS, 2 * _HOUR_MS, 3 * _HOUR_MS, 6 * _HOUR_MS, 12 * _HOUR_MS, 24 * _HOUR_MS,
              7 * 24 * _HOUR_MS, 30 * 24 * _HOUR_MS)
_DAY_MS = 24 * _HOUR_MS
#: the series (or category) that sums the ones beyond the top [report] chart_series
OTHER = "(other)"


def time_bin_ms(first_ms: int, last_ms: int, max_bins: int) -> int:
    """The narrowest bin (1 h, 2 h, ..., 30 days) that covers first..last in max_bins bins."""
    for width in _WIDTHS_MS:
        if last_ms // width - first_ms // width < max_bins:
            return width
    return _WIDTHS_MS[-1]


def _rows(frame: DataFrame, columns: Sequence[str], limit: int) -> list[list[Any]]:
    return [[row[c] for c in columns] for row in frame.select(*columns).limit(limit).collect()]


def _table(run: commands.Run, title: str, frame: DataFrame, columns: Sequence[str],
           source: str, *, key: str = "") -> Table:
    limit = run.config.report.max_table_rows
    rows = _rows(frame, columns, limit)
    total = frame.count() if len(rows) == limit else len(rows)
    return Table(title, columns, rows, total, source, key or source.replace("/", "-"))


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
    registrations_spec: dict[str, Any] = {
        "kind": "bars", "categories": categories, "yLabel": "entries",
        "series": [{"name": "other GBIDs" if g == OTHER else g,
                    "values": [values.get((i, g), 0) for i in categories]} for g in gbids],
        "empty": "the directory is empty"}
    if OTHER in categories:
        interfaces = registrations.agg(F.count_distinct(interface)).first()
        more = (interfaces[0] if interfaces else 0) - len(top_interfaces)
        registrations_spec |= {"otherCategory": OTHER,
                               "otherLabel": f"other: {more:,} more interfaces, summed"}
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
        stale_chart = {"kind": "lines", "x": xs, "binMs": width,
                       "yLabel": "stale cluster controllers",
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
               Fact("stale", summary["stale_cluster_controllers"],
                    alert=summary["stale_cluster_controllers"] > 0)],
        charts=[Chart("registrations", "Registrations per interface and backend (GBID)",
                      registrations_spec),
                Chart("stale", "Stale cluster controllers over time (the ones stale now, by "
                      "when they went stale; UTC)", stale_chart)],
        tables=[
            _table(run, "Stale cluster controllers, longest silent first",
                   controllers.where("stale").orderBy("last_seen_ms", "cluster_controller_id"),
                   ["cluster_controller_id", "entries", "gbids", "last_seen_ms",
                    "stale_since_ms"], "directory/cluster_controllers", key="stale-controllers"),
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


def _interface_label() -> Column:
    """A provider's domain and interface as one text, "domain · interface" (an interface's
    name has "/" in it: never joined with "/"); the placeholders (not in the directory,
    registrations disagree) stand alone."""
    placeholder = F.col("domain").isin(traffic_job.UNKNOWN, traffic_job.AMBIGUOUS)
    return F.when(placeholder, F.col("domain")).otherwise(
        F.concat_ws(" \u00b7 ", "domain", "interface_name"))


def _traffic_sections(run: commands.Run, summary: dict[str, Any] | None) -> list[Section]:
    if summary is None:
        note = "No audit records ingested (bin/pipeline ingest --audit DIR)."
        return [Section("traffic", "Traffic", text=[note]),
                Section("security", "Refusals", text=[note])]
    settings = run.config.report
    hourly = _read(run, "traffic/hourly")
    label = _interface_label()
    top = _top(hourly, label, "messages", settings.chart_series)
    # epoch ms computed by Spark: Python's datetimes would be in the local time zone
    span = hourly.agg(F.unix_millis(F.min("hour")), F.unix_millis(F.max("hour")),
                      F.count_distinct(label)).first()
    charts: list[Chart] = []
    if span is not None and span[0] is not None:
        first, last, labels = int(span[0]), int(span[1]), int(span[2])
        width = time_bin_ms(first, last, settings.max_chart_bins)
        bin_start = (F.floor(F.unix_millis("hour") / width) * width).cast("long")
        cells = (hourly.groupBy(_label(label, top).alias("i"), bin_start.alias("bin"))
                 .agg(F.sum("messages").alias("messages"),
                      F.sum(F.col("dropped") + F.col("refused")).alias("drops"))
                 .collect())
        xs = list(range(first // width * width, last // width * width + 1, width))
        has_other = any(c["i"] == OTHER for c in cells)
        for key, measure, caption in (
                ("traffic", "messages", "Messages per interface and "
                 f"{_width_text(width)} (UTC)"),
                ("drops", "drops", "Dropped and refused messages per interface and "
                 f"{_width_text(width)} (UTC)")):
            values = {(c["i"], c["bin"]): c[measure] for c in cells}
            spec: dict[str, Any] = {
                "kind": "lines", "x": xs, "binMs": width, "yLabel": f"{measure} per "
                f"{_width_text(width)}",
                "series": [{"name": n, "values": [values.get((n, x), 0) for x in xs]}
                           for n in top]}
            if has_other:
                # the rest, summed: drawn apart, so that it does not flatten the named ones
                spec["other"] = {"name": f"other: {labels - len(top):,} more interfaces, "
                                         "summed",
                                 "values": [values.get((OTHER, x), 0) for x in xs]}
            charts.append(Chart(key, caption, spec))
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
        facts=[*((name, summary[name]) for name in ("records", "messages", "delivered",
                                                     "queued")),
               Fact("dropped", summary["dropped"], alert=summary["dropped"] > 0),
               Fact("refused", summary["refused"], alert=summary["refused"] > 0),
               Fact("bytes delivered", summary["bytes"], "bytes"),
               Fact("not in directory", summary["unattributed"]),
               *([Fact("registrations disagree", summary["ambiguous"])]
                 if "ambiguous" in summary else [])],
        charts=charts,
        tables=[
            _table(run, "Per interface", per_interface,
                   ["domain", "interface_name", "messages", "bytes", "dropped", "refused",
                    "worst_hour_p99_queued_ms"], "traffic/hourly", key="per-interface"),
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
               *(Fact(label, totals[key], alert=totals[key] > 0) for label, key in (
                   ("not in directory", "not_in_directory"),
                   ("expired there", "expired_in_directory"), ("other GBID", "other_gbid"),
                   ("other topic", "other_topic")))],
        tables=[_table(run, "Drifted routes", _read(run, "drift/rows"),
                       ["proc", "participant_id", "drift", "route_gbid", "route_topic",
                        "directory_gbids", "directory_topic", "taken_ms"], "drift/rows")])


def _housekeeping_section(run: commands.Run, plan_dir: Path, directory_entries: int
                          ) -> tuple[Section, dict[str, Any]]:
    """The plan: what it removes, per cluster controller, and its plan.txt; returns the
    section and the plan's totals (for the summary)."""
    planned = _read(run, "housekeeping/planned_entries")
    stale_call = F.col("action") == housekeeping_job.REMOVE_STALE
    row = planned.agg(
        F.count(F.lit(1)).alias("entries"),
        F.count_distinct("cluster_controller_id").alias("controllers"),
        F.count_distinct(F.when(stale_call, F.col("cluster_controller_id"))).alias("stale"),
        F.count(F.when(~stale_call, 1)).alias("removes")).first()
    assert row is not None
    totals = row.asDict() | {"share": row["entries"] / directory_entries
                             if directory_entries else 0.0}
    per_controller = (planned.groupBy("cluster_controller_id", "action")
                      .agg(F.count(F.lit(1)).alias("entries"),
                           F.array_sort(F.collect_set("gbid")).alias("gbids"),
                           F.max("last_seen_ms").alias("last_seen_ms"))
                      .orderBy(F.desc("entries"), "cluster_controller_id"))
    max_share = run.config.housekeeping.max_purge_share
    large = totals["share"] > max_share
    section = Section(
        "housekeeping", "Housekeeping plan",
        text=["What housekeeping --apply would remove from the directory, through the GCD's "
              "own calls: removeStale for each stale cluster controller (all its entries), "
              "remove for each expired entry of the others."],
        facts=[Fact("entries removed", totals["entries"], alert=totals["entries"] > 0),
               Fact("of the directory", totals["share"], "share", alert=large,
                    detail=f"[housekeeping] max_purge_share: {100 * max_share:g} %"),
               Fact("cluster controllers", totals["controllers"]),
               Fact("removeStale calls", totals["stale"]),
               Fact("remove calls", totals["removes"])],
        tables=[_table(run, "Cluster controllers whose entries the plan removes, most "
                       "first", per_controller,
                       ["cluster_controller_id", "action", "entries", "gbids",
                        "last_seen_ms"], "housekeeping/planned_entries",
                       key="housekeeping-controllers"),
                _table(run, "Expired entries of the others (remove calls)",
                       _read(run, "housekeeping/removes"),
                       ["gbid", "participant_id", "cluster_controller_id", "expiry_ms"],
                       "housekeeping/removes")],
        texts=[("The plan as text (plan.txt)",
                (plan_dir / "plan.txt").read_text(encoding="utf-8"))])
    return section, totals


def _ingest_section(run: commands.Run) -> tuple[Section, dict[str, Any] | None]:
    path = run.out / "ingest_files"
    if not path.exists():
        return Section("ingest", "Input files", text=["Nothing ingested yet."]), None
    files = _read(run, "ingest_files")
    row = files.agg(
        F.count(F.lit(1)).alias("files"),
        F.count(F.when(F.col("status") != "ok", 1)).alias("problems"),
        F.coalesce(F.sum("records"), F.lit(0)).alias("records"),
        *(F.coalesce(F.sum(k.replace("-", "_")), F.lit(0)).alias(k.replace("-", "_"))
          for k in REJECT_KINDS)).first()
    assert row is not None
    totals = row.asDict()
    section = Section(
        "ingest", "Input files",
        text=["Every audit and snapshot file of the last ingest, checked: a truncated file "
              "keeps its lines before the cut, a corrupt one is not read; rejected lines are "
              "counted by kind (tables audit_rejects, snapshot_rejects)."],
        facts=[("files", totals["files"]),
               Fact("with problems", totals["problems"], alert=totals["problems"] > 0),
               ("records", totals["records"]),
               *(Fact(k, totals[k.replace("-", "_")], alert=totals[k.replace("-", "_")] > 0)
                 for k in REJECT_KINDS)],
        tables=[_table(run, "Files with problems",
                       files.where(F.col("status") != "ok").orderBy("source", "file"),
                       ["source", "file", "status", "gzip", "lines", "records", "corrupt_json",
                        "unknown_version", "bad_field", "too_long", "detail"],
                       "ingest_files", key="ingest-problems")])
    return section, totals


# ---------------------------------------------------------------------- the summary


def _change(now: int, before: int, unit: str = "count") -> str:
    """``now`` against ``before``: "+3 (+30 %)", "no change", a decrease with a minus sign."""
    diff = now - before
    if diff == 0:
        return "no change"
    sign = "+" if diff > 0 else "\u2212"
    amount = byte_text(abs(diff)) if unit == "bytes" else f"{abs(diff):,}"
    share = f" ({sign}{100 * abs(diff) / before:.0f} %)" if before else ""
    return f"{sign}{amount}{share}"


def _traffic_hours(run: commands.Run) -> tuple[int, dict[str, int], dict[str, int]] | None:
    """The newest hour of the audit data (epoch ms) and its totals and the hour before's
    (messages, bytes, drops: dropped and refused)."""
    hourly = _read(run, "traffic/hourly")
    rows = (hourly.groupBy(F.unix_millis("hour").alias("hour"))
            .agg(F.sum("messages").alias("messages"), F.sum("bytes").alias("bytes"),
                 F.sum(F.col("dropped") + F.col("refused")).alias("drops"))
            .orderBy(F.desc("hour")).limit(2).collect())
    if not rows:
        return None
    newest = int(rows[0]["hour"])
    zero = {"messages": 0, "bytes": 0, "drops": 0}
    before = next(({k: int(r[k] or 0) for k in zero} for r in rows[1:]
                   if r["hour"] == newest - _HOUR_MS), zero)
    return newest, {k: int(rows[0][k] or 0) for k in zero}, before


def _hour_change(hours: tuple[int, dict[str, int], dict[str, int]] | None, measure: str
                 ) -> str:
    """The newest hour's figure and its change against the hour before."""
    if hours is None:
        return ""
    newest, last, before = hours
    hour = dt.datetime.fromtimestamp(newest / 1000, dt.UTC).strftime("%H:%M")
    unit = "bytes" if measure == "bytes" else "count"
    value = byte_text(last[measure]) if unit == "bytes" else f"{last[measure]:,}"
    return f"last hour ({hour}): {value}, {_change(last[measure], before[measure], unit)}"


def _summary_section(run: commands.Run, *, directory: dict[str, Any],
                     traffic: dict[str, Any] | None, drift: dict[str, Any] | None,
                     plan: dict[str, Any], ingest: dict[str, Any] | None) -> Section:
    """The figures an operator wants first, with what changed: the directory's in the 24 h up
    to now; the traffic's in the newest hour of the audit data against the hour before."""
    day_ago = run.now_ms - _DAY_MS
    went_stale = (_read(run, "directory/cluster_controllers")
                  .where(F.col("stale") & (F.col("stale_since_ms") > day_ago)).count())
    newly_expired = (_read(run, "directory/expired")
                     .where(F.col("expiry_ms") > day_ago).count())
    stale = directory["stale_cluster_controllers"]
    facts = [
        Fact("directory rows", directory["entries"],
             detail=f"{directory['live']:,} live, {directory['participants']:,} participants "
                    f"in {directory['gbids']:,} GBID(s)"),
        Fact("cluster controllers", directory["cluster_controllers"], alert=stale > 0,
             detail=f"{stale:,} stale, {_change(went_stale, 0)} in the last 24 h"
             if stale else "none stale"),
        Fact("expired rows", directory["expired"], alert=directory["expired"] > 0,
             detail=f"{_change(newly_expired, 0)} in the last 24 h"),
    ]
    compared = ["Directory changes: the 24 h up to now."]
    hours = _traffic_hours(run) if traffic is not None else None
    if traffic is not None:
        drops = traffic["dropped"] + traffic["refused"]
        if hours is not None:
            compared.append(f"Traffic changes: the newest hour of the audit records (from "
                            f"{_utc(hours[0])}) against the hour before.")
        facts += [
            Fact("messages", traffic["messages"], detail=_hour_change(hours, "messages")),
            Fact("bytes delivered", traffic["bytes"], "bytes",
                 detail=_hour_change(hours, "bytes")),
            Fact("drops and refusals", drops, alert=drops > 0,
                 detail=f"{traffic['dropped']:,} dropped, {traffic['refused']:,} refused; "
                        + _hour_change(hours, "drops")),
        ]
    else:
        facts.append(Fact("messages", None, detail="no audit records ingested"))
    if drift is not None:
        findings = sum(drift[k.replace("-", "_")] for k in drift_job.DRIFT_KINDS)
        facts.append(Fact("drift findings", findings, alert=findings > 0,
                          detail=f"{drift['compared']:,} routes of {drift['cluster_controllers']:,}"
                                 " routing table(s) compared (their latest snapshots)"))
    else:
        facts.append(Fact("drift findings", None, detail="no routing snapshots ingested"))
    large = plan["share"] > run.config.housekeeping.max_purge_share
    facts.append(Fact(
        "housekeeping would purge", plan["entries"], alert=large,
        detail=f"entries, {100 * plan['share']:.1f} % of the directory"
               + (" (above max_purge_share)" if large else "")
               + f", of {plan['controllers']:,} cluster controller(s), {plan['stale']:,} stale"))
    if ingest is not None:
        rejected = sum(ingest[k.replace("-", "_")] for k in REJECT_KINDS)
        facts.append(Fact("input files", ingest["files"],
                          alert=bool(ingest["problems"] or rejected),
                          detail=f"{ingest['problems']:,} with problems, {rejected:,} rejected "
                                 "line(s)"))
    return Section("summary", "Summary", facts=facts, notes=[" ".join(compared)])


# ---------------------------------------------------------------------- the page


def _utc(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _width_text(width_ms: int) -> str:
    hours = width_ms // _HOUR_MS
    if hours == 1:
        return "hour"
    return f"{hours} hours" if hours < 24 else f"{hours // 24} day(s)"


def _header(run: commands.Run, source: DirectorySource) -> list[str]:
    """Which "now" the figures are judged at and where it came from, when the page was made,
    from what."""
    given = run.now_source == "--now-ms"
    now = (f"Judged at now = {_utc(run.now_ms)} "
           + ("(given with --now-ms)" if given
              else f"(from {run.now_source}: no --now-ms given)"))
    made = dt.datetime.now(dt.UTC)
    return [now, f"Page made {made.strftime('%Y-%m-%d %H:%M:%S UTC')} (the machine clock)",
            f"Directory: {source.description}. Tables: {run.out}"]


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
    return write_page(run, source, directory_summary=directory_summary,
                      traffic_summary=traffic_summary, drift_totals=drift_totals,
                      plan_dir=plan_dir)


def write_page(run: commands.Run, source: DirectorySource, *, directory_summary: dict[str, Any],
               traffic_summary: dict[str, Any] | None, drift_totals: dict[str, Any] | None,
               plan_dir: Path) -> Path:
    """The page of jobs already run on ``run`` (their summaries, as the jobs return them, and
    the housekeeping plan's folder): OUT/report/index.html. :func:`build_report` runs the
    jobs, then this; a caller that has run them itself (the pipeline's tests, which assert
    the summaries) writes the same page without running them again."""
    with run.progress.step("report: the page"):
        housekeeping, plan = _housekeeping_section(run, plan_dir,
                                                   directory_summary["entries"])
        ingest, ingest_totals = _ingest_section(run)
        sections = [_summary_section(run, directory=directory_summary,
                                     traffic=traffic_summary, drift=drift_totals, plan=plan,
                                     ingest=ingest_totals),
                    *_traffic_sections(run, traffic_summary),
                    _directory_section(run, directory_summary),
                    _drift_section(run, drift_totals),
                    housekeeping,
                    ingest]
        page = render("Fleet report", _header(run, source), sections)
        target = run.out / "report" / "index.html"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(page, encoding="utf-8")
    return target
