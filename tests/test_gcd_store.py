"""Contract tests of the GCD's stores: every implementation must pass all of them.

The ``store`` fixture yields a fresh, open store of each kind (``sqlite``, and ``postgres`` on
a throwaway PostgreSQL server); tests/support/gcd_stores.py knows how to make them.
"""

from __future__ import annotations

import dataclasses

import pytest

from pyjoynr.gcd.changes import (
    BUCKETS,
    Change,
    ChangeBatch,
    Digest,
    LoadBatch,
    TooFarBehind,
    VersionedStore,
    bucket_of,
    row_hash,
)
from pyjoynr.gcd.store import GcdStore, RemoveOutcome, StoredEntry, StoreError
from pyjoynr.runtime.clock import now_ms
from tests.support.gcd_stores import STORE_KINDS

pytestmark = pytest.mark.parametrize("store", STORE_KINDS, indirect=True)

NOW = 1_800_000_000_000
LATER = NOW + 3_600_000


def row(pid: str, gbid: str = "g1", *, domain: str = "vehicle", interface: str = "test/Radio",
        cc: str = "cc-1", expiry: int = LATER, last_seen: int = NOW, **changes: object
        ) -> StoredEntry:
    entry = StoredEntry(
        gbid=gbid, participant_id=pid, domain=domain, interface_name=interface,
        major_version=1, minor_version=2, priority=5, scope="GLOBAL", supports_on_change=True,
        custom_parameters='[["k", "v"]]', last_seen_ms=last_seen, expiry_ms=expiry,
        public_key_id="", topic=f"joynr/cc/{cc}", cluster_controller_id=cc,
    )
    return dataclasses.replace(entry, **changes)  # type: ignore[arg-type]


async def test_add_then_find_returns_every_field(store: GcdStore) -> None:
    entry = row("p1", priority=-(2**62), supports_on_change=False, public_key_id="key")
    await store.add([entry])
    assert await store.find(["vehicle"], "test/Radio", NOW) == [entry]
    assert await store.find_participant("p1", NOW) == [entry]
    assert await store.count() == 1


async def test_add_replaces_the_row_of_the_same_gbid_and_keeps_others(store: GcdStore) -> None:
    await store.add([row("p1", "g1"), row("p1", "g2")])
    replaced = row("p1", "g1", domain="other")
    await store.add([replaced, row("p1", "g3")])
    assert [e.gbid for e in await store.find_participant("p1", NOW)] == ["g1", "g2", "g3"]
    assert (await store.find_participant("p1", NOW))[0] == replaced
    assert await store.count() == 3


async def test_find_by_domains_and_interface_is_ordered(store: GcdStore) -> None:
    await store.add([row("b", "g2"), row("a", "g2"), row("a", "g1"), row("c", domain="d2"),
                     row("x", interface="test/Other")])
    found = await store.find(["vehicle", "d2"], "test/Radio", NOW)
    assert [(e.participant_id, e.gbid) for e in found] == [
        ("a", "g1"), ("a", "g2"), ("b", "g2"), ("c", "g1")]
    assert await store.find(["nowhere"], "test/Radio", NOW) == []
    assert await store.find([], "test/Radio", NOW) == []


async def test_expired_rows_are_never_found_and_purged(store: GcdStore) -> None:
    await store.add([row("old", expiry=NOW - 1), row("edge", expiry=NOW), row("new")])
    assert [e.participant_id for e in await store.find(["vehicle"], "test/Radio", NOW)] == [
        "edge", "new"]
    assert await store.find_participant("old", NOW) == []
    assert await store.remove("old", ["g1"], NOW) is RemoveOutcome.NO_PARTICIPANT
    assert await store.purge_expired(NOW) == 1
    assert await store.count() == 2


