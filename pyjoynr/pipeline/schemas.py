"""The Spark schemas of the pipeline's inputs, written out (never inferred).

The record files follow docs/records.md, schema version 1 (the message audit log and the
routing table snapshot); the directory is the GCD store's table ``discovery_entries``. These
are the pipeline's own copies of those documented schemas: it imports no project code.

A :class:`RecordSpec` says, per kind of record file, how a line is parsed and checked: its
struct, the fields a valid record must have, the values some fields may take, the file name
prefix and the time field that partitions its table by date. A line is a record when it is
exactly one JSON object whose keys are exactly the documented ones, each value of the
documented JSON type (:meth:`RecordSpec.json_shape`): a number is never taken for a text, a
text never for a number, a float never for an integer.
"""

from __future__ import annotations

import re
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
    "ADDRESS_KINDS",
    "AUDIT",
    "AUDIT_V1",
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

#: why a line of a record file is not a record (the ``verdict`` of the rejects tables):
#: ``corrupt-json`` not exactly one JSON object (RFC 8259; JSON whitespace around it is allowed:
#: a CR before the newline too), or an object with a key twice (its value would be a guess);
#: ``unknown-version`` a JSON object whose ``v`` is not a schema version this pipeline reads
#: (missing, another number, not a JSON integer); ``bad-field`` a version-1 record with a key
#: missing or one more than documented, a value of another JSON type than documented, or out
#: of range;
#: ``too-long`` a line over ``max_line_bytes`` (counted per file, its text never read)
REJECT_KINDS = ("corrupt-json", "unknown-version", "bad-field", "too-long")

#: the address kinds (audit record field ``hop``, snapshot record field ``kind``)
ADDRESS_KINDS = ("inprocess", "websocket", "websocket-client", "mqtt")

#: the JSON type of a field of each Spark type, as Spark's ``schema_of_variant`` names it (a
#: JSON integer is BIGINT whatever its size, as long as it fits 64 bits; a JSON number with a
#: fraction or an exponent is DECIMAL or DOUBLE; JSON null is VOID)
_JSON_TYPES = {"IntegerType": "BIGINT", "LongType": "BIGINT", "StringType": "STRING",
               "BooleanType": "BOOLEAN"}


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
    #: ok, truncated, corrupt, not-gzip, unreadable, bad-name, empty (0 bytes)
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

    #: "audit" or "snapshots" (as the option --audit / --snapshots and the table of its
    #: records): the ``source`` of its rows in the table ingest_files
    source: str
    #: the file name prefix (docs/records.md): audit-..., routing-...
    prefix: str
    schema: StructType
    #: fields every valid record has (not null)
    required: tuple[str, ...]
    #: field -> the values it may take (besides null, for a field that is not required)
    allowed: tuple[tuple[str, tuple[str, ...]], ...]
    #: the epoch-ms field whose UTC date partitions the table
    time_field: str

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(self.schema.fieldNames())

    def json_shape(self) -> str:
        """A regular expression (Java's) for Spark's ``schema_of_variant`` of a valid record:
        an object with exactly the documented keys (Spark lists them sorted; no key twice,
        none missing, none more), each of its JSON type, or null (VOID) where the record may
        be null (a field not in :attr:`required`)."""
        parts = []
        for field in sorted(self.schema.fields, key=lambda f: f.name):
            kind = _JSON_TYPES[type(field.dataType).__name__]
            if field.name not in self.required:
                kind = f"(?:{kind}|VOID)"
            parts.append(f"{re.escape(field.name)}: {kind}")
        return f"^OBJECT<{', '.join(parts)}>$"


AUDIT = RecordSpec(
    source="audit", prefix="audit-", schema=AUDIT_V1,
    required=("v", "ts", "proc", "id", "type", "sender", "recipient", "bytes", "outcome"),
    allowed=(("outcome", OUTCOMES), ("type", MESSAGE_TYPES), ("hop", ADDRESS_KINDS)),
    time_field="ts")

SNAPSHOT = RecordSpec(
    source="snapshots", prefix="routing-", schema=SNAPSHOT_V1,
    required=("v", "taken_ms", "proc", "participant_id", "kind", "address", "global",
              "expiry_ms", "sticky"),
    allowed=(("kind", ADDRESS_KINDS),), time_field="taken_ms")

SPECS = {spec.source: spec for spec in (AUDIT, SNAPSHOT)}
