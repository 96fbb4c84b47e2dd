"""The Spark schemas of the pipeline's inputs, written out (never inferred).

The record files follow docs/records.md, schema version 1 (the message audit log and the
routing table snapshot); the directory is the GCD store's table ``discovery_entries``. These
are the pipeline's own copies of those documented schemas: it imports no project code.

A :class:`RecordSpec` says, per kind of record file, how a line is parsed and checked: its
struct, the fields a valid record must have, the values some fields may take, the file name
prefix and the time field that partitions its table by date.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.types import (
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

__all__ = [
    "AUDIT",
    "AUDIT_V1",
    "CORRUPT_COLUMN",
    "DIRECTORY",
    "DIRECTORY_COLUMNS",
    "INGEST_FILES",
    "MESSAGE_TYPES",
    "NEVER_MS",
    "OUTCOMES",
    "REJECT_KINDS",
    "SNAPSHOT",
    "SNAPSHOT_V1",
    "SPECS",
    "RecordSpec",
]

#: an expiry date that never comes (2**63 - 1), as the records write it
NEVER_MS = 2**63 - 1

#: the outcomes of a routing decision (audit record field ``outcome``)
OUTCOMES = ("delivered", "queued", "dropped", "refused")

#: the message types' wire codes (audit record field ``type``, docs/records.md): request,
#: reply, one-way, attribute / broadcast / multicast subscription request, subscription
#: reply, subscription stop, publication, multicast
MESSAGE_TYPES = ("rq", "rp", "o", "arq", "brq", "mrq", "srp", "sst", "p", "m")

#: why a line of a record file is not a record (the ``kind`` of the rejects table):
#: ``corrupt-json`` not one JSON object; ``unknown-version`` a JSON value whose ``v`` is not a
#: schema version this pipeline reads (missing, another number, not an integer);
#: ``bad-field`` a version-1 record with a field missing, of the wrong type or out of range;
#: ``too-long`` a line over ``max_line_bytes`` (counted per file, its text never read)
REJECT_KINDS = ("corrupt-json", "unknown-version", "bad-field", "too-long")

#: the struct field that holds a line Spark's JSON parser could not fit to the schema
CORRUPT_COLUMN = "_corrupt"


def _fields(*fields: tuple[str, DataType]) -> StructType:
    return StructType([StructField(name, kind, True) for name, kind in fields])


#: docs/records.md, message audit log, schema version 1 (one JSON object per line)
AUDIT_V1 = _fields(
    ("v", IntegerType()),
    ("ts", LongType()),
    ("proc", StringType()),
    ("id", StringType()),
    ("type", StringType()),
    ("sender", StringType()),
    ("recipient", StringType()),
    ("hop", StringType()),
    ("gbid", StringType()),
    ("bytes", LongType()),
    ("outcome", StringType()),
    ("reason", StringType()),
    ("peer", StringType()),
    ("queued_ms", LongType()),
)

#: docs/records.md, routing table snapshot, schema version 1 (one JSON object per entry)
SNAPSHOT_V1 = _fields(
    ("v", IntegerType()),
    ("taken_ms", LongType()),
    ("proc", StringType()),
    ("participant_id", StringType()),
    ("kind", StringType()),
    ("address", StringType()),
    ("gbid", StringType()),
    ("topic", StringType()),
    ("global", BooleanType()),
    ("expiry_ms", LongType()),
    ("sticky", BooleanType()),
)

#: the GCD store's table discovery_entries (gcd/store.py, docs/discovery.md "Stores"), as the
#: jobs use it; the JDBC reader casts to these types (SQLite reports BIGINT as DECIMAL(20,0))
DIRECTORY = _fields(
    ("gbid", StringType()),
    ("participant_id", StringType()),
    ("domain", StringType()),
    ("interface_name", StringType()),
    ("major_version", IntegerType()),
    ("minor_version", IntegerType()),
    ("priority", LongType()),
    ("scope", StringType()),
    ("supports_on_change", BooleanType()),
    ("custom_parameters", StringType()),
    ("last_seen_ms", LongType()),
    ("expiry_ms", LongType()),
    ("public_key_id", StringType()),
    ("topic", StringType()),
    ("cluster_controller_id", StringType()),
)
DIRECTORY_COLUMNS = tuple(DIRECTORY.fieldNames())

#: one row per input file of an ingest run (the bad-input view)
INGEST_FILES = StructType([
    StructField("source", StringType(), False),
    StructField("file", StringType(), False),
    StructField("bytes", LongType(), False),
    #: ok, truncated, corrupt, not-gzip, unreadable, bad-name
    StructField("gzip", StringType(), False),
    #: lines decoded (a damaged file: before the damage)
    StructField("lines", LongType(), False),
    StructField("too_long", LongType(), False),
    #: what happened to the file's content (see pipeline.readers.check_file)
    StructField("detail", StringType(), True),
])


@dataclass(frozen=True)
class RecordSpec:
    """How lines of one kind of record file are read (see the module docstring)."""

    #: "audit" or "snapshot": the name of its table and of its rows in the ingest tables
    source: str
    #: the file name prefix (docs/records.md): audit-..., routing-...
    prefix: str
    schema: StructType
    #: fields every valid record has (not null)
    required: tuple[str, ...]
    #: field -> the values it may take
    allowed: tuple[tuple[str, tuple[str, ...]], ...]
    #: the epoch-ms field whose UTC date partitions the table
    time_field: str

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(self.schema.fieldNames())


AUDIT = RecordSpec(
    source="audit", prefix="audit-", schema=AUDIT_V1,
    required=("v", "ts", "proc", "id", "type", "sender", "recipient", "bytes", "outcome"),
    allowed=(("outcome", OUTCOMES), ("type", MESSAGE_TYPES)), time_field="ts")

SNAPSHOT = RecordSpec(
    source="snapshot", prefix="routing-", schema=SNAPSHOT_V1,
    required=("v", "taken_ms", "proc", "participant_id", "kind", "address", "global",
              "expiry_ms", "sticky"),
    allowed=(), time_field="taken_ms")

SPECS = {spec.source: spec for spec in (AUDIT, SNAPSHOT)}
