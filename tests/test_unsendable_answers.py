"""Answers that cannot be sent on their hop become error answers to the requester at once
(runtime.router.MessageRouter.dropped_by_transport): a GCD lookup answer bigger than the
broker's packet limit, a reply bigger than a websocket connection's frame limit."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.gcd.interface import GCD_DOMAIN
from pyjoynr.gcd.interface import GlobalCapabilitiesDirectory as Gcd
from pyjoynr.gcd.service import GcdService, GcdSettings
from pyjoynr.libjoynr import LibjoynrConfig, ProviderQos, ProviderScope
from pyjoynr.libjoynr import connect as joynr_connect
from pyjoynr.libjoynr.advanced import MessageNotSentError
from pyjoynr.testing.brokers import Mosquitto
from pyjoynr.transports.websocket.settings import WebSocketClientSettings
from tests.support import mqtt_clients
from tests.support.mqtt_cluster import mqtt_cc_config, write_provisioning
from tests.support.radio import Country, Radio, RadioProvider, Station
from tests.test_gcd_service import GBID, entry, gcd_provisioning

pytestmark = pytest.mark.network

#: the broker's packet limit here: a lookup answer of 300 entries is far bigger
BROKER_LIMIT = 16 * 1024
ENTRIES = 300
#: the caller's TTL: the error comes well before it
TTL_MS = 30_000


@dataclass
class World:
    service: GcdService
    cc: ClusterController
    proxy: Any


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    async with AsyncExitStack() as stack:
        broker = await stack.enter_async_context(
            Mosquitto(tmp_path / "mosquitto", max_packet_size=BROKER_LIMIT))
        service = await stack.enter_async_context(GcdService(GcdSettings(
            gbid=GBID, broker_url=broker.url, sqlite_path=tmp_path / "gcd.sqlite",
            mqtt_client=mqtt_clients.current())))
        await service.mqtt.wait_connected(10)
        cc = await stack.enter_async_context(ClusterController(mqtt_cc_config(
            tmp_path / "cc", "cc-unsendable", {GBID: broker.url},
            discovery__provisioning_file=str(gcd_provisioning(tmp_path / "prov.toml")))))
        assert cc.mqtt is not None
        await cc.mqtt.wait_connected(10)
        proxy = await cc.runtime.build_proxy(Gcd, GCD_DOMAIN, ttl_ms=TTL_MS)
        yield World(service, cc, proxy)


@pytest.mark.usefixtures("mqtt_client")
async def test_a_gcd_answer_too_big_for_the_broker_is_an_error_at_once(world: World) -> None:
    await world.service.provider.add_entries([entry(f"p{i:04d}") for i in range(ENTRIES)])
    # a small answer goes out as usual
    assert (await world.proxy.lookup_participant("p0001")).participant_id == "p0001"
    started = time.monotonic()
    with pytest.raises(MessageNotSentError) as raised:
        await world.proxy.lookup(["vehicle"], "test/Radio")
    took = time.monotonic() - started
    assert took < TTL_MS / 1000 / 3, f"the error came after {took:.1f} s"
    text = str(raised.value)
    # it says why: the size of the answer and the broker's limit
    size, limit = map(int, re.search(r"(\d+) bytes\D+(\d+)", text).groups())  # type: ignore[union-attr]
    assert size > BROKER_LIMIT >= limit > 0, text
    assert "not sent" in text
    telemetry, transport = world.service.telemetry, world.service.mqtt
    assert telemetry.counters["answered-unsent-reply"] == 1
    assert sum(n for reason, n in transport.counters.items()
               if reason.startswith("dropped-")) == 1
    # and the GCD goes on answering what fits
    assert (await world.proxy.lookup_participant("p0002")).participant_id == "p0002"
    # a request too big for the broker is answered to its caller (message not sent) at once
    started = time.monotonic()
    with pytest.raises(MessageNotSentError, match=rf"bytes\D+{BROKER_LIMIT}"):
        await world.proxy.touch_participants("cc-x", [f"p{i:06d}" for i in range(3000)])
    assert time.monotonic() - started < TTL_MS / 1000 / 3
    assert world.cc.telemetry.counters["answered-not-sent"] == 1


async def test_a_reply_bigger_than_the_providers_frame_limit_is_an_error_at_once(
        cc: ClusterController) -> None:
    """The provider's runtime cannot write its reply on its websocket connection (bigger than
    the connection's frame limit): its router answers the caller with an error instead."""
    async with AsyncExitStack() as stack:
        provider_rt = await joynr_connect(cc.websocket_address.url, timeout_ms=10_000, config=(
            LibjoynrConfig(websocket=WebSocketClientSettings(max_frame_bytes=4096))))
        stack.push_async_callback(provider_rt.close)
        consumer_rt = await joynr_connect(cc.websocket_address.url, timeout_ms=10_000)
        stack.push_async_callback(consumer_rt.close)
        provider = RadioProvider()
        await provider_rt.register_provider("big", provider)
        for i in range(200):
            provider.stations.append(Station(f"station {i:04d} " + "x" * 40, Country.AUSTRIA))
        proxy = await consumer_rt.build_proxy(Radio, "big", ttl_ms=TTL_MS)
        assert await proxy.add_favorite(Station("small", Country.AUSTRIA)) is True
        started = time.monotonic()
        with pytest.raises(MessageNotSentError, match=r"bytes.*at most 4096") as raised:
            await proxy.favorites()
        assert time.monotonic() - started < TTL_MS / 1000 / 3
        assert "not sent" in str(raised.value)
        assert provider_rt.core.telemetry.counters["answered-unsent-reply"] == 1


