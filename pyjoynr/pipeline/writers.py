"""Where the pipeline's results go: Parquet tables under the output directory, the ingest's
one-pass split into records and rejects, single JSON Lines files (the housekeeping plan).

The output directory is on a file system the driver sees at the same path as the executors (a
local disk in local mode); each table is replaced as a whole by the run that makes it.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

__all__ = ["REJECT_COLUMNS", "write_json", "write_jsonl", "write_split", "write_table"]

log = logging.getLogger(__name__)


def write_table(frame: DataFrame, out: Path, name: str, *,
                partition_by: tuple[str, ...] = ()) -> Path:
    """``frame`` as the Parquet table ``out/name`` (replacing it)."""
    path = out / name
    writer = frame.write.mode("overwrite")
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.parquet(str(path))
    return path


def _replace(source: Path, target: Path) -> None:
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    source.rename(target)


#: the columns of a rejects table (not partitioned: a rejected line has no trusted time)
REJECT_COLUMNS = ("file", "verdict", "text")


def write_split(classified: DataFrame, out: Path, records: str, rejects: str) -> None:
    """Write ``classified`` (from :func:`pipeline.jobs.ingest.classify`: a ``table`` column of
    "records" or "rejects", and ``date``) in ONE pass over its input: the Parquet tables
    ``out/records`` (partitioned by ``date``) and ``out/rejects`` (not partitioned, columns
    :data:`REJECT_COLUMNS`: its rows have no date, which would make a partition of nulls).
    Either is an empty table with its columns when it has no rows."""
    staging = out / f".staging-{records}"
    if staging.exists():
        shutil.rmtree(staging)
    classified.write.mode("overwrite").partitionBy("table", "date").parquet(str(staging))
    part = staging / "table=records"
    if part.exists():
        _replace(part, out / records)
    else:  # no record: an empty table with the columns (readable later)
        write_table(classified.where(F.lit(False)).drop("table"), out, records)
    part = staging / "table=rejects"
    spark = classified.sparkSession
    # the rejected lines again, from the staging copy (usually few: a small second job), without
    # the empty columns of a record and the partition of null dates
    rejected = (spark.read.parquet(str(part)) if part.exists()
                else classified.where(F.lit(False)))
    write_table(rejected.select(*REJECT_COLUMNS), out, rejects)
    shutil.rmtree(staging, ignore_errors=True)


def write_jsonl(frame: DataFrame, path: Path) -> Path:
    """``frame`` (in its order) as one JSON Lines file at ``path`` (null fields left out)."""
    staging = path.with_name(f".staging-{path.name}")
    if staging.exists():
        shutil.rmtree(staging)
    frame.coalesce(1).write.mode("overwrite").json(str(staging))
    parts = sorted(staging.glob("part-*"))
    path.parent.mkdir(parents=True, exist_ok=True)
    if parts:
        parts[0].replace(path)
    else:
        path.write_text("")
    shutil.rmtree(staging, ignore_errors=True)
    return path


def write_json(value: Any, path: Path) -> Path:
    """A small JSON document (metadata, a summary) at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n")
    return path
