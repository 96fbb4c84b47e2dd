"""The GCD's in-memory index (gcd/index.py), as data: the apply rule of gcd/changes.py, load,
digests and repair, the synchronisation's hazards in their pure form, lookups that answer what
the store answers (against a real SQLite store), and a property test of a cluster of indexes
fed through a lossy channel from a model of the versioned store."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from pyjoynr.gcd.changes import (
    BUCKETS,
    Change,
    ChangeBatch,
    Digest,
    LoadBatch,
    RepairRows,
    bucket_and_row_hash,
    bucket_of,
    row_hash,
)
from pyjoynr.gcd.index import DirectoryIndex
from pyjoynr.gcd.params import HASHED_FIELDS
from pyjoynr.gcd.sqlite_store import SqliteStore
from pyjoynr.gcd.store import COLUMNS, StoredEntry
from tests.support.examples import examples

Key = tuple[str, str]


def entry(pid: str = "p1", gbid: str = "g1", **changes: Any) -> StoredEntry:
    base = StoredEntry(gbid=gbid, participant_id=pid, domain="d", interface_name="i",
                       major_version=1, minor_version=0, priority=0, scope="GLOBAL",
                       supports_on_change=False, custom_parameters="[]", last_seen_ms=0,
                       expiry_ms=100, public_key_id="", topic="joynr/cc/cc-1",
                       cluster_controller_id="cc-1")
    return dataclasses.replace(base, **changes)


def put(version: int, stored: StoredEntry) -> Change:
    return Change(version, stored.gbid, stored.participant_id, stored)


def gone(version: int, pid: str = "p1", gbid: str = "g1") -> Change:
    return Change(version, gbid, pid, None)


def state(index: DirectoryIndex) -> dict[Key, tuple[StoredEntry, int]]:
    return {stored.key: (stored, version) for stored, version in index.rows()}


def check_refcounts(index: DirectoryIndex) -> None:
    """Every shared object's count is the number of keys holding it; none is held unlisted."""
    holders: dict[int, int] = defaultdict(int)
    held = {}
    for stored, _ in index.rows():
        params = index.shared_params_of(stored.gbid, stored.participant_id)
        assert params is not None
        holders[id(params)] += 1
        held[id(params)] = params
    listed = {id(p): p for p in index.shared_params()}
    assert listed.keys() == held.keys()
    for key, params in listed.items():
        assert params.refs == holders[key]
    stats = index.stats()
    assert stats.shared_params == len(listed)
    assert stats.param_refs == stats.rows == len(index) == sum(holders.values())


def digests_of(rows: Iterable[tuple[StoredEntry, int]]) -> dict[int, Digest]:
    digests: dict[int, Digest] = {}
    for stored, version in rows:
        bucket = bucket_of(stored.gbid, stored.participant_id)
        digests[bucket] = digests.get(bucket, Digest()).plus(
            version, row_hash(stored.gbid, stored.participant_id, version))
    return digests


def same_bucket_pids(count: int, gbid: str = "g1") -> list[str]:
    """``count`` participant ids whose keys in ``gbid`` fall into one bucket."""
    seen: dict[int, list[str]] = defaultdict(list)
    for i in range(100_000):
        pid = f"p-{i}"
        pids = seen[bucket_of(gbid, pid)]
        pids.append(pid)
        if len(pids) == count:
            return pids
    raise AssertionError("no bucket with that many keys")


# -- the apply rule, as tables ------------------------------------------------------------------

A1, A2, A3 = entry(priority=1), entry(priority=2), entry(priority=3)


@pytest.mark.parametrize(("deliveries", "expected", "applied"), [
    # in order
    ([[put(1, A1)], [put(2, A2)]], (A2, 2), 2),
    # reordered: the older change comes last and is ignored
    ([[put(2, A2)], [put(1, A1)]], (A2, 2), 1),
    # duplicates: applied once
    ([[put(1, A1)], [put(1, A1)], [put(1, A1)]], (A1, 1), 1),
    # a delete, then the add it deleted arrives late: stays deleted (index tombstone)
    ([[put(1, A1)], [gone(2)], [put(1, A1)]], None, 2),
    ([[gone(2)], [put(1, A1)]], None, 1),
    # hazard 4: add, delete, re-add; the delete arrives after the re-add: ignored
    ([[put(1, A1)], [put(3, A3)], [gone(2)]], (A3, 3), 2),
    ([[put(3, A3)], [gone(2)], [put(1, A1)]], (A3, 3), 1),
    # hazard 5 (index side): the writer applied its losing version 2, the winner 3 arrives
    ([[put(2, A2)], [put(3, A3)]], (A3, 3), 2),
    # ... or the writer's own (winning) version lands after the loser arrived from another
    ([[put(2, A2)], [put(3, A3)], [put(2, A2)]], (A3, 3), 2),
    # a delete of a key the index never saw, then an older add: stays deleted
    ([[gone(5)], [put(4, A1)], [put(5, A1)]], None, 1),
    # a newer add after a delete: the key is back
    ([[put(1, A1)], [gone(2)], [put(3, A3)], [gone(2)]], (A3, 3), 3),
])
def test_apply(deliveries: list[list[Change]], expected: tuple[StoredEntry, int] | None,
               applied: int) -> None:
    index = DirectoryIndex()
    assert sum(index.apply(changes) for changes in deliveries) == applied
    assert state(index) == ({} if expected is None else {("g1", "p1"): expected})
    assert index.stats().changes_applied == applied
    assert index.stats().changes_ignored == sum(map(len, deliveries)) - applied
    assert index.watermark == 0  # a writer's own changes never move the watermark
    check_refcounts(index)
    assert index.digests() == digests_of(index.rows())


