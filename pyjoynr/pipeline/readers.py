"""The pipeline's inputs: record files (checked, then read), the directory (JDBC) and the tables
the pipeline wrote before (Parquet). Thin: what the data means is decided in
:mod:`pipeline.jobs`.

Record files (docs/records.md) are gzip-compressed JSON Lines. Spark's own reader fails a whole
job on a damaged gzip file, or (with ``spark.sql.files.ignoreCorruptFiles``) keeps an
unspecified part of it without a word; neither may happen here. So every file is first checked
by :func:`check_file`, in parallel on the executors: a streaming decompression (zlib, C speed,
bounded memory) that counts its lines, finds over-long lines and tells how the stream ends.
Then:

- whole files (gzip ``ok``) are read by Spark's text reader (fast, no Python per line);
- a **truncated** file (the stream ends before its gzip trailer: a copy cut short) keeps the
  complete lines before the cut: everything decoded up to there is exactly what was written.
  They are decoded in Python (:func:`decoded_lines`; such files are rare) so that the count is
  exact; the partial last line is counted as lost in the file's ``detail``;
- a **corrupt** file (a deflate error, or a CRC or length mismatch at its end) is not read at
  all: a damaged deflate stream can decode to wrong bytes before the error shows, so none of
  its lines can be trusted. Its decoded line count and the error are in its status row;
- a file that is not gzip, cannot be read, or whose name breaks the documented pattern is not
  read either, and has its status row too;
- an **empty** file (0 bytes) has no line to read: its own status, not a damaged one.

Record files are read from a file system mounted at the same path on the driver and every
executor (a local disk in local mode, a shared one on a cluster).
"""

from __future__ import annotations

import logging
import os
import re
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, NamedTuple
from urllib.parse import unquote, urlsplit

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from pyjoynr.pipeline.schemas import DIRECTORY, DIRECTORY_COLUMNS, INGEST_FILES, RecordSpec

__all__ = [
    "DirectorySource",
    "FileCheck",
    "InputError",
    "RecordFile",
    "check_file",
    "check_files",
    "decoded_lines",
    "directory_source",
    "list_record_files",
    "read_directory",
    "read_lines",
    "read_table",
]

log = logging.getLogger(__name__)

#: a record file's name: <prefix><process id (safe characters)>-...jsonl.gz
_SAFE_NAME = re.compile(r"[A-Za-z0-9._-]+\.jsonl\.gz")
_GZIP_MAGIC = b"\x1f\x8b"
#: compressed bytes read at a time
_READ_BYTES = 1 << 20


class InputError(Exception):
    """An input is missing or unusable; the message says which and why (exit status 2)."""


@dataclass(frozen=True)
class RecordFile:
    source: str
    name: str
    path: str
    bytes: int
    #: the name breaks the documented pattern (then the file is not read)
    bad_name: bool = False


def list_record_files(directory: str, spec: RecordSpec) -> list[RecordFile]:
    """The record files of ``spec`` in ``directory`` (``<prefix>*.jsonl.gz``), by name. Files
    still being written (``.part``) are left out (logged); a ``*.jsonl.gz`` file of that prefix
    whose name has other characters than ``[A-Za-z0-9._-]`` is listed as ``bad_name``."""
    root = Path(directory)
    if not directory:
        raise InputError(f"no {spec.source} directory given")
    if not root.is_dir():
        raise InputError(f"the {spec.source} directory {root} does not exist"
                         if not root.exists() else f"{root} is not a directory")
    found: list[RecordFile] = []
    partial = 0
    try:
        entries = list(os.scandir(root))
    except OSError as exc:
        raise InputError(f"cannot list {root}: {exc.strerror or exc}") from None
    for entry in entries:
        name = entry.name
        if not name.startswith(spec.prefix):
            continue
        if name.endswith(".part"):
            partial += 1
            continue
        if not name.endswith(".jsonl.gz") or not entry.is_file():
            continue
        try:
            size = entry.stat().st_size
        except OSError:
            size = -1
        found.append(RecordFile(spec.source, name, str(Path(entry.path).resolve()), size,
                                bad_name=_SAFE_NAME.fullmatch(name) is None))
    if partial:
        log.info("%s: %d file(s) still being written (.part) left out", root, partial)
    found.sort(key=lambda f: f.name)
    log.info("%s: %d %s file(s), %.1f MB", root, len(found), spec.source,
             sum(max(f.bytes, 0) for f in found) / 1e6)
    return found


