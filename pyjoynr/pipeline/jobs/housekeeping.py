"""The housekeeping job: the purge plan for the directory (pure: DataFrames in and out).

The plan is carried out only through the GCD's joynr interface (:mod:`pipeline.apply`), never
by deleting rows, so it is made of the GCD's own calls:

- ``removeStale(cc, before_ms)`` for each stale cluster controller, ``before_ms`` one past the
  last time any of its rows was seen: the GCD deletes that controller's rows last seen before
  it, in every GBID - exactly the rows the plan saw, and none the controller touched or
  registered again since;
- ``remove`` of each expired row of the other controllers, sent to the GCD instance of the
  row's GBID (the form that acts on the instance's own GBID whether or not the row expired).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pyjoynr.pipeline.jobs.directory import DirectoryParams

__all__ = ["REMOVE", "REMOVE_STALE", "planned_entries", "remove_actions", "remove_stale_actions"]

REMOVE_STALE = "removeStale"
REMOVE = "remove"


def remove_stale_actions(controllers: DataFrame) -> DataFrame:
    """One removeStale per stale cluster controller (``controllers`` from
    :func:`pipeline.jobs.directory.cluster_controllers`)."""
    return (controllers.where("stale")
            .select(F.lit(REMOVE_STALE).alias("action"), "cluster_controller_id",
                    (F.col("last_seen_ms") + 1).alias("before_ms"),
                    F.col("last_seen_ms").alias("max_last_seen_ms"), "entries", "gbids")
            .orderBy("cluster_controller_id"))


def remove_actions(directory: DataFrame, controllers: DataFrame, params: DirectoryParams
                   ) -> DataFrame:
    """One remove per expired row of a cluster controller that is not stale (a stale one's
    rows all go with its removeStale)."""
    stale = controllers.where("stale").select("cluster_controller_id")
    return (directory.where(F.col("expiry_ms") < F.lit(params.now_ms))
            .join(stale, "cluster_controller_id", "left_anti")
            .select(F.lit(REMOVE).alias("action"), "gbid", "participant_id",
                    "cluster_controller_id", "expiry_ms")
            .orderBy("gbid", "participant_id"))


def planned_entries(directory: DataFrame, stale_actions: DataFrame, removes: DataFrame
                    ) -> DataFrame:
    """Every row the plan removes, with the action that removes it: what applying the plan
    must delete, and nothing else."""
    by_stale = (directory.join(stale_actions.select("cluster_controller_id"),
                               "cluster_controller_id", "left_semi")
                .select(F.lit(REMOVE_STALE).alias("action"), "gbid", "participant_id",
                        "cluster_controller_id", "last_seen_ms", "expiry_ms"))
    by_remove = (directory.join(removes.select("gbid", "participant_id"),
                                ["gbid", "participant_id"], "left_semi")
                 .select(F.lit(REMOVE).alias("action"), "gbid", "participant_id",
                         "cluster_controller_id", "last_seen_ms", "expiry_ms"))
    return by_stale.unionByName(by_remove).orderBy("gbid", "participant_id")
