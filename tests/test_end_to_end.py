"""Provider in one libjoynr runtime, consumer in another, both over websocket to one CC.

Every call style: request/reply, modelled and runtime errors, unknown methods, one-way,
attribute get/set/subscriptions, broadcasts as multicasts with partitions, timeouts, and the
clean-up after unsubscribe, unregister and proxy close.
"""

from __future__ import annotations

import asyncio

import pytest

from pyjoynr.libjoynr import (
    ApplicationError,
    DiscoveryError,
    DiscoveryQos,
    JoynrTimeoutError,
    interface,
)
from pyjoynr.libjoynr.advanced import (
    AttributeSubscriptionQos,
    MethodInvocationError,
    ProviderRuntimeError,
)
from pyjoynr.runtime.addresses import InProcessAddress, WebSocketClientAddress
from pyjoynr.testing.cluster import eventually
from tests.support.radio import Country, FavoriteError, Radio, RadioProvider, Station


@pytest.fixture
async def pair(cc, runtimes):
    provider_rt, consumer_rt = await runtimes(), await runtimes()
    provider = RadioProvider()
    pid = await provider_rt.register_provider("vienna", provider)
    proxy = await consumer_rt.build_proxy(Radio, "vienna", ttl_ms=3_000)
    return provider_rt, consumer_rt, provider, pid, proxy


async def test_request_reply_with_typed_values(pair):
    _, _, provider, _, proxy = pair
    fm4 = Station("FM4", Country.AUSTRIA, 103.8)
    assert await proxy.add_favorite(fm4) is True
    assert await proxy.add_favorite(fm4) is False
    assert await proxy.favorites() == [fm4]
    assert provider.stations == [fm4]


async def test_modelled_application_error(pair):
    proxy = pair[4]
    with pytest.raises(ApplicationError) as info:
        await proxy.remove_favorite("nothing")
    assert info.value.error == FavoriteError.NOT_FOUND.name
    assert "nothing is no favorite" in str(info.value)


async def test_provider_runtime_error(pair):
    with pytest.raises(ProviderRuntimeError, match="the tuner broke"):
        await pair[4].crash()


async def test_unknown_method_is_a_method_invocation_error(cc, runtimes, pair):
    """A proxy of a newer interface version calls a method the provider does not have."""
    @interface("test/Radio", version=(1, 2))
    class RadioWithMore:
        async def skip_ahead(self, seconds: int) -> None: ...

    consumer = await runtimes()
    proxy = await consumer.build_proxy(RadioWithMore, "vienna", ttl_ms=3_000)
    with pytest.raises(MethodInvocationError, match="no method skip_ahead"):
        await proxy.skip_ahead(10)


async def test_one_way_call(pair):
    _, _, provider, _, proxy = pair
    assert await proxy.note("hello") is None
    await asyncio.wait_for(provider.noted.wait(), 5)
    assert provider.notes == ["hello"]


async def test_attribute_get_and_set(pair):
    proxy = pair[4]
    assert await proxy.current_station.get() == "FM4"
    await proxy.current_station.set("Oe1")
    assert await proxy.current_station.get() == "Oe1"
    assert await proxy.volume.get() == 7
    with pytest.raises(AttributeError, match="read-only"):
        await proxy.volume.set(3)


async def test_attribute_on_change_subscription(pair):
    _, _, provider, _, proxy = pair
    seen: asyncio.Queue[str] = asyncio.Queue()
    subscription = await proxy.current_station.subscribe(seen.put_nowait)
    assert await asyncio.wait_for(seen.get(), 5) == "FM4"  # the current value first
    provider.set_attribute("current_station", "Radio Wien")
    assert await asyncio.wait_for(seen.get(), 5) == "Radio Wien"
    await proxy.current_station.set("Oe3")  # a set through the proxy publishes too
    assert await asyncio.wait_for(seen.get(), 5) == "Oe3"

    await subscription.unsubscribe()
    publisher = provider.registrations[0].publisher
    await eventually(lambda: not publisher.subscription_ids, what="provider stop")
    provider.set_attribute("current_station", "silence")
    await asyncio.sleep(0.2)
    assert seen.empty()


async def test_on_change_subscription_respects_the_minimum_interval(pair):
    _, _, provider, _, proxy = pair
    seen: asyncio.Queue[str] = asyncio.Queue()
    await proxy.current_station.subscribe(
        seen.put_nowait, AttributeSubscriptionQos(min_interval_ms=300))
    assert await asyncio.wait_for(seen.get(), 5) == "FM4"
    for name in ("a", "b", "c"):
        provider.set_attribute("current_station", name)
    # within the interval only the latest value goes out, once
    assert await asyncio.wait_for(seen.get(), 5) == "c"
    await asyncio.sleep(0.4)
    assert seen.empty()


async def test_broadcast_with_partitions(pair):
    _, _, provider, _, proxy = pair
    europe: asyncio.Queue[Station] = asyncio.Queue()
    anywhere: asyncio.Queue[Station] = asyncio.Queue()
    await proxy.new_station.subscribe(europe.put_nowait, partitions=["eu", "+"])
    await proxy.new_station.subscribe(anywhere.put_nowait, partitions=["*"])
    x, y = Station("X", Country.GERMANY), Station("Y", Country.AUSTRIA)
    provider.fire("new_station", x, partitions=["eu", "de"])
    provider.fire("new_station", y, partitions=["us"])
    assert await asyncio.wait_for(europe.get(), 5) == x
    received = [await asyncio.wait_for(anywhere.get(), 5) for _ in range(2)]
    assert sorted(s.name for s in received) == ["X", "Y"]
    await asyncio.sleep(0.2)
    assert europe.empty()