class FileCheck(NamedTuple):
    """What :func:`check_file` found (see the module docstring)."""

    #: ok, truncated, corrupt, not-gzip, unreadable, empty (0 bytes)
    gzip: str
    #: complete lines decoded (a whole file: every line, the last one even without a newline)
    lines: int
    #: of those, longer than max_line_bytes
    too_long: int
    detail: str | None


class _DataAfterStream(Exception):
    """Bytes after the end of the gzip stream that start no further gzip member."""


class _Decoding:
    """The decoded pieces of a gzip file, each at most ``max_piece`` bytes (so a small file
    that decompresses to gigabytes is harmless); concatenated members are one stream, as gzip
    and Spark read them. Anything else after the end of the stream (even zero padding, which
    Spark's reader fails on) raises _DataAfterStream, a corrupt stream zlib.error. After the
    pieces, ``complete`` says whether the stream ended properly."""

    def __init__(self, stream: BinaryIO, first: bytes, max_piece: int) -> None:
        self.stream = stream
        self.first = first
        self.max_piece = max_piece
        self.complete = False

    def __iter__(self) -> Iterator[bytes]:
        decoder = zlib.decompressobj(zlib.MAX_WBITS | 16)
        data = self.first
        while data:
            while data:
                if decoder.eof:
                    if len(data) < len(_GZIP_MAGIC):
                        break  # a next header may be cut by the read: join the next read
                    if not data.startswith(_GZIP_MAGIC):
                        raise _DataAfterStream
                    decoder = zlib.decompressobj(zlib.MAX_WBITS | 16)
                piece = decoder.decompress(data, self.max_piece)
                data = decoder.unused_data if decoder.eof else decoder.unconsumed_tail
                if piece:
                    yield piece
            more = self.stream.read(_READ_BYTES)
            if not more and data:  # a byte after the end that starts nothing
                raise _DataAfterStream
            data = data + more if more else b""
        self.complete = decoder.eof


def check_file(path: str, max_line_bytes: int) -> FileCheck:
    """Decompress ``path`` as a stream, counting its lines and those longer than
    ``max_line_bytes``, holding at most about that much decoded text at a time."""
    lines = too_long = 0
    current = 0  # length of the line being read (its bytes since the last newline)
    try:
        with open(path, "rb") as stream:
            head = stream.read(_READ_BYTES)
            if not head:  # nothing written, nothing lost: not a damaged gzip stream
                return FileCheck("empty", 0, 0, "empty file (0 bytes): no line")
            if not head.startswith(_GZIP_MAGIC):
                return FileCheck("not-gzip", 0, 0, "no gzip header: nothing read")
            decoding = _Decoding(stream, head, max_line_bytes)
            for piece in decoding:
                first = piece.find(b"\n")
                if first < 0:
                    current += len(piece)
                    continue
                # a piece is at most max_line_bytes long, so a longer line spans a boundary:
                # following the current line across pieces finds every one
                if current + first > max_line_bytes:
                    too_long += 1
                lines += piece.count(b"\n")
                current = len(piece) - piece.rfind(b"\n") - 1
            if not decoding.complete:
                lost = " and a partial line" if current else ""
                return FileCheck("truncated", lines, too_long,
                                 f"gzip stream cut short: {lines} complete line(s) read"
                                 f"{lost} lost with the rest of the file")
            if current:  # a last line without its newline still counts
                lines += 1
                if current > max_line_bytes:
                    too_long += 1
            return FileCheck("ok", lines, too_long, None)
    except zlib.error as exc:
        return FileCheck("corrupt", lines, too_long,
                         f"gzip error after {lines} line(s) ({exc}): nothing read")
    except _DataAfterStream:
        return FileCheck("corrupt", lines, too_long,
                         f"data after the gzip stream (after {lines} line(s)): nothing read")
    except OSError as exc:
        return FileCheck("unreadable", 0, 0, f"cannot read: {exc.strerror or exc}")


