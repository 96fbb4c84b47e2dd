"""Routing over MQTT observed in the cluster controllers' routing tables, on real brokers.

- replyTo learning in the receiving CC (runtime.rules.reply_route): entry = replyTo in the
  GBID of the receiving connection, expiry = message expiry + grace, extended by later
  requests, replaced by a different replyTo, never over a local entry, removed by the cleanup
  job after expiry;
- two backends: the CC picks the broker by the GBID of each MqttAddress;
- broker restart mid-traffic: every QoS 1 message whose expiry allows it arrives, exactly once;
  none of the expired ones does.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from pyjoynr.runtime.addresses import MqttAddress, WebSocketClientAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.messages import Effort, Message, MessageType, decode_frame, encode_frame
from pyjoynr.runtime.payloads import OneWayRequest, Reply, Request, decode_payload
from pyjoynr.testing.brokers import Mosquitto
from pyjoynr.testing.cluster import eventually
from tests.support.mqtt_cluster import GBID, WAIT_S, MqttPair, start_pair
from tests.support.radio import Country, Radio, Station

pytestmark = [pytest.mark.network, pytest.mark.usefixtures("mqtt_client")]

GRACE_MS = 2_000


class RawCaller:
    """A global proxy in some other cluster controller, played by a bare aiomqtt client."""

    def __init__(self, client: aiomqtt.Client, topic: str) -> None:
        self.client = client
        self.topic = topic
        self.pid = f"raw-proxy-{uuid.uuid4().hex[:8]}"

    @classmethod
    async def open(cls, stack: AsyncExitStack, broker: Mosquitto) -> RawCaller:
        client = await stack.enter_async_context(aiomqtt.Client(
            "127.0.0.1", broker.port, identifier=f"raw-{uuid.uuid4().hex[:8]}",
            protocol=aiomqtt.ProtocolVersion.V5))
        caller = cls(client, f"raw/{uuid.uuid4().hex[:8]}")
        await client.subscribe(f"{caller.topic}/#", qos=1)
        return caller

    async def request(self, cc_topic: str, recipient: str, *, reply_to: Any = None,
                      sender: str | None = None, ttl_ms: int = 5_000) -> tuple[Message, str]:
        rid = uuid.uuid4().hex
        message = Message(
            type=MessageType.REQUEST, sender=sender or self.pid, recipient=recipient,
            expiry_date_ms=now_ms() + ttl_ms,
            body=Request(rid, "favorites", [], []).to_body(),
            reply_to=reply_to if reply_to is not None else MqttAddress("whatever", self.topic),
        )
        await self.client.publish(cc_topic, encode_frame(message), qos=1)
        return message, rid

    async def reply(self, rid: str, timeout_s: float = WAIT_S) -> tuple[str, Reply]:
        async with asyncio.timeout(timeout_s):
            async for incoming in self.client.messages:
                assert isinstance(incoming.payload, bytes)
                message = decode_frame(incoming.payload)
                if message.type is MessageType.REPLY:
                    reply = decode_payload(Reply, message.body)
                    if reply.request_reply_id == rid:
                        return incoming.topic.value, reply
        raise AssertionError("unreachable")


@pytest.fixture
async def stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as s:
        yield s


@pytest.fixture
async def broker(stack: AsyncExitStack, tmp_path: Path) -> Mosquitto:
    return await stack.enter_async_context(Mosquitto(tmp_path / "mosquitto"))


@pytest.fixture
async def pair(stack: AsyncExitStack, tmp_path: Path, broker: Mosquitto) -> MqttPair:
    return await start_pair(stack, tmp_path, {GBID: broker.url},
                            routing__reply_to_grace_ms=str(GRACE_MS),
                            routing__cleanup_interval_s="0.2")


# ====================================================================== replyTo learning


async def test_reply_to_is_learned_with_the_receiving_gbid_and_grace(
        stack: AsyncExitStack, broker: Mosquitto, pair: MqttPair) -> None:
    caller = await RawCaller.open(stack, broker)
    message, rid = await caller.request(pair.two.own_topic, pair.provider_pid)
    topic, reply = await caller.reply(rid)
    assert topic == caller.topic and reply.error is None

    entry = pair.two.router.route_of(caller.pid)
    assert entry is not None
    # the broker URI of the replyTo is replaced by the GBID of the receiving connection
    assert entry.address == MqttAddress(GBID, caller.topic)
    assert entry.expiry_date_ms == message.expiry_date_ms + GRACE_MS
    assert entry.is_globally_visible and not entry.is_sticky


async def test_a_later_request_extends_the_learned_entry(
        stack: AsyncExitStack, broker: Mosquitto, pair: MqttPair) -> None:
    caller = await RawCaller.open(stack, broker)
    first, rid = await caller.request(pair.two.own_topic, pair.provider_pid, ttl_ms=3_000)
    await caller.reply(rid)
    later, rid = await caller.request(pair.two.own_topic, pair.provider_pid, ttl_ms=9_000)
    await caller.reply(rid)
    entry = pair.two.router.route_of(caller.pid)
    assert entry is not None
    assert entry.expiry_date_ms == later.expiry_date_ms + GRACE_MS > first.expiry_date_ms

    # an earlier-expiring request does not shorten it
    await caller.request(pair.two.own_topic, pair.provider_pid, ttl_ms=1_000)
    await asyncio.sleep(0.3)
    entry = pair.two.router.route_of(caller.pid)
    assert entry is not None and entry.expiry_date_ms == later.expiry_date_ms + GRACE_MS


async def test_a_different_reply_to_replaces_the_learned_entry(
        stack: AsyncExitStack, broker: Mosquitto, pair: MqttPair) -> None:
    caller = await RawCaller.open(stack, broker)
    _, rid = await caller.request(pair.two.own_topic, pair.provider_pid)
    await caller.reply(rid)
    moved = f"{caller.topic}/moved"  # still under the caller's subscription
    _, rid = await caller.request(pair.two.own_topic, pair.provider_pid,
                                  reply_to=MqttAddress(GBID, moved))
    topic, _ = await caller.reply(rid)
    assert topic == moved
    entry = pair.two.router.route_of(caller.pid)
    assert entry is not None and entry.address == MqttAddress(GBID, moved)


async def test_reply_to_never_replaces_a_local_entry(
        stack: AsyncExitStack, broker: Mosquitto, pair: MqttPair) -> None:
    # a global caller that claims the participantId of a local participant of CC two
    proxy_two = await pair.rt_two.build_proxy(Radio, pair.domain)
    local = pair.two.router.route_of(proxy_two.participant_id)
    assert local is not None and isinstance(local.address, WebSocketClientAddress)
    caller = await RawCaller.open(stack, broker)
    mqtt_two = pair.two.mqtt
    assert mqtt_two is not None
    before = mqtt_two.counters["reply-to-not-learned"]
    await caller.request(pair.two.own_topic, pair.provider_pid, sender=proxy_two.participant_id)
    await eventually(lambda: mqtt_two.counters["reply-to-not-learned"] == before + 1, WAIT_S,
                     "the refused learning")
    assert pair.two.router.route_of(proxy_two.participant_id) == local


async def test_learned_entries_are_removed_by_the_cleanup_after_expiry(
        stack: AsyncExitStack, broker: Mosquitto, pair: MqttPair) -> None:
    caller = await RawCaller.open(stack, broker)
    message, rid = await caller.request(pair.two.own_topic, pair.provider_pid, ttl_ms=500)
    await caller.reply(rid)
    assert pair.two.router.has_route(caller.pid)
    # gone once message expiry + grace has passed (the cleanup runs every 0.2 s here)
    await eventually(lambda: not pair.two.router.has_route(caller.pid), 10.0,
                     "the cleanup of the learned entry")
    assert now_ms() >= message.expiry_date_ms + GRACE_MS


async def test_a_request_without_reply_to_is_dropped(
        stack: AsyncExitStack, broker: Mosquitto, pair: MqttPair) -> None:
    caller = await RawCaller.open(stack, broker)
    mqtt_two = pair.two.mqtt
    assert mqtt_two is not None
    message = Message(type=MessageType.REQUEST, sender=caller.pid, recipient=pair.provider_pid,
                      expiry_date_ms=now_ms() + 5_000,
                      body=Request("r1", "add_favorite", [], []).to_body())
    await caller.client.publish(pair.two.own_topic, encode_frame(message), qos=1)
    await eventually(lambda: mqtt_two.counters["no-reply-to"] == 1, WAIT_S, "the refusal")
    assert not pair.two.router.has_route(caller.pid)


async def test_outgoing_requests_carry_the_cc_reply_to_address(
        stack: AsyncExitStack, broker: Mosquitto, pair: MqttPair) -> None:
    spy = await stack.enter_async_context(aiomqtt.Client(
        "127.0.0.1", broker.port, identifier="spy", protocol=aiomqtt.ProtocolVersion.V5))
    await spy.subscribe(f"{pair.two.own_topic}/#", qos=1)
    await spy.subscribe(pair.two.own_topic, qos=1)
    proxy = await pair.proxy()
    await proxy.favorites()
    async with asyncio.timeout(WAIT_S):
        async for incoming in spy.messages:
            assert isinstance(incoming.payload, bytes)
            message = decode_frame(incoming.payload)
            if message.type is MessageType.REQUEST:
                break
    assert message.reply_to == pair.one.global_address == MqttAddress(GBID, pair.one.own_topic)


# ====================================================================== two backends


async def test_the_cc_routes_by_the_gbid_of_each_address(
        stack: AsyncExitStack, tmp_path: Path) -> None:
    broker_a = await stack.enter_async_context(Mosquitto(tmp_path / "a"))
    broker_b = await stack.enter_async_context(Mosquitto(tmp_path / "b"))
    backends = {"gbid-a": broker_a.url, "gbid-b": broker_b.url}
    pair = await start_pair(stack, tmp_path, backends, provider_gbid="gbid-b")
    spies = {}
    for gbid, broker in (("gbid-a", broker_a), ("gbid-b", broker_b)):
        spy = await stack.enter_async_context(aiomqtt.Client(
            "127.0.0.1", broker.port, identifier=f"spy-{gbid}",
            protocol=aiomqtt.ProtocolVersion.V5))
        await spy.subscribe("joynr/#", qos=1)
        spies[gbid] = spy

    seen: dict[str, list[str]] = {"gbid-a": [], "gbid-b": []}

    async def collect(gbid: str) -> None:
        async for incoming in spies[gbid].messages:
            assert isinstance(incoming.payload, bytes)
            seen[gbid].append(decode_frame(incoming.payload).type.value)

    tasks = [asyncio.create_task(collect(g)) for g in seen]
    try:
        proxy = await pair.proxy()
        assert await proxy.favorites() == []
        assert await proxy.add_favorite(Station("B", Country.AUSTRIA)) is True
        # requests and replies went through broker b (the provider's GBID): CC two learned
        # the replyTo in the backend the request arrived from
        await eventually(lambda: seen["gbid-b"] == ["rq", "rp", "rq", "rp"], WAIT_S,
                         "all four via broker b")
        await asyncio.sleep(0.3)
        assert seen["gbid-a"] == []
    finally:
        for task in tasks:
            task.cancel()
    learned = pair.two.router.route_of(proxy.participant_id)
    assert learned is not None and learned.address == MqttAddress("gbid-b", pair.one.own_topic)


# ====================================================================== broker restart


async def test_broker_restart_mid_traffic_delivers_what_has_not_expired(
        stack: AsyncExitStack, broker: Mosquitto, pair: MqttPair) -> None:
    proxy = await pair.proxy(ttl_ms=60_000)  # long-lived calls
    short_proxy = await pair.proxy(ttl_ms=300)  # calls that expire while the broker is down
    await proxy.note("warm-up")
    await eventually(lambda: "warm-up" in pair.provider.notes, WAIT_S, "the warm-up note")
    mqtt_one = pair.one.mqtt
    assert mqtt_one is not None
    sent_long: list[str] = []

    async def traffic() -> None:  # a steady stream of long-lived one-way calls
        for i in range(200):
            text = f"long-{i}"
            await proxy.note(text)
            sent_long.append(text)
            await asyncio.sleep(0.005)

    stream = asyncio.create_task(traffic())
    await eventually(lambda: len(sent_long) >= 40, WAIT_S, "traffic before the stop")
    await broker.stop()  # mid-traffic
    await eventually(lambda: not mqtt_one.connected(GBID), WAIT_S, "CC one sees the broker gone")
    # while the broker is down: calls that expire before it is back, and calls that do not
    short = [f"short-{i}" for i in range(30)]
    for text in short:
        await short_proxy.note(text)
    await stream
    await asyncio.sleep(0.5)  # the short ones are expired now
    await broker.start()

    mqtt_two = pair.two.mqtt
    assert mqtt_two is not None
    try:
        await eventually(lambda: set(sent_long) <= set(pair.provider.notes), 20.0,
                         "every long-lived note delivered after the restart")
    except AssertionError:
        missing = sorted(set(sent_long) - set(pair.provider.notes))
        raise AssertionError(
            f"{len(missing)} long-lived note(s) missing: {missing[:20]}; CC one: published "
            f"{mqtt_one.published}, pending {mqtt_one.pending()}, counters "
            f"{dict(mqtt_one.counters)}, router {dict(pair.one.telemetry.counters)}; CC two: "
            f"received {mqtt_two.received}, counters {dict(mqtt_two.counters)}, router "
            f"{dict(pair.two.telemetry.counters)}") from None
    await asyncio.sleep(0.5)  # late duplicates or expired ones would arrive now
    notes = pair.provider.notes
    delivered_long = [n for n in notes if n.startswith("long-")]
    delivered_short = [n for n in notes if n.startswith("short-")]
    assert len(sent_long) == 200
    assert sorted(delivered_long) == sorted(sent_long)  # each exactly once
    assert delivered_short == []
    assert mqtt_one.counters["dropped-expired-in-queue"] == len(short)
    assert await proxy.favorites() == []  # and calls work as before


# ====================================================================== publish options


async def test_publish_qos_and_message_expiry_interval(
        stack: AsyncExitStack, broker: Mosquitto, pair: MqttPair) -> None:
    spy = await stack.enter_async_context(aiomqtt.Client(
        "127.0.0.1", broker.port, identifier="spy-qos", protocol=aiomqtt.ProtocolVersion.V5))
    await spy.subscribe(pair.two.own_topic, qos=1)
    def one_way(effort: Effort, ttl_ms: int) -> Message:
        return Message(type=MessageType.ONE_WAY, sender="cc-one-internal",
                       recipient=pair.provider_pid, expiry_date_ms=now_ms() + ttl_ms,
                       body=OneWayRequest("note", [effort.value], ["String"]).to_body(),
                       effort=effort)

    normal, best_effort = one_way(Effort.NORMAL, 42_000), one_way(Effort.BEST_EFFORT, 5_000)
    assert pair.one.router.route(normal) and pair.one.router.route(best_effort)
    seen: dict[str, tuple[int, int | None]] = {}
    async with asyncio.timeout(WAIT_S):
        async for incoming in spy.messages:
            assert isinstance(incoming.payload, bytes)
            message = decode_frame(incoming.payload)
            expiry = getattr(incoming.properties, "MessageExpiryInterval", None)
            seen[message.id] = (incoming.qos, expiry)
            if len(seen) == 2:
                break
    # QoS 1 normally, QoS 0 for BEST_EFFORT; expiry interval = remaining time, rounded up
    assert seen[normal.id][0] == 1 and 40 <= (seen[normal.id][1] or 0) <= 42
    assert seen[best_effort.id][0] == 0 and 4 <= (seen[best_effort.id][1] or 0) <= 5
    await eventually(lambda: pair.provider.notes == ["NORMAL", "BEST_EFFORT"], WAIT_S,
                     "both delivered")