async def test_remove_from_selected_backends_is_all_or_nothing(store: GcdStore) -> None:
    await store.add([row("p1", "g1"), row("p1", "g2")])
    assert await store.remove("p1", ["g1", "g3"], NOW) is RemoveOutcome.NOT_IN_ALL_SELECTED
    assert await store.count() == 2  # nothing removed
    assert await store.remove("p1", ["g1"], NOW) is RemoveOutcome.REMOVED
    assert [e.gbid for e in await store.find_participant("p1", NOW)] == ["g2"]
    assert await store.remove("nobody", ["g1"], NOW) is RemoveOutcome.NO_PARTICIPANT
    assert await store.remove("p1", ["g2"], NOW) is RemoveOutcome.REMOVED
    assert await store.count() == 0


async def test_remove_in_one_backend(store: GcdStore) -> None:
    await store.add([row("p1", "g1"), row("p1", "g2"), row("p2", "g1")])
    assert await store.remove_in_backends(["p1", "p2", "nobody"], "g1") == 2
    assert [(e.participant_id, e.gbid) for e in
            await store.find(["vehicle"], "test/Radio", NOW)] == [("p1", "g2")]


async def test_touch_changes_only_that_cluster_controller(store: GcdStore) -> None:
    await store.add([row("p1", "g1"), row("p1", "g2"), row("p2"), row("q1", cc="cc-2")])
    assert await store.touch("cc-1", ["p1"], NOW + 5, LATER + 5) == 2
    assert {(e.participant_id, e.gbid, e.last_seen_ms, e.expiry_ms) for e in
            await store.find(["vehicle"], "test/Radio", NOW)} == {
        ("p1", "g1", NOW + 5, LATER + 5), ("p1", "g2", NOW + 5, LATER + 5),
        ("p2", "g1", NOW, LATER), ("q1", "g1", NOW, LATER)}
    assert await store.touch("cc-1", None, NOW + 9, LATER + 9) == 3
    assert (await store.find_participant("q1", NOW))[0].last_seen_ms == NOW  # other CC
    assert await store.touch("cc-1", ["q1"], NOW + 9, LATER + 9) == 0


async def test_remove_stale_removes_that_cluster_controllers_older_rows(store: GcdStore
                                                                        ) -> None:
    await store.add([row("old", last_seen=NOW - 10), row("old", "g2", last_seen=NOW - 10),
                     row("fresh", last_seen=NOW), row("other", cc="cc-2", last_seen=NOW - 10)])
    assert await store.remove_stale("cc-1", NOW) == 2
    assert sorted(e.participant_id for e in
                  await store.find(["vehicle"], "test/Radio", NOW)) == ["fresh", "other"]


async def test_many_rows_in_one_add(store: GcdStore) -> None:
    await store.add([row(f"p{i:04}", f"g{i % 3}") for i in range(1000)])
    assert await store.count() == 1000
    assert len(await store.find(["vehicle"], "test/Radio", NOW)) == 1000


# -- lists that name a value twice: each distinct value counts once, on every store ----------


async def test_touch_counts_each_row_once_when_a_participant_is_listed_twice(
        store: GcdStore) -> None:
    await store.add([row("p1", "g1"), row("p1", "g2"), row("p2"), row("p3")])
    assert await store.touch("cc-1", ["p1", "p2", "p1", "p1"], NOW + 5, LATER + 5) == 3
    assert {(e.participant_id, e.gbid) for e in await store.find(["vehicle"], "test/Radio", NOW)
            if e.last_seen_ms == NOW + 5} == {("p1", "g1"), ("p1", "g2"), ("p2", "g1")}
    assert await store.touch("cc-1", [], NOW + 6, LATER + 6) == 0


async def test_remove_with_a_gbid_listed_twice(store: GcdStore) -> None:
    await store.add([row("p1", "g1"), row("p1", "g2")])
    assert await store.remove("p1", ["g1", "g3", "g1"], NOW) is (
        RemoveOutcome.NOT_IN_ALL_SELECTED)
    assert await store.count() == 2
    assert await store.remove("p1", ["g1", "g1"], NOW) is RemoveOutcome.REMOVED
    assert [e.gbid for e in await store.find_participant("p1", NOW)] == ["g2"]


