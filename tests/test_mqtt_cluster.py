"""Calls across two cluster controllers through real brokers: mosquitto and the embedded amqtt.

Every call style crosses MQTT: request/reply, errors, one-way, attribute get/set and on-change
subscriptions, broadcasts as multicasts with partitions (subscribed in the consumer's CC with
reference counting, published by the provider's CC, never echoed).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.libjoynr import ApplicationError, ProviderQos, ProviderScope
from pyjoynr.libjoynr.advanced import ProviderRuntimeError
from pyjoynr.runtime.addresses import MqttAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.testing.brokers import Mosquitto
from pyjoynr.testing.cluster import eventually
from pyjoynr.transports.mqtt.broker import EmbeddedBroker, EmbeddedBrokerSettings
from tests.support.mqtt_cluster import GBID, WAIT_S, MqttPair, mqtt_cc_config, start_pair
from tests.support.radio import Country, FavoriteError, RadioProvider, Station
from tests.support.tls import self_signed_certificate

pytestmark = [pytest.mark.network, pytest.mark.usefixtures("mqtt_client")]


@pytest.fixture(params=["mosquitto", "amqtt"])
async def pair(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MqttPair]:
    async with AsyncExitStack() as stack:
        if request.param == "mosquitto":
            broker = await stack.enter_async_context(Mosquitto(tmp_path / "mosquitto"))
            url = broker.url
        else:
            embedded = await stack.enter_async_context(
                EmbeddedBroker(EmbeddedBrokerSettings(enabled=True, port=0)))
            url = f"{embedded.url}?version=3.1.1"
        yield await start_pair(stack, tmp_path, {GBID: url})


async def test_request_reply_across_cluster_controllers(pair: MqttPair) -> None:
    proxy = await pair.proxy()
    assert await proxy.add_favorite(Station("Oe1", Country.AUSTRIA, 87.8)) is True
    assert await proxy.add_favorite(Station("Oe1", Country.AUSTRIA, 87.8)) is False
    assert [s.name for s in await proxy.favorites()] == ["Oe1"]
    # the route in CC one is the provisioned sticky one; CC two learned the proxy's replyTo
    entry = pair.one.router.route_of(pair.provider_pid)
    assert entry is not None and entry.is_sticky
    assert entry.address == MqttAddress(GBID, pair.two.own_topic)
    learned = pair.two.router.route_of(proxy.participant_id)
    assert learned is not None
    assert learned.address == MqttAddress(GBID, pair.one.own_topic)


async def test_errors_cross_too(pair: MqttPair) -> None:
    proxy = await pair.proxy()
    with pytest.raises(ApplicationError) as error:
        await proxy.remove_favorite("nothing")
    assert error.value.error == FavoriteError.NOT_FOUND.name
    with pytest.raises(ProviderRuntimeError, match="tuner broke"):
        await proxy.crash()


async def test_one_way_across_cluster_controllers(pair: MqttPair) -> None:
    proxy = await pair.proxy()
    await proxy.note("over the broker")
    await asyncio.wait_for(pair.provider.noted.wait(), WAIT_S)
    assert pair.provider.notes == ["over the broker"]


async def test_attributes_and_subscription_across_cluster_controllers(pair: MqttPair) -> None:
    proxy = await pair.proxy()
    assert await proxy.current_station.get() == "FM4"
    await proxy.current_station.set("Oe3")
    assert await proxy.current_station.get() == "Oe3"
    seen: asyncio.Queue[str] = asyncio.Queue()
    subscription = await proxy.current_station.subscribe(seen.put_nowait)
    assert await asyncio.wait_for(seen.get(), WAIT_S) == "Oe3"
    pair.provider.set_attribute("current_station", "Radio Wien")
    assert await asyncio.wait_for(seen.get(), WAIT_S) == "Radio Wien"
    await subscription.unsubscribe()
    publisher = pair.provider.registrations[0].publisher
    await eventually(lambda: not publisher.subscription_ids, WAIT_S,
                     "the provider ends the subscription")


async def test_multicast_across_cluster_controllers(pair: MqttPair) -> None:
    proxy = await pair.proxy()
    mqtt_one = pair.one.mqtt
    assert mqtt_one is not None
    europe: asyncio.Queue[Station] = asyncio.Queue()
    anywhere: asyncio.Queue[Station] = asyncio.Queue()
    sub_eu = await proxy.new_station.subscribe(europe.put_nowait, partitions=["eu", "+"])
    sub_any = await proxy.new_station.subscribe(anywhere.put_nowait, partitions=["*"])
    prefix = f"{pair.provider_pid}/newStation"
    assert mqtt_one.multicast_topics(GBID) == {f"{prefix}/eu/+": 1, f"{prefix}/#": 1}

    x, y = Station("X", Country.GERMANY), Station("Y", Country.AUSTRIA)
    pair.provider.fire("new_station", x, partitions=["eu", "de"])
    pair.provider.fire("new_station", y, partitions=["us"])
    assert await asyncio.wait_for(europe.get(), WAIT_S) == x
    received = [await asyncio.wait_for(anywhere.get(), WAIT_S) for _ in range(2)]
    assert sorted(s.name for s in received) == ["X", "Y"]
    await asyncio.sleep(0.3)
    assert europe.empty() and anywhere.empty()  # once each, no echo
    mqtt_two = pair.two.mqtt
    assert mqtt_two is not None and mqtt_two.counters["refused-relay"] == 0

    # a second receiver of the same pattern shares the subscription; the last one ends it
    other = await pair.proxy()
    sub_other = await other.new_station.subscribe(lambda s: None, partitions=["*"])
    assert mqtt_one.multicast_topics(GBID)[f"{prefix}/#"] == 2
    await sub_any.unsubscribe()
    assert mqtt_one.multicast_topics(GBID)[f"{prefix}/#"] == 1
    await sub_other.unsubscribe()
    await sub_eu.unsubscribe()
    assert mqtt_one.multicast_topics(GBID) == {}


async def test_a_runtime_that_goes_takes_its_mqtt_subscriptions_along(pair: MqttPair) -> None:
    proxy = await pair.proxy()
    mqtt_one = pair.one.mqtt
    assert mqtt_one is not None
    await proxy.new_station.subscribe(lambda s: None, partitions=["*"])
    assert mqtt_one.multicast_topics(GBID) == {f"{pair.provider_pid}/newStation/#": 1}
    await pair.rt_one.close()  # the websocket client is gone for good
    await eventually(lambda: mqtt_one.multicast_topics(GBID) == {}, WAIT_S,
                     "the topic unsubscribed")


# ====================================================================== TLS, credentials


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    return self_signed_certificate(tmp_path)


async def test_mqtts_with_credentials(tmp_path: Path, certificate: tuple[Path, Path]) -> None:
    cert, _ = certificate
    async with AsyncExitStack() as stack:
        broker = await stack.enter_async_context(Mosquitto(
            tmp_path / "tls", tls=certificate, users={"cc": "s3cret pass"}))
        url = f"mqtts://cc:s3cret%20pass@127.0.0.1:{broker.port}"
        pair = await start_pair(stack, tmp_path, {GBID: url}, mqtt__tls_ca_file=str(cert))
        proxy = await pair.proxy()
        assert await proxy.add_favorite(Station("TLS", Country.AUSTRIA)) is True


async def test_the_embedded_gcd_connects_with_the_cc_mqtt_settings(
        tmp_path: Path, certificate: tuple[Path, Path]) -> None:
    """The GCD embedded in a CC shares the CC's [mqtt] connection options: here the private CA
    of an mqtts backend, without which it cannot connect."""
    cert, _ = certificate
    async with AsyncExitStack() as stack:
        broker = await stack.enter_async_context(Mosquitto(
            tmp_path / "tls", tls=certificate, users={"cc": "pw"}))
        cc = await stack.enter_async_context(ClusterController(mqtt_cc_config(
            tmp_path / "cc", "cc-gcd", {GBID: f"mqtts://cc:pw@127.0.0.1:{broker.port}"},
            mqtt__tls_ca_file=str(cert), embedded_gcd__enabled="true")))
        assert cc.gcd is not None
        await cc.gcd.mqtt.wait_connected(WAIT_S)
        pid = await cc.runtime.register_provider(
            "tls.domain", RadioProvider(), qos=ProviderQos(scope=ProviderScope.GLOBAL),
            await_global_registration=True)
        stored = await cc.gcd.store.find_participant(pid, now_ms())
        assert [row.gbid for row in stored] == [GBID]


async def test_wrong_credentials_are_retried_and_said_clearly(
        tmp_path: Path, certificate: tuple[Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    cert, _ = certificate
    async with AsyncExitStack() as stack:
        broker = await stack.enter_async_context(Mosquitto(
            tmp_path / "tls", tls=certificate, users={"cc": "right"}))
        cc = await stack.enter_async_context(ClusterController(mqtt_cc_config(
            tmp_path / "cc", "cc-wrong", {GBID: f"mqtts://cc:wrong@127.0.0.1:{broker.port}"},
            mqtt__tls_ca_file=str(cert))))
        assert cc.mqtt is not None
        with pytest.raises(ConnectionError, match="not connected"):
            await cc.mqtt.wait_connected(1.0)
        assert any("cannot connect" in r.getMessage() and "mqtts://cc@127.0.0.1" in
                   r.getMessage() and "wrong" not in r.getMessage()  # no password in logs
                   for r in caplog.records if r.name == "pyjoynr.transports.mqtt.transport")


# ====================================================================== broker restart


async def test_after_a_restart_without_persistence_the_cc_subscribes_again(
        tmp_path: Path) -> None:
    async with AsyncExitStack() as stack:
        broker = await stack.enter_async_context(
            Mosquitto(tmp_path / "plain", persistence=False))
        pair = await start_pair(stack, tmp_path, {GBID: broker.url})
        proxy = await pair.proxy()
        seen: asyncio.Queue[Station] = asyncio.Queue()
        await proxy.new_station.subscribe(seen.put_nowait, partitions=["*"])
        await broker.stop()
        await broker.start()  # no sessions survive: both CCs must subscribe again
        mqtt_one, mqtt_two = pair.one.mqtt, pair.two.mqtt
        assert mqtt_one is not None and mqtt_two is not None
        await eventually(lambda: mqtt_one.connection_count(GBID) == 2
                         and mqtt_two.connection_count(GBID) == 2
                         and mqtt_one.connected(GBID) and mqtt_two.connected(GBID),
                         WAIT_S, "both CCs reconnected")
        assert await proxy.favorites() == []  # own topics subscribed again
        pair.provider.fire("new_station", Station("after", Country.AUSTRIA), partitions=["x"])
        assert (await asyncio.wait_for(seen.get(), WAIT_S)).name == "after"
