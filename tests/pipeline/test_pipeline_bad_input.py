"""Bad record files: truncated, corrupt, not gzip, badly named, with broken lines, unknown
schema versions, bad fields, over-long lines. Each is counted in its own status row, the run
never fails, nothing vanishes: every line is a record, a counted reject, or counted as lost in
its file's row."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any

import pytest

from pyjoynr.pipeline import commands
from pyjoynr.pipeline.readers import check_file, decoded_lines, list_record_files
from pyjoynr.pipeline.schemas import AUDIT
from tests.pipeline import fleet
from tests.pipeline.conftest import MAX_LINE_BYTES


def record(n: int) -> dict[str, Any]:
    return fleet.audit(fleet.H0 + n, "cc-x", f"m{n}", "o", "c-1", "radio-1", "mqtt", fleet.G1,
                       10 + n, "delivered")


def lines_of(*records: dict[str, Any]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def truncated_gzip(complete: bytes, partial: bytes) -> bytes:
    """A gzip stream cut short: ``complete`` decodes in full, then ``partial`` (no newline),
    then the stream ends without its last block and trailer."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    return (compressor.compress(complete) + compressor.flush(zlib.Z_FULL_FLUSH)
            + compressor.compress(partial) + compressor.flush(zlib.Z_SYNC_FLUSH))


def with_bad_crc(data: bytes) -> bytes:
    stream = bytearray(gzip.compress(data))
    stream[-8] ^= 0xFF  # the CRC-32 of the trailer
    return bytes(stream)


def name(seq: int) -> str:
    return fleet.audit_name("cc-x", fleet.H0, seq)


#: a line exactly at the bound, and one byte over it
AT_BOUND = json.dumps({**record(900), "peer": ""})
AT_BOUND = AT_BOUND.replace('"peer": ""', '"peer": "' + "p" * (MAX_LINE_BYTES - len(AT_BOUND))
                            + '"')
OVER_BOUND = AT_BOUND.replace('"peer": "p', '"peer": "pp')
assert len(AT_BOUND) == MAX_LINE_BYTES and len(OVER_BOUND) == MAX_LINE_BYTES + 1

BAD_LINES = [
    json.dumps(record(1)),                                   # ok
    "not json at all",                                       # corrupt-json
    "",                                                      # corrupt-json (empty line)
    json.dumps(record(2))[:40],                              # corrupt-json (cut line)
    json.dumps(record(3)) + " trailing",                     # corrupt-json (text after it)
    json.dumps({**record(4), "v": 2}),                       # unknown-version
    json.dumps({**record(5), "v": 1.5}),                     # unknown-version
    json.dumps({k: v for k, v in record(6).items() if k != "v"}),  # unknown-version (none)
    json.dumps({**record(7), "ts": "yesterday"}),            # bad-field
    json.dumps({**record(8), "outcome": "lost"}),            # bad-field (not an outcome)
    json.dumps({k: v for k, v in record(9).items() if k != "sender"}),  # bad-field
    AT_BOUND,                                                # ok (exactly max_line_bytes)
    OVER_BOUND,                                              # too-long
    json.dumps(record(10)),                                  # ok
]

#: file -> (status, gzip, lines, records, corrupt_json, unknown_version, bad_field, too_long)
EXPECTED = {
    name(1): ("ok", "ok", 3, 3, 0, 0, 0, 0),
    name(2): ("damaged", "truncated", 5, 5, 0, 0, 0, 0),
    name(3): ("damaged", "corrupt", 0, 0, 0, 0, 0, 0),  # the CRC fails in the one read
    name(4): ("damaged", "not-gzip", 0, 0, 0, 0, 0, 0),
    name(5): ("rejected-lines", "ok", 14, 3, 4, 3, 3, 1),
    name(6): ("ok", "ok", 4, 4, 0, 0, 0, 0),
    name(7): ("empty", "empty", 0, 0, 0, 0, 0, 0),
    name(8): ("damaged", "corrupt", 2, 0, 0, 0, 0, 0),
    "audit-cc-x y-20261125T081320Z-000009.jsonl.gz": ("damaged", "bad-name", 0, 0, 0, 0, 0, 0),
}


@pytest.fixture
def bad_audit_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "audit"
    directory.mkdir()
    files = {
        name(1): gzip.compress(lines_of(record(1), record(2), record(3))),
        name(2): truncated_gzip(lines_of(*(record(n) for n in range(5))), b'{"v":1,"ts":'),
        name(3): with_bad_crc(lines_of(*(record(n) for n in range(4)))),
        name(4): lines_of(record(1)),
        name(5): gzip.compress(("\n".join(BAD_LINES) + "\n").encode()),
        # two gzip members are one stream (as gzip and Spark read them)
        name(6): gzip.compress(lines_of(record(1), record(2)))
        + gzip.compress(lines_of(record(3), record(4))),
        name(7): b"",
        # zero padding after the stream: Spark's reader would fail on it
        name(8): gzip.compress(lines_of(record(1), record(2))) + b"\0" * 64,
        "audit-cc-x y-20261125T081320Z-000009.jsonl.gz": gzip.compress(lines_of(record(1))),
        name(10) + ".part": b"\x1f\x8b being written",
        "notes.txt": b"not a record file",
    }
    for file_name, content in files.items():
        (directory / file_name).write_bytes(content)
    return directory


