"""Websocket routing scenarios and crash/restart behaviour, observed in real routing tables.

Scenario 2: a websocket provider registers; a restart with the same participantId replaces a
stale entry (its connection closed, or hung and failing a ping), never a live one. Scenario 3:
a proxy built before its provider re-registers holds a WebSocket entry, which the provider's
InProcess entry replaces. Scenario 5: a proxy is built (InProcess in its runtime,
WebSocketClient in the CC). And a crash without unregister.
"""

from __future__ import annotations

import pytest

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.libjoynr import LibjoynrRuntime, connect
from pyjoynr.libjoynr.advanced import MessageNotSentError, ProviderRuntimeError
from pyjoynr.runtime.addresses import InProcessAddress, WebSocketAddress, WebSocketClientAddress
from pyjoynr.runtime.routing import NO_EXPIRY_MS, RoutingEntry
from pyjoynr.testing.cluster import cc_config, eventually
from tests.support.radio import Country, Radio, RadioProvider, Station

FIXED = "radio-provider-fixed-id"


async def test_scenario_2_provider_restarts_with_the_same_participant_id(cc, runtimes):
    first = await runtimes()
    await first.register_provider("d", RadioProvider(), participant_id=FIXED)
    assert cc.router.route_of(FIXED) == RoutingEntry(
        WebSocketClientAddress(first.client_id), False, NO_EXPIRY_MS, False)

    # the provider crashes (its connection closes without unregistering) and comes back in
    # a new runtime with its participantId: the route is its again
    await first.core.stop()
    await eventually(lambda: first.client_id not in cc.websocket.clients, what="old gone")
    second = await runtimes()
    restarted = RadioProvider()
    await second.register_provider("d", restarted, participant_id=FIXED)
    assert cc.router.route_of(FIXED).address == WebSocketClientAddress(second.client_id)

    consumer = await runtimes()
    proxy = await consumer.build_proxy(Radio, "d")
    await proxy.add_favorite(Station("new", Country.AUSTRIA))
    assert [s.name for s in restarted.stations] == ["new"]


def hang(runtime: LibjoynrRuntime) -> None:
    """The runtime's process hangs: it stops reading its connection (which stays open), so it
    answers no ping any more."""
    outbox = runtime.core.transport._outbox
    assert outbox is not None
    outbox.ws.transport.pause_reading()


async def test_scenario_2_provider_restarts_while_the_old_process_hangs(tmp_path):
    # the old connection still looks open (a hung process): the new registration pings it,
    # and once it failed to answer within the ping timeout it is closed and the route moves
    async with ClusterController(cc_config(tmp_path, websocket__ping_timeout_s="0.5")) as cc:
        url = cc.websocket_address.url
        async with connect(url) as first, connect(url) as second, connect(url) as consumer:
            await first.register_provider("d", RadioProvider(), participant_id=FIXED)
            hang(first)
            restarted = RadioProvider()
            await second.register_provider("d", restarted, participant_id=FIXED)
            assert cc.router.route_of(FIXED).address == WebSocketClientAddress(
                second.client_id)
            assert first.client_id not in cc.websocket.clients  # closed as dead
            assert cc.websocket.counters["closed-dead"] == 1
            assert cc.telemetry.counters["claimed-from-dead-connection"] == 1
            proxy = await consumer.build_proxy(Radio, "d")
            await proxy.add_favorite(Station("new", Country.AUSTRIA))
            assert [s.name for s in restarted.stations] == ["new"]
            await first.core.stop()


async def test_a_live_providers_participant_id_cannot_be_registered_again(cc, runtimes):
    # the first runtime lives (it answers pings): nobody else gets its participantId
    first, second, consumer = await runtimes(), await runtimes(), await runtimes()
    original = RadioProvider()
    await first.register_provider("d", original, participant_id=FIXED)
    with pytest.raises(ProviderRuntimeError, match="routed to the live connection"):
        await second.register_provider("d", RadioProvider(), participant_id=FIXED)
    assert cc.router.route_of(FIXED).address == WebSocketClientAddress(first.client_id)
    assert cc.telemetry.counters["participant-in-use"] == 1
    assert second.core.router.route_of(FIXED) is None  # the refused runtime rolled back
    proxy = await consumer.build_proxy(Radio, "d")
    await proxy.add_favorite(Station("kept", Country.AUSTRIA))
    assert [s.name for s in original.stations] == ["kept"]


