"""Connections that break: the CC restarts, a client goes away and comes back.

Messages waiting for a reconnecting participant are delivered if they have not expired by
then, and dropped (counted) if they have: on both sides of the websocket.
"""

from __future__ import annotations

import asyncio

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.libjoynr import connect
from pyjoynr.testing.cluster import cc_config, eventually, free_port
from tests.support.radio import Country, Radio, RadioProvider, Station


async def test_cc_restart_clients_reconnect_and_calls_work_again(tmp_path):
    port = free_port()
    config = cc_config(tmp_path, websocket__port=port)
    cc = ClusterController(config)
    await cc.start()
    provider_rt = await connect(cc.websocket_address.url)
    consumer = await connect(cc.websocket_address.url)
    try:
        provider = RadioProvider()
        pid = await provider_rt.register_provider("d", provider)
        proxy = await consumer.build_proxy(Radio, "d", ttl_ms=5_000)
        seen: list[str] = []
        await proxy.new_station.subscribe(lambda s: seen.append(s.name))
        assert await proxy.current_station.get() == "FM4"

        await cc.stop()
        await eventually(lambda: not provider_rt.core.transport.connected
                         and not consumer.core.transport.connected, what="clients notice")
        cc = ClusterController(config)  # a new process would start empty, like this
        await cc.start()
        await eventually(lambda: provider_rt.core.transport.connections == 2
                         and consumer.core.transport.connections == 2, timeout_s=15,
                         what="reconnect")
        # re-registration: routes, discovery entry and multicast receiver are back
        await eventually(lambda: cc.router.has_route(pid)
                         and cc.router.has_route(proxy.participant_id)
                         and len(cc.router.multicast_receivers) == 1
                         and cc.discovery.entries(), what="re-registration")
        assert await proxy.current_station.get() == "FM4"
        provider.fire("new_station", Station("after-restart", Country.AUSTRIA))
        await eventually(lambda: seen == ["after-restart"], what="multicast after restart")
        # and new proxies find the re-registered provider
        again = await consumer.build_proxy(Radio, "d")
        assert again.provider_participant_id == pid
    finally:
        await provider_rt.core.stop()
        await consumer.core.stop()
        await cc.stop()


async def test_messages_for_a_reconnecting_client_wait_in_the_cc(cc, runtimes):
    provider_rt, consumer = await runtimes(), await runtimes()
    provider = RadioProvider()
    await provider_rt.register_provider("d", provider)
    lasting = await consumer.build_proxy(Radio, "d", ttl_ms=10_000)
    fleeting = await consumer.build_proxy(Radio, "d", ttl_ms=200)

    await provider_rt.core.transport.stop()  # the provider's runtime loses its connection
    await eventually(lambda: provider_rt.client_id not in cc.websocket.clients, what="gone")
    for i in range(3):
        await lasting.note(f"kept-{i}")
        await fleeting.note(f"expired-{i}")
    await eventually(lambda: cc.router.queued() == 6, what="queued in the CC")
    await asyncio.sleep(0.4)  # the fleeting ones expire meanwhile
    await eventually(lambda: cc.router.queued() == 3, what="expired ones dropped")
    assert cc.telemetry.counters["dropped-expired-in-queue"] == 3

    await provider_rt.core.transport.start()
    await eventually(lambda: len(provider.notes) == 3, what="delivery after reconnect")
    assert provider.notes == ["kept-0", "kept-1", "kept-2"]
    await asyncio.sleep(0.2)
    assert len(provider.notes) == 3
    assert cc.router.queued() == 0


async def test_messages_sent_while_the_client_is_disconnected_wait_in_the_client(cc, runtimes):
    provider_rt, consumer = await runtimes(), await runtimes()
    provider = RadioProvider()
    await provider_rt.register_provider("d", provider)
    lasting = await consumer.build_proxy(Radio, "d", ttl_ms=10_000)
    fleeting = await consumer.build_proxy(Radio, "d", ttl_ms=200)

    await consumer.core.transport.stop()
    await lasting.note("kept")
    await fleeting.note("expired")
    assert consumer.core.router.queued() == 2
    await asyncio.sleep(0.4)
    consumer.core.router.sweep()
    assert consumer.core.router.queued() == 1
    assert consumer.core.telemetry.counters["dropped-expired-in-queue"] == 1

    await consumer.core.transport.start()
    await eventually(lambda: provider.notes == ["kept"], what="delivery after reconnect")
    # and requests work again
    assert await lasting.current_station.get() == "FM4"


async def test_a_providers_messages_wait_until_it_has_registered_again(cc, runtimes):
    # after a reconnect the CC knows none of the runtime's participants until it has
    # registered them again, and refuses a provider's multicasts (and answers) whose sender
    # has no route: the runtime holds them back until then
    provider_rt = await runtimes()
    provider = RadioProvider()
    pid = await provider_rt.register_provider("d", provider)
    proxy = await cc.runtime.build_proxy(Radio, "d", ttl_ms=5_000)  # a consumer in the CC
    seen: list[str] = []
    await proxy.new_station.subscribe(lambda s: seen.append(s.name))

    await provider_rt.core.transport.stop()
    await eventually(lambda: not cc.router.has_route(pid), what="routes removed")
    registering = provider_rt.core.transport.on_connected
    assert registering is not None

    async def fire_first() -> None:  # the provider fires while its runtime re-registers
        provider.fire("new_station", Station("early", Country.AUSTRIA))
        await registering()

    provider_rt.core.transport.on_connected = fire_first
    await provider_rt.core.transport.start()
    await eventually(lambda: seen == ["early"], what="the early multicast delivered")
    assert cc.websocket.counters["unrouted-sender"] == 0
