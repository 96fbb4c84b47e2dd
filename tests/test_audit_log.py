"""The audit log's writer and memory bound (runtime/audit.py), on real files and threads:
rotation by size and by age, the bound on disk use, files of an earlier run, a writer that
falls behind, a clean close, write errors, the settings."""

from __future__ import annotations

import asyncio
import gc
import gzip
import tracemalloc
import uuid
from pathlib import Path

import pytest

from pyjoynr.cluster_controller.config import ClusterControllerConfig
from pyjoynr.runtime import records, smrf
from pyjoynr.runtime.addresses import WebSocketClientAddress
from pyjoynr.runtime.audit import AuditLog, AuditSettings, AuditWriter
from pyjoynr.runtime.config import ConfigError
from pyjoynr.runtime.messages import Message, MessageType, decode_frame, encode_frame
from pyjoynr.testing.cluster import eventually
from tests.support.audit import audit_files, read_audit, read_jsonl_gz

HOP = WebSocketClientAddress("receiver")


def line(n: int) -> str:
    """A record line; its random id keeps gzip from making it (almost) nothing."""
    return records.audit_line(ts=n, proc="p", message_id=f"{n}-{uuid.uuid4().hex}",
                              message_type="o", sender="s", recipient="r", hop="websocket",
                              gbid=None, size=n, outcome="delivered", queued_ms=0) + "\n"


def on_disk(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.iterdir())


def message(n: int) -> Message:
    return Message(MessageType.ONE_WAY, f"sender-{n % 3}", "recipient", 2**62, b"x" * 100,
                   id=f"m-{n:06d}")


def test_files_rotate_by_size_and_never_take_more_than_the_bound(tmp_path):
    settings = AuditSettings(enabled=True, max_file_bytes=4096, max_total_bytes=3 * 4096)
    writer = AuditWriter(tmp_path, "cc-1", settings)
    n = 0
    for _ in range(200):
        batch = [line(n + i) for i in range(10)]
        n += 10
        writer.write(batch)
        assert on_disk(tmp_path) <= settings.max_total_bytes
        assert writer.disk_bytes == on_disk(tmp_path)
    writer.close()
    files = audit_files(tmp_path)
    assert not list(tmp_path.glob("*.part"))
    assert writer.files_closed == len(files) + writer.files_deleted
    assert writer.files_deleted > 10  # (2,000 records of ~50 compressed bytes each)
    assert writer.bytes_deleted > 0
    assert all(p.stat().st_size <= settings.max_file_bytes for p in files)
    assert on_disk(tmp_path) <= settings.max_total_bytes
    # what is left is the newest records, none missing in between
    kept = [r["ts"] for p in files for r in read_jsonl_gz(p)]
    assert kept == list(range(n - len(kept), n))
    assert writer.records_written == n
    # the names: audit-<process>-<UTC time>-<seq>.jsonl.gz, sequence numbers in order
    seqs = [int(p.name.removesuffix(".jsonl.gz").rsplit("-", 1)[1]) for p in files]
    assert seqs == sorted(seqs) and seqs[-1] == writer.files_closed - 1
    assert all(p.name.startswith("audit-cc-1-") for p in files)


def test_a_batch_too_big_for_one_file_is_split(tmp_path):
    settings = AuditSettings(enabled=True, max_file_bytes=2048, max_total_bytes=10**9)
    writer = AuditWriter(tmp_path, "cc-1", settings)
    writer.write([line(i) for i in range(500)])
    writer.close()
    files = audit_files(tmp_path)
    assert len(files) > 3
    assert all(p.stat().st_size <= settings.max_file_bytes for p in files)
    assert [r["ts"] for p in files for r in read_jsonl_gz(p)] == list(range(500))


def test_files_rotate_by_age(tmp_path):
    now = [100.0]
    settings = AuditSettings(enabled=True, max_file_age_s=60.0)
    writer = AuditWriter(tmp_path, "cc-1", settings, monotonic=lambda: now[0])
    writer.write([line(1)])
    assert writer.seconds_to_rotation() == 60.0
    now[0] += 59.0
    writer.rotate_if_old()
    assert audit_files(tmp_path) == []
    writer.write([line(2)])  # same file
    now[0] += 1.0
    writer.rotate_if_old()
    [first] = audit_files(tmp_path)
    assert [r["ts"] for r in read_jsonl_gz(first)] == [1, 2]
    writer.write([line(3)])
    now[0] += 61.0
    writer.write([line(4)])  # the next write notices the age first
    assert len(audit_files(tmp_path)) == 2
    writer.close()
    assert [[r["ts"] for r in read_jsonl_gz(p)] for p in audit_files(tmp_path)] == [
        [1, 2], [3], [4]]
    assert writer.seconds_to_rotation() is None