async def test_scenario_3_proxy_built_before_its_provider_reregisters(cc, runtimes):
    old = await runtimes()
    await old.register_provider("d", RadioProvider(), participant_id=FIXED)
    await old.core.stop()  # crash: no unregister, the CC keeps the discovery entry
    await eventually(lambda: not cc.router.has_route(FIXED), what="routes of the crashed client")

    restarted = await runtimes()
    # the consumer in the restarted runtime is built first and discovers the old entry
    proxy = await restarted.build_proxy(Radio, "d")
    assert proxy.provider_participant_id == FIXED
    assert restarted.core.router.route_of(FIXED).address == cc.websocket_address
    assert isinstance(restarted.core.router.route_of(FIXED).address, WebSocketAddress)

    provider = RadioProvider()
    await restarted.register_provider("d", provider, participant_id=FIXED)
    entry = restarted.core.router.route_of(FIXED)
    assert isinstance(entry.address, InProcessAddress)
    assert entry.address.skeleton.provider is provider
    assert cc.router.route_of(FIXED).address == WebSocketClientAddress(restarted.client_id)

    # the call stays inside the runtime
    routed_before = cc.telemetry.statistics.routed
    assert await proxy.add_favorite(Station("s", Country.AUSTRIA)) is True
    assert len(provider.stations) == 1
    assert cc.telemetry.statistics.routed == routed_before


async def test_scenario_5_a_proxy_is_built(cc, runtimes):
    provider_rt, consumer = await runtimes(), await runtimes()
    await provider_rt.register_provider("d", RadioProvider())
    proxy = await consumer.build_proxy(Radio, "d")
    assert isinstance(consumer.core.router.route_of(proxy.participant_id).address, InProcessAddress)
    assert cc.router.route_of(proxy.participant_id) == RoutingEntry(
        WebSocketClientAddress(consumer.client_id), False, NO_EXPIRY_MS, False)


async def test_crash_without_unregister(cc, runtimes):
    provider_rt, consumer = await runtimes(), await runtimes()
    pid = await provider_rt.register_provider("d", RadioProvider())
    proxy = await consumer.build_proxy(Radio, "d", ttl_ms=400)
    subscription_seen: list[Station] = []
    await proxy.new_station.subscribe(subscription_seen.append)
    assert cc.router.multicast_receivers.receivers_for(f"{pid}/newStation")

    await provider_rt.core.stop()
    await eventually(lambda: not cc.router.has_route(pid), what="routes removed")
    assert cc.router.participants_at(WebSocketClientAddress(provider_rt.client_id)) == set()
    assert [e.participant_id for e in cc.discovery.entries()] == [pid]  # discovery keeps it

    # a request to the vanished provider waits in the CC and is answered as not sent
    with pytest.raises(MessageNotSentError, match="not sent"):
        await proxy.favorites()
    assert cc.telemetry.counters["dropped-expired-in-queue"] >= 1


async def test_consumer_crash_removes_its_routes_and_receivers(cc, runtimes):
    provider_rt, consumer = await runtimes(), await runtimes()
    pid = await provider_rt.register_provider("d", RadioProvider())
    proxy = await consumer.build_proxy(Radio, "d")
    await proxy.new_station.subscribe(lambda s: None, partitions=["x"])
    assert len(cc.router.multicast_receivers) == 1
    await consumer.core.stop()
    await eventually(lambda: not cc.router.has_route(proxy.participant_id), what="cleanup")
    assert len(cc.router.multicast_receivers) == 0
    assert cc.router.has_route(pid)
