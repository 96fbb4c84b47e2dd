"""Contract tests of the GCD's stores: every implementation must pass all of them.

The ``store`` fixture yields a fresh, open store of each kind (``sqlite``, and ``postgres`` on
a throwaway PostgreSQL server); tests/support/gcd_stores.py knows how to make them.
"""

from __future__ import annotations

import dataclasses

import pytest

from gcd.store import GcdStore, RemoveOutcome, StoredEntry, StoreError
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
    assert await store.remove_in(["p1", "p2", "nobody"], "g1") == 2
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
    assert await store.remove_in(["p1", "p2", "p1"], "g1") == 2
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
    assert await store.remove_in(["p2"], "g1") == 1


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