def test_batches_move_the_watermark_and_changes_at_or_below_it_are_ignored() -> None:
    index = DirectoryIndex()
    assert index.apply_batch(ChangeBatch([put(2, A2)], up_to=4)) == 1
    assert index.watermark == 4
    # at or below W: ignored, even for a key the index does not hold
    assert index.apply([put(4, entry("p2"))]) == 0
    assert index.apply([gone(3)]) == 0
    assert state(index) == {("g1", "p1"): (A2, 2)}
    # an older batch does not move W back
    assert index.apply_batch(ChangeBatch([], up_to=1)) == 0
    assert index.watermark == 4
    assert index.apply([put(5, A3)]) == 1 and index.watermark == 4


def test_tombstones_are_kept_above_the_watermark_and_dropped_once_it_passes() -> None:
    index = DirectoryIndex()
    index.apply([put(1, A1), put(1, entry("p2")), put(1, entry("p3"))])
    index.apply([gone(2), gone(3, "p2")])
    index.apply([gone(6, "p3")])
    assert index.stats().tombstones == 3
    assert index.version_of("g1", "p1") == 2
    index.apply_batch(ChangeBatch([], up_to=3))
    assert index.stats().tombstones == 1  # versions 2 and 3 are covered by W now
    assert index.version_of("g1", "p1") is None and index.version_of("g1", "p3") == 6
    # W covers what the tombstone guarded: an old add is still ignored
    assert index.apply([put(2, A2)]) == 0
    # a key re-added and deleted again: its tombstone follows its last delete
    index.apply([put(7, A1)])
    index.apply([gone(8)])
    index.apply_batch(ChangeBatch([], up_to=7))
    assert index.version_of("g1", "p1") == 8
    index.apply_batch(ChangeBatch([], up_to=8))
    assert index.stats().tombstones == 0 and len(index) == 0
    check_refcounts(index)


def test_a_change_carrying_another_keys_row_is_refused() -> None:
    with pytest.raises(ValueError):
        DirectoryIndex().apply([Change(1, "g1", "p1", entry("p2"))])


# -- lookups ------------------------------------------------------------------------------------


def test_lookup_paths_follow_every_change() -> None:
    index = DirectoryIndex()
    index.apply([put(1, entry("p2", domain="d1")), put(1, entry("p1", "g2", domain="d1")),
                 put(1, entry("p1", "g1", domain="d1")),
                 put(1, entry("p3", domain="d2", cluster_controller_id="cc-2", expiry_ms=9))])
    found = index.find(["d1", "d2", "d1"], "i", 10)
    assert [e.key for e in found] == [("g1", "p1"), ("g2", "p1"), ("g1", "p2")]
    assert [e.key for e in index.find(["d1", "d2"], "i", 9)][-1] == ("g1", "p3")
    assert index.find([], "i", 0) == [] and index.find(["d1"], "other", 0) == []
    assert [e.gbid for e in index.find_participant("p1", 100)] == ["g1", "g2"]
    assert index.find_participant("p1", 101) == []  # expired, still held
    assert index.gbids_of("p1", 5) == ["g1", "g2"] and index.gbids_of("nobody", 5) == []
    assert index.keys_of_cluster_controller("cc-1") == [("g1", "p1"), ("g1", "p2"),
                                                        ("g2", "p1")]
    # a change moves the row between domains and cluster controllers
    index.apply([put(2, entry("p1", "g1", domain="d2", cluster_controller_id="cc-2"))])
    assert [e.key for e in index.find(["d1"], "i", 0)] == [("g2", "p1"), ("g1", "p2")]
    assert [e.key for e in index.find(["d2"], "i", 0)] == [("g1", "p1"), ("g1", "p3")]
    assert index.keys_of_cluster_controller("cc-2") == [("g1", "p1"), ("g1", "p3")]
    index.apply([gone(3, "p1", "g1"), gone(3, "p3", "g1")])
    assert index.keys_of_cluster_controller("cc-2") == []
    assert index.find(["d2"], "i", 0) == []
    assert [e.gbid for e in index.find_participant("p1", 0)] == ["g2"]
    assert index.get("g2", "p1") == entry("p1", "g2", domain="d1")
    assert index.get("g1", "p1") is None
    check_refcounts(index)


_rows = st.lists(st.builds(
    entry, pid=st.sampled_from(["p1", "p2", "p10", "P1", "p-1", "é"]),
    gbid=st.sampled_from(["g1", "g2", "G1"]), domain=st.sampled_from(["d1", "d2", "D1"]),
    interface_name=st.sampled_from(["i", "j"]), priority=st.integers(-2, 2),
    expiry_ms=st.integers(0, 4)), max_size=25)


