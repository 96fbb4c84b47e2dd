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

from pyjoynr.pipeline.schemas import REJECT_KINDS, RecordSpec

__all__ = ["REJECT_TEXT_CHARS", "TIME_RANGE_MS", "classify", "file_status", "kind_counts"]

#: characters of a rejected line kept in the rejects table (enough to see what it was)
REJECT_TEXT_CHARS = 2000

#: the epoch-ms times a record's time field may hold: years 1 to 9999 (Spark's dates; a time
#: beyond is out of range, and would fail the job that makes its date)
TIME_RANGE_MS = (-62_135_596_800_000, 253_402_300_799_999)

RECORDS = "records"
REJECTS = "rejects"

#: a JSON string token (Java regex; possessive, so that a long string costs no recursion)
_JSON_STRING = r'"(?:[^"\\]++|\\.)*+"'
#: anything but a bracket or a brace
_NOT_A_BRACKET = r"[^\[\]{}]"


def _brackets(json_text: Column) -> Column:
    """The brackets and braces of JSON text outside its strings, in order (its structure)."""
    return F.regexp_replace(F.regexp_replace(json_text, _JSON_STRING, ""), _NOT_A_BRACKET, "")


def classify(lines: DataFrame, spec: RecordSpec) -> DataFrame:
    """``lines`` (file, value: one line of text each) -> one row per line with ``table``
    ("records" or "rejects"), ``verdict`` ("ok" or a reject kind), ``file``, the record's fields
    (null on rejects), ``date`` (UTC yyyy-MM-dd of the record's time field; null on rejects)
    and ``text`` (the start of a rejected line; null on records).

    Exactly as strict as docs/records.md, with built-in functions only. Spark's JSON parser
    into a struct (``from_json``) reads the fields, but cannot judge a line: it turns a number,
    an object or a list in a text field into its text, and stops after the first value. So a
    line is a record when ``v`` is 1, the required fields are there, the enumerated ones of
    their values, the time in :data:`TIME_RANGE_MS`, and

    - the line is the struct written back as compact JSON (``to_json``), character for
      character: the documented keys in the documented order, each value of its type, nothing
      more (the way a producer writes every line: one comparison);
    - or else its JSON shape, from Spark's JSON parser into a variant (which keeps each value's
      JSON type), is :meth:`RecordSpec.json_shape` (the same keys in any order, any JSON
      whitespace or escapes), and the line is one JSON object and nothing more.

    The verdict of any other line comes from the variant too. It parses the line as the one
    element of a JSON array, ``[`` line ``]``: anything after the object but JSON whitespace
    breaks the array (``{..}}``, ``{..} {}``) or adds an element (``{..},{}``); only a ``]``
    could end the array early, so on a line holding a ``]`` the structure outside the strings
    (its brackets and braces) must be the object's own. A key twice fails that parse too.
    The variant is only made for a line that is not written back as it was (rare)."""
    value = F.col("value")
    record = F.col("r")
    values_ok = F.coalesce(reduce(
        lambda a, b: a & b,
        [*(record[name].isNotNull() for name in spec.required),
         *((record[name].isin(*values) if name in spec.required
            else record[name].isNull() | record[name].isin(*values))
           for name, values in spec.allowed)],
        (record["v"] == 1) & record[spec.time_field].between(*TIME_RANGE_MS)), F.lit(False))
    written_back = F.to_json(record, {"ignoreNullFields": "false"}) == value
    # one column per step, each made once per line (Spark keeps a costly column used twice
    # in its own projection); the variant only for the lines not written back as they were
    wrapped = F.col("w")
    first = F.col("x")
    shape = F.col("shape")
    nothing_after = (~value.contains("]")
                     | (F.length(_brackets(value)) == F.length(_brackets(F.to_json(first)))))
    # null (no first element: an empty line) is false
    one_object = F.coalesce(
        wrapped.isNotNull() & F.variant_get(wrapped, "$[1]", "variant").isNull()
        & shape.startswith("OBJECT<") & nothing_after, F.lit(False))
    version_1 = F.coalesce(
        (F.schema_of_variant(F.variant_get(first, "$.v", "variant")) == "BIGINT")
        & (F.try_variant_get(first, "$.v", "bigint") == 1), F.lit(False))
    with_kind = (
        lines.select("file", value, F.from_json(value, spec.schema).alias("r"))
        .withColumn("fast", values_ok & written_back)
        .withColumn("w", F.when(~F.col("fast"), F.try_parse_json(
            F.concat(F.lit("["), value, F.lit("]")))))
        .withColumn("x", F.variant_get(wrapped, "$[0]", "variant"))
        .withColumn("shape", F.schema_of_variant(first))
        .withColumn("one", one_object)
        .withColumn("verdict", F.when(F.col("fast"), F.lit("ok"))
                    .when(F.col("one") & shape.rlike(spec.json_shape()) & values_ok,
                          F.lit("ok"))
                    .when(~F.col("one"), F.lit("corrupt-json"))
                    .when(~version_1, F.lit("unknown-version"))
                    .otherwise(F.lit("bad-field"))))
    is_ok = F.col("verdict") == "ok"
    time = record[spec.time_field]
    return with_kind.select(
        F.when(is_ok, F.lit(RECORDS)).otherwise(F.lit(REJECTS)).alias("table"),
        "verdict", "file",
        *(F.when(is_ok, record[name]).alias(name) for name in spec.fields),
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

    - ``ok``: a whole gzip stream, every line a record (none: an empty routing table);
    - ``rejected-lines``: a whole gzip stream, some lines rejected (counted by kind, and
      named with their counts in ``detail``, e.g. "rejected 2 corrupt-json, 1 bad-field");
    - ``empty``: a file of 0 bytes (gzip ``empty``): no line, nothing lost;
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
              .when(F.col("gzip") == "empty", F.lit("empty"))
              .when(F.col("gzip") != "ok", F.lit("damaged"))
              .when((F.col("corrupt_json") + F.col("unknown_version") + F.col("bad_field")
                     + F.col("too_long")) > 0, F.lit("rejected-lines"))
              .otherwise(F.lit("ok")))
    # the counts of the rejected lines, by kind, after what the check found
    rejected = F.concat_ws(", ", *(
        F.when(F.col(kind.replace("-", "_")) > 0,
               F.concat(F.col(kind.replace("-", "_")).cast("string"), F.lit(f" {kind}")))
        for kind in REJECT_KINDS))
    detail = F.concat_ws("; ", F.col("detail"),
                         F.when(rejected != "", F.concat(F.lit("rejected "), rejected)))
    return joined.select(
        "source", "file", status.alias("status"), "gzip", "bytes", "lines", "records",
        "corrupt_json", "unknown_version", "bad_field", "too_long",
        F.when(detail != "", detail).alias("detail"),
    ).orderBy("source", "file")
