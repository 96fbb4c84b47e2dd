"""The GCD's rules (gcd/provider.py states them), each example as a test, on every store.

The provider's methods are called directly here (the wire path is tested end to end in
tests/test_gcd_service.py); the ``store`` fixture runs each test on every store kind, and the
``form`` fixture twice: the lookups answered by the typed methods (a direct call), and by their
wire-form twins (what a call that arrives as a message runs), converted back as a proxy does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pyjoynr.gcd.provider import GcdProvider
from pyjoynr.gcd.store import GcdStore, StoreError
from pyjoynr.programming.discovery_types import (
    CustomParameter,
    GlobalDiscoveryEntry,
    ProviderQos,
    ProviderScope,
    Version,
)
from pyjoynr.programming.system_interfaces import address_from_json, address_to_json
from pyjoynr.runtime.addresses import MqttAddress, WebSocketClientAddress
from pyjoynr.runtime.errors import ApplicationError, ProviderRuntimeError
from pyjoynr.runtime.interface import from_wire
from pyjoynr.runtime.tasks import TaskSupervisor
from tests.support.gcd_stores import STORE_KINDS

pytestmark = pytest.mark.parametrize("store", STORE_KINDS, indirect=True)

NOW = 1_800_000_000_000
WEEK = 7 * 24 * 3600 * 1000


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> int:
        return self.now


class ThroughTwins(GcdProvider):
    """Lookups answered by the wire-form twins, their answers converted back (from_wire)."""

    async def lookup(self, domains: list[str], interface_name: str
                     ) -> list[GlobalDiscoveryEntry]:
        return from_wire(await self._lookup_wired(domains, interface_name),
                         list[GlobalDiscoveryEntry])

    async def lookup_in_backends(self, domains: list[str], interface_name: str, gbids: list[str]
                        ) -> list[GlobalDiscoveryEntry]:
        return from_wire(await self._lookup_in_wired(domains, interface_name, gbids),
                         list[GlobalDiscoveryEntry])

    async def lookup_participant(self, participant_id: str) -> GlobalDiscoveryEntry:
        return from_wire(await self._lookup_participant_wired(participant_id),
                         GlobalDiscoveryEntry)

    async def lookup_participant_in(self, participant_id: str, gbids: list[str]
                                    ) -> GlobalDiscoveryEntry:
        return from_wire(await self._lookup_participant_in_wired(participant_id, gbids),
                         GlobalDiscoveryEntry)


_FORMS = {"typed": GcdProvider, "wire": ThroughTwins}
_form = ["typed"]


@pytest.fixture(autouse=True, params=list(_FORMS))
def form(request: pytest.FixtureRequest) -> Iterator[str]:
    """Which methods answer the lookups of the providers :func:`gcd` makes."""
    _form[0] = request.param
    yield request.param
    _form[0] = "typed"


def gcd(store: GcdStore, own: str = "GBID1", clock: Callable[[], int] | None = None
        ) -> GcdProvider:
    return _FORMS[_form[0]](store, own, ["GBID1", "GBID2", "GBID3"],
                            default_expiry_ms=6 * WEEK, clock_ms=clock or Clock())


def entry(pid: str = "p1", *, domain: str = "domain1", interface: str = "interface1",
          broker: str = "tcp://some-broker:1883", topic: str = "joynr/cc/cc-1",
          expiry: int = NOW + WEEK, last_seen: int = NOW, **changes: Any
          ) -> GlobalDiscoveryEntry:
    values: dict[str, Any] = dict(
        provider_version=Version(1, 2), domain=domain, interface_name=interface,
        participant_id=pid,
        qos=ProviderQos([CustomParameter("k", "v")], priority=3, scope=ProviderScope.GLOBAL),
        last_seen_date_ms=last_seen, expiry_date_ms=expiry, public_key_id="",
        address=address_to_json(MqttAddress(broker, topic)))
    values.update(changes)
    return GlobalDiscoveryEntry(**values)


def gbid_of(found: GlobalDiscoveryEntry) -> str:
    address = address_from_json(found.address)
    assert isinstance(address, MqttAddress)
    return address.broker_uri


async def modelled(call: Any) -> str:
    with pytest.raises(ApplicationError) as error:
        await call
    return error.value.error


# ====================================================================== add


async def test_old_add_registers_in_the_own_gbid_and_replaces_the_broker_uri(
        store: GcdStore) -> None:
    directory = gcd(store)
    await directory.add(entry())
    found = await directory.lookup_participant("p1")
    assert found.address == address_to_json(MqttAddress("GBID1", "joynr/cc/cc-1"))
    assert (await store.find_participant("p1", NOW))[0].gbid == "GBID1"


async def test_a_provider_that_moved_to_another_cluster_controller_is_registered_there(
        store: GcdStore) -> None:
    # not a hijack: a provider with a fixed participantId that restarts behind another
    # cluster controller registers there (the last registration wins, as in joynr's GCD; over
    # MQTT the GCD cannot tell who calls). The old cluster controller's touch and removeStale
    # no longer act on it.
    clock = Clock()
    directory = gcd(store, clock=clock)
    await directory.add_in_backends(entry("p1", topic="joynr/cc/cc-1"), ["GBID1", "GBID2"])
    clock.now = NOW + 1_000
    await directory.add_in_backends(entry("p1", topic="joynr/cc/cc-2", last_seen=NOW + 1_000),
                           ["GBID1", "GBID2"])
    found = await directory.lookup_participant_in("p1", ["GBID1"])
    assert found.address == address_to_json(MqttAddress("GBID1", "joynr/cc/cc-2"))
    clock.now = NOW + 2_000
    await directory.touch("cc-1")
    await directory.remove_stale("cc-1", NOW + 2_000)  # cc-1 restarted
    rows = await store.find_participant("p1", NOW + 2_000)
    assert {(r.gbid, r.cluster_controller_id, r.last_seen_ms) for r in rows} == {
        ("GBID1", "cc-2", NOW + 1_000), ("GBID2", "cc-2", NOW + 1_000)}


async def test_old_add_of_many_entries(store: GcdStore) -> None:
    directory = gcd(store, own="GBID2")
    await directory.add_entries([entry("p1"), entry("p2", topic="joynr/cc/cc-2")])
    rows = {(r.participant_id, r.gbid, r.topic) for r in
            await store.find(["domain1"], "interface1", NOW)}
    assert rows == {("p1", "GBID2", "joynr/cc/cc-1"), ("p2", "GBID2", "joynr/cc/cc-2")}


async def test_add_with_gbids_registers_in_each_listed_gbid(store: GcdStore) -> None:
    directory = gcd(store)
    await directory.add_in_backends(entry("p1", broker="GBID3"), ["GBID1", "GBID2"])
    await directory.add_in_backends(entry("p2"), ["GBID1"])
    assert [r.gbid for r in await store.find_participant("p1", NOW)] == ["GBID1", "GBID2"]
    assert [r.gbid for r in await store.find_participant("p2", NOW)] == ["GBID1"]


@pytest.mark.parametrize("gbids", [[], [""], ["", "GBID1"], ["GBID1", ""],
                                   ["GBID1", "GBID1"]])
async def test_add_with_invalid_gbids(store: GcdStore, gbids: list[str]) -> None:
    # none, an empty GBID, or one listed twice
    directory = gcd(store)
    assert await modelled(directory.add_in_backends(entry(), gbids)) == "INVALID_GBID"
    assert await store.count() == 0


@pytest.mark.parametrize(("gbids", "error"), [
    (["unknownGBID"], "UNKNOWN_GBID"),
    (["GBID1", "unknownGBID"], "UNKNOWN_GBID"),
    (["unknownGBID", ""], "UNKNOWN_GBID"),  # the first offending element decides
    (["", "unknownGBID"], "INVALID_GBID"),
])
async def test_add_with_unknown_gbids(store: GcdStore, gbids: list[str], error: str) -> None:
    directory = gcd(store)
    assert await modelled(directory.add_in_backends(entry(), gbids)) == error
    assert await store.count() == 0


async def test_add_merges_with_an_existing_registration(store: GcdStore) -> None:
    directory = gcd(store)
    await directory.add_in_backends(entry(domain="old"), ["GBID1", "GBID2"])
    await directory.add_in_backends(entry(domain="new"), ["GBID2", "GBID3"])
    rows = {(r.gbid, r.domain) for r in await store.find_participant("p1", NOW)}
    # new GBIDs added, listed ones replaced, the others kept
    assert rows == {("GBID1", "old"), ("GBID2", "new"), ("GBID3", "new")}


@pytest.mark.parametrize(("changes", "message"), [
    ({"domain": ""}, "no domain"),
    ({"interface_name": ""}, "no interface name"),
    ({"participant_id": ""}, "no participantId"),
    ({"address": ""}, "no address"),
    ({"address": address_to_json(WebSocketClientAddress("x"))}, "must be an MqttAddress"),
    ({"address": '{"_typeName":"joynr.system.RoutingTypes.MqttAddress"}'}, "bad address"),
    ({"address": '{"_typeName":'}, "bad address"),
])
async def test_incomplete_entries_are_refused_and_nothing_stored(
        store: GcdStore, changes: dict[str, Any], message: str) -> None:
    directory = gcd(store)
    for call in (directory.add(entry(**changes)),
                 directory.add_entries([entry("ok"), entry(**changes)]),
                 directory.add_in_backends(entry(**changes), ["GBID1"])):
        with pytest.raises(ProviderRuntimeError, match=message):
            await call
    assert await store.count() == 0


# ====================================================================== lookup


async def test_old_lookups_see_the_own_gbid_only(store: GcdStore) -> None:
    directory = gcd(store)
    await directory.add_in_backends(entry("in-own"), ["GBID1", "GBID2"])
    await directory.add_in_backends(entry("elsewhere"), ["GBID2"])
    found = await directory.lookup(["domain1", "domain2"], "interface1")
    assert [(e.participant_id, gbid_of(e)) for e in found] == [("in-own", "GBID1")]
    assert await directory.lookup(["nothing"], "interface1") == []
    assert gbid_of(await directory.lookup_participant("in-own")) == "GBID1"
    with pytest.raises(ProviderRuntimeError, match="no entry"):
        await directory.lookup_participant("elsewhere")


async def test_lookup_with_gbids_provider_in_two_backends(store: GcdStore) -> None:
    # registered in GBID1 and GBID2
    directory = gcd(store, own="GBID2")
    await directory.add_in_backends(entry(), ["GBID1", "GBID2"])
    (only,) = await directory.lookup_in_backends(["domain1"], "interface1", ["GBID1"])
    assert gbid_of(only) == "GBID1"
    assert gbid_of(await directory.lookup_participant_in("p1", ["GBID1"])) == "GBID1"
    # both listed: one entry, the own GBID preferred
    (one,) = await directory.lookup_in_backends(["domain1"], "interface1", ["GBID1", "GBID2"])
    assert gbid_of(one) == "GBID2"
    assert gbid_of(await directory.lookup_participant_in("p1", ["GBID1", "GBID2"])) == "GBID2"


async def test_lookup_selects_the_first_listed_gbid_when_the_own_one_does_not_fit(
        store: GcdStore) -> None:
    directory = gcd(store, own="GBID1")
    await directory.add_in_backends(entry(), ["GBID2", "GBID3"])
    (found,) = await directory.lookup_in_backends(["domain1"], "interface1",
                                                  ["GBID3", "GBID2", "GBID1"])
    assert gbid_of(found) == "GBID3"


async def test_lookup_with_gbids_provider_in_another_backend(store: GcdStore) -> None:
    # registered in GBID2 only
    directory = gcd(store)
    await directory.add_in_backends(entry(), ["GBID2"])
    assert await modelled(directory.lookup_in_backends(["domain1"], "interface1", ["GBID1"])) == (
        "NO_ENTRY_FOR_SELECTED_BACKENDS")
    assert await modelled(directory.lookup_participant_in("p1", ["GBID1"])) == (
        "NO_ENTRY_FOR_SELECTED_BACKENDS")


async def test_lookup_with_gbids_provider_not_registered(store: GcdStore) -> None:
    directory = gcd(store)
    assert await directory.lookup_in_backends(["domain1"], "interface1", ["GBID1"]) == []
    assert await modelled(directory.lookup_participant_in("p1", ["GBID1"])) == (
        "NO_ENTRY_FOR_PARTICIPANT")


async def test_lookups_check_gbids_like_add(store: GcdStore) -> None:
    directory = gcd(store)
    await directory.add_in_backends(entry(), ["GBID1"])
    assert await modelled(directory.lookup_in_backends(["domain1"], "interface1", [""])) == (
        "INVALID_GBID")
    assert await modelled(directory.lookup_participant_in("p1", ["bad"])) == "UNKNOWN_GBID"
    assert await modelled(directory.remove_in_backends("p1", [])) == "INVALID_GBID"


async def test_lookup_returns_every_field(store: GcdStore) -> None:
    directory = gcd(store)
    original = entry(public_key_id="key-1", qos=ProviderQos(
        [CustomParameter("a", "1"), CustomParameter("b", "2")], priority=-7,
        scope=ProviderScope.GLOBAL, supports_on_change_subscriptions=False))
    await directory.add_in_backends(original, ["GBID1"])
    found = await directory.lookup_participant_in("p1", ["GBID1"])
    address = address_to_json(MqttAddress("GBID1", "joynr/cc/cc-1"))
    expected = GlobalDiscoveryEntry(**{**vars(original), "address": address})
    assert found == expected


async def test_expired_entries_are_never_returned(store: GcdStore) -> None:
    clock = Clock()
    directory = gcd(store, clock=clock)
    await directory.add_in_backends(entry("short", expiry=NOW + 1000), ["GBID1"])
    await directory.add_in_backends(entry("long"), ["GBID1"])
    clock.now = NOW + 1001
    assert [e.participant_id for e in
            await directory.lookup_in_backends(["domain1"], "interface1", ["GBID1"])] == ["long"]
    assert await modelled(directory.lookup_participant_in("short", ["GBID1"])) == (
        "NO_ENTRY_FOR_PARTICIPANT")


# ====================================================================== remove


async def test_old_remove_acts_on_the_own_gbid_without_errors(store: GcdStore) -> None:
    directory = gcd(store)
    await directory.add_in_backends(entry("p1"), ["GBID1", "GBID2"])
    await directory.add_in_backends(entry("p2"), ["GBID1"])
    await directory.remove_participants(["p1", "p2", "unknown"])
    assert [(r.participant_id, r.gbid) for r in await store.find(["domain1"], "interface1",
                                                                 NOW)] == [("p1", "GBID2")]
    await directory.remove("p1")  # not in the own GBID: no error, no change
    assert await store.count() == 1


async def test_remove_with_gbids_provider_in_one_backend(store: GcdStore) -> None:
    # registered in GBID1
    directory = gcd(store)
    await directory.add_in_backends(entry(), ["GBID1"])
    for gbids in (["GBID2"], ["GBID1", "GBID2"]):
        assert await modelled(directory.remove_in_backends("p1", gbids)) == (
            "NO_ENTRY_FOR_SELECTED_BACKENDS")
        assert await store.count() == 1  # an error changes nothing
    await directory.remove_in_backends("p1", ["GBID1"])
    assert await store.count() == 0


async def test_remove_with_gbids_provider_in_two_backends(store: GcdStore) -> None:
    # registered in GBID1 and GBID2
    directory = gcd(store)
    await directory.add_in_backends(entry(), ["GBID1", "GBID2"])
    await directory.remove_in_backends("p1", ["GBID1"])
    assert [r.gbid for r in await store.find_participant("p1", NOW)] == ["GBID2"]
    await directory.add_in_backends(entry(), ["GBID1"])
    await directory.remove_in_backends("p1", ["GBID1", "GBID2"])
    assert await store.count() == 0


async def test_remove_with_gbids_provider_not_registered(store: GcdStore) -> None:
    removed = gcd(store).remove_in_backends("p1", ["GBID1"])
    assert await modelled(removed) == "NO_ENTRY_FOR_PARTICIPANT"


# ====================================================================== touch, removeStale


async def test_touch_extends_that_cluster_controllers_entries_in_all_backends(
        store: GcdStore) -> None:
    clock = Clock()
    directory = gcd(store, clock=clock)
    await directory.add_in_backends(entry("p1"), ["GBID1", "GBID2"])
    await directory.add_in_backends(entry("p2"), ["GBID1"])
    await directory.add_in_backends(entry("q1", topic="joynr/cc/cc-2"), ["GBID1"])
    clock.now = NOW + 5000
    await directory.touch_participants("cc-1", ["p1"])
    rows = {(r.participant_id, r.gbid): r for r in await store.find(["domain1"], "interface1",
                                                                       clock.now)}
    assert {k for k, r in rows.items() if r.last_seen_ms == NOW + 5000} == {
        ("p1", "GBID1"), ("p1", "GBID2")}
    assert rows[("p1", "GBID2")].expiry_ms == NOW + 5000 + 6 * WEEK
    clock.now = NOW + 9000
    await directory.touch("cc-1")
    rows = {(r.participant_id, r.gbid): r for r in await store.find(["domain1"], "interface1",
                                                                       clock.now)}
    assert {k for k, r in rows.items() if r.last_seen_ms == NOW + 9000} == {
        ("p1", "GBID1"), ("p1", "GBID2"), ("p2", "GBID1")}
    assert rows[("q1", "GBID1")].last_seen_ms == NOW  # another cluster controller


async def test_remove_stale_removes_a_previous_life_of_a_cluster_controller(
        store: GcdStore) -> None:
    directory = gcd(store)
    await directory.add_in_backends(entry("old", last_seen=NOW - 100), ["GBID1", "GBID2"])
    await directory.add_in_backends(entry("new", last_seen=NOW), ["GBID1"])
    await directory.add_in_backends(entry("other", topic="joynr/cc/cc-2", last_seen=NOW - 100),
                           ["GBID1"])
    await directory.remove_stale("cc-1", NOW)
    assert sorted(r.participant_id for r in await store.find(["domain1"], "interface1",
                                                              NOW)) == ["new", "other"]


async def test_purging_deletes_expired_entries(store: GcdStore) -> None:
    clock = Clock()
    directory = gcd(store, clock=clock)
    await directory.add_in_backends(entry("short", expiry=NOW + 10), ["GBID1"])
    await directory.add_in_backends(entry("long"), ["GBID1"])
    clock.now = NOW + 11
    tasks = TaskSupervisor("test")
    directory.start_purging(tasks, 0.01)
    try:
        for _ in range(200):
            if await store.count() == 1:
                break
            await asyncio.sleep(0.01)
    finally:
        await tasks.close()
    assert await store.count() == 1


# ====================================================================== storage failure


async def test_a_storage_failure_is_an_internal_error(store: GcdStore) -> None:
    directory = gcd(store)
    await directory.add_in_backends(entry(), ["GBID1"])
    await store.close()  # every call now fails in the store
    with pytest.raises(StoreError):
        await store.count()
    assert await modelled(directory.add_in_backends(entry("p2"), ["GBID1"])) == "INTERNAL_ERROR"
    # lookups are answered from the instance's index, which outlives the database (sync.md)
    assert [e.participant_id for e in await directory.lookup_in_backends(
        ["domain1"], "interface1", ["GBID1"])] == ["p1"]
    assert await modelled(directory.remove_in_backends("p1", ["GBID1"])) == "INTERNAL_ERROR"
    with pytest.raises(ProviderRuntimeError, match="internal error"):
        await directory.add(entry("p3"))
    await store.open()  # the fixture closes it again