async def test_remove_in_with_a_participant_listed_twice_counts_each_row_once(
        store: GcdStore) -> None:
    await store.add([row("p1", "g1"), row("p1", "g2"), row("p2", "g1")])
    assert await store.remove_in_backends(["p1", "p2", "p1"], "g1") == 2
    assert [(e.participant_id, e.gbid) for e in
            await store.find(["vehicle"], "test/Radio", NOW)] == [("p1", "g2")]


async def test_add_of_a_batch_naming_one_participant_twice(store: GcdStore) -> None:
    await store.add([row("p1", "g1", priority=1), row("p1", "g2", priority=2),
                     row("p1", "g1", priority=3, domain="other")])
    assert [(e.gbid, e.priority, e.domain) for e in await store.find_participant("p1", NOW)
            ] == [("g1", 3, "other"), ("g2", 2, "vehicle")]
    assert await store.count() == 2


async def test_find_with_a_domain_listed_twice_returns_each_row_once(store: GcdStore) -> None:
    await store.add([row("p1", "g1"), row("p1", "g2"), row("p2", domain="d2")])
    found = await store.find(["vehicle", "d2", "vehicle", "d2"], "test/Radio", NOW)
    assert [(e.participant_id, e.gbid) for e in found] == [
        ("p1", "g1"), ("p1", "g2"), ("p2", "g1")]


# -- which rows are live, expired, stale: the same boundaries on every store -----------------

#: expiry_ms - now_ms -> the row is live (found, removable) / purged
EXPIRY_CASES = [(-1, False), (0, True), (1, True)]


@pytest.mark.parametrize(("offset", "live"), EXPIRY_CASES)
async def test_a_row_is_live_until_its_expiry_has_passed(store: GcdStore, offset: int,
                                                         live: bool) -> None:
    await store.add([row("p1", expiry=NOW + offset)])
    assert len(await store.find(["vehicle"], "test/Radio", NOW)) == live
    assert len(await store.find_participant("p1", NOW)) == live
    assert await store.remove("p1", ["g1"], NOW) is (
        RemoveOutcome.REMOVED if live else RemoveOutcome.NO_PARTICIPANT)
    assert await store.count() == (0 if live else 1)


@pytest.mark.parametrize(("offset", "live"), EXPIRY_CASES)
async def test_purge_deletes_exactly_the_rows_that_are_not_live(store: GcdStore, offset: int,
                                                                live: bool) -> None:
    await store.add([row("p1", expiry=NOW + offset)])
    assert await store.purge_expired(NOW) == (0 if live else 1)


@pytest.mark.parametrize(("offset", "stale"), [(-1, True), (0, False), (1, False)])
async def test_remove_stale_deletes_rows_last_seen_before_the_limit(
        store: GcdStore, offset: int, stale: bool) -> None:
    await store.add([row("p1", last_seen=NOW + offset), row("p2", cc="cc-2", last_seen=NOW - 9)])
    assert await store.remove_stale("cc-1", NOW) == stale
    assert await store.count() == (1 if stale else 2)


async def test_touch_and_remove_in_act_on_expired_rows_not_yet_purged(store: GcdStore) -> None:
    await store.add([row("p1", expiry=NOW - 1), row("p2", expiry=NOW - 1)])
    assert await store.touch("cc-1", ["p1"], NOW, LATER) == 1
    assert [e.participant_id for e in await store.find(["vehicle"], "test/Radio", NOW)
            ] == ["p1"]  # revived
    assert await store.remove_in_backends(["p2"], "g1") == 1


# -- failures -----------------------------------------------------------------------------------


