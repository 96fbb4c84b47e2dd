"""What ingest and drift tell about their input: a file with rejected lines is reported with
its counts per reason; an empty file as empty (not damaged); the rejects tables of both
sources have one layout (not partitioned: a rejected line has no date); ``ingest_files``
names a source as the option and the table do (``audit``, ``snapshots``); a cluster
controller whose latest routing snapshot is empty has a summary row saying so."""

from __future__ import annotations

import gzip
import json
import logging
import zlib
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import StringType, StructField, StructType

from pyjoynr.cluster_controller.snapshots import write_snapshot
from pyjoynr.pipeline import commands
from pyjoynr.pipeline.schemas import DIRECTORY
from pyjoynr.runtime import records
from tests.pipeline import fleet
from tests.pipeline.conftest import MAX_LINE_BYTES


def line(mid: str, **changes: Any) -> str:
    return json.dumps({**fleet.audit(fleet.H0, "cc-x", mid, "rq", "c-1", "radio-1", "mqtt",
                                     fleet.G1, 10, "delivered"), **changes},
                      separators=(",", ":"))


def gz_lines(*lines: str) -> bytes:
    return gzip.compress("".join(f"{text}\n" for text in lines).encode())


def test_a_file_with_rejected_lines_is_reported_with_its_counts(
        make_run: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    audit = tmp_path / "audit"
    audit.mkdir()
    name = fleet.audit_name("cc-x", fleet.H0, 1)
    (audit / name).write_bytes(gz_lines(
        line("a"), line("b"),
        "{", line("c") + "}",                                        # 2 corrupt-json
        line("d", v=2),                                              # 1 unknown-version
        line("e", sender=5), line("f", ts="x"), line("g", hop=True),  # 3 bad-field
        "x" * (MAX_LINE_BYTES + 1)))                                 # 1 too-long
    # a truncated file: its detail keeps what the check found, then the counts
    cut = fleet.audit_name("cc-x", fleet.H0, 2)
    compressor = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    (audit / cut).write_bytes(
        compressor.compress(f"{line('h')}\n{line('i', sender=[])}\n".encode())
        + compressor.flush(zlib.Z_FULL_FLUSH) + compressor.compress(b'{"v":1,"ts":')
        + compressor.flush(zlib.Z_SYNC_FLUSH))  # the stream ends without its trailer
    run = make_run()
    with caplog.at_level(logging.WARNING, logger="pipeline"):
        commands.ingest(run, str(audit), "")
    rows = {r["file"]: r for r in run.spark.read.parquet(str(run.out / "ingest_files"))
            .collect()}
    expected = "rejected 2 corrupt-json, 1 unknown-version, 3 bad-field, 1 too-long"
    assert (rows[name]["status"], rows[name]["records"], rows[name]["detail"]) == (
        "rejected-lines", 2, expected)
    assert any(f"rejected-lines (ok): {expected}" in r.getMessage() for r in caplog.records
               if r.levelno == logging.WARNING), [r.getMessage() for r in caplog.records]
    assert rows[cut]["status"] == "damaged"
    assert rows[cut]["detail"].startswith("gzip stream cut short: ")
    assert rows[cut]["detail"].endswith("; rejected 1 bad-field")


def test_an_empty_file_is_reported_as_empty(make_run: Any, tmp_path: Path) -> None:
    audit = tmp_path / "audit"
    audit.mkdir()
    name = fleet.audit_name("cc-x", fleet.H0, 1)
    (audit / name).write_bytes(b"")
    run = make_run()
    problems = commands.ingest(run, str(audit), "")
    assert [(p["file"], p["status"], p["gzip"], p["lines"], p["detail"]) for p in problems] == [
        (name, "empty", "empty", 0, "empty file (0 bytes): no line")]


REJECT_SCHEMA = StructType([StructField("file", StringType(), True),
                            StructField("verdict", StringType(), True),
                            StructField("text", StringType(), True)])


@pytest.mark.parametrize("with_rejects", [True, False])
def test_both_rejects_tables_have_one_layout(make_run: Any, tmp_path: Path,
                                             with_rejects: bool) -> None:
    """Not partitioned (no ``date=__HIVE_DEFAULT_PARTITION__`` of type void), the same
    columns, with rejected lines or without."""
    audit, snapshots = tmp_path / "audit", tmp_path / "snapshots"
    audit.mkdir()
    snapshots.mkdir()
    bad = ("not json",) if with_rejects else ()
    (audit / fleet.audit_name("cc-x", fleet.H0, 1)).write_bytes(gz_lines(line("a"), *bad))
    (snapshots / fleet.snapshot_name("cc-x", fleet.SNAP_A)).write_bytes(gz_lines(
        json.dumps(fleet.SNAPSHOTS_CC_A[0]), *bad))
    run = make_run()
    commands.ingest(run, str(audit), str(snapshots))
    for table in ("audit_rejects", "snapshot_rejects"):
        path = run.out / table
        assert not [p for p in path.iterdir() if p.is_dir()], table  # no partition
        frame = run.spark.read.parquet(str(path))
        assert frame.schema == REJECT_SCHEMA, table
        assert frame.count() == (1 if with_rejects else 0)
    assert not list(run.out.rglob("*__HIVE_DEFAULT_PARTITION__*"))
    # the source of a status row is named as the option (--snapshots) and the table
    sources = {r["source"] for r in run.spark.read.parquet(str(run.out / "ingest_files"))
               .collect()}
    assert sources == {"audit", "snapshots"} == set(commands.TABLES)
    assert commands.TABLES["snapshots"][0] == "snapshots"


def _entries(spark: SparkSession) -> Any:
    row = ("g1", "radio-1", "d", "test/Radio", 1, 0, 0, "GLOBAL", True, "[]", fleet.NOW,
           fleet.FAR, "", "joynr/cc/cc-full", "cc-full")
    return spark.createDataFrame([row], DIRECTORY)


def test_a_controller_whose_latest_snapshot_is_empty_is_reported(
        make_run: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    snapshots = tmp_path / "snapshots"
    snapshots.mkdir()
    old, new = fleet.NOW - 2 * fleet.HOUR + 123, fleet.NOW - fleet.HOUR + 456

    def with_routes(proc: str, taken: int, *routes: dict[str, Any]) -> None:
        (snapshots / records.snapshot_file_name(proc, taken)).write_bytes(
            fleet.jsonl_gz(routes))

    def route(proc: str, taken: int, pid: str, topic: str) -> dict[str, Any]:
        return fleet.snapshot(taken, proc, pid, "mqtt", gbid="g1", topic=topic)

    # its only snapshot is empty (as a cluster controller writes an empty table)
    write_snapshot(snapshots, "cc-only-empty", new, [])
    # an older snapshot with a drifting route, the latest empty: nothing is compared
    with_routes("cc-now-empty", old, route("cc-now-empty", old, "gone-1", "joynr/cc/z"))
    write_snapshot(snapshots, "cc-now-empty", new, [])
    # an id written otherwise in file names ("cc weird" -> "cc_weird")
    with_routes("cc weird", old, route("cc weird", old, "gone-2", "joynr/cc/z"))
    write_snapshot(snapshots, "cc weird", new, [])
    # a file of 0 bytes
    (snapshots / records.snapshot_file_name("cc-zero", new)).write_bytes(b"")
    # and one with routes, the latest after an empty one
    write_snapshot(snapshots, "cc-full", old, [])
    with_routes("cc-full", new, route("cc-full", new, "radio-1", "joynr/cc/cc-full"),
                route("cc-full", new, "gone-3", "joynr/cc/z"))
    run = make_run()
    commands.ingest(run, "", str(snapshots))
    with caplog.at_level(logging.WARNING, logger="pipeline"):
        totals = commands.drift(run, _entries(run.spark))
    summary = {r["proc"]: (r["taken_ms"], r["routes"], r["compared"], r["not_in_directory"],
                           r["empty_snapshot"])
               for r in run.spark.read.parquet(str(run.out / "drift/summary")).collect()}
    assert summary == {
        "cc-only-empty": (new, 0, 0, 0, True),
        "cc-now-empty": (new, 0, 0, 0, True),
        "cc weird": (new, 0, 0, 0, True),
        "cc-zero": (new, 0, 0, 0, True),
        "cc-full": (new, 2, 2, 1, False)}
    drifted = {r["participant_id"] for r in
               run.spark.read.parquet(str(run.out / "drift/rows")).collect()}
    assert drifted == {"gone-3"}  # the older snapshots' routes are not compared
    assert (totals["cluster_controllers"], totals["empty_snapshots"]) == (5, 4)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("latest routing snapshot of 4 cluster controller(s) is empty" in w
               and "'cc weird', 'cc-now-empty', 'cc-only-empty', 'cc-zero'" in w
               for w in warnings), warnings
