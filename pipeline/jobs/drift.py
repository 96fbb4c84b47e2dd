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
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pipeline.schemas import NEVER_MS

__all__ = ["DRIFT_KINDS", "compared_routes", "drift", "latest_snapshots", "summary"]

DRIFT_KINDS = ("not-in-directory", "expired-in-directory", "other-gbid", "other-topic")


def latest_snapshots(snapshots: DataFrame) -> DataFrame:
    """The entries of each cluster controller's latest snapshot."""
    latest = snapshots.groupBy("proc").agg(F.max("taken_ms").alias("taken_ms"))
    return snapshots.join(F.broadcast(latest), ["proc", "taken_ms"], "left_semi")


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


def summary(routes: DataFrame, drift_rows: DataFrame) -> DataFrame:
    """Per cluster controller (latest snapshot): routes, compared, left out by reason, and
    drift rows by kind."""
    scopes = routes.groupBy("proc", "taken_ms").agg(
        F.count(F.lit(1)).alias("routes"),
        *(F.count(F.when(F.col("scope") == s, 1)).alias(s)
          for s in ("compared", "local", "sticky", "expiring")))
    kinds = drift_rows.groupBy("proc").agg(
        *(F.count(F.when(F.col("drift") == k, 1)).alias(k.replace("-", "_"))
          for k in DRIFT_KINDS))
    return (scopes.join(kinds, "proc", "left")
            .na.fill(0, [k.replace("-", "_") for k in DRIFT_KINDS])
            .orderBy("proc"))
