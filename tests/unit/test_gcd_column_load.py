"""A load of the store's rows grouped by profile (gcd.changes.ColumnBatch, what the PostgreSQL
store hands over) builds the index a load of the same rows one by one builds: rows, versions,
groups, participants in several GBIDs, digests, statistics, lookups; rows it cannot take as
columns (a key the index knows, values of other types, a bucket out of range) take the rule
of a row."""

from __future__ import annotations

import pytest

from pyjoynr.gcd.changes import BUCKETS, ChangeBatch, ColumnBatch
from pyjoynr.gcd.index import DirectoryIndex
from pyjoynr.gcd.params import PROFILE_FIELDS
from pyjoynr.gcd.store import StoredEntry
from tests.unit.test_gcd_index import (
    check_refcounts,
    entry,
    gone,
    loaded_rows,
    put,
    state,
)


def same_index(a: DirectoryIndex, b: DirectoryIndex) -> None:
    assert state(a) == state(b)
    assert a.digests() == b.digests()
    assert a.stats() == b.stats()
    check_refcounts(a)
    for i in range(7):
        for j in range(5):
            assert a.find([f"d{i}"], f"i{j}", 60) == b.find([f"d{i}"], f"i{j}", 60)
            assert a.find_shared([f"d{i}"], f"i{j}", 0) == b.find_shared([f"d{i}"], f"i{j}", 0)
    for cc in range(4):
        assert a.keys_of_cluster_controller(f"cc{cc}") == b.keys_of_cluster_controller(
            f"cc{cc}")
    for pid in ("p000", "p005", "p299", "x"):
        assert a.find_participant(pid, 0) == b.find_participant(pid, 0)
        assert a.find_participant_shared(pid, 0) == b.find_participant_shared(pid, 0)


def load_both(rows: list[tuple[StoredEntry, int]], *, preloaded: bool = False,
              batch: int = 64) -> tuple[DirectoryIndex, DirectoryIndex]:
    by_columns, by_entries = DirectoryIndex(), DirectoryIndex()
    for index in (by_columns, by_entries):
        if preloaded:  # a reload: some keys held already, one deleted since (a tombstone)
            index.apply_batch(ChangeBatch([put(1, entry("p001", "g0")), put(2, entry("x")),
                                           gone(45, "p002", "g0")], up_to=2))
    for start in range(0, len(rows), batch):
        columns = ColumnBatch.of(rows[start:start + batch])
        for part in columns.split(17):
            by_columns.load(part)
        by_entries.load(rows[start:start + batch])
    assert by_columns.finish_load(44) == by_entries.finish_load(44)
    return by_columns, by_entries


@pytest.mark.parametrize("preloaded", [False, True])
@pytest.mark.parametrize("batch", [64, 10_000])
def test_a_load_of_columns_builds_the_index_a_load_of_entries_builds(
        preloaded: bool, batch: int) -> None:
    rows = loaded_rows()  # (participants in 1 to 3 GBIDs, scattered over the batches)
    by_columns, by_entries = load_both(rows, preloaded=preloaded, batch=batch)
    same_index(by_columns, by_entries)
    assert len(by_columns) == len(rows) - (1 if preloaded else 0)
    # a participant's rows in several GBIDs: one slot tuple ordered by gbid, one id object
    found = by_columns.find_participant("p005", 0)
    assert [e.gbid for e in found] == ["g0", "g1", "g2"]
    assert len({id(e.participant_id) for e in found}) == 1
    # the rows of a profile refer to its one tuple
    assert len({id(f[4]) for f in by_columns.find_shared(["d0"], "i0", 0)
                if f[4][10] == "cc0"}) == 1


def test_rows_the_columns_cannot_take_take_the_rule_of_a_row() -> None:
    rows = loaded_rows()[:120]
    # values of other types than the store's (an int priority as a bool: another profile)
    rows[3] = (entry("q1", "g0", domain="d1", interface_name="i1", priority=True,
                     cluster_controller_id="cc1"), 5)
    rows[4] = (entry("q2", "g0", domain="d1", interface_name="i1", priority=1,
                     cluster_controller_id="cc1"), 5)
    by_columns, by_entries = load_both(rows)
    same_index(by_columns, by_entries)
    assert by_columns.get("g0", "q1").priority is True  # type: ignore[union-attr]
    # a bucket out of range (no store writes one) and an expiry beyond int64: the rule of a
    # row, which computes the bucket and keeps the expiry aside
    width = len(PROFILE_FIELDS)
    (record, *rest) = ColumnBatch.of(rows[:30]).records
    buckets = list(record[width + 5])
    buckets[0] = BUCKETS + 1
    expiries = list(record[width + 4])
    expiries[-1] = 2 ** 64
    odd = (*record[:width + 4], expiries, buckets, record[width + 6])
    index, reference = DirectoryIndex(), DirectoryIndex()
    rows_of = [(entry, version) for entry, version in ColumnBatch([odd]).load_batch().entries()]
    assert index.load(ColumnBatch([odd, *rest])) == reference.load(
        rows_of + [(e, v) for e, v in ColumnBatch(rest).load_batch().entries()])
    index.finish_load(44)
    reference.finish_load(44)
    assert state(index) == state(reference) and index.digests() == reference.digests()


def test_a_batch_of_unequal_lists_is_refused() -> None:
    (record,) = ColumnBatch.of([(entry("p1"), 1), (entry("p2"), 2)]).records
    width = len(PROFILE_FIELDS)
    short = (*record[:width + 2], record[width + 2][:1], *record[width + 3:])
    index = DirectoryIndex()
    with pytest.raises(ValueError):
        index.load(ColumnBatch([short]))
    assert len(index) == 0


def test_a_split_keeps_every_row_once_in_whole_records() -> None:
    batch = ColumnBatch.of(loaded_rows())
    parts = batch.split(50)
    assert [r for part in parts for r in part.records] == list(batch.records)
    assert sum(map(len, parts)) == len(batch) == len(loaded_rows())
    assert all(len(part) <= 50 or len(part.records) == 1 for part in parts)
