"""Contract tests of the GCD's stores: every implementation must pass all of them.

The ``store`` fixture yields a fresh, open store of each kind (``sqlite``, and ``postgres`` on
a throwaway PostgreSQL server); tests/support/gcd_stores.py knows how to make them.
"""

from __future__ import annotations

import dataclasses

import pytest

from gcd.store import GcdStore, RemoveOutcome, StoredEntry
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
