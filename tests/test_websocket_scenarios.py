"""Websocket routing scenarios and crash/restart behaviour, observed in real routing tables.

Scenario 2: a websocket provider registers; a restart with the same participantId replaces a
stale entry. Scenario 3: a proxy built before its provider re-registers holds a WebSocket
entry, which the provider's InProcess entry replaces. Scenario 5: a proxy is built (InProcess
in its runtime, WebSocketClient in the CC). And a crash without unregister.
"""

from __future__ import annotations

import pytest

from libjoynr import MessageNotSentError
from runtime.addresses import InProcessAddress, WebSocketAddress, WebSocketClientAddress
from runtime.routing import NO_EXPIRY_MS, RoutingEntry
from tests.support.cluster import eventually
from tests.support.radio import Country, Radio, RadioProvider, Station

FIXED = "radio-provider-fixed-id"


async def test_scenario_2_provider_restarts_with_the_same_participant_id(cc, runtimes):
    first = await runtimes()
    await first.register_provider("d", RadioProvider(), participant_id=FIXED)
    assert cc.routing_table.get(FIXED) == RoutingEntry(
        WebSocketClientAddress(first.client_id), False, NO_EXPIRY_MS, False)

    # the provider comes back in a new runtime while the old connection still looks alive
    # (a hung process): the stale WebSocketClient entry is replaced
    second = await runtimes()
    restarted = RadioProvider()
    await second.register_provider("d", restarted, participant_id=FIXED)
    assert cc.routing_table.get(FIXED).address == WebSocketClientAddress(second.client_id)

    # when the old connection finally goes, the new route stays
    await first.stop()
    await eventually(lambda: first.client_id not in cc.websocket.clients, what="old gone")
    assert cc.routing_table.get(FIXED).address == WebSocketClientAddress(second.client_id)

    consumer = await runtimes()
    proxy = await consumer.build_proxy(Radio, "d")
    await proxy.add_favorite(Station("new", Country.AUSTRIA))
    assert [s.name for s in restarted.stations] == ["new"]


async def test_scenario_3_proxy_built_before_its_provider_reregisters(cc, runtimes):
    old = await runtimes()
    await old.register_provider("d", RadioProvider(), participant_id=FIXED)
    await old.stop()  # crash: no unregister, the CC keeps the discovery entry
    await eventually(lambda: FIXED not in cc.routing_table, what="routes of the crashed client")

    restarted = await runtimes()
    # the consumer in the restarted runtime is built first and discovers the old entry
    proxy = await restarted.build_proxy(Radio, "d")
    assert proxy.provider_participant_id == FIXED
    assert restarted.router.table.get(FIXED).address == cc.websocket_address
    assert isinstance(restarted.router.table.get(FIXED).address, WebSocketAddress)

    provider = RadioProvider()
    await restarted.register_provider("d", provider, participant_id=FIXED)
    entry = restarted.router.table.get(FIXED)
    assert isinstance(entry.address, InProcessAddress)
    assert entry.address.skeleton.provider is provider
    assert cc.routing_table.get(FIXED).address == WebSocketClientAddress(restarted.client_id)

    # the call stays inside the runtime
    routed_before = cc.router.routed
    assert await proxy.add_favorite(Station("s", Country.AUSTRIA)) is True
    assert len(provider.stations) == 1
    assert cc.router.routed == routed_before


async def test_scenario_5_a_proxy_is_built(cc, runtimes):
    provider_rt, consumer = await runtimes(), await runtimes()
    await provider_rt.register_provider("d", RadioProvider())
    proxy = await consumer.build_proxy(Radio, "d")
    assert isinstance(consumer.router.table.get(proxy.participant_id).address, InProcessAddress)
    assert cc.routing_table.get(proxy.participant_id) == RoutingEntry(
        WebSocketClientAddress(consumer.client_id), False, NO_EXPIRY_MS, False)


async def test_crash_without_unregister(cc, runtimes):
    provider_rt, consumer = await runtimes(), await runtimes()
    pid = await provider_rt.register_provider("d", RadioProvider())
    proxy = await consumer.build_proxy(Radio, "d", ttl_ms=400)
    subscription_seen: list[Station] = []
    await proxy.new_station.subscribe(subscription_seen.append)
    assert cc.router.multicast_receivers.receivers_for(f"{pid}/new_station")

    await provider_rt.stop()
    await eventually(lambda: pid not in cc.routing_table, what="routes removed")
    assert cc.routing_table.participants_at(WebSocketClientAddress(provider_rt.client_id)) == set()
    assert [e.participant_id for e in cc.discovery.entries()] == [pid]  # discovery keeps it

    # a request to the vanished provider waits in the CC and is answered as not sent
    with pytest.raises(MessageNotSentError, match="not sent"):
        await proxy.favorites()
    assert cc.router.counters["dropped-expired-in-queue"] >= 1


async def test_consumer_crash_removes_its_routes_and_receivers(cc, runtimes):
    provider_rt, consumer = await runtimes(), await runtimes()
    pid = await provider_rt.register_provider("d", RadioProvider())
    proxy = await consumer.build_proxy(Radio, "d")
    await proxy.new_station.subscribe(lambda s: None, partitions=["x"])
    assert len(cc.router.multicast_receivers) == 1
    await consumer.stop()
    await eventually(lambda: proxy.participant_id not in cc.routing_table, what="cleanup")
    assert len(cc.router.multicast_receivers) == 0
    assert pid in cc.routing_table
