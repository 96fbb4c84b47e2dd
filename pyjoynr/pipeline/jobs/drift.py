"""The drift job: routing tables against the directory (pure: DataFrames in and out).

Input: routing table snapshots (docs/records.md v1, :data:`pipeline.schemas.SNAPSHOT_V1`; the
latest one of each cluster controller counts) and the directory. The routes compared are the
remote routes a cluster controller took from discovery: MQTT addresses, not sticky, that never
expire. Left out, and counted in the summary: routes to local participants (in-process,
websocket), sticky ones (provisioned by configuration; they need no directory entry) and MQTT
routes with an expiry (learned replyTo routes to callers, which are never in the directory).

Each compared route is one of:

- ``not-in-directory``: the directory has no row of the participant;
- ``expired-in-directory``: it has rows, all expired;
- ``other-gbid``: it has live rows, none in the route's GBID;
- ``other-topic``: its live row in the route's GBID has another topic;
- in agreement (not a drift row).

A snapshot of no entry (an empty routing table: a file of no line) has no record, so it is
known from the ingest's status row of its file (``ingest_files``) and the file's name
(docs/records.md: ``routing-<cc id>-<UTC yyyymmddTHHMMSSZ>-<ms>.jsonl.gz``): when it is a
cluster controller's latest, that cluster controller's summary row says so
(``empty_snapshot``, no route), instead of the controller vanishing or an older snapshot
standing in for it.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pyjoynr.pipeline.schemas import NEVER_MS

__all__ = ["DRIFT_KINDS", "SNAPSHOT_NAME", "compared_routes", "drift", "latest_snapshots",
           "latest_taken", "snapshots_taken", "summary"]

DRIFT_KINDS = ("not-in-directory", "expired-in-directory", "other-gbid", "other-topic")

#: a snapshot file's name (docs/records.md): the cluster controller's id as written in names,
#: the UTC time of the snapshot to the second, its milliseconds
SNAPSHOT_NAME = r"^routing-(.+)-([0-9]{8}T[0-9]{6}Z)-([0-9]{3})\.jsonl\.gz$"


def snapshots_taken(snapshots: DataFrame, files: DataFrame | None = None) -> DataFrame:
    """One row per snapshot read: ``proc``, ``taken_ms``, ``file``, ``entries``. Those with
    entries from their records (``snapshots``); with ``files`` (the table ingest_files), the
    empty ones too: a snapshot file read whole (gzip ``ok`` or ``empty``) with no line, its
    time from its name, its cluster controller's id as the records of its other snapshots
    give it (a name writes characters outside ``[A-Za-z0-9._-]`` as ``_``), else as named."""
    taken = snapshots.groupBy("file").agg(F.min("proc").alias("proc"),
                                          F.max("taken_ms").alias("taken_ms"),
                                          F.count(F.lit(1)).alias("entries"))
    if files is None:
        return taken.select("proc", "taken_ms", "file", "entries")
    named = (files.where(F.col("source") == "snapshots")
             .select("file", "gzip", "lines",
                     F.regexp_extract("file", SNAPSHOT_NAME, 1).alias("named"),
                     # null when the digits are no time (month 13): not a snapshot's name
                     (F.unix_millis(F.try_to_timestamp(
                         F.regexp_extract("file", SNAPSHOT_NAME, 2),
                         F.lit("yyyyMMdd'T'HHmmss'Z'")))
                      + F.regexp_extract("file", SNAPSHOT_NAME, 3).cast("long"))
                     .alias("named_ms"))
             .where((F.col("named") != "") & F.col("named_ms").isNotNull()))
    ids = (named.join(taken, "file").groupBy("named").agg(F.min("proc").alias("proc")))
    empty = (named.where(F.col("gzip").isin("ok", "empty") & (F.col("lines") == 0))
             .join(ids, "named", "left")
             .select(F.coalesce("proc", "named").alias("proc"),
                     F.col("named_ms").alias("taken_ms"), "file",
                     F.lit(0).cast("long").alias("entries")))
    return taken.select("proc", "taken_ms", "file", "entries").unionByName(empty)


def latest_taken(taken: DataFrame) -> DataFrame:
    """The latest of each cluster controller's snapshots (``taken`` from
    :func:`snapshots_taken`): ``proc``, ``taken_ms``, ``file``, ``entries``."""
    return (taken.groupBy("proc")
            .agg(F.max(F.struct("taken_ms", "entries", "file")).alias("s"))
            .select("proc", "s.taken_ms", "s.file", "s.entries"))


def latest_snapshots(snapshots: DataFrame, latest: DataFrame | None = None) -> DataFrame:
    """The entries of each cluster controller's latest snapshot (``latest`` from
    :func:`latest_taken`; without it, the latest snapshot with entries): none for one whose
    latest snapshot is empty."""
    if latest is None:
        latest = snapshots.groupBy("proc").agg(F.max("taken_ms").alias("taken_ms"))
    return snapshots.join(F.broadcast(latest.select("proc", "taken_ms")), ["proc", "taken_ms"],
                          "left_semi")


def compared_routes(latest: DataFrame) -> DataFrame:
    """The snapshot entries with ``scope``: "compared", or why not: "local" (not an MQTT
    address), "sticky", "expiring"."""
    return latest.withColumn(
        "scope",
        F.when(F.col("kind") != "mqtt", F.lit("local"))
        .when(F.col("sticky"), F.lit("sticky"))
        .when(F.col("expiry_ms") != F.lit(NEVER_MS), F.lit("expiring"))
        .otherwise(F.lit("compared")))


def drift(routes: DataFrame, directory: DataFrame, now_ms: int) -> DataFrame:
    """One row per compared route that disagrees with the directory (see the module
    docstring): proc, taken_ms, participant_id, drift, the route's GBID and topic, the GBIDs
    the directory has live rows in and its topic in the route's GBID."""
    live = F.col("expiry_ms") >= F.lit(now_ms)
    per_participant = directory.groupBy("participant_id").agg(
        F.count(F.lit(1)).alias("rows"),
        F.array_sort(F.collect_set(F.when(live, F.col("gbid")))).alias("directory_gbids"))
    live_rows = directory.where(live).select(
        "participant_id", F.col("gbid").alias("route_gbid"),
        F.col("topic").alias("directory_topic"))
    compared = (routes.where(F.col("scope") == "compared")
                .select("proc", "taken_ms", "participant_id",
                        F.col("gbid").alias("route_gbid"), F.col("topic").alias("route_topic")))
    kind = (F.when(F.col("rows").isNull(), F.lit("not-in-directory"))
            .when(F.size("directory_gbids") == 0, F.lit("expired-in-directory"))
            .when(F.col("directory_topic").isNull(), F.lit("other-gbid"))
            .when(~F.col("directory_topic").eqNullSafe(F.col("route_topic")),
                  F.lit("other-topic")))
    return (compared.join(per_participant, "participant_id", "left")
            .join(live_rows, ["participant_id", "route_gbid"], "left")
            .withColumn("drift", kind)
            .where(F.col("drift").isNotNull())
            .select("proc", "taken_ms", "participant_id", "drift", "route_gbid", "route_topic",
                    "directory_gbids", "directory_topic")
            .orderBy("proc", "participant_id"))