@settings(max_examples=60)
@given(rows=_rows, domains=st.lists(st.sampled_from(["d1", "d2", "D1", "x"]), max_size=4))
def test_lookups_answer_what_the_sqlite_store_answers(rows: list[StoredEntry],
                                                      domains: list[str]) -> None:
    index = DirectoryIndex()
    index.apply(put(v, e) for v, e in enumerate(rows, 1))

    async def compare() -> None:
        store = SqliteStore(":memory:")
        await store.open()
        try:
            await store.add(rows)
            for now in range(0, 6):
                for interface_name in ("i", "j"):
                    assert (index.find(domains, interface_name, now)
                            == await store.find(domains, interface_name, now))
                for pid in ("p1", "p2", "p10", "P1", "p-1", "é", "none"):
                    assert (index.find_participant(pid, now)
                            == await store.find_participant(pid, now))
            assert len(index) == await store.count()
        finally:
            await store.close()

    asyncio.run(compare())


# -- load ---------------------------------------------------------------------------------------


def test_load_then_finish_sets_the_watermark() -> None:
    index = DirectoryIndex()
    assert index.load(LoadBatch.of([(entry("p1"), 3), (entry("p2"), 7)])) == 2
    assert index.loading
    assert index.load([(entry("p3"), 5)]) == 1
    assert index.finish_load(9) == 0
    assert not index.loading and index.watermark == 9 and len(index) == 3
    check_refcounts(index)


def test_a_store_record_is_the_gbid_then_the_shared_parameters() -> None:
    # a load reads the parameters of a record by position (DirectoryIndex._load_records)
    assert ("gbid", *HASHED_FIELDS) == COLUMNS


def loaded_rows() -> list[tuple[StoredEntry, int]]:
    """Rows of several GBIDs (a participant in one to three), interfaces and cluster
    controllers, the rows of a participant spread over different batches."""
    rows = []
    for i in range(300):
        for g in range(1 + i % 3):
            rows.append((entry(f"p{i:03}", f"g{g}", domain=f"d{i % 7}",
                               interface_name=f"i{i % 5}", cluster_controller_id=f"cc{i % 4}",
                               priority=i % 2, expiry_ms=50 + i), 1 + (i * 7 + g) % 40))
    rows.sort(key=lambda r: (r[1], r[0].key))  # the version order scatters a participant
    return rows


@pytest.mark.parametrize("preloaded", [False, True])
def test_a_load_of_store_records_builds_the_index_a_load_of_entries_builds(
        preloaded: bool) -> None:
    rows = loaded_rows()
    by_records, by_entries = DirectoryIndex(), DirectoryIndex()
    for index in (by_records, by_entries):
        if preloaded:  # a reload: some keys held already, one deleted since (a tombstone)
            index.apply_batch(ChangeBatch([put(1, entry("p001", "g0")), put(2, entry("x")),
                                           gone(45, "p002", "g0")], up_to=2))
    for start in range(0, len(rows), 64):
        by_records.load(LoadBatch.of(rows[start:start + 64]))
        by_entries.load(rows[start:start + 64])
    assert by_records.finish_load(44) == by_entries.finish_load(44)
    assert state(by_records) == state(by_entries)
    assert by_records.digests() == by_entries.digests()
    assert by_records.stats() == by_entries.stats()
    check_refcounts(by_records)
    for i in range(7):
        for j in range(5):
            assert (by_records.find([f"d{i}"], f"i{j}", 60)
                    == by_entries.find([f"d{i}"], f"i{j}", 60))
    assert by_records.keys_of_cluster_controller("cc1") == by_entries.keys_of_cluster_controller(
        "cc1")
    assert by_records.find_participant("p005", 0) == by_entries.find_participant("p005", 0)
    # a participant's rows in several GBIDs share one parameter object, as after any load
    shared = {id(by_records.shared_params_of(f"g{g}", "p005")) for g in range(3)}
    assert len(shared) == 1


def test_changes_applied_during_a_load_are_kept_or_swept_by_the_snapshot() -> None:
    index = DirectoryIndex()
    index.load([(entry("p1"), 3)])
    # the writer applies its own changes while the load runs
    index.apply([put(12, entry("p1", priority=9))])   # newer than the snapshot (10)
    index.apply([put(4, entry("p2"))])                # written, then deleted at <= 10 by others
    index.apply([gone(11, "p4")])                     # deleted after the snapshot
    index.apply([put(13, entry("p5"))])               # newer than the snapshot
    index.load([(entry("p1"), 8), (entry("p4"), 6), (entry("p6"), 2)])
    assert index.finish_load(10) == 1  # p2: not in the snapshot, version <= 10
    assert {k: v for k, (_, v) in state(index).items()} == {
        ("g1", "p1"): 12, ("g1", "p5"): 13, ("g1", "p6"): 2}
    assert index.watermark == 10
    check_refcounts(index)


def test_a_row_of_the_snapshot_deleted_and_caught_up_during_the_load_stays_deleted() -> None:
    index = DirectoryIndex()
    index.begin_load()  # the snapshot (version 4) has p1 at 3
    index.load([(entry("p2"), 2)])
    # meanwhile p1 is deleted at 5, and a catch-up moves the watermark past it
    index.apply_batch(ChangeBatch([gone(5)], up_to=6))
    index.load([(entry("p1"), 3)])
    index.finish_load(4)
    assert state(index) == {("g1", "p2"): (entry("p2"), 2)}
    assert index.watermark == 6 and index.stats().tombstones == 0


