"""Discovery end to end: two brokers (two backends), two GCD instances sharing one PostgreSQL,
two cluster controllers with libjoynr runtimes.

CC one is in both backends (its GCD: the instance of gbid-1); CC two only in gbid-2 (its GCD:
the instance of gbid-2). Both GCD instances share one PostgreSQL database.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.gcd.service import GcdService, GcdSettings
from pyjoynr.libjoynr import (
    ApplicationError,
    DiscoveryQos,
    DiscoveryScope,
    LibjoynrRuntime,
    ProviderQos,
    ProviderScope,
)
from pyjoynr.libjoynr import connect as joynr_connect
from pyjoynr.runtime.addresses import MqttAddress, WebSocketClientAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.testing.brokers import Mosquitto
from pyjoynr.testing.cluster import eventually
from pyjoynr.testing.postgres import PostgresServer
from tests.support import mqtt_clients
from tests.support.mqtt_cluster import WAIT_S, mqtt_cc_config
from tests.support.radio import Country, Radio, RadioProvider, Station

pytestmark = [pytest.mark.network, pytest.mark.usefixtures("mqtt_client")]

G1, G2 = "gbid-1", "gbid-2"


@dataclass
class World:
    tmp_path: Path
    stack: AsyncExitStack
    brokers: dict[str, Mosquitto]
    postgres: PostgresServer
    dsn: str
    gcds: dict[str, GcdService]
    one: ClusterController
    two: ClusterController
    rt_one: LibjoynrRuntime
    rt_two: LibjoynrRuntime
    domain: str

    async def start_cc(self, name: str, backends: dict[str, str], **overrides: Any
                       ) -> ClusterController:
        cc = await self.stack.enter_async_context(ClusterController(mqtt_cc_config(
            self.tmp_path / name, f"cc-{name}", backends, **overrides)))
        assert cc.mqtt is not None
        await cc.mqtt.wait_connected(WAIT_S)
        return cc

    async def runtime(self, cc: ClusterController) -> LibjoynrRuntime:
        rt = await joynr_connect(cc.websocket_address.url, timeout_ms=int(WAIT_S * 1000))
        self.stack.push_async_callback(rt.close)
        return rt


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    async with AsyncExitStack() as stack:
        brokers = {g: await stack.enter_async_context(Mosquitto(tmp_path / g)) for g in (G1, G2)}
        postgres = await stack.enter_async_context(PostgresServer())
        dsn = await postgres.create_database("gcd")
        gcds = {}
        for gbid in (G1, G2):
            gcds[gbid] = await stack.enter_async_context(GcdService(GcdSettings(
                gbid=gbid, broker_url=brokers[gbid].url, valid_gbids=[G1, G2],
                store="postgres", postgres_dsn=dsn, mqtt_client=mqtt_clients.current())))
            await gcds[gbid].mqtt.wait_connected(WAIT_S)
        w = World(tmp_path, stack, brokers, postgres, dsn, gcds, None, None, None, None,  # type: ignore[arg-type]
                  f"e2e.{uuid.uuid4().hex[:8]}")
        w.one = await w.start_cc("one", {G1: brokers[G1].url, G2: brokers[G2].url},
                                 discovery__touch_interval_s="0.3")
        w.two = await w.start_cc("two", {G2: brokers[G2].url})
        w.rt_one, w.rt_two = await w.runtime(w.one), await w.runtime(w.two)
        yield w


GLOBAL = ProviderQos(scope=ProviderScope.GLOBAL)


async def test_a_provider_in_two_backends_is_found_and_called_from_the_other_cc(
        world: World) -> None:
    provider = RadioProvider()
    pid = await world.rt_one.register_provider(world.domain, provider, qos=GLOBAL,
                                               gbids=[G1, G2], await_global_registration=True)
    rows = await world.gcds[G1].store.find_participant(pid, 0)
    assert sorted(r.gbid for r in rows) == [G1, G2]

    proxy = await world.rt_two.build_proxy(Radio, world.domain, ttl_ms=5_000)
    assert proxy.provider_participant_id == pid
    assert await proxy.add_favorite(Station("far", Country.AUSTRIA)) is True
    # CC two reaches the provider in its own backend, gbid-2
    route = world.two.router.route_of(pid)
    assert route is not None and route.address == MqttAddress(G2, world.one.own_topic)
    assert world.gcds[G2].mqtt.received >= 1  # CC two asked the GCD of its backend


async def test_local_then_global_prefers_a_local_provider(world: World) -> None:
    await world.rt_one.register_provider(world.domain, RadioProvider(), qos=GLOBAL,
                                         await_global_registration=True)
    local_pid = await world.rt_two.register_provider(world.domain, RadioProvider(),
                                                     qos=GLOBAL, await_global_registration=True)
    proxy = await world.rt_two.build_proxy(Radio, world.domain)
    assert proxy.provider_participant_id == local_pid
    assert world.two.discovery.gcd_calls["lookup"] == 0  # answered locally

    # the GCD knows the local provider too: it stays local, and so does its route
    both = await world.two.discovery.lookup(
        [world.domain], "test/Radio",
        DiscoveryQos(discovery_scope=DiscoveryScope.LOCAL_AND_GLOBAL))
    assert world.two.discovery.gcd_calls["lookup"] == 1
    assert {(e.participant_id == local_pid, e.is_local) for e in both} == {
        (True, True), (False, False)}
    route = world.two.router.route_of(local_pid)
    assert route is not None and isinstance(route.address, WebSocketClientAddress)


async def test_global_only_ignores_local_scope_providers(world: World) -> None:
    remote_pid = await world.rt_one.register_provider(
        world.domain, RadioProvider(), qos=GLOBAL, await_global_registration=True)
    await world.rt_two.register_provider(world.domain, RadioProvider(),
                                         qos=ProviderQos(scope=ProviderScope.LOCAL, priority=99))
    found = await world.two.discovery.lookup(
        [world.domain], "test/Radio", DiscoveryQos(discovery_scope=DiscoveryScope.GLOBAL_ONLY))
    assert [e.participant_id for e in found] == [remote_pid]
    assert not found[0].is_local


async def test_the_cache_answers_within_its_max_age(world: World) -> None:
    await world.rt_one.register_provider(world.domain, RadioProvider(), qos=GLOBAL,
                                         await_global_registration=True)
    qos = DiscoveryQos(cache_max_age_ms=60_000)
    calls = world.two.discovery.gcd_calls
    received = world.gcds[G2].mqtt.received
    for _ in range(5):
        assert len(await world.two.discovery.lookup([world.domain], "test/Radio", qos)) == 1
    assert calls["lookup"] == 1
    assert world.gcds[G2].mqtt.received == received + 1
    # max age 0: every lookup asks the GCD
    await world.two.discovery.lookup([world.domain], "test/Radio", DiscoveryQos())
    assert calls["lookup"] == 2


def routes_of(cc: ClusterController, rt: LibjoynrRuntime) -> set[str]:
    address = WebSocketClientAddress(rt.client_id)
    return {pid for pid, e in cc.router.routing_entries() if e.address == address}


async def test_bad_gbids_are_refused(world: World) -> None:
    routes_before = routes_of(world.two, world.rt_two)
    for gbids, error in (([""], "INVALID_GBID"), ([G2, G2], "INVALID_GBID"),
                         (["nope"], "UNKNOWN_GBID"), ([G1], "UNKNOWN_GBID")):  # two is in G2
        with pytest.raises(ApplicationError) as raised:
            await world.rt_two.register_provider(world.domain, RadioProvider(), qos=GLOBAL,
                                                 gbids=gbids, await_global_registration=True)
        assert raised.value.error == error
    assert world.two.discovery.entries() == []  # rolled back / never added
    # and the refused providers left no route behind in CC two
    assert routes_of(world.two, world.rt_two) == routes_before


async def test_touch_keeps_entries_fresh_and_remove_stale_cleans_a_previous_life(
        world: World) -> None:
    pid = await world.rt_one.register_provider(world.domain, RadioProvider(), qos=GLOBAL,
                                               await_global_registration=True)
    store = world.gcds[G1].store
    first = (await store.find_participant(pid, 0))[0].last_seen_ms
    for _ in range(100):  # the CC touches every 0.3 s here
        rows = await store.find_participant(pid, 0)
        if rows and rows[0].last_seen_ms > first:
            break
        await asyncio.sleep(0.05)
    assert rows[0].last_seen_ms > first

    # CC one goes away without unregistering, and comes back with the same id
    await world.one.stop()
    restarted = await world.start_cc("one", {G1: world.brokers[G1].url,
                                             G2: world.brokers[G2].url})
    assert restarted.id == world.one.id
    for _ in range(200):
        if not await store.find_participant(pid, 0):
            break
        await asyncio.sleep(0.05)
    assert await store.find_participant(pid, 0) == []


async def test_an_expired_entry_is_no_longer_found(world: World) -> None:
    pid = await world.rt_two.register_provider(world.domain, RadioProvider(), qos=GLOBAL,
                                               expiry_ms=1500, await_global_registration=True)
    qos = DiscoveryQos(discovery_scope=DiscoveryScope.GLOBAL_ONLY)
    found = await world.one.discovery.lookup([world.domain], "test/Radio", qos)
    assert [e.participant_id for e in found] == [pid]
    await asyncio.sleep(1.6)
    assert await world.one.discovery.lookup([world.domain], "test/Radio", qos) == []
    with pytest.raises(ApplicationError) as raised:
        await world.one.discovery.lookup_participant_in(pid, qos, [])
    assert raised.value.error == "NO_ENTRY_FOR_PARTICIPANT"


async def test_a_dead_database_is_an_internal_error_and_the_service_recovers(
        world: World) -> None:
    pid = await world.rt_one.register_provider(world.domain, RadioProvider(), qos=GLOBAL,
                                               await_global_registration=True)
    qos = DiscoveryQos(discovery_scope=DiscoveryScope.GLOBAL_ONLY)
    # the registration went through one GCD instance; the other learns of it from the
    # store's notification: the database goes down only after that
    await eventually(lambda: all(gcd.sync.find_participant(pid, now_ms())
                                 for gcd in world.gcds.values()), WAIT_S,
                     "the registration in every GCD instance's index")
    await world.postgres.stop()
    try:
        # lookups are answered from the GCD instance's index while the database is down
        found = await world.two.discovery.lookup([world.domain], "test/Radio", qos)
        assert [e.participant_id for e in found] == [pid]
        with pytest.raises(ApplicationError) as raised:
            await world.rt_two.register_provider(world.domain, RadioProvider(), qos=GLOBAL,
                                                 participant_id="during-outage",
                                                 await_global_registration=True)
        assert raised.value.error == "INTERNAL_ERROR"
    finally:
        await world.postgres.start()
    # back: the same GCD instances answer, and nothing of the failed registration is there
    found = await world.two.discovery.lookup([world.domain], "test/Radio", qos)
    assert [e.participant_id for e in found] == [pid]
    assert await world.gcds[G2].store.find_participant("during-outage", 0) == []
    assert "during-outage" not in [e.participant_id for e in world.two.discovery.entries()]


async def test_instances_of_one_backend_share_its_requests(tmp_path: Path) -> None:
    async with AsyncExitStack() as stack:
        broker = await stack.enter_async_context(Mosquitto(tmp_path / "broker"))
        postgres = await stack.enter_async_context(PostgresServer())
        dsn = await postgres.create_database("shared")
        instances = []
        for n in range(2):
            service = await stack.enter_async_context(GcdService(GcdSettings(
                gbid=G1, broker_url=broker.url, store="postgres", postgres_dsn=dsn,
                shared_subscription_group="gcd", client_id=f"gcd-{n}",
                mqtt_client=mqtt_clients.current())))
            await service.mqtt.wait_connected(WAIT_S)
            instances.append(service)
        cc = await stack.enter_async_context(ClusterController(mqtt_cc_config(
            tmp_path / "cc", "cc-shared", {G1: broker.url})))
        assert cc.mqtt is not None
        await cc.mqtt.wait_connected(WAIT_S)
        rt = await joynr_connect(cc.websocket_address.url, timeout_ms=int(WAIT_S * 1000))
        stack.push_async_callback(rt.close)
        pid = await rt.register_provider("shared", RadioProvider(), qos=GLOBAL,
                                         await_global_registration=True)
        qos = DiscoveryQos(discovery_scope=DiscoveryScope.GLOBAL_ONLY)
        before = [s.mqtt.received for s in instances]
        asked = cc.discovery.gcd_calls["lookup"]
        for _ in range(20):
            # a cache_max_age of 0 takes an answer of the same millisecond from the cache (as
            # joynr's: age <= max age): a pause makes every lookup ask the GCD
            await asyncio.sleep(0.002)
            found = await cc.discovery.lookup(["shared"], "test/Radio", qos)
            assert [e.participant_id for e in found] == [pid]
        served = [s.mqtt.received - b for s, b in zip(instances, before, strict=True)]
        assert cc.discovery.gcd_calls["lookup"] - asked == 20
        assert sum(served) == 20  # each request served once
        assert all(n > 0 for n in served), served  # by both instances


async def test_a_touch_of_more_participants_than_the_gcd_takes_in_one_call_is_split(
        world: World) -> None:
    """The GCD takes at most 10,000 participant ids in one touch (MAX_PARTICIPANT_IDS); a CC with
    more global providers touches them in several calls, none refused."""
    pid = await world.rt_one.register_provider(world.domain, RadioProvider(), qos=GLOBAL,
                                               await_global_registration=True)
    link = world.one.gcd_link
    assert link is not None
    await link.touch([f"absent-{i}" for i in range(25_000)] + [pid])
    assert [g.telemetry.counters["refused-request"] for g in world.gcds.values()] == [0, 0]
    assert await world.gcds[G1].store.find_participant(pid, 0) != []