def test_every_bad_file_is_counted_in_its_own_row(make_run: Any, bad_audit_dir: Path) -> None:
    run = make_run()
    problems = commands.ingest(run, str(bad_audit_dir), "")
    rows = {r["file"]: r for r in run.spark.read.parquet(str(run.out / "ingest_files"))
            .collect()}
    assert {f: (r["status"], r["gzip"], r["lines"], r["records"], r["corrupt_json"],
                r["unknown_version"], r["bad_field"], r["too_long"])
            for f, r in rows.items()} == EXPECTED
    assert {p["file"] for p in problems} == {f for f, e in EXPECTED.items() if e[0] != "ok"}
    assert "5 complete line(s) read and a partial line lost" in rows[name(2)]["detail"]
    assert "incorrect data check" in rows[name(3)]["detail"]
    assert "data after the gzip stream" in rows[name(8)]["detail"]
    # the records: 3 + 5 (before the cut) + 3 + 4
    audit = run.spark.read.parquet(str(run.out / "audit"))
    assert audit.count() == 15
    assert audit.where(f"file = '{name(2)}'").count() == 5
    # the rejected lines, with their kind and their start
    rejects = run.spark.read.parquet(str(run.out / "audit_rejects"))
    kinds = sorted((r["verdict"], r["text"]) for r in rejects.select("verdict", "text").collect())
    assert [k for k, _ in kinds] == sorted(["corrupt-json"] * 4 + ["unknown-version"] * 3
                                           + ["bad-field"] * 3)
    assert ("corrupt-json", "not json at all") in kinds
    assert ("bad-field", BAD_LINES[8]) in kinds
    # nothing vanished: every line of every read file is a record or a counted reject
    assert all(r["lines"] == r["records"] + r["corrupt_json"] + r["unknown_version"]
               + r["bad_field"] + r["too_long"] for r in rows.values()
               if r["gzip"] in ("ok", "truncated"))


def test_the_listing_leaves_out_files_being_written(bad_audit_dir: Path) -> None:
    files = list_record_files(str(bad_audit_dir), AUDIT)
    assert [f.name for f in files] == sorted(EXPECTED)
    assert [f.name for f in files if f.bad_name] == [
        "audit-cc-x y-20261125T081320Z-000009.jsonl.gz"]


def test_check_file_bounds_what_it_holds(tmp_path: Path) -> None:
    """A small file that decompresses to 200 MB of one line: counted as too long, never held
    (the decoder hands out pieces of at most max_line_bytes)."""
    bomb = tmp_path / "bomb.jsonl.gz"
    compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    with bomb.open("wb") as out:
        chunk = b"x" * (1 << 20)
        for _ in range(200):
            out.write(compressor.compress(chunk))
        out.write(compressor.compress(b"\nshort\n") + compressor.flush())
    assert bomb.stat().st_size < 1_000_000
    check = check_file(str(bomb), 1024)
    assert (check.gzip, check.lines, check.too_long) == ("ok", 2, 1)
    assert list(decoded_lines(str(bomb), 1024)) == ["short"]


def test_check_file_counts_lines_across_reads(tmp_path: Path) -> None:
    """Lines and members spread over many reads of the file (1 MiB each)."""
    path = tmp_path / "big.jsonl.gz"
    body = b"".join(b"%08d\n" % n for n in range(300_000))
    path.write_bytes(gzip.compress(body, 0) + gzip.compress(b"last line without newline", 0))
    assert path.stat().st_size > 2 << 20
    check = check_file(str(path), 100)
    assert (check.gzip, check.lines, check.too_long) == ("ok", 300_001, 0)


def test_an_empty_directory_gives_empty_tables(make_run: Any, tmp_path: Path) -> None:
    """No audit file (the audit log is off): empty tables, readable by the next job."""
    (tmp_path / "audit").mkdir()
    run = make_run()
    assert commands.ingest(run, str(tmp_path / "audit"), "") == []
    assert run.spark.read.parquet(str(run.out / "audit")).count() == 0
    assert run.spark.read.parquet(str(run.out / "ingest_files")).count() == 0
    entries = run.spark.createDataFrame([], "gbid string, participant_id string, "
                                            "domain string, interface_name string")
    summary = commands.traffic(run, entries)
    assert (summary["records"], summary["messages"]) == (0, 0)


def test_ingesting_one_source_keeps_the_status_of_the_other(
        make_run: Any, bad_audit_dir: Path, tmp_path: Path) -> None:
    snapshots = tmp_path / "snapshots"
    snapshots.mkdir()
    (snapshots / fleet.snapshot_name("cc-a", fleet.SNAP_A)).write_bytes(
        fleet.jsonl_gz(fleet.SNAPSHOTS_CC_A))
    run = make_run()
    commands.ingest(run, str(bad_audit_dir), "")
    commands.ingest(run, "", str(snapshots))
    files = run.spark.read.parquet(str(run.out / "ingest_files")).collect()
    assert sorted(r["source"] for r in files) == ["audit"] * len(EXPECTED) + ["snapshots"]
    assert run.spark.read.parquet(str(run.out / "audit")).count() == 15  # untouched