def test_a_reload_drops_rows_the_store_no_longer_has() -> None:
    index = DirectoryIndex()
    index.apply_batch(ChangeBatch([put(1, entry("p1")), put(2, entry("p2")),
                                   put(3, entry("p3"))], up_to=3))
    index.apply([put(30, entry("p4"))])  # newer than the reload's snapshot
    index.load([(entry("p1", priority=5), 20)])
    index.load([(entry("p3"), 3)])
    assert index.finish_load(25) == 1  # p2
    assert {k: v for k, (_, v) in state(index).items()} == {
        ("g1", "p1"): 20, ("g1", "p3"): 3, ("g1", "p4"): 30}
    assert index.watermark == 25
    # a late change older than the reload's snapshot cannot bring p2 back
    assert index.apply([put(5, entry("p2"))]) == 0
    check_refcounts(index)
    assert index.digests() == digests_of(index.rows())


# -- digests and repair ---------------------------------------------------------------------------


def test_digests_follow_every_change() -> None:
    index = DirectoryIndex()
    assert index.digests() == {}
    index.apply([put(1, entry("p1")), put(1, entry("p1", "g2")), put(2, entry("p2"))])
    assert index.digests() == digests_of(index.rows())
    index.apply([put(3, entry("p1", priority=4)), gone(4, "p2")])
    assert index.digests() == digests_of(index.rows())
    index.apply([gone(5, "p1"), gone(5, "p1", "g2")])
    assert index.digests() == {}
    assert all(index.digest(b) == Digest() for b in range(BUCKETS))


def test_hazard1_a_missed_delete_is_repaired_by_digest_comparison() -> None:
    # p1 is in two GBIDs with the same parameters: one shared object, two references
    shared_g1, shared_g2 = entry("p1", "g1"), entry("p1", "g2")
    index = DirectoryIndex()
    index.apply_batch(ChangeBatch([put(1, shared_g1), put(1, shared_g2), put(2, entry("p2"))],
                                  up_to=2))
    assert index.stats().shared_params == 2 and index.stats().param_refs == 3
    # the store deletes (g1, p1) at version 3; the index never hears of it (a lost change)
    store_rows = [(shared_g2, 1), (entry("p2"), 2)]
    differing = sorted(b for b in set(index.digests()) | set(digests_of(store_rows))
                       if index.digest(b) != digests_of(store_rows).get(b, Digest()))
    assert differing == [bucket_of("g1", "p1")]
    repair_rows = RepairRows([r for r in store_rows
                              if bucket_of(r[0].gbid, r[0].participant_id) in differing],
                             snapshot=3)
    assert index.repair(repair_rows, differing) == 1
    assert state(index) == {("g2", "p1"): (shared_g2, 1), ("g1", "p2"): (entry("p2"), 2)}
    # the shared object lost the reference of the deleted key only
    params = index.shared_params_of("g2", "p1")
    assert params is not None and params.refs == 1
    check_refcounts(index)
    # a second comparison finds nothing
    assert index.digests() == digests_of(store_rows)
    assert index.repair(RepairRows([], 3), []) == 0
    assert index.stats().keys_repaired == 1
    # the zombie cannot come back through a late change of the snapshot's time
    assert index.apply([put(3, shared_g1)]) == 0


def test_hazard2_one_registration_from_api_notification_and_repair_is_counted_once() -> None:
    row, twin = entry("p1", "g1"), entry("p1", "g2")
    index = DirectoryIndex()
    # the API path: the writer applies what it committed
    index.apply([put(5, row), put(5, twin)])
    # the notification path: a catch-up batch with the same changes
    index.apply_batch(ChangeBatch([put(5, row), put(5, twin)], up_to=5))
    # the repair path: the store's rows at a snapshot that has them
    buckets = sorted({bucket_of("g1", "p1"), bucket_of("g2", "p1")})
    assert index.repair(RepairRows([(row, 5), (twin, 5)], snapshot=6), buckets) == 0
    # and once more in any order
    index.apply([put(5, twin)])
    assert len(index) == 2
    params = index.shared_params_of("g1", "p1")
    assert params is not None and params is index.shared_params_of("g2", "p1")
    assert params.refs == 2 and index.stats().shared_params == 1
    check_refcounts(index)


def test_hazard3_repair_on_an_older_snapshot_undoes_nothing() -> None:
    p_a, p_b, p_c, p_d = same_bucket_pids(4)
    bucket = bucket_of("g1", p_a)
    index = DirectoryIndex()
    index.apply_batch(ChangeBatch([put(1, entry(p_a)), put(2, entry(p_c)), put(3, entry(p_d))],
                                  up_to=3))
    # the repair reads the store at snapshot 4: p_a at 1, p_c at 2, p_d deleted at 4
    snapshot = RepairRows([(entry(p_a), 1), (entry(p_c), 2)], snapshot=4)
    # writes land before the repair acts (the index applies them): p_a updated at 5, p_b added
    # at 6, p_c deleted at 7
    index.apply([put(5, entry(p_a, priority=5))])
    index.apply([put(6, entry(p_b))])
    index.apply([gone(7, p_c)])
    before = state(index)
    assert index.repair(snapshot, [bucket]) == 1  # p_d only: its delete (4) was missed
    after = state(index)
    assert after == {k: v for k, v in before.items() if k != ("g1", p_d)}
    assert after[("g1", p_a)] == (entry(p_a, priority=5), 5)
    assert ("g1", p_b) in after and ("g1", p_c) not in after
    check_refcounts(index)