async def test_a_closed_store_fails_with_reason_not_open(store: GcdStore) -> None:
    await store.close()
    try:
        with pytest.raises(StoreError, match="not open") as raised:
            await store.count()
        assert raised.value.reason == "not-open"
        with pytest.raises(StoreError) as raised:
            await store.add([row("p1")])
        assert raised.value.reason == "not-open"
    finally:
        await store.open()  # the fixture closes it again


async def test_a_value_the_store_cannot_keep_fails_the_whole_add(store: GcdStore) -> None:
    await store.add([row("kept")])
    with pytest.raises(StoreError) as raised:
        await store.add([row("p1"), row("p2", priority=2**63)])  # beyond a 64-bit integer
    assert raised.value.reason == "database"
    assert [e.participant_id for e in await store.find(["vehicle"], "test/Radio", NOW)] == [
        "kept"]


# -- versioned: every write's changes, the change feed, load, digests (gcd.changes) ------------


def in_python(rows: list[tuple[StoredEntry, int]]) -> dict[int, Digest]:
    """The digests of ``rows`` (entry, version), computed here rather than in the store."""
    digests: dict[int, Digest] = {}
    for entry, version in rows:
        bucket = bucket_of(entry.gbid, entry.participant_id)
        digests[bucket] = digests.get(bucket, Digest()).plus(
            version, row_hash(entry.gbid, entry.participant_id, version))
    return digests


async def load_all(store: VersionedStore, batch_size: int = 10_000
                   ) -> tuple[list[tuple[StoredEntry, int]], int, list[int]]:
    """Every row of a load, its version, and the size of each batch."""
    rows: list[tuple[StoredEntry, int]] = []
    sizes: list[int] = []
    version = None
    async for item in store.load(batch_size):
        assert version is None, "the version is the last item"
        if isinstance(item, int):
            version = item
        else:
            rows.extend(item.entries())
            sizes.append(len(item.records))
    assert version is not None
    return rows, version, sizes


def state(changes: list[Change]) -> dict[tuple[str, str], tuple[int, StoredEntry | None]]:
    return {c.key: (c.version, c.entry) for c in changes}


async def test_every_write_answers_what_it_committed_at_one_new_version(
        store: VersionedStore) -> None:
    assert await store.current_version() == 0
    added = await store.add_changes([row("p2"), row("p1", "g2"), row("p1")])
    assert added == [Change(1, "g1", "p1", row("p1")), Change(1, "g1", "p2", row("p2")),
                     Change(1, "g2", "p1", row("p1", "g2"))]
    touched = await store.touch_changes("cc-1", ["p1"], NOW + 5, LATER + 5)
    assert touched == [Change(2, "g1", "p1", row("p1", last_seen=NOW + 5, expiry=LATER + 5)),
                       Change(2, "g2", "p1", row("p1", "g2", last_seen=NOW + 5,
                                                 expiry=LATER + 5))]
    assert await store.remove_in_changes(["p2", "nobody"], "g1") == [
        Change(3, "g1", "p2", None)]
    assert await store.remove_changes("p1", ["g2"], NOW) == (
        RemoveOutcome.REMOVED, [Change(4, "g2", "p1", None)])
    await store.add_changes([row("stale", last_seen=NOW - 1), row("gone", expiry=NOW - 1)])
    assert await store.remove_stale_changes("cc-1", NOW) == [Change(6, "g1", "stale", None)]
    assert await store.purge_expired_changes(NOW) == [Change(7, "g1", "gone", None)]
    assert await store.current_version() == 7
    assert [e.participant_id for e in await store.find(["vehicle"], "test/Radio", NOW)] == [
        "p1"]