async def test_broadcast_reaches_every_runtime_once(cc, runtimes, pair):
    _, _, provider, _, proxy = pair
    other = await runtimes()
    other_proxy = await other.build_proxy(Radio, "vienna")
    first: list[Station] = []
    second: list[Station] = []
    await proxy.new_station.subscribe(first.append)
    await other_proxy.new_station.subscribe(second.append)
    provider.fire("new_station", Station("Z", Country.AUSTRIA))
    await eventually(lambda: first and second, what="both receivers")
    await asyncio.sleep(0.1)
    assert [s.name for s in first] == [s.name for s in second] == ["Z"]


async def test_request_times_out(pair):
    proxy = pair[4]
    proxy.ttl_ms = 300
    with pytest.raises(JoynrTimeoutError, match="300 ms"):
        await proxy.slow(3.0)
    assert proxy._endpoint.replies == {}  # nothing left waiting


async def test_a_cancelled_call_leaves_nothing_waiting_and_a_late_reply_is_ignored(pair):
    proxy = pair[4]
    call = asyncio.create_task(proxy.slow(0.3))
    await eventually(lambda: proxy._endpoint.replies)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert proxy._endpoint.replies == {}
    await asyncio.sleep(0.5)  # the provider's reply arrives for nobody
    fm4 = Station("FM4", Country.AUSTRIA, 103.8)
    assert await proxy.add_favorite(fm4) is True  # the proxy goes on


async def test_build_proxy_retries_in_ms_and_takes_the_old_keyword_with_a_warning(
        cc, runtimes):
    """build_proxy's discovery retry is in milliseconds like every time of the API; the old
    keyword in seconds still works and warns, naming the new one."""
    provider_rt, consumer = await runtimes(), await runtimes()
    with pytest.raises(DiscoveryError):
        await consumer.build_proxy(Radio, "later", discovery_retry_ms=50,
                                   discovery_qos=DiscoveryQos(discovery_timeout_ms=200))
    await provider_rt.register_provider("later", RadioProvider())
    proxy = await consumer.build_proxy(Radio, "later", discovery_retry_ms=50)
    assert await proxy.add_favorite(Station("FM4", Country.AUSTRIA, 103.8)) is True
    with pytest.warns(DeprecationWarning, match=r"build_proxy\(discovery_retry_s=...\) is "
                                                r"deprecated: pass discovery_retry_ms="):
        again = await consumer.build_proxy(Radio, "later", discovery_retry_s=0.05)
    assert await again.add_favorite(Station("Oe1", Country.AUSTRIA, 92.0)) is True
    with pytest.raises(ValueError, match="discovery_retry_ms must be > 0"):
        await consumer.build_proxy(Radio, "later", discovery_retry_ms=0)


async def test_discovery_fails_clearly_without_provider(cc, runtimes):
    consumer = await runtimes()
    at_cc = set(cc.router.participants_at(WebSocketClientAddress(consumer.client_id)))
    in_runtime = consumer.core.router.route_count
    with pytest.raises(DiscoveryError, match="no provider for test/Radio"):
        await consumer.build_proxy(Radio, "nowhere",
                                   discovery_qos=DiscoveryQos(discovery_timeout_ms=300))
    # the route to the proxy, registered at the CC while discovery ran, is gone again
    assert cc.router.participants_at(
        WebSocketClientAddress(consumer.client_id)) == at_cc
    assert consumer.core.router.route_count == in_runtime


async def test_routing_entries_follow_registration_and_cleanup(cc, pair):
    provider_rt, consumer_rt, provider, pid, proxy = pair
    router = cc.router
    assert router.route_of(pid).address == WebSocketClientAddress(provider_rt.client_id)
    assert router.route_of(proxy.participant_id).address == WebSocketClientAddress(
        consumer_rt.client_id)
    assert isinstance(provider_rt.core.router.route_of(pid).address, InProcessAddress)

    subscription = await proxy.new_station.subscribe(lambda s: None, partitions=["a"])
    assert cc.router.multicast_receivers.receivers_for(f"{pid}/newStation/a") == {
        proxy.participant_id}
    await subscription.unsubscribe()
    assert len(cc.router.multicast_receivers) == 0

    await proxy.close()
    assert not router.has_route(proxy.participant_id)
    assert not consumer_rt.core.router.has_route(proxy.participant_id)
    await provider_rt.unregister_provider(provider)
    assert not router.has_route(pid)
    assert not provider_rt.core.router.has_route(pid)
    assert not cc.discovery.entries()


async def test_in_process_provider_in_the_cc_and_consumer_over_websocket(cc, runtimes):
    provider = RadioProvider()
    pid = await cc.runtime.register_provider("cc-local", provider)
    assert isinstance(cc.router.route_of(pid).address, InProcessAddress)
    consumer = await runtimes()
    proxy = await consumer.build_proxy(Radio, "cc-local")
    assert await proxy.add_favorite(Station("A", Country.AUSTRIA)) is True
    # and a proxy inside the CC to a provider in a libjoynr runtime
    remote_rt = await runtimes()
    await remote_rt.register_provider("remote", RadioProvider())
    local_proxy = await cc.runtime.build_proxy(Radio, "remote")
    assert await local_proxy.current_station.get() == "FM4"
    seen: list[Station] = []
    await proxy.new_station.subscribe(seen.append)
    provider.fire("new_station", Station("B", Country.GERMANY))
    await eventually(lambda: seen, what="multicast from the CC's own provider")