def test_repair_takes_the_stores_rows_where_the_index_is_not_newer() -> None:
    p_a, p_b, p_c = same_bucket_pids(3)
    bucket = bucket_of("g1", p_a)
    index = DirectoryIndex()
    index.apply_batch(ChangeBatch([put(1, entry(p_a)), gone(3, p_c)], up_to=1))
    # store at 4: p_a changed at 2 (missed), p_b added at 2 (missed), p_c deleted at 3
    rows = RepairRows([(entry(p_a, priority=7), 2), (entry(p_b), 2)], snapshot=4)
    assert index.repair(rows, [bucket]) == 2
    assert state(index) == {("g1", p_a): (entry(p_a, priority=7), 2),
                            ("g1", p_b): (entry(p_b), 2)}
    assert index.repair(rows, [bucket]) == 0
    # rows the store sends for buckets not asked are left alone
    other = next(f"q{i}" for i in range(100) if bucket_of("g1", f"q{i}") != bucket)
    assert index.repair(RepairRows([(entry(other), 3)], snapshot=4), [bucket]) == 2
    assert index.get("g1", other) is None and len(index) == 0  # the asked bucket: emptied
    check_refcounts(index)


def test_a_late_change_older_than_a_complete_repair_of_its_bucket_is_ignored() -> None:
    p_a, p_b = same_bucket_pids(2)
    bucket = bucket_of("g1", p_a)
    index = DirectoryIndex()
    index.apply_batch(ChangeBatch([put(1, entry(p_a))], up_to=1))
    # the store: p_a changed at 2, p_b added at 3 and deleted at 4; the index hears nothing
    assert index.repair(RepairRows([(entry(p_a, priority=2), 2)], snapshot=4), [bucket]) == 1
    # p_b's add arrives late (a batch fetched before the repair, a writer's slow apply)
    assert index.apply([put(3, entry(p_b))]) == 0
    assert index.apply_batch(ChangeBatch([put(2, entry(p_a, priority=2)), put(3, entry(p_b))],
                                         up_to=3)) == 0
    assert state(index) == {("g1", p_a): (entry(p_a, priority=2), 2)}
    # a change after the repair's snapshot is taken
    assert index.apply([put(5, entry(p_b))]) == 1
    # a repair whose snapshot is behind the watermark adds no absent key (its absence may be
    # newer) and sets no floor
    index.apply_batch(ChangeBatch([gone(6, p_b)], up_to=6))
    assert index.repair(RepairRows([(entry(p_a, priority=2), 2), (entry(p_b), 5)], snapshot=5),
                        [bucket]) == 0
    assert ("g1", p_b) not in state(index)


def test_rows_a_repair_adds_during_a_load_are_swept_when_the_snapshot_lacks_them() -> None:
    index = DirectoryIndex()
    index.begin_load()  # before the store's snapshot (version 3) is taken
    # a repair at snapshot 2 sees p1 (added at 2, deleted at 3 before the load's snapshot)
    bucket = bucket_of("g1", "p1")
    assert index.repair(RepairRows([(entry("p1"), 2)], snapshot=2), [bucket]) == 1
    index.load([(entry("p2"), 1)])
    assert index.finish_load(3) == 1
    assert state(index) == {("g1", "p2"): (entry("p2"), 1)}
    check_refcounts(index)


def test_clear_drops_everything() -> None:
    index = DirectoryIndex()
    index.apply_batch(ChangeBatch([put(1, A1), gone(3, "p2")], up_to=2))
    index.clear()
    assert len(index) == 0 and index.digests() == {} and index.watermark == 0
    assert index.stats().tombstones == 0 and index.stats().shared_params == 0


# -- a cluster of indexes behind a lossy channel, against a model of the versioned store ------


class ModelStore:
    """The versioned store of gcd/changes.py, as data: one version per write transaction,
    tombstones for deletions, changes_since, digests, rows of buckets."""

    def __init__(self) -> None:
        self.rows: dict[Key, tuple[StoredEntry, int]] = {}
        self.tombstones: dict[Key, int] = {}
        self.version = 0
        #: every state each key had: key -> version -> row (None: deleted)
        self.history: dict[Key, dict[int, StoredEntry | None]] = defaultdict(dict)

    def commit(self, writes: dict[Key, StoredEntry | None]) -> list[Change]:
        writes = {k: e for k, e in writes.items() if e is not None or k in self.rows}
        if not writes:
            return []
        self.version += 1
        changes = []
        for key, row in sorted(writes.items()):
            if row is None:
                del self.rows[key]
                self.tombstones[key] = self.version
            else:
                self.rows[key] = (row, self.version)
                self.tombstones.pop(key, None)
            self.history[key][self.version] = row
            changes.append(Change(self.version, key[0], key[1], row))
        return changes

    def state_at(self, key: Key, version: int) -> StoredEntry | None:
        states = [v for v in self.history[key] if v <= version]
        return self.history[key][max(states)] if states else None

    def changes_since(self, version: int) -> ChangeBatch:
        found = [(v, k, e) for k, (e, v) in self.rows.items() if v > version]
        found += [(v, k, None) for k, v in self.tombstones.items() if v > version]
        found.sort(key=lambda c: (c[0], c[1]))
        return ChangeBatch([Change(v, k[0], k[1], e) for v, k, e in found], self.version)

    def digests(self) -> dict[int, Digest]:
        return digests_of(self.rows.values())

    def rows_in_buckets(self, buckets: Sequence[int]) -> RepairRows:
        wanted = set(buckets)
        return RepairRows([(e, v) for (g, p), (e, v) in self.rows.items()
                           if bucket_of(g, p) in wanted], self.version)


