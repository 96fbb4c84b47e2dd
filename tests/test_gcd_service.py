"""The GCD service over MQTT: a cluster controller's in-process proxy calls it through mosquitto.

The GCD's entry is provisioned in the CC (participantId capabilitiesdirectory_participantid,
topic discoverydirectory_channelid), as joynr does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.gcd.interface import GCD_DOMAIN, GCD_INTERFACE, GCD_PARTICIPANT_ID, GCD_TOPIC
from pyjoynr.gcd.interface import GlobalCapabilitiesDirectory as Gcd
from pyjoynr.gcd.service import GcdService, GcdSettings
from pyjoynr.programming.discovery_types import (
    GlobalDiscoveryEntry,
    ProviderQos,
    ProviderScope,
    Version,
)
from pyjoynr.programming.system_interfaces import address_from_json, address_to_json
from pyjoynr.runtime.addresses import MqttAddress, WebSocketClientAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.errors import ApplicationError, ProviderRuntimeError
from pyjoynr.runtime.messages import Message, MessageType, encode_frame
from pyjoynr.runtime.payloads import Request
from pyjoynr.runtime.tasks import TaskSupervisor
from pyjoynr.testing.brokers import Mosquitto
from tests.support import mqtt_clients
from tests.support.mqtt_cluster import mqtt_cc_config, write_provisioning

pytestmark = [pytest.mark.network, pytest.mark.usefixtures("mqtt_client")]

GBID = "joynrdefaultgbid"


def gcd_provisioning(path: Path, gbid: str = GBID) -> Path:
    return write_provisioning(path, {
        "participant_id": GCD_PARTICIPANT_ID, "domain": GCD_DOMAIN, "interface": GCD_INTERFACE,
        "version": "0.3", "gbid": gbid, "topic": GCD_TOPIC})


def entry(pid: str, topic: str = "joynr/cc/cc-x") -> GlobalDiscoveryEntry:
    return GlobalDiscoveryEntry(
        Version(1, 0), "vehicle", "test/Radio", pid, ProviderQos(scope=ProviderScope.GLOBAL),
        now_ms(), now_ms() + 60_000, "", address_to_json(MqttAddress("ignored", topic)))


@pytest.fixture
async def gcd_proxy(tmp_path: Path) -> AsyncIterator[tuple[Any, GcdService]]:
    async with AsyncExitStack() as stack:
        broker = await stack.enter_async_context(Mosquitto(tmp_path / "mosquitto"))
        service = await stack.enter_async_context(GcdService(GcdSettings(
            gbid=GBID, broker_url=broker.url, valid_gbids=[GBID, "other"],
            sqlite_path=tmp_path / "gcd.sqlite", mqtt_client=mqtt_clients.current())))
        await service.mqtt.wait_connected(10)
        cc = await stack.enter_async_context(ClusterController(mqtt_cc_config(
            tmp_path / "cc", "cc-gcd-test", {GBID: broker.url},
            discovery__provisioning_file=str(gcd_provisioning(tmp_path / "prov.toml")))))
        assert cc.mqtt is not None
        await cc.mqtt.wait_connected(10)
        proxy = await cc.runtime.build_proxy(Gcd, GCD_DOMAIN, ttl_ms=5_000)
        yield proxy, service


async def test_add_lookup_remove_over_mqtt(gcd_proxy: tuple[Any, GcdService]) -> None:
    proxy, service = gcd_proxy
    await proxy.add_in_backends(entry("p1"), [GBID, "other"])
    (found,) = await proxy.lookup_in_backends(["vehicle"], "test/Radio", ["other", GBID])
    assert found.participant_id == "p1"
    assert found.address == address_to_json(MqttAddress(GBID, "joynr/cc/cc-x"))  # own first
    found = await proxy.lookup_participant_in("p1", ["other"])
    assert address_from_json(found.address) == MqttAddress("other", "joynr/cc/cc-x")
    await proxy.remove_in_backends("p1", ["other"])
    assert [e.participant_id for e in await proxy.lookup(["vehicle"], "test/Radio")] == ["p1"]
    await proxy.touch_participants("cc-x", ["p1"])
    await proxy.remove_stale("cc-x", now_ms() + 1000)
    assert await proxy.lookup(["vehicle"], "test/Radio") == []
    assert service.mqtt.received >= 7


async def test_modelled_errors_over_mqtt(gcd_proxy: tuple[Any, GcdService]) -> None:
    proxy, _ = gcd_proxy
    for call, error in (
        (proxy.add_in_backends(entry("p1"), [""]), "INVALID_GBID"),
        (proxy.add_in_backends(entry("p1"), ["unknown"]), "UNKNOWN_GBID"),
        (proxy.lookup_participant_in("nobody", [GBID]), "NO_ENTRY_FOR_PARTICIPANT"),
        (proxy.remove_in_backends("nobody", [GBID]), "NO_ENTRY_FOR_PARTICIPANT"),
    ):
        with pytest.raises(ApplicationError) as raised:
            await call
        assert raised.value.error == error
    with pytest.raises(ProviderRuntimeError, match="must be an MqttAddress"):
        await proxy.add(GlobalDiscoveryEntry(
            Version(1, 0), "vehicle", "test/Radio", "p2", ProviderQos(), 0, now_ms() + 1000,
            "", address_to_json(WebSocketClientAddress("x"))))
    with pytest.raises(ProviderRuntimeError, match="no entry"):
        await proxy.lookup_participant("nobody")


async def test_the_services_tasks_belong_to_the_supervisor_it_is_given(tmp_path: Path) -> None:
    """Embedded in a process (a cluster controller), a GCD instance's background tasks - MQTT
    connection, router timers, purge of expired entries - run under that process's supervisor,
    and stopping the instance ends them all."""
    process_tasks = TaskSupervisor("process")
    async with Mosquitto(tmp_path / "mosquitto") as broker:
        service = GcdService(GcdSettings(gbid=GBID, broker_url=broker.url,
                                         sqlite_path=tmp_path / "gcd.sqlite",
                                         mqtt_client=mqtt_clients.current()),
                             tasks=process_tasks)
        await service.start(wait_s=10)
        try:
            names = {task.get_name() for task in asyncio.all_tasks()}
            assert "gcd-purge" in names
            assert len(process_tasks) >= 3  # MQTT, router sweep and purge, GCD purge
        finally:
            await service.stop()
        assert len(process_tasks) == 0
        assert "gcd-purge" not in {task.get_name() for task in asyncio.all_tasks()}
    await process_tasks.close()


async def test_the_gcds_learned_routes_are_bounded_by_its_setting(tmp_path: Path) -> None:
    """Requests from many distinct senders (each a cluster controller asking the GCD): at most
    ``max_learned_routes`` of their replyTo routes stay, those that expire last."""
    async with AsyncExitStack() as stack:
        broker = await stack.enter_async_context(Mosquitto(tmp_path / "mosquitto"))
        service = await stack.enter_async_context(GcdService(GcdSettings(
            gbid=GBID, broker_url=broker.url, sqlite_path=tmp_path / "gcd.sqlite",
            max_learned_routes=20, mqtt_client=mqtt_clients.current())))
        await service.mqtt.wait_connected(10)
        client = await stack.enter_async_context(aiomqtt.Client(
            "127.0.0.1", broker.port, identifier="many-ccs",
            protocol=aiomqtt.ProtocolVersion.V5, timeout=10))
        received = service.mqtt.received
        now = now_ms()
        for i in range(200):
            message = Message(
                MessageType.REQUEST, f"asker-{i}", GCD_PARTICIPANT_ID, now + 60_000 + i,
                Request(f"r{i}", "lookup", [f"pid-{i}"], ["String"]).to_body(),
                reply_to=MqttAddress(GBID, f"joynr/cc/cc-{i}"))
            await client.publish(f"{GCD_TOPIC}/low", encode_frame(message), qos=0)
        for _ in range(300):  # bounded wait (up to 30 s)
            if service.mqtt.received >= received + 200:
                break
            await asyncio.sleep(0.1)
        assert service.mqtt.received >= received + 200
        askers = {pid for pid, _ in service.router.routing_entries() if pid.startswith("asker-")}
        assert askers == {f"asker-{i}" for i in range(180, 200)}
        assert service.router.routing_counts().learned == 20  # those, and nothing else
        assert service.telemetry.counters["evicted-learned-route"] == 180


def test_the_gcds_learned_route_bound_is_checked() -> None:
    with pytest.raises(ValueError, match="max_learned_routes"):
        GcdSettings(max_learned_routes=0)