async def test_a_write_that_changes_nothing_spends_no_version(store: VersionedStore) -> None:
    await store.add_changes([row("p1")])
    assert await store.add_changes([]) == []
    assert await store.touch_changes("cc-9", None, NOW, LATER) == []
    assert await store.touch_changes("cc-1", [], NOW, LATER) == []
    assert await store.remove_changes("p1", ["g1", "g2"], NOW) == (
        RemoveOutcome.NOT_IN_ALL_SELECTED, [])
    assert await store.remove_changes("nobody", ["g1"], NOW) == (
        RemoveOutcome.NO_PARTICIPANT, [])
    assert await store.remove_in_changes(["nobody"], "g1") == []
    assert await store.remove_stale_changes("cc-1", NOW - 100) == []
    assert await store.purge_expired_changes(NOW) == []
    assert await store.current_version() == 1
    assert (await store.changes_since(0)).up_to == 1


async def test_changes_since_gives_each_key_once_at_its_latest_version_in_order(
        store: VersionedStore) -> None:
    await store.add_changes([row("a"), row("b"), row("c")])                   # 1
    await store.touch_changes("cc-1", ["b"], NOW + 1, LATER)                   # 2
    await store.remove_in_changes(["a"], "g1")                                 # 3
    await store.add_changes([row("d", domain="x"), row("c", domain="y")])      # 4
    everything = await store.changes_since(0)
    assert everything.up_to == 4
    assert [(c.version, c.participant_id, c.entry is None) for c in everything.changes] == [
        (2, "b", False), (3, "a", True), (4, "c", False), (4, "d", False)]
    assert everything.changes[-2].entry == row("c", domain="y")
    later = await store.changes_since(2)
    assert [(c.version, c.participant_id) for c in later.changes] == [(3, "a"), (4, "c"),
                                                                     (4, "d")]
    assert later.up_to == 4
    assert await store.changes_since(4) == ChangeBatch([], 4)
    assert await store.changes_since(99) == ChangeBatch([], 4)


async def test_changes_since_with_a_limit_never_cuts_a_version_in_two(
        store: VersionedStore) -> None:
    await store.add_changes([row("a"), row("b"), row("c"), row("x")])      # 1
    await store.remove_in_changes(["x"], "g1")                              # 2: a tombstone
    await store.add_changes([row("d"), row("e")])                           # 3
    await store.add_changes([row("f")])                                     # 4

    def seen(batch: ChangeBatch) -> list[tuple[int, str]]:
        return [(c.version, c.participant_id) for c in batch.changes]

    # the limit falls inside version 3's group: stop before it
    cut = await store.changes_since(0, limit=5)
    assert (seen(cut), cut.up_to) == ([(1, "a"), (1, "b"), (1, "c"), (2, "x")], 2)
    # a first group larger than the limit comes whole
    whole = await store.changes_since(0, limit=2)
    assert (seen(whole), whole.up_to) == ([(1, "a"), (1, "b"), (1, "c")], 1)
    exact = await store.changes_since(1, limit=3)
    assert (seen(exact), exact.up_to) == ([(2, "x"), (3, "d"), (3, "e")], 3)
    # paging with any limit ends with everything, each change once
    for limit in (1, 2, 3, 4, 100):
        collected: list[Change] = []
        version = 0
        for _ in range(20):
            batch = await store.changes_since(version, limit=limit)
            assert batch.up_to >= version
            collected.extend(batch.changes)
            if batch.up_to == version:
                break
            version = batch.up_to
        assert collected == list((await store.changes_since(0)).changes), limit
        assert version == 4


async def test_a_readded_key_has_no_tombstone_and_a_deleted_one_no_row(
        store: VersionedStore) -> None:
    await store.add_changes([row("p1"), row("p2")])                         # 1
    await store.remove_changes("p1", ["g1"], NOW)                           # 2
    assert state(list((await store.changes_since(0)).changes))[("g1", "p1")] == (2, None)
    readded = row("p1", priority=9)
    assert await store.add_changes([readded]) == [Change(3, "g1", "p1", readded)]
    changes = list((await store.changes_since(0)).changes)
    assert [(c.version, c.participant_id) for c in changes] == [(1, "p2"), (3, "p1")]
    assert changes[-1].entry == readded
    await store.remove_in_changes(["p1"], "g1")                             # 4
    assert state(list((await store.changes_since(0)).changes)) == {
        ("g1", "p2"): (1, row("p2")), ("g1", "p1"): (4, None)}


