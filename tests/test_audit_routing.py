"""The message audit log of real cluster controllers (docs/records.md, audit v1).

A real CC with ``[audit]`` on, real libjoynr runtimes over websocket, a raw websocket client
for what a runtime would not send (a one-way for a provider that registers later, a request
for nobody, a spoofed sender, an expired message), and two CCs linked by a real mosquitto. The
written gzip files are read after the CCs stopped (a clean stop writes everything) and the
records checked exactly: counts per outcome and reason, every field, the time a message
spent queued. Off by default: a CC without ``[audit]`` writes nothing.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.gcd.interface import GCD_PARTICIPANT_ID
from pyjoynr.libjoynr import ProviderQos, ProviderScope
from pyjoynr.libjoynr import connect as joynr_connect
from pyjoynr.runtime import records
from pyjoynr.runtime.addresses import MqttAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.interface import interface_def
from pyjoynr.runtime.messages import Message, MessageType, encode_frame
from pyjoynr.runtime.payloads import Request
from pyjoynr.testing.brokers import Mosquitto
from pyjoynr.testing.cluster import cc_config, eventually
from tests.support.audit import audit_files, between, outcomes, read_audit
from tests.support.mqtt_cluster import GBID, start_pair
from tests.support.radio import Country, Radio, RadioProvider, Station
from tests.support.raw_websocket import RawClient, note

pytestmark = pytest.mark.network

WAIT_S = 10.0
RADIO = interface_def(Radio)


@pytest.fixture
async def stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as s:
        yield s


def by_id(found: list[dict[str, Any]], message_id: str) -> list[dict[str, Any]]:
    return [r for r in found if r["id"] == message_id]


async def test_websocket_routing_decisions_are_recorded_exactly(tmp_path: Path) -> None:
    requests, one_ways = 4, 3
    audit_dir = tmp_path / "audit"
    late_pid = f"late-{uuid.uuid4().hex[:8]}"
    nobody = f"nobody-{uuid.uuid4().hex[:8]}"
    async with AsyncExitStack() as stack:
        cc = await stack.enter_async_context(ClusterController(cc_config(
            tmp_path, audit__enabled="true", audit__dir=str(audit_dir))))
        url = cc.websocket_address.url
        provider_rt = await joynr_connect(url, timeout_ms=int(WAIT_S * 1000))
        stack.push_async_callback(provider_rt.close)
        consumer_rt = await joynr_connect(url, timeout_ms=int(WAIT_S * 1000))
        stack.push_async_callback(consumer_rt.close)
        provider = RadioProvider()
        provider_pid = await provider_rt.register_provider("audit.test", provider)
        proxy = await consumer_rt.build_proxy(Radio, "audit.test", ttl_ms=5_000)
        for i in range(requests):
            assert await proxy.add_favorite(Station(f"s{i}", Country.AUSTRIA, 90.0 + i))
        for i in range(one_ways):
            await proxy.note(f"n{i}")
        await eventually(lambda: len(provider.notes) == one_ways, WAIT_S, "the one-way calls")

        raw = await RawClient.open(stack, url)
        # a one-way for a provider that is not there yet: queued, delivered when it registers
        late = note(raw.pid, late_pid, "late")
        late_size = await raw.send(late)
        await eventually(lambda: cc.router.queued(late_pid) == 1, WAIT_S, "queued")
        await asyncio.sleep(0.3)
        late_rt = await joynr_connect(url, timeout_ms=int(WAIT_S * 1000))
        stack.push_async_callback(late_rt.close)
        late_provider = RadioProvider()
        await late_rt.register_provider("audit.test.late", late_provider,
                                        participant_id=late_pid)
        await eventually(lambda: late_provider.notes == ["late"], WAIT_S, "the late delivery")
        # a request for nobody: queued, then dropped when it expires
        lost = Message(MessageType.REQUEST, raw.pid, nobody, now_ms() + 300,
                       Request(uuid.uuid4().hex, "favorites", [], []).to_body())
        lost_size = await raw.send(lost)
        await eventually(lambda: cc.telemetry.counters["dropped-expired-in-queue"] == 1, WAIT_S,
                         "the expiry in the queue")
        # a spoofed sender: the proxy's participantId, routed to the consumer's connection
        spoofed = note(proxy.participant_id, provider_pid, "spoofed")
        spoofed_size = await raw.send(spoofed)
        # an expired message: dropped before it is routed
        stale = note(raw.pid, provider_pid, "stale", expiry_ms=now_ms() - 1_000)
        stale_size = await raw.send(stale)
        await eventually(lambda: cc.telemetry.counters["dropped-expired"] == 1
                         and cc.websocket.counters["spoofed-sender"] == 1, WAIT_S, "refusals")
        assert provider.notes == ["n0", "n1", "n2"]
        router_counters = dict(cc.telemetry.counters)
        websocket_counters = dict(cc.websocket.counters)
        cc_id = cc.id
    assert audit_dir.is_dir() and not list(audit_dir.glob("*.part"))
    found = read_audit(audit_dir, cc_id)
    assert {r["proc"] for r in found} == {cc_id}

    # the calls between the proxy and the provider: one record per message, all delivered
    # straight away to the runtime at the other end
    pair = between(found, proxy.participant_id, provider_pid)
    assert Counter((r["type"], r["outcome"], r["hop"], r["reason"]) for r in pair) == {
        ("rq", "delivered", "websocket", None): requests,
        ("rp", "delivered", "websocket", None): requests,
        ("o", "delivered", "websocket", None): one_ways,
        ("o", "refused", None, "spoofed-sender"): 1,
    }
    for record in pair:
        if record["outcome"] == "delivered":
            assert record["queued_ms"] == 0
            assert record["gbid"] is None and record["peer"] is None
            assert record["bytes"] > 0
    replies = [r for r in pair if r["type"] == "rp"]
    assert {r["sender"] for r in replies} == {provider_pid}
    assert {r["recipient"] for r in replies} == {proxy.participant_id}

    # the late one-way: queued (no route yet), then delivered with the time it waited
    queued, delivered = by_id(found, late.id)
    assert queued == records.audit_record(
        ts=queued["ts"], proc=cc_id, message_id=late.id, message_type="o", sender=raw.pid,
        recipient=late_pid, hop=None, gbid=None, size=late_size, outcome="queued")
    assert delivered == records.audit_record(
        ts=delivered["ts"], proc=cc_id, message_id=late.id, message_type="o", sender=raw.pid,
        recipient=late_pid, hop="websocket", gbid=None, size=late_size, outcome="delivered",
        queued_ms=delivered["queued_ms"])
    assert delivered["queued_ms"] >= 300  # it waited at least while the test slept
    assert abs(delivered["queued_ms"] - (delivered["ts"] - queued["ts"])) <= 1

    # the request for nobody: queued, then dropped when it expired there
    assert by_id(found, lost.id) == [
        records.audit_record(ts=r["ts"], proc=cc_id, message_id=lost.id, message_type="rq",
                             sender=raw.pid, recipient=nobody, hop=None, gbid=None,
                             size=lost_size, outcome=outcome, reason=reason)
        for r, (outcome, reason) in zip(by_id(found, lost.id),
                                        [("queued", None), ("dropped", "expired-in-queue")],
                                        strict=True)]
    # the spoofed sender: refused at the websocket server, with the connection as the peer
    assert by_id(found, spoofed.id) == [records.audit_record(
        ts=by_id(found, spoofed.id)[0]["ts"], proc=cc_id, message_id=spoofed.id,
        message_type="o", sender=proxy.participant_id, recipient=provider_pid, hop=None,
        gbid=None, size=spoofed_size, outcome="refused", reason="spoofed-sender",
        peer=f"client {raw.client_id} from 127.0.0.1")]
    # the expired one: dropped by the router before a next hop was chosen
    assert by_id(found, stale.id) == [records.audit_record(
        ts=by_id(found, stale.id)[0]["ts"], proc=cc_id, message_id=stale.id,
        message_type="o", sender=raw.pid, recipient=provider_pid, hop=None, gbid=None,
        size=stale_size, outcome="dropped", reason="expired")]

    # every drop and refusal the CC counted is in the log, and nothing else; every queued
    # message too (none was queued twice here)
    counted = Counter({(records.outcome_of(k.removeprefix("dropped-")),
                        k.removeprefix("dropped-")): v
                       for k, v in router_counters.items() if k.startswith("dropped-")})
    counted[("refused", "spoofed-sender")] += websocket_counters["spoofed-sender"]
    counted[("queued", None)] = router_counters["queued"]
    assert Counter({k: v for k, v in outcomes(found).items() if k[0] != "delivered"}) == counted
    # the hops of all deliveries: the runtimes' connections, and the CC's own providers
    assert {r["hop"] for r in found if r["outcome"] == "delivered"} == {"websocket",
                                                                        "inprocess"}
    ws_delivered = {r["recipient"] for r in found
                    if r["outcome"] == "delivered" and r["hop"] == "websocket"}
    assert {provider_pid, proxy.participant_id, late_pid} <= ws_delivered


async def test_mqtt_routing_decisions_are_recorded_on_both_cluster_controllers(
        stack: AsyncExitStack, tmp_path: Path) -> None:
    requests, one_ways = 3, 2
    broker = await stack.enter_async_context(Mosquitto(tmp_path / "mosquitto"))
    audit_dir = tmp_path / "audit"  # both CCs write there, each its own files
    async with AsyncExitStack() as inner:
        pair = await start_pair(inner, tmp_path, {GBID: broker.url}, audit__enabled="true",
                                audit__dir=str(audit_dir))
        proxy = await pair.proxy()
        for i in range(requests):
            assert await proxy.add_favorite(Station(f"m{i}", Country.GERMANY, 100.0 + i))
        for i in range(one_ways):
            await proxy.note(f"mqtt-{i}")
        await eventually(lambda: len(pair.provider.notes) == one_ways, WAIT_S, "one-way calls")

        # a global caller played by a bare MQTT client, publishing to CC two's topic
        client = await inner.enter_async_context(aiomqtt.Client(
            "127.0.0.1", broker.port, identifier=f"raw-{uuid.uuid4().hex[:8]}",
            protocol=aiomqtt.ProtocolVersion.V5))
        caller = f"raw-caller-{uuid.uuid4().hex[:8]}"
        reply_topic = f"raw/{uuid.uuid4().hex[:8]}"
        await client.subscribe(f"{reply_topic}/#", qos=1)

        def request(reply_to: MqttAddress | None, ttl_ms: int = 5_000) -> Message:
            return Message(MessageType.REQUEST, caller, pair.provider_pid, now_ms() + ttl_ms,
                           Request(uuid.uuid4().hex, "favorites", [], []).to_body(),
                           reply_to=reply_to)

        answered = request(MqttAddress(GBID, reply_topic))
        frame = encode_frame(answered)
        await client.publish(pair.two.own_topic, frame, qos=1)
        await client.publish(pair.two.own_topic, frame, qos=1)  # a redelivery: a duplicate
        no_reply_to = request(None)
        await client.publish(pair.two.own_topic, encode_frame(no_reply_to), qos=1)
        expired = request(MqttAddress(GBID, reply_topic), ttl_ms=-1_000)
        await client.publish(pair.two.own_topic, encode_frame(expired), qos=1)
        mqtt_two = pair.two.mqtt
        assert mqtt_two is not None
        await eventually(lambda: mqtt_two.counters["duplicate"] == 1
                         and mqtt_two.counters["no-reply-to"] == 1
                         and mqtt_two.counters["expired"] == 1, WAIT_S, "the refusals")
        async with asyncio.timeout(WAIT_S):  # the answer to the caller went out
            async for _ in client.messages:
                break
        one_id, two_id = pair.one.id, pair.two.id
        provider_pid = pair.provider_pid
    one = read_audit(audit_dir, one_id)
    two = read_audit(audit_dir, two_id)
    # each file is audit-<cc id>-<date>: every one of a CC here, each CC with its own (a cc id
    # may itself hold "-20": a random suffix starting 20)
    names = [p.name for p in audit_files(audit_dir)]
    owners = {cc_id for cc_id in (one_id, two_id) for n in names
              if n.startswith(f"audit-{cc_id}-20")}
    assert owners == {one_id, two_id}, names
    assert all(any(n.startswith(f"audit-{cc_id}-20") for cc_id in owners) for n in names), names

    def summary(found: list[dict[str, Any]]) -> Counter[tuple[Any, ...]]:
        return Counter((r["type"], r["outcome"], r["hop"], r["gbid"], r["reason"])
                       for r in between(found, proxy.participant_id, provider_pid))

    # CC one: the calls go out to the broker, the replies in to the proxy's runtime
    assert summary(one) == {
        ("rq", "delivered", "mqtt", GBID, None): requests,
        ("o", "delivered", "mqtt", GBID, None): one_ways,
        ("rp", "delivered", "websocket", None, None): requests,
    }
    # CC two: the calls in to the provider's runtime, the replies out to the broker (the
    # route learned from the requests' replyTo)
    assert summary(two) == {
        ("rq", "delivered", "websocket", None, None): requests,
        ("o", "delivered", "websocket", None, None): one_ways,
        ("rp", "delivered", "mqtt", GBID, None): requests,
    }
    assert all(r["queued_ms"] == 0 for r in one + two if r["outcome"] == "delivered")

    # the raw caller's messages at CC two
    def of(message: Message) -> list[tuple[Any, ...]]:
        return [(r["outcome"], r["reason"], r["hop"], r["gbid"], r["peer"], r["bytes"])
                for r in two if r["id"] == message.id]

    size = len(frame)
    assert of(answered) == [("delivered", None, "websocket", None, None, size),
                            ("dropped", "duplicate", None, GBID, None, size)]
    replies = [r for r in two if r["type"] == "rp" and r["recipient"] == caller]
    assert [(r["outcome"], r["hop"], r["gbid"]) for r in replies] == [("delivered", "mqtt",
                                                                       GBID)]
    assert of(no_reply_to) == [("refused", "no-reply-to", None, GBID, f"backend {GBID}",
                                len(encode_frame(no_reply_to)))]
    assert of(expired) == [("dropped", "expired", None, GBID, None,
                            len(encode_frame(expired)))]
    assert not [r for r in one if r["sender"] == caller or r["recipient"] == caller]


async def test_the_audit_log_is_off_by_default(tmp_path: Path) -> None:
    async with ClusterController(cc_config(tmp_path)) as cc:
        assert cc.audit is None
        rt = await joynr_connect(cc.websocket_address.url, timeout_ms=int(WAIT_S * 1000))
        provider = RadioProvider()
        await rt.register_provider("off.test", provider)
        proxy = await rt.build_proxy(Radio, "off.test")
        assert await proxy.favorites() == []
        await rt.close()
    assert not (tmp_path / "audit").exists()
    assert not list(tmp_path.rglob("audit-*"))  # noqa: ASYNC240 - after the CC, in a test


async def test_an_embedded_gcd_writes_its_own_audit_log(stack: AsyncExitStack,
                                                        tmp_path: Path) -> None:
    """A GCD routes its requests and answers through a router too: with [audit] on, the
    embedded one writes audit-gcd-<cc id>-... beside the cluster controller's files."""
    broker = await stack.enter_async_context(Mosquitto(tmp_path / "mosquitto"))
    audit_dir = tmp_path / "audit"
    async with ClusterController(cc_config(
            tmp_path, cluster_controller__id="cc-gcd-audit",
            mqtt__backends=f'{{{GBID} = "{broker.url}"}}', embedded_gcd__enabled="true",
            audit__enabled="true", audit__dir=str(audit_dir))) as cc:
        rt = await joynr_connect(cc.websocket_address.url, timeout_ms=int(WAIT_S * 1000))
        await rt.register_provider("pyjoynr.gcd.audit", RadioProvider(),
                                   qos=ProviderQos(scope=ProviderScope.GLOBAL),
                                   await_global_registration=True)
        await rt.close()
    gcd = read_audit(audit_dir, "gcd-cc-gcd-audit")
    # the GCD got the CC's add request and answered it over MQTT
    # the GCD got the CC's requests (removeStale of its previous life, the add; maybe more
    # when the stop catches one) from MQTT for its in-process provider, and answered them
    # over MQTT in its one backend
    kinds = Counter((r["type"], r["outcome"], r["hop"], r["gbid"]) for r in gcd)
    assert set(kinds) == {("rq", "delivered", "inprocess", None),
                          ("rp", "delivered", "mqtt", GBID)}
    assert kinds[("rq", "delivered", "inprocess", None)] >= 2
    assert kinds[("rp", "delivered", "mqtt", GBID)] >= 2
    assert {r["recipient"] for r in gcd if r["type"] == "rq"} == {GCD_PARTICIPANT_ID}
    assert {r["sender"] for r in gcd if r["type"] == "rp"} == {GCD_PARTICIPANT_ID}
    assert all(r["proc"] == "gcd-cc-gcd-audit" for r in gcd)
    assert read_audit(audit_dir, "cc-gcd-audit")