def summary(routes: DataFrame, drift_rows: DataFrame, latest: DataFrame | None = None
            ) -> DataFrame:
    """Per cluster controller (latest snapshot: ``latest`` from :func:`latest_taken`, without
    it from ``routes``): routes, compared, left out by reason, drift rows by kind, and
    ``empty_snapshot`` (its latest snapshot has no entry: nothing to compare)."""
    if latest is None:
        latest = routes.groupBy("proc", "taken_ms").agg(F.count(F.lit(1)).alias("entries"))
    scopes = routes.groupBy("proc").agg(
        F.count(F.lit(1)).alias("routes"),
        *(F.count(F.when(F.col("scope") == s, 1)).alias(s)
          for s in ("compared", "local", "sticky", "expiring")))
    kinds = drift_rows.groupBy("proc").agg(
        *(F.count(F.when(F.col("drift") == k, 1)).alias(k.replace("-", "_"))
          for k in DRIFT_KINDS))
    counts = ["routes", "compared", "local", "sticky", "expiring",
              *(k.replace("-", "_") for k in DRIFT_KINDS)]
    return (latest.select("proc", "taken_ms", (F.col("entries") == 0).alias("empty_snapshot"))
            .join(scopes, "proc", "left")
            .join(kinds, "proc", "left")
            .na.fill(0, counts)
            .select("proc", "taken_ms", *counts, "empty_snapshot")
            .orderBy("proc"))
