"""The directory job: what the GCD store holds, fleet-wide (pure: DataFrames in and out).

Input: the rows of ``discovery_entries`` (:data:`pipeline.schemas.DIRECTORY`), one per
(GBID, participantId). A row is live while ``expiry_ms >= now`` (the GCD's rule). A cluster
controller is **stale** when every one of its rows was last seen before ``now - stale_after``
(it has stopped touching them); it went stale at its last ``last_seen_ms + stale_after``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

__all__ = [
    "COMPARED_FIELDS",
    "DirectoryParams",
    "cluster_controllers",
    "diverging_registrations",
    "expired_entries",
    "multi_row_participants",
    "registrations",
    "shared_participants",
    "stale_over_time",
    "summary",
]

#: the fields a participant's rows in several GBIDs should agree on (all but the GBID and the
#: times: a touch or a registration in one more GBID may leave those apart)
COMPARED_FIELDS = ("domain", "interface_name", "major_version", "minor_version", "priority",
                   "scope", "supports_on_change", "custom_parameters", "public_key_id", "topic",
                   "cluster_controller_id")


@dataclass(frozen=True)
class DirectoryParams:
    #: the time the directory is judged at (epoch ms)
    now_ms: int
    #: a cluster controller not seen for longer is stale (ms)
    stale_after_ms: int


def _live(params: DirectoryParams) -> Column:
    return F.col("expiry_ms") >= F.lit(params.now_ms)


def registrations(directory: DataFrame, params: DirectoryParams) -> DataFrame:
    """Entries per GBID, domain, interface and version: all, live and expired."""
    live = _live(params)
    return (directory
            .groupBy("gbid", "domain", "interface_name", "major_version", "minor_version")
            .agg(F.count(F.lit(1)).alias("entries"),
                 F.count(F.when(live, 1)).alias("live"),
                 F.count(F.when(~live, 1)).alias("expired"))
            .orderBy("gbid", "domain", "interface_name", "major_version", "minor_version"))


def expired_entries(directory: DataFrame, params: DirectoryParams) -> DataFrame:
    """The expired rows still stored (the GCD never returns them; a purge deletes them)."""
    return (directory.where(~_live(params))
            .select("gbid", "participant_id", "domain", "interface_name",
                    "cluster_controller_id", "last_seen_ms", "expiry_ms"))


def cluster_controllers(directory: DataFrame, params: DirectoryParams) -> DataFrame:
    """One row per cluster controller of the directory: its entries (rows), GBIDs, the last
    time any of its rows was seen, whether it is stale and since when (null: not stale)."""
    threshold = params.now_ms - params.stale_after_ms
    return (directory.groupBy("cluster_controller_id")
            .agg(F.count(F.lit(1)).alias("entries"),
                 F.count(F.when(_live(params), 1)).alias("live"),
                 F.array_sort(F.collect_set("gbid")).alias("gbids"),
                 F.max("last_seen_ms").alias("last_seen_ms"))
            .withColumn("stale", F.col("last_seen_ms") < F.lit(threshold))
            .withColumn("stale_since_ms",
                        F.when(F.col("stale"),
                               F.col("last_seen_ms") + F.lit(params.stale_after_ms))))


def stale_over_time(controllers: DataFrame, bin_ms: int) -> DataFrame:
    """The cluster controllers stale now, by when they went stale: per time bin (``bin_ms``
    wide, epoch-aligned), how many went stale in it and how many were stale by its end
    (cumulative). Small: one row per bin that has any."""
    per_bin = (controllers.where("stale")
               .groupBy((F.floor(F.col("stale_since_ms") / bin_ms) * bin_ms)
                        .cast("long").alias("bin_start_ms"))
               .agg(F.count(F.lit(1)).alias("went_stale")))
    # the running total: each bin joined with the bins up to it (a row per bin, few, so the
    # pairs are few too). Not a window: one over the whole data set has no partition and moves
    # everything to one task (Spark warns about it on every plan)
    earlier = per_bin.select(F.col("bin_start_ms").alias("earlier_ms"),
                             F.col("went_stale").alias("earlier_went_stale"))
    return (per_bin.join(earlier, F.col("earlier_ms") <= F.col("bin_start_ms"))
            .groupBy("bin_start_ms", "went_stale")
            .agg(F.sum("earlier_went_stale").alias("stale"))
            .orderBy("bin_start_ms"))


def multi_row_participants(directory: DataFrame) -> DataFrame:
    """Participants with several rows (so in several GBIDs: one row per (gbid, participant)):
    their GBIDs, cluster controllers, and the names of the fields their rows disagree on
    (:data:`COMPARED_FIELDS`). One aggregation for :func:`diverging_registrations` and
    :func:`shared_participants`, which only select from it."""
    # min != max per field: plain aggregates (a distinct count per field would copy every row
    # once per field)
    differs = [(F.min(name) != F.max(name)).alias(name) for name in COMPARED_FIELDS]
    fields = F.filter(F.array(*(F.when(F.col(name), F.lit(name)) for name in COMPARED_FIELDS)),
                      lambda name: name.isNotNull())
    return (directory.groupBy("participant_id")
            .agg(F.count(F.lit(1)).alias("rows"),
                 F.array_sort(F.collect_set("gbid")).alias("gbids"),
                 F.array_sort(F.collect_set("cluster_controller_id"))
                 .alias("cluster_controller_ids"), *differs)
            .where(F.col("rows") > 1)
            .select("participant_id", "gbids", "cluster_controller_ids",
                    fields.alias("fields")))


def diverging_registrations(multi_row: DataFrame) -> DataFrame:
    """Participants registered in several GBIDs whose rows disagree: the GBIDs and the names of
    the fields that differ (``multi_row`` from :func:`multi_row_participants`)."""
    return (multi_row.where(F.size("fields") > 0)
            .select("participant_id", "gbids", "fields").orderBy("participant_id"))


def shared_participants(multi_row: DataFrame) -> DataFrame:
    """Fixed participantIds registered by several cluster controllers (in different GBIDs:
    within one, a later registration replaces the earlier one)."""
    return (multi_row.where(F.size("cluster_controller_ids") > 1)
            .select("participant_id", "cluster_controller_ids", "gbids")
            .orderBy("participant_id"))


def summary(directory: DataFrame, controllers: DataFrame, params: DirectoryParams) -> DataFrame:
    """One row: entries, live, expired, participants, GBIDs, cluster controllers, stale ones."""
    entries = directory.agg(
        F.count(F.lit(1)).alias("entries"),
        F.count(F.when(_live(params), 1)).alias("live"),
        F.count(F.when(~_live(params), 1)).alias("expired"),
        F.count_distinct("participant_id").alias("participants"),
        F.count_distinct("gbid").alias("gbids"))
    ccs = controllers.agg(F.count(F.lit(1)).alias("cluster_controllers"),
                          F.count(F.when(F.col("stale"), 1)).alias("stale_cluster_controllers"))
    return (entries.crossJoin(ccs)
            .withColumn("now_ms", F.lit(params.now_ms))
            .withColumn("stale_after_ms", F.lit(params.stale_after_ms)))