async def test_the_writer_thread_closes_an_old_file_without_new_records(tmp_path):
    log = AuditLog(AuditSettings(enabled=True, max_file_age_s=0.2, flush_interval_s=0.05),
                   tmp_path, "cc-1")
    log.start()
    for n in range(5):
        log.delivered(message(n), HOP, 0)
    log.flush()
    await eventually(lambda: len(audit_files(tmp_path)) == 1, what="the file closed by age")
    assert [r["id"] for r in read_audit(tmp_path, "cc-1")] == [f"m-{n:06d}" for n in range(5)]
    await log.close()
    assert len(audit_files(tmp_path)) == 1  # nothing more: no empty files


def test_files_of_an_earlier_run_count_and_an_unfinished_one_is_closed(tmp_path):
    settings = AuditSettings(enabled=True, max_file_bytes=4096, max_total_bytes=8192)
    old = tmp_path / "audit-cc-1-20200101T000000Z-000041.jsonl.gz"
    old.write_bytes(gzip.compress(line(1).encode()))
    unfinished = tmp_path / "audit-cc-1-20200101T000001Z-000042.jsonl.gz.part"
    unfinished.write_bytes(gzip.compress(line(2).encode()))
    other = tmp_path / "audit-cc-2-20200101T000000Z-000099.jsonl.gz"  # another process's
    other.write_bytes(gzip.compress(line(3).encode()))
    writer = AuditWriter(tmp_path, "cc-1", settings)
    writer.write([line(4)])
    assert not unfinished.exists()
    assert read_jsonl_gz(unfinished.with_name(unfinished.name.removesuffix(".part")))[0]["ts"] \
        == 2
    assert writer.current is not None and writer.current.name.endswith("-000043.jsonl.gz")
    # the earlier files count towards the bound: enough new records delete them, oldest first
    n = 5
    while old.exists():
        writer.write([line(n + i) for i in range(20)])
        n += 20
    assert writer.files_deleted >= 1
    assert other.exists()  # never another process's files
    writer.close()


async def test_a_writer_that_falls_behind_drops_records_counted_and_memory_stays_bounded(
        tmp_path):
    settings = AuditSettings(enabled=True, max_pending_bytes=64 * 1024, batch_records=100)
    log = AuditLog(settings, tmp_path, "cc-1")
    # not started: its writer takes nothing, as if the disk had stopped
    messages = [message(n) for n in range(2000)]
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for m in messages:
            log.delivered(m, HOP, 0)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    taken = log.records_taken + len(log._batch)
    assert 0 < taken < 2000
    assert log.records_dropped == 2000 - taken
    assert log.pending_bytes <= settings.max_pending_bytes
    assert held <= settings.max_pending_bytes  # the estimate is not below what is held
    assert log.stats()["audit_records_dropped"] == 2000 - taken
    # the writer starts (catches up): records are taken again
    log.start()
    await eventually(lambda: log.writer.records_written == log.records_taken,
                     what="the writer caught up")
    log.delivered(message(5000), HOP, 0)
    assert log.records_dropped == 2000 - taken
    await log.close()
    ids = [r["id"] for r in read_audit(tmp_path, "cc-1")]
    # exactly the records that were taken: the first ones, then the one after the catch-up
    assert ids == [f"m-{n:06d}" for n in range(taken)] + ["m-005000"]
    stats = log.stats()
    assert stats["audit_records_written"] == taken + 1
    assert stats["audit_records_pending"] == 0


async def test_close_writes_every_record_taken_and_leaves_no_part_file(tmp_path):
    # big batches, a long flush interval: everything is still in memory at the close
    log = AuditLog(AuditSettings(enabled=True, batch_records=100_000, flush_interval_s=3600),
                   tmp_path, "cc-1")
    log.start()
    for n in range(1234):
        log.delivered(message(n), HOP, n % 7)
    log.decided(message(9999), records.REFUSED, None, "spoofed-sender", "client x from h")
    await log.close()
    assert not list(tmp_path.glob("*.part"))
    found = read_audit(tmp_path, "cc-1")
    assert len(found) == 1235
    assert found[5] == records.audit_record(
        ts=found[5]["ts"], proc="cc-1", message_id="m-000005", message_type="o",
        sender="sender-2", recipient="recipient", hop="websocket", gbid=None,
        size=100, outcome="delivered", queued_ms=5)
    assert found[-1]["outcome"] == "refused" and found[-1]["peer"] == "client x from h"
    # after the close nothing is taken (counted as dropped)
    log.delivered(message(1), HOP, 0)
    assert log.records_dropped == 1
    await log.close()  # idempotent