PIDS = ["p1", "p2", "p3"]
GBIDS = ["g1", "g2"]
CCS = ["cc1", "cc2"]
INSTANCES = 3


class Instance:
    def __init__(self) -> None:
        self.index = DirectoryIndex()
        self.own: list[list[Change]] = []          # committed, not yet applied by the writer
        self.notifications: list[int] = []          # wake-ups on their way
        self.batches: list[ChangeBatch] = []        # fetched, not yet applied
        self.repairs: list[tuple[RepairRows, list[int]]] = []  # fetched, not yet applied
        self.reload: list[tuple[StoredEntry, int]] | None = None  # a reload's snapshot rows
        self.reload_version = 0
        self.last_seen: dict[Key, int] = {}       # highest version observed per key


class ClusterMachine(RuleBasedStateMachine):
    """Several instances write one store; what each index hears travels through a channel that
    drops, duplicates, reorders and delays; fetched batches and repair snapshots are applied
    late, after other changes. Throughout: no index ever holds a state the store never had or
    goes back in a key's history, and reference counts are exact. At the end: one catch-up
    (or one repair) and every index equals the store; a second digest comparison finds
    nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.store = ModelStore()
        self.instances = [Instance() for _ in range(INSTANCES)]

    def _write(self, writer: int, writes: dict[Key, StoredEntry | None]) -> None:
        changes = self.store.commit(writes)
        if not changes:
            return
        self.instances[writer].own.append(changes)
        for i, instance in enumerate(self.instances):
            if i != writer:
                instance.notifications.append(changes[0].version)

    # writes: add, remove, touch, removeStale, purge (a re-add is an add after a remove)

    @rule(writer=st.integers(0, INSTANCES - 1), pid=st.sampled_from(PIDS),
          gbids=st.lists(st.sampled_from(GBIDS), min_size=1, max_size=2, unique=True),
          domain=st.sampled_from(["d1", "d2"]), cc=st.sampled_from(CCS),
          priority=st.integers(0, 1), last_seen=st.integers(0, 3), expiry=st.integers(2, 9))
    def add(self, writer: int, pid: str, gbids: list[str], domain: str,  # noqa: PLR0917
            cc: str, priority: int, last_seen: int, expiry: int) -> None:
        self._write(writer, {(g, pid): entry(pid, g, domain=domain, cluster_controller_id=cc,
                                             priority=priority, last_seen_ms=last_seen,
                                             expiry_ms=expiry) for g in gbids})

    @rule(writer=st.integers(0, INSTANCES - 1), pid=st.sampled_from(PIDS),
          gbids=st.lists(st.sampled_from(GBIDS), min_size=1, max_size=2, unique=True))
    def remove(self, writer: int, pid: str, gbids: list[str]) -> None:
        self._write(writer, {(g, pid): None for g in gbids})

    @rule(writer=st.integers(0, INSTANCES - 1), cc=st.sampled_from(CCS),
          last_seen=st.integers(0, 3), expiry=st.integers(2, 9))
    def touch(self, writer: int, cc: str, last_seen: int, expiry: int) -> None:
        self._write(writer, {k: dataclasses.replace(e, last_seen_ms=last_seen, expiry_ms=expiry)
                             for k, (e, _) in self.store.rows.items()
                             if e.cluster_controller_id == cc})

    @rule(writer=st.integers(0, INSTANCES - 1), cc=st.sampled_from(CCS),
          before=st.integers(0, 4))
    def remove_stale(self, writer: int, cc: str, before: int) -> None:
        self._write(writer, {k: None for k, (e, _) in self.store.rows.items()
                             if e.cluster_controller_id == cc and e.last_seen_ms < before})

    @rule(writer=st.integers(0, INSTANCES - 1), now=st.integers(0, 10))
    def purge_expired(self, writer: int, now: int) -> None:
        self._write(writer, {k: None for k, (e, _) in self.store.rows.items()
                             if e.expiry_ms < now})

    # what each instance hears, and when

    @precondition(lambda self: any(i.own for i in self.instances))
    @rule(data=st.data())
    def writer_applies_its_own_changes(self, data: st.DataObject) -> None:
        instance = self.instances[data.draw(st.sampled_from(
            [n for n, i in enumerate(self.instances) if i.own]))]
        changes = instance.own.pop(data.draw(st.integers(0, len(instance.own) - 1)))
        instance.index.apply(changes)

    @precondition(lambda self: any(i.notifications for i in self.instances))
    @rule(data=st.data(), fate=st.sampled_from(["deliver", "drop", "duplicate"]))
    def notification(self, data: st.DataObject, fate: str) -> None:
        instance = self.instances[data.draw(st.sampled_from(
            [n for n, i in enumerate(self.instances) if i.notifications]))]
        at = data.draw(st.integers(0, len(instance.notifications) - 1))  # any order
        if fate != "duplicate":
            instance.notifications.pop(at)
        if fate != "drop":  # a wake-up: the instance fetches what came after its watermark
            instance.batches.append(self.store.changes_since(instance.index.watermark))

    @rule(instance=st.integers(0, INSTANCES - 1))
    def timer_catch_up_fetch(self, instance: int) -> None:
        target = self.instances[instance]
        target.batches.append(self.store.changes_since(target.index.watermark))

    @precondition(lambda self: any(i.batches for i in self.instances))
    @rule(data=st.data())
    def apply_fetched_batch(self, data: st.DataObject) -> None:
        instance = self.instances[data.draw(st.sampled_from(
            [n for n, i in enumerate(self.instances) if i.batches]))]
        instance.index.apply_batch(
            instance.batches.pop(data.draw(st.integers(0, len(instance.batches) - 1))))

    @rule(instance=st.integers(0, INSTANCES - 1))
    def repair_fetch(self, instance: int) -> None:
        target = self.instances[instance]
        theirs, ours = self.store.digests(), target.index.digests()
        differing = sorted(b for b in set(theirs) | set(ours)
                           if theirs.get(b, Digest()) != ours.get(b, Digest()))
        target.repairs.append((self.store.rows_in_buckets(differing), differing))

    @precondition(lambda self: any(i.repairs for i in self.instances))
    @rule(data=st.data())
    def apply_fetched_repair(self, data: st.DataObject) -> None:
        instance = self.instances[data.draw(st.sampled_from(
            [n for n, i in enumerate(self.instances) if i.repairs]))]
        rows, buckets = instance.repairs.pop(data.draw(st.integers(0, len(instance.repairs) - 1)))
        instance.index.repair(rows, buckets)

    @precondition(lambda self: any(i.reload is None for i in self.instances))
    @rule(data=st.data())
    def reload_start(self, data: st.DataObject) -> None:
        instance = self.instances[data.draw(st.sampled_from(
            [n for n, i in enumerate(self.instances) if i.reload is None]))]
        instance.reload = list(self.store.rows.values())
        instance.reload_version = self.store.version
        half = len(instance.reload) // 2
        instance.index.load(instance.reload[:half])
        instance.reload = instance.reload[half:]

    @precondition(lambda self: any(i.reload is not None for i in self.instances))
    @rule(data=st.data())
    def reload_finish(self, data: st.DataObject) -> None:
        instance = self.instances[data.draw(st.sampled_from(
            [n for n, i in enumerate(self.instances) if i.reload is not None]))]
        assert instance.reload is not None
        instance.index.load(LoadBatch.of(instance.reload))
        instance.index.finish_load(instance.reload_version)
        instance.reload = None

    # throughout

    @invariant()
    def indexes_hold_only_states_the_store_had_and_never_go_back(self) -> None:
        for instance in self.instances:
            index = instance.index
            rows = state(index)
            for key, (row, version) in rows.items():
                assert self.store.history[key].get(version) == row
            for key in set(instance.last_seen) | set(rows):
                known = index.version_of(*key)
                previous = instance.last_seen.get(key, 0)
                if known is None:  # absent without a tombstone: gone at a version <= W
                    assert key not in rows and index.watermark >= previous
                else:
                    assert known >= previous, f"{key} went back from {previous} to {known}"
                    if key not in rows:  # a tombstone: the key was absent at that version
                        assert self.store.state_at(key, known) is None
                    instance.last_seen[key] = known

    @invariant()
    def reference_counts_and_digests_are_exact(self) -> None:
        for instance in self.instances:
            check_refcounts(instance.index)
            assert instance.index.digests() == digests_of(instance.index.rows())

    @invariant()
    def lookups_agree_with_the_rows(self) -> None:
        for instance in self.instances:
            rows = [e for e, _ in instance.index.rows()]
            for now in (0, 5):
                for domains in (["d1"], ["d2", "d1"]):
                    expected = sorted((e for e in rows if e.domain in domains
                                       and e.expiry_ms >= now),
                                      key=lambda e: (e.participant_id, e.gbid))
                    assert instance.index.find(domains, "i", now) == expected
                for pid in PIDS:
                    assert instance.index.find_participant(pid, now) == sorted(
                        (e for e in rows if e.participant_id == pid and e.expiry_ms >= now),
                        key=lambda e: e.gbid)

    # at the end

    def converged(self, index: DirectoryIndex) -> None:
        assert state(index) == self.store.rows
        assert index.digests() == self.store.digests()
        # a second repair finds nothing
        assert index.repair(self.store.rows_in_buckets(range(BUCKETS)), range(BUCKETS)) == 0
        check_refcounts(index)

    def teardown(self) -> None:
        for n, instance in enumerate(self.instances):
            if instance.reload is not None:
                self.reload_finish_of(instance)
            if n == 0:
                # repair alone (no notification, no timer): digests, then differing buckets
                self.repair_all(instance.index)
            else:
                instance.index.apply_batch(self.store.changes_since(instance.index.watermark))
            self.converged(instance.index)
            # what was still on its way arrives late: an instance that catches up takes none
            # of it; one that only repairs may (its watermark never moves) until it repairs
            for changes in instance.own:
                instance.index.apply(changes)
            for batch in instance.batches:
                instance.index.apply_batch(batch)
            for rows, buckets in instance.repairs:
                instance.index.repair(rows, buckets)
            if n == 0:
                self.repair_all(instance.index)
            self.converged(instance.index)

    def repair_all(self, index: DirectoryIndex) -> None:
        theirs, ours = self.store.digests(), index.digests()
        differing = sorted(b for b in set(theirs) | set(ours)
                           if theirs.get(b, Digest()) != ours.get(b, Digest()))
        index.repair(self.store.rows_in_buckets(differing), differing)

    def reload_finish_of(self, instance: Instance) -> None:
        assert instance.reload is not None
        instance.index.load(instance.reload)
        instance.index.finish_load(instance.reload_version)
        instance.reload = None


#: 50 runs of 40 steps in the suite; PYJOYNR_SOAK=3 draws the 150 it drew before
#: (tests/support/examples.py)
ClusterMachine.TestCase.settings = settings(max_examples=examples(50), stateful_step_count=40,
                                            deadline=None)
TestCluster = ClusterMachine.TestCase


def test_a_load_takes_the_bucket_and_row_hash_the_store_wrote_and_checks_the_bucket() -> None:
    """The digests of a load sum the store's own columns; a bucket out of range (no store
    writes one) is no index into the buckets: that row is taken by the general rule, which
    computes its bucket and hash."""
    rows = loaded_rows()[:50]
    batch = LoadBatch.of(rows)
    assert [tuple(r[-2:]) for r in batch.records] == [
        bucket_and_row_hash(e.gbid, e.participant_id, v) for e, v in rows]
    odd = [(*r[:-2], BUCKETS + 3, 12345) if i == 7 else (*r[:-2], -1, 1) if i == 9 else r
           for i, r in enumerate(batch.records)]
    index, reference = DirectoryIndex(), DirectoryIndex()
    assert index.load(LoadBatch(odd)) == reference.load(rows) == len(rows)
    index.finish_load(40)
    reference.finish_load(40)
    assert index.digests() == reference.digests() and state(index) == state(reference)
    # and a row hash taken as the store has it: the digest is the store's sum
    skewed = [(*r[:-1], r[-1] + 1) if i == 0 else r for i, r in enumerate(batch.records)]
    index = DirectoryIndex()
    index.load(LoadBatch(skewed))
    index.finish_load(40)
    bucket = batch.records[0][-2]
    assert index.digest(bucket).hash_sum == reference.digest(bucket).hash_sum + 1


def test_a_load_refuses_a_record_holding_a_value_of_another_type() -> None:
    (record,) = LoadBatch.of([(entry("p1"), 1)]).records
    bad = (*record[:4], 1.5, *record[5:])  # minor version a float
    with pytest.raises(TypeError, match="float"):
        DirectoryIndex().load(LoadBatch([bad]))


def _loaded(rows: int, *, gbids: int = 1) -> tuple[DirectoryIndex, list[tuple[StoredEntry, int]]]:
    """An index loaded with ``rows`` rows of one fleet profile (fresh strings, as a driver
    gives them), through LoadBatch records as a store hands them out."""
    pairs = [(entry(f"p{i // gbids:05d}", f"g{i % gbids}",
                    domain="".join(["d", "0"]), last_seen_ms=i, expiry_ms=10_000 + i), i + 1)
             for i in range(rows)]
    index = DirectoryIndex()
    index.load(LoadBatch.of(pairs))
    index.finish_load(rows)
    return index, pairs


def test_a_loaded_index_holds_no_object_the_collector_tracks_per_row() -> None:
    """Its rows are columns: a full collection's walk does not grow with the rows (a slotted
    object per row made two tracked objects per row). Tracked per index: its bucket arrays."""
    tracked = []
    for rows in (2_000, 4_000):
        gc.collect()
        before = len(gc.get_objects())
        index, _ = _loaded(rows, gbids=2)
        gc.collect()
        tracked.append(len(gc.get_objects()) - before)
        assert len(index) == rows and index.stats().participants == rows // 2
        del index
    assert tracked[1] - tracked[0] < 100, f"tracked objects per index: {tracked}"


def test_a_loaded_index_keeps_each_repeated_value_once() -> None:
    """A fleet's rows repeat their profile (domain, interface, versions, QoS, topic, cluster
    controller): it is kept once, however many rows use it; a participant's id once."""
    index, _ = _loaded(300, gbids=3)
    assert len(index._profiles) == 2  # (the odd rows' place and the one profile)
    found = index.find_participant("p00007", 0)
    assert [e.gbid for e in found] == ["g0", "g1", "g2"]
    assert len({id(e.participant_id) for e in found}) == 1
    assert len({id(e.domain) for e in index.find(["d0"], "i", 0)}) == 1
