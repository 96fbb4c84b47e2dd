"""Ingest, the pure part: lines of record files become typed records or counted rejects, and
the per-file checks and counts become one status row per file.

Every line ends up in exactly one place: a record of its table (kind ``ok``) or a row of the
rejects table with its kind (:data:`pipeline.schemas.REJECT_KINDS`); lines of a damaged file
that were never decoded are counted in the file's status row (:mod:`pipeline.readers`).
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from pipeline.schemas import CORRUPT_COLUMN, REJECT_KINDS, RecordSpec

__all__ = ["REJECT_TEXT_CHARS", "classify", "file_status", "kind_counts"]

#: characters of a rejected line kept in the rejects table (enough to see what it was)
REJECT_TEXT_CHARS = 2000

RECORDS = "records"
REJECTS = "rejects"


def _parse_schema(spec: RecordSpec) -> StructType:
    return StructType([*spec.schema.fields, StructField(CORRUPT_COLUMN, StringType(), True)])


def classify(lines: DataFrame, spec: RecordSpec) -> DataFrame:
    """``lines`` (file, value: one line of text each) -> one row per line with ``table``
    ("records" or "rejects"), ``verdict`` ("ok" or a reject kind), ``file``, the record's fields
    (null on rejects), ``date`` (UTC yyyy-MM-dd of the record's time field; null on rejects)
    and ``text`` (the start of a rejected line; null on records).

    Built-in functions only: Spark's JSON parser with a column for lines it cannot fit, and
    ``get_json_object`` to tell broken JSON from a record of another shape, evaluated for the
    failing lines only."""
    value = F.col("value")
    parsed = F.col("r")
    # one JSON object on the line and nothing else: Spark's parser stops after the first value
    # and would accept trailing text
    shape = value.startswith("{") & value.endswith("}")
    complete = reduce(lambda a, b: a & b, (parsed[name].isNotNull() for name in spec.required))
    in_range = [parsed[name].isin(*values) for name, values in spec.allowed]
    ok = (parsed.isNotNull() & shape & parsed[CORRUPT_COLUMN].isNull() & (parsed["v"] == 1)
          & reduce(lambda a, b: a & b, in_range, complete))
    kind = (F.when(ok, F.lit("ok"))
            .when(parsed.isNull() | ~shape
                  | (parsed[CORRUPT_COLUMN].isNotNull()
                     & F.get_json_object(value, "$").isNull()), F.lit("corrupt-json"))
            .when(parsed["v"].isNull() | (parsed["v"] != 1), F.lit("unknown-version"))
            .otherwise(F.lit("bad-field")))
    with_kind = lines.select(
        "file", value, F.from_json(value, _parse_schema(spec),
                                   {"mode": "PERMISSIVE",
                                    "columnNameOfCorruptRecord": CORRUPT_COLUMN}).alias("r")
    ).withColumn("verdict", kind)
    is_ok = F.col("verdict") == "ok"
    time = parsed[spec.time_field]
    return with_kind.select(
        F.when(is_ok, F.lit(RECORDS)).otherwise(F.lit(REJECTS)).alias("table"),
        "verdict", "file",
        *(F.when(is_ok, parsed[name]).alias(name) for name in spec.fields),
        F.when(is_ok, F.date_format(F.timestamp_millis(time), "yyyy-MM-dd")).alias("date"),
        F.when(~is_ok, F.substring(value, 1, REJECT_TEXT_CHARS)).alias("text"),
    )


def kind_counts(records: DataFrame, rejects: DataFrame) -> DataFrame:
    """Lines per (source, file, verdict), from the written records (their ``file``) and
    rejects (``file``, ``verdict``) of every source."""
    return (records.select("source", "file", F.lit("ok").alias("verdict"))
            .unionByName(rejects.select("source", "file", "verdict"))
            .groupBy("source", "file", "verdict").count())


def _count_of(verdict: str) -> Column:
    return F.coalesce(F.sum(F.when(F.col("verdict") == verdict, F.col("count"))), F.lit(0))


def file_status(checks: DataFrame, counts: DataFrame) -> DataFrame:
    """One row per checked file: the check (``checks``: source, file, bytes, gzip, lines,
    too_long, detail) with the lines read per kind (``counts`` from :func:`kind_counts`) and a
    ``status``:

    - ``ok``: a whole gzip stream, every line a record;
    - ``rejected-lines``: a whole gzip stream, some lines rejected (counted by kind);
    - ``damaged``: the file is not a whole gzip stream (truncated: the lines before the cut
      are read; corrupt, not gzip, unreadable or badly named: nothing is read);
    - ``changed``: the lines read differ from the lines the check decoded (the file changed
      between the check and the read).
    """
    per_file = counts.groupBy("source", "file").agg(
        _count_of("ok").alias("records"),
        *(_count_of(kind).alias(kind.replace("-", "_")) for kind in REJECT_KINDS
          if kind != "too-long"),
        F.sum("count").alias("read"))
    joined = checks.join(per_file, ["source", "file"], "left").na.fill(
        0, ["records", "corrupt_json", "unknown_version", "bad_field", "read"])
    expected = F.when(F.col("gzip").isin("ok", "truncated"),
                      F.col("lines") - F.col("too_long")).otherwise(F.lit(0))
    status = (F.when(F.col("read") != expected, F.lit("changed"))
              .when(F.col("gzip") != "ok", F.lit("damaged"))
              .when((F.col("corrupt_json") + F.col("unknown_version") + F.col("bad_field")
                     + F.col("too_long")) > 0, F.lit("rejected-lines"))
              .otherwise(F.lit("ok")))
    return joined.select(
        "source", "file", status.alias("status"), "gzip", "bytes", "lines", "records",
        "corrupt_json", "unknown_version", "bad_field", "too_long", "detail",
    ).orderBy("source", "file")