async def test_too_far_behind_once_tombstones_after_the_version_are_purged(
        store: VersionedStore) -> None:
    await store.add_changes([row("p1"), row("p2")])                         # 1
    await store.remove_in_changes(["p1"], "g1")                             # 2
    await store.add_changes([row("p3")])                                    # 3
    await store.remove_in_changes(["p3"], "g1")                             # 4
    assert await store.purge_tombstones(older_than_ms=0) == 0
    assert len((await store.changes_since(0)).changes) == 3
    assert await store.purge_tombstones(older_than_ms=now_ms() + 60_000) == 2
    for behind in (0, 1, 3):
        with pytest.raises(TooFarBehind):
            await store.changes_since(behind)
    assert await store.changes_since(4) == ChangeBatch([], 4)
    rows, version, _ = await load_all(store)  # what a reader that fell behind does
    assert (rows, version) == ([(row("p2"), 1)], 4)


async def test_load_is_the_whole_store_at_one_version_in_batches(store: VersionedStore) -> None:
    await store.add_changes([row(f"p{i:02}", f"g{i % 2}") for i in range(23)])
    await store.touch_changes("cc-1", ["p03", "p04"], NOW + 1, LATER)
    await store.remove_in_changes(["p05"], "g1")
    rows, version, sizes = await load_all(store, batch_size=5)
    assert version == await store.current_version() == 3
    assert sizes == [5, 5, 5, 5, 2]
    expected = {(c.entry, c.version) for c in (await store.changes_since(0)).changes
                if c.entry is not None}
    assert len(rows) == 22
    assert set(rows) == expected


async def test_load_stays_at_its_snapshot_while_writes_land(store: VersionedStore) -> None:
    await store.add_changes([row(f"p{i:02}") for i in range(10)])           # 1
    before = set((await load_all(store))[0])
    loading = aiter(store.load(batch_size=3))
    first = await anext(loading)
    assert isinstance(first, LoadBatch)
    await store.add_changes([row("new")])                                   # 2
    await store.remove_in_changes(["p00", "p09"], "g1")                     # 3
    rest = [item async for item in loading]
    assert rest[-1] == 1
    assert set(first.entries()) | {r for b in rest[:-1] if isinstance(b, LoadBatch)
                                   for r in b.entries()} == before
    assert (await load_all(store))[1] == 3


async def test_digests_equal_those_computed_from_the_rows(store: VersionedStore) -> None:
    await store.add_changes([row(f"p{i:03}", f"g{i % 3}") for i in range(300)])
    await store.touch_changes("cc-1", [f"p{i:03}" for i in range(0, 300, 7)], NOW + 1, LATER)
    await store.remove_in_changes([f"p{i:03}" for i in range(0, 300, 5)], "g0")
    rows, _, _ = await load_all(store)
    digests = await store.digests()
    assert digests == in_python(rows)
    assert sum(d.count for d in digests.values()) == await store.count()
    assert all(0 <= bucket < BUCKETS for bucket in digests)


async def test_rows_in_buckets_are_exactly_those_buckets_rows(store: VersionedStore) -> None:
    await store.add_changes([row(f"p{i:03}") for i in range(200)])
    await store.remove_in_changes(["p000"], "g1")
    rows, version, _ = await load_all(store)
    wanted = sorted({bucket_of("g1", f"p{i:03}") for i in range(0, 200, 9)})
    repair = await store.rows_in_buckets(wanted)
    assert repair.snapshot == version == 2
    assert sorted(repair.rows, key=lambda r: r[0].key) == sorted(
        (r for r in rows if bucket_of(*r[0].key) in wanted), key=lambda r: r[0].key)
    assert (await store.rows_in_buckets([])).rows == []