async def test_the_size_of_a_message_is_the_frame_it_arrived_in_in_either_dialect(tmp_path):
    log = AuditLog(AuditSettings(enabled=True), tmp_path, "cc-1")
    log.start()
    native = decode_frame(encode_frame(message(1)))
    joynr = smrf.decode(smrf.encode(message(2), compress_above=None))
    made_here = message(3)
    for m in (native, joynr, made_here):
        log.delivered(m, HOP, 0)
    log.decided(joynr, records.REFUSED, None, "spoofed-sender", "client x from h")
    await log.close()
    sizes = [r["bytes"] for r in read_audit(tmp_path, "cc-1")]
    assert native.raw is not None and joynr.raw_smrf is not None
    assert sizes == [len(native.raw), len(joynr.raw_smrf), len(made_here.body),
                     len(joynr.raw_smrf)]
    assert len(joynr.raw_smrf) != len(joynr.body)


async def test_write_errors_are_counted_and_do_not_stop_the_writer(tmp_path):
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("a file where the directory should be")
    log = AuditLog(AuditSettings(enabled=True, batch_records=10), blocked, "cc-1")
    log.start()
    for n in range(25):
        log.delivered(message(n), HOP, 0)
    await log.close()
    stats = log.stats()
    assert stats["audit_write_errors"] >= 1
    assert stats["audit_records_failed"] == 25
    assert stats["audit_records_written"] == 0
    assert stats["audit_records_pending"] == 0


def test_settings_defaults_validation_and_environment():
    default = ClusterControllerConfig.load(None, env={})
    assert default.audit.enabled is False  # off by default
    assert default.routing_snapshots.interval_s == 0
    shipped = ClusterControllerConfig.load(env={})
    assert shipped.audit == AuditSettings()  # the file documents the defaults
    assert shipped.routing_snapshots == default.routing_snapshots
    on = ClusterControllerConfig.load(None, env={
        "JOYNR_CC__AUDIT__ENABLED": "true", "JOYNR_CC__AUDIT__DIR": "/tmp/x",
        "JOYNR_CC__ROUTING_SNAPSHOTS__INTERVAL_S": "30"})
    assert on.audit.enabled and on.audit.dir == "/tmp/x"
    assert on.routing_snapshots.interval_s == 30.0
    for key, value, what in [("AUDIT__MAX_TOTAL_BYTES", "2000000", "max_total_bytes"),
                             ("AUDIT__BATCH_RECORDS", "0", "batch_records"),
                             ("AUDIT__GZIP_LEVEL", "10", "gzip_level"),
                             ("AUDIT__MAX_PENDING_BYTES", "10", "max_pending_bytes"),
                             ("ROUTING_SNAPSHOTS__INTERVAL_S", "-1", "interval_s"),
                             ("ROUTING_SNAPSHOTS__MAX_FILES", "0", "max_files")]:
        with pytest.raises(ConfigError, match=what):
            ClusterControllerConfig.load(None, env={f"JOYNR_CC__{key}": value})


def test_a_gcd_has_the_same_audit_section():
    from pyjoynr.gcd.service import GcdConfig  # noqa: PLC0415

    assert GcdConfig.load(env={}).audit == AuditSettings()  # config/gcd.toml: the defaults
    on = GcdConfig.load(None, env={"JOYNR_GCD__AUDIT__ENABLED": "1",
                                   "JOYNR_GCD__AUDIT__MAX_FILE_AGE_S": "10"})
    assert on.audit.enabled and on.audit.max_file_age_s == 10.0


async def test_records_are_taken_from_the_event_loop_while_the_thread_writes(tmp_path):
    """Many batches through the real thread, with the periodic hand-over of a supervisor."""
    from pyjoynr.runtime.tasks import TaskSupervisor  # noqa: PLC0415

    tasks = TaskSupervisor("test")
    log = AuditLog(AuditSettings(enabled=True, batch_records=50, flush_interval_s=0.02),
                   tmp_path, "cc-1")
    log.start(tasks)
    for n in range(3000):
        log.delivered(message(n), HOP, 0)
        if n % 500 == 0:
            await asyncio.sleep(0)
    log.delivered(message(3000), HOP, 0)  # alone in its batch: the timer hands it over
    await eventually(lambda: log.writer.records_written == 3001, what="all written")
    await tasks.close()
    await log.close()
    assert [r["id"] for r in read_audit(tmp_path)] == [f"m-{n:06d}" for n in range(3001)]