def decoded_lines(path: str, max_line_bytes: int) -> Iterator[str]:
    """The complete lines of a truncated gzip file up to where its stream ends, each at most
    ``max_line_bytes`` (longer ones are skipped: :func:`check_file` counts them); the partial
    line at the cut is not a line. Text as UTF-8 (bad bytes replaced), like Spark's reader."""
    pending = b""
    skipping = False
    try:
        with open(path, "rb") as stream:
            for piece in _Decoding(stream, stream.read(_READ_BYTES), max_line_bytes):
                parts = piece.split(b"\n")
                for part in parts[:-1]:
                    line = pending + part
                    pending = b""
                    if not skipping and len(line) <= max_line_bytes:
                        yield line.decode("utf-8", "replace")
                    skipping = False
                pending += parts[-1]
                if len(pending) > max_line_bytes:  # never hold a line longer than that
                    pending = b""
                    skipping = True
    except (zlib.error, _DataAfterStream, OSError):
        return


def _balanced(files: Sequence[RecordFile], slices: int) -> list[list[RecordFile]]:
    """Files in at most ``slices`` groups of about equal bytes (largest first, each to the
    lightest group): one task per group."""
    groups: list[tuple[int, list[RecordFile]]] = [(0, []) for _ in range(max(1, slices))]
    for record_file in sorted(files, key=lambda f: -f.bytes):
        index = min(range(len(groups)), key=lambda i: groups[i][0])
        weight, members = groups[index]
        members.append(record_file)
        groups[index] = (weight + max(record_file.bytes, 1), members)
    return [members for _, members in groups if members]


def _check_group(files: list[RecordFile], max_line_bytes: int
                 ) -> Iterator[tuple[str, str, int, str, int, int, str | None]]:
    for record_file in files:
        if record_file.bad_name:
            yield (record_file.source, record_file.name, record_file.bytes, "bad-name", 0, 0,
                   "name outside [A-Za-z0-9._-]: nothing read")
            continue
        check = check_file(record_file.path, max_line_bytes)
        yield (record_file.source, record_file.name, record_file.bytes, check.gzip, check.lines,
               check.too_long, check.detail)


def check_files(spark: SparkSession, files: Sequence[RecordFile], max_line_bytes: int
                ) -> DataFrame:
    """One :data:`~pipeline.schemas.INGEST_FILES` row per file, checked on the executors."""
    if not files:
        return spark.createDataFrame([], INGEST_FILES)
    groups = _balanced(files, spark.sparkContext.defaultParallelism * 2)
    rdd = spark.sparkContext.parallelize(groups, len(groups)).flatMap(
        lambda group: _check_group(group, max_line_bytes))
    return spark.createDataFrame(rdd, INGEST_FILES)


_LINES = StructType([StructField("file", StringType(), False),
                     StructField("value", StringType(), True)])


def _lines_of(files: list[RecordFile], max_line_bytes: int) -> Iterator[tuple[str, str]]:
    for record_file in files:
        for line in decoded_lines(record_file.path, max_line_bytes):
            yield (record_file.name, line)


def read_lines(spark: SparkSession, whole: Sequence[RecordFile],
               truncated: Sequence[RecordFile], max_line_bytes: int) -> DataFrame:
    """(file, value) per line: whole files through Spark's text reader (lines over
    ``max_line_bytes`` skipped by its line reader, see :mod:`pipeline.session`), the complete
    lines of truncated files decoded in Python."""
    frames = []
    if whole:
        # lines end at "\n" only, as the check counts them (Hadoop's default also ends them
        # at "\r")
        frames.append(spark.read.option("lineSep", "\n").text(
            [Path(f.path).as_uri() for f in whole]).select(
            F.col("_metadata.file_name").alias("file"), "value"))
    if truncated:
        groups = _balanced(truncated, spark.sparkContext.defaultParallelism)
        rdd = spark.sparkContext.parallelize(groups, len(groups)).flatMap(
            lambda group: _lines_of(group, max_line_bytes))
        frames.append(spark.createDataFrame(rdd, _LINES))
    if not frames:
        return spark.createDataFrame([], _LINES)
    lines = frames[0]
    for frame in frames[1:]:
        lines = lines.unionByName(frame)
    return lines