async def test_a_reply_from_mqtt_bigger_than_the_callers_frame_limit_is_an_error_at_once(
        tmp_path: Path) -> None:
    """Through a cluster controller: a reply arrives from another CC over MQTT and is bigger
    than the caller's websocket connection takes (both ends hold to 8 KiB frames). The CC
    does not write it (the caller would refuse it and wait for its TTL): its router answers
    the caller with an error in its place, at once."""
    limit = 8192
    async with AsyncExitStack() as stack:
        broker = await stack.enter_async_context(Mosquitto(tmp_path / "mosquitto"))
        two = await stack.enter_async_context(ClusterController(mqtt_cc_config(
            tmp_path / "two", "cc-two-big", {GBID: broker.url})))
        provisioning = write_provisioning(tmp_path / "provisioning.toml", {
            "participant_id": "radio-big", "domain": "big", "interface": "test/Radio",
            "version": "1.2", "gbid": GBID, "topic": two.own_topic})
        one = await stack.enter_async_context(ClusterController(mqtt_cc_config(
            tmp_path / "one", "cc-one-big", {GBID: broker.url},
            discovery__provisioning_file=str(provisioning),
            websocket__max_frame_bytes=str(limit))))
        for cc in (one, two):
            assert cc.mqtt is not None
            await cc.mqtt.wait_connected(10)
        rt_two = await joynr_connect(two.websocket_address.url, timeout_ms=10_000)
        stack.push_async_callback(rt_two.close)
        rt_one = await joynr_connect(one.websocket_address.url, timeout_ms=10_000, config=(
            LibjoynrConfig(websocket=WebSocketClientSettings(max_frame_bytes=limit))))
        stack.push_async_callback(rt_one.close)
        provider = RadioProvider()
        await rt_two.register_provider("big", provider, participant_id="radio-big",
                                       qos=ProviderQos(scope=ProviderScope.GLOBAL))
        proxy = await rt_one.build_proxy(Radio, "big", ttl_ms=TTL_MS)
        assert await proxy.add_favorite(Station("small", Country.AUSTRIA)) is True
        for i in range(200):
            provider.stations.append(Station(f"station {i:04d} " + "x" * 40, Country.AUSTRIA))
        started = time.monotonic()
        with pytest.raises(MessageNotSentError, match=rf"bytes.*at most {limit}") as raised:
            await proxy.favorites()
        assert time.monotonic() - started < TTL_MS / 1000 / 3
        assert "websocket client" in str(raised.value)
        assert one.telemetry.counters["answered-unsent-reply"] == 1
        assert one.websocket.counters["dropped-too-big"] == 1