# ---------------------------------------------------------------------- the directory


@dataclass(frozen=True)
class DirectorySource:
    """The GCD store as a JDBC source."""

    url: str
    driver: str
    #: for messages (no password)
    description: str
    user: str = ""
    password: str = ""


def directory_source(sqlite: str, postgres: str) -> DirectorySource:
    """The store given by an SQLite file or a PostgreSQL DSN (exactly one)."""
    if bool(sqlite) == bool(postgres):
        raise InputError("give the GCD store: either --sqlite FILE or --postgres DSN"
                         if not sqlite else "give either --sqlite or --postgres, not both")
    if sqlite:
        path = Path(sqlite).resolve()
        if not path.is_file():
            raise InputError(f"the GCD store {path} does not exist")
        return DirectorySource(f"jdbc:sqlite:{path}", "org.sqlite.JDBC", f"SQLite {path}")
    parts = urlsplit(postgres)
    if parts.scheme not in ("postgresql", "postgres") or not parts.hostname:
        raise InputError(f"--postgres: not a DSN postgresql://user@host:port/database: "
                         f"{_redacted(postgres)}")
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    url = f"jdbc:postgresql://{host}:{parts.port or 5432}{parts.path or '/'}"
    if parts.query:
        url += f"?{parts.query}"
    return DirectorySource(url, "org.postgresql.Driver", f"PostgreSQL {_redacted(postgres)}",
                           unquote(parts.username or ""), unquote(parts.password or ""))


def _redacted(dsn: str) -> str:
    return re.sub(r"(//[^:/@]*):[^@]*@", r"\1:***@", dsn)


#: the types the jobs use, where a JDBC driver reports others (SQLite: BIGINT as DECIMAL)
_CUSTOM_SCHEMA = ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in DIRECTORY.fields
                           if isinstance(f.dataType, LongType) or f.name.endswith("_version"))


def read_directory(spark: SparkSession, source: DirectorySource, partitions: int) -> DataFrame:
    """The rows of ``discovery_entries``, read in ``partitions`` parallel ranges of the store's
    ``bucket`` column (0 <= bucket < 4096, indexed): never through the driver."""
    reader = (spark.read.format("jdbc")
              .option("url", source.url)
              .option("driver", source.driver)
              .option("dbtable", "discovery_entries")
              .option("partitionColumn", "bucket")
              .option("lowerBound", 0)
              .option("upperBound", 4096)
              .option("numPartitions", max(1, partitions))
              .option("fetchsize", 10_000)
              .option("customSchema", _CUSTOM_SCHEMA))
    if source.user:
        reader = reader.option("user", source.user)
    if source.password:
        reader = reader.option("password", source.password)
    try:
        frame = reader.load()
    except PySparkException as exc:
        raise InputError(f"cannot read the directory from {source.description}: "
                         f"{_first_line(exc)}") from None
    except Exception as exc:  # py4j's Py4JJavaError: a driver or connection failure
        raise InputError(f"cannot read the directory from {source.description}: "
                         f"{_first_line(exc)}") from None
    missing = [c for c in DIRECTORY_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"{source.description}: discovery_entries has no column(s) "
                         f"{', '.join(missing)}: not a GCD store of this version")
    return frame.select(*(F.col(f.name).cast(f.dataType) for f in DIRECTORY.fields))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    for line in text.splitlines():
        if "Exception:" in line or "Error:" in line:
            return line.strip()[:300]
    return text.splitlines()[0][:300] if text else type(exc).__name__


# ---------------------------------------------------------------------- written tables


def read_table(spark: SparkSession, out: Path, name: str, *, made_by: str) -> DataFrame:
    """A Parquet table the pipeline wrote under ``out``; a clear error when it is missing."""
    path = out / name
    if not path.exists():
        raise InputError(f"no table {name} in {out} (it is made by `bin/pipeline {made_by}`)")
    return spark.read.parquet(str(path))
