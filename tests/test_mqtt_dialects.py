"""Both frame dialects on the cluster controller's MQTT backends and the GCD's, on real
mosquitto brokers (transports.mqtt.transport, transports.mqtt.dialect).

A bare MQTT 5 client (tests.support.mqtt_clients.RawPeer) plays one of joynr's cluster
controllers: it publishes SMRF frames to ``<topic>/low`` with a replyTo (``re``) and its
custom headers also as user properties ``c-<key>``, and reads what it gets on its own topic
tree. The bodies are msgpack (runtime.payloads): the cluster controller never reads or changes
a body, whatever the frame around it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.gcd.interface import GCD_PARTICIPANT_ID, GCD_TOPIC
from pyjoynr.gcd.interface import GlobalCapabilitiesDirectory as Gcd
from pyjoynr.gcd.service import GcdService, GcdSettings
from pyjoynr.programming.discovery_types import (
    GlobalDiscoveryEntry,
    ProviderQos,
    ProviderScope,
    Version,
)
from pyjoynr.programming.system_interfaces import address_to_json
from pyjoynr.runtime import smrf
from pyjoynr.runtime.addresses import MqttAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.errors import ApplicationError
from pyjoynr.runtime.interface import from_wire, interface_def, to_wire
from pyjoynr.runtime.messages import Effort, Message, MessageType, decode_frame, encode_frame
from pyjoynr.runtime.payloads import OneWayRequest, Reply, Request, decode_payload
from pyjoynr.testing.brokers import Mosquitto
from pyjoynr.testing.cluster import eventually
from pyjoynr.transports.mqtt.transport import MqttTransport
from tests.support import mqtt_clients
from tests.support.mqtt_clients import RawPeer, Received
from tests.support.mqtt_cluster import GBID, WAIT_S, MqttPair, mqtt_cc_config, start_pair
from tests.support.radio import Country, Radio, Station

pytestmark = [pytest.mark.network, pytest.mark.usefixtures("mqtt_client")]

RADIO = interface_def(Radio)
GCD = interface_def(Gcd)
ADD_FAVORITE = RADIO.methods["add_favorite"].param_datatypes
NOTE = RADIO.methods["note"].param_datatypes
SMRF_START = b"\x01\x00"
#: mqtt.max_message_bytes of the cluster controllers in the hostile test
LIMIT = 4096


def mqtt_of(cc: ClusterController) -> MqttTransport:
    assert cc.mqtt is not None
    return cc.mqtt


def joynr_request(peer: RawPeer, recipient: str, method: str, params: list[Any],
                  datatypes: list[str], *, sender: str, headers: dict[str, str] | None = None,
                  ttl_ms: int = 5_000, reply_to_gbid: str = "joynrdefaultgbid"
                  ) -> tuple[Message, str]:
    """A request as a joynr cluster controller sends it: replyTo = its topic (with the GBID
    it knows its backend by, which the receiver replaces with its own)."""
    rid = uuid.uuid4().hex
    return Message(
        type=MessageType.REQUEST, sender=sender, recipient=recipient,
        expiry_date_ms=now_ms() + ttl_ms, body=Request(rid, method, params, datatypes).to_body(),
        reply_to=MqttAddress(reply_to_gbid, peer.topic), custom_headers=headers or {},
    ), rid


def station_request(peer: RawPeer, pair: MqttPair, sender: str, **kwargs: Any
                    ) -> tuple[Message, str, Station]:
    station = Station(f"s-{uuid.uuid4().hex[:8]}", Country.GERMANY, 88.8)
    message, rid = joynr_request(peer, pair.provider_pid, "add_favorite", [to_wire(station)],
                                 ADD_FAVORITE, sender=sender, **kwargs)
    return message, rid, station


def smrf_reply(got: Received, rid: str) -> tuple[Message, Reply]:
    assert got.payload[:2] == SMRF_START, got.payload[:40]
    answer = smrf.decode(got.payload)
    assert answer.type is MessageType.REPLY, answer
    reply = decode_payload(Reply, answer.body)
    assert reply.request_reply_id == rid
    return answer, reply


def smrf_headers(payload: bytes) -> dict[str, str]:
    return dict(smrf.decode_smrf(payload).headers)


@pytest.fixture
async def stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as s:
        yield s


@pytest.fixture
async def broker(stack: AsyncExitStack, tmp_path: Path) -> Mosquitto:
    return await stack.enter_async_context(Mosquitto(tmp_path / "mosquitto"))


# ====================================================================== a joynr CC calls in


async def test_an_smrf_request_at_low_is_answered_in_smrf_at_the_reply_to_low(
        stack: AsyncExitStack, tmp_path: Path, broker: Mosquitto) -> None:
    pair = await start_pair(stack, tmp_path, {GBID: broker.url})  # native backends
    peer = await RawPeer.open(stack, broker.port)
    sender = f"joynr-proxy-{uuid.uuid4().hex[:8]}"
    message, rid, station = station_request(peer, pair, sender, headers={"trace": "t-1"},
                                            reply_to_gbid="the-peers-own-name-of-it")
    await peer.publish(f"{pair.two.own_topic}/low", smrf.encode(message),
                       user_properties=[("c-trace", "t-1")])

    got = await peer.receive(WAIT_S)
    assert got.topic == f"{peer.topic}/low"
    answer, reply = smrf_reply(got, rid)
    assert (reply.error, reply.response) == (None, [True])
    assert (answer.sender, answer.recipient) == (pair.provider_pid, sender)
    assert pair.provider.stations[-1].name == station.name
    # published as joynr's CCs do: QoS 1, the remaining time as expiry interval, the custom
    # headers (echoed from the request) in the frame and as c- user properties
    assert got.qos == 1 and got.expiry_s is not None and 1 <= got.expiry_s <= 5
    assert answer.custom_headers == {"trace": "t-1"}
    assert ("c-trace", "t-1") in got.user_properties
    # the route learned from "re": the peer's topic in the backend it came from
    entry = pair.two.router.route_of(sender)
    assert entry is not None and entry.address == MqttAddress(GBID, peer.topic)
    backend = mqtt_of(pair.two).backends[0]
    # (the peer may receive the answer before the broker's PUBACK reaches the CC, which
    # counts it published then)
    await eventually(lambda: backend.published_joynr == 1, WAIT_S, "the answer acknowledged")
    assert (backend.received_joynr, backend.published_joynr) == (1, 1)
    await peer.nothing_received()


async def test_each_answer_is_in_the_dialect_of_its_request_on_one_backend(
        stack: AsyncExitStack, tmp_path: Path, broker: Mosquitto) -> None:
    """Native and SMRF frames on the same backend, from the same peer topic, in turns."""
    pair = await start_pair(stack, tmp_path, {GBID: broker.url})
    peer = await RawPeer.open(stack, broker.port)
    sender = f"peer-proxy-{uuid.uuid4().hex[:8]}"
    for dialect in ("native", "joynr", "native", "joynr"):
        message, rid, _ = station_request(peer, pair, sender)
        if dialect == "joynr":
            await peer.publish(f"{pair.two.own_topic}/low", smrf.encode(message))
            got = await peer.receive(WAIT_S)
            assert got.topic == f"{peer.topic}/low"
            _, reply = smrf_reply(got, rid)
        else:
            await peer.publish(pair.two.own_topic, encode_frame(message))
            got = await peer.receive(WAIT_S)
            assert got.topic == peer.topic and got.payload[:2] != SMRF_START
            assert got.user_properties == []
            reply = decode_payload(Reply, decode_frame(got.payload).body)
            assert reply.request_reply_id == rid
        assert (reply.error, reply.response) == (None, [True]), dialect
    assert len(pair.provider.stations) == 4
    assert mqtt_of(pair.two).counters == Counter()  # nothing refused


# ====================================================================== this CC speaks joynr


async def test_a_joynr_backend_publishes_requests_as_smrf_at_low_and_gets_smrf_answers(
        stack: AsyncExitStack, tmp_path: Path, broker: Mosquitto) -> None:
    """CC one originates in joynr's dialect, CC two (native) answers in the dialect of the
    request."""
    pair = await start_pair(stack, tmp_path, {GBID: f"{broker.url}?dialect=joynr"},
                            {GBID: broker.url})
    spy = await RawPeer.open(stack, broker.port)
    await spy.subscribe(f"{pair.two.own_topic}/#")
    await spy.subscribe(f"{pair.one.own_topic}/#")
    proxy = await asyncio.wait_for(pair.proxy(), WAIT_S)
    assert await asyncio.wait_for(proxy.add_favorite(Station("FM4", Country.AUSTRIA)), WAIT_S)

    seen: dict[MessageType, Received] = {}
    # (bounded by receive's timeout; messages of two publishers arrive in either order)
    while not {MessageType.REQUEST, MessageType.REPLY} <= seen.keys():
        got = await spy.receive(WAIT_S)
        assert got.payload[:2] == SMRF_START, (got.topic, got.payload[:40])
        seen.setdefault(smrf.decode(got.payload).type, got)
    request, reply = seen[MessageType.REQUEST], seen[MessageType.REPLY]
    assert request.topic == f"{pair.two.own_topic}/low" and request.qos == 1
    # the CC's replyTo (its global address), as joynr's serialized MqttAddress
    assert json.loads(smrf_headers(request.payload)["re"]) == {
        "_typeName": "joynr.system.RoutingTypes.MqttAddress", "brokerUri": GBID,
        "topic": pair.one.own_topic}
    assert reply.topic == f"{pair.one.own_topic}/low"

    # a one-way call with custom headers and BEST_EFFORT: QoS 0, c- user properties, expiry
    one_way = Message(type=MessageType.ONE_WAY, sender="cc-one-internal",
                      recipient=pair.provider_pid, expiry_date_ms=now_ms() + 30_000,
                      body=OneWayRequest("note", ["hello"], NOTE).to_body(),
                      effort=Effort.BEST_EFFORT,
                      custom_headers={"trace": "abc", "empty": "", "gb": GBID})
    assert pair.one.router.route(one_way)
    while True:  # (bounded by receive's timeout)
        got = await spy.receive(WAIT_S)
        if smrf.decode(got.payload).id == one_way.id:
            break
    assert got.topic == f"{pair.two.own_topic}/low" and got.qos == 0
    assert got.user_properties == [("c-trace", "abc"), ("c-gb", GBID)]
    assert got.expiry_s is not None and 28 <= got.expiry_s <= 30
    await eventually(lambda: pair.provider.notes == ["hello"], WAIT_S, "one-way delivered")
    assert mqtt_of(pair.one).counters == Counter() == mqtt_of(pair.two).counters

    # what has no SMRF frame (a header that is no UTF-8) is dropped and counted, nothing else
    bad = Message(type=MessageType.ONE_WAY, sender="cc-one-internal",
                  recipient=pair.provider_pid, expiry_date_ms=now_ms() + 30_000,
                  body=OneWayRequest("note", ["bad"], NOTE).to_body(),
                  custom_headers={"bad": "\ud800"})
    assert pair.one.router.route(bad)
    await eventually(lambda: mqtt_of(pair.one).counters["dropped-unencodable"] == 1, WAIT_S,
                     "the unencodable message dropped")
    assert await asyncio.wait_for(proxy.add_favorite(Station("Oe3", Country.AUSTRIA)), WAIT_S)
    assert pair.provider.notes == ["hello"]


async def test_multicasts_on_a_joynr_backend_go_to_their_topic_without_suffix(
        stack: AsyncExitStack, tmp_path: Path, broker: Mosquitto) -> None:
    pair = await start_pair(stack, tmp_path, {GBID: broker.url},
                            {GBID: f"{broker.url}?dialect=joynr"})
    spy = await RawPeer.open(stack, broker.port)
    await spy.subscribe(f"{pair.provider_pid}/#")
    proxy = await asyncio.wait_for(pair.proxy(), WAIT_S)
    received: asyncio.Queue[Station] = asyncio.Queue()
    await asyncio.wait_for(proxy.new_station.subscribe(received.put_nowait), WAIT_S)
    # (the topic of the broadcast's multicast id: its name as the subscription spelled it)
    await eventually(lambda: mqtt_of(pair.one).multicast_topics(GBID), WAIT_S,
                     "CC one needs the multicast topic")
    (topic,) = mqtt_of(pair.one).multicast_topics(GBID)
    assert topic.startswith(f"{pair.provider_pid}/")
    station = Station("Oe1", Country.AUSTRIA, 92.0)
    for _ in range(20):  # until CC one's subscription took (its SUBACK is not awaited)
        pair.provider.fire("new_station", station)
        try:
            assert await asyncio.wait_for(received.get(), 0.5) == station
            break
        except TimeoutError:
            continue
    published: list[Received] = []
    while not any(got.topic == topic for got in published):  # (bounded by receive's timeout)
        published.append(await spy.receive(WAIT_S))
    for got in published:
        assert not got.topic.endswith("/low"), got.topic
        assert got.payload[:2] == SMRF_START
        multicast = smrf.decode(got.payload)
        assert multicast.type is MessageType.MULTICAST and multicast.recipient == got.topic
    assert mqtt_of(pair.one).backends[0].received_joynr >= 1


# ====================================================================== hostile SMRF


def bad_frames() -> list[tuple[str, bytes]]:
    """(reason, payload): SMRF frames a CC must refuse, with the reason it must give."""
    valid = Message(MessageType.REQUEST, "hostile", "anyone", now_ms() + 60_000, b"\x90",
                    reply_to=MqttAddress(GBID, "peer/x"))
    frame = smrf.encode(valid)
    encrypted, signed = bytearray(frame), bytearray(frame)
    encrypted[8 + 58] = 1  # isEncrypted of the writer's fixed layout
    signed[8 + 57] = 1  # isSigned

    def made(*headers: tuple[str, str]) -> bytes:
        return smrf.encode_smrf(smrf.SmrfFrame("hostile", "anyone", now_ms() + 60_000,
                                               headers=headers, body=b"\x90"))

    return [
        ("truncated", frame[:20]),
        ("truncated", SMRF_START),
        ("bad-size", frame + b"\x00"),
        ("bad-flatbuffer", SMRF_START + b"\x00\x00\x10\x00\x00\x00" + b"\xff" * 16),
        ("bad-flatbuffer", SMRF_START + b"\x00\x00" + (len(frame) - 8).to_bytes(4, "little")
         + bytes(len(frame) - 8)),
        ("encrypted", bytes(encrypted)),
        ("signed", bytes(signed)),
        ("missing-field", made(("id", "m-1"))),
        ("unknown-type", made(("t", "zz"), ("id", "m-2"))),
        ("bad-reply-to", made(("t", "rq"), ("id", "m-3"), ("re", "{not json"))),
        ("bad-reply-to", made(("t", "rq"), ("id", "m-4"), ("re", '{"_typeName":"x"}'))),
        ("no-reply-to", made(("t", "rq"), ("id", "m-5"))),
        ("oversized", smrf.encode(Message(MessageType.ONE_WAY, "hostile", "anyone",
                                          now_ms() + 60_000, bytes(LIMIT),
                                          compressed=False), compress_above=None)),
    ]


async def test_hostile_smrf_frames_are_refused_with_their_reason_and_the_backend_stays_up(
        stack: AsyncExitStack, tmp_path: Path, broker: Mosquitto,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="pyjoynr.transports.mqtt.transport")
    pair = await start_pair(stack, tmp_path, {GBID: broker.url},
                            mqtt__max_message_bytes=str(LIMIT))
    peer = await RawPeer.open(stack, broker.port)
    mqtt = mqtt_of(pair.two)
    for reason, payload in bad_frames():
        # (the codec gives this reason: the CC must count exactly that)
        before, received = mqtt.counters.copy(), mqtt.received
        await peer.publish(f"{pair.two.own_topic}/low", payload)
        await eventually(lambda: mqtt.received == received + 1, WAIT_S,  # noqa: B023
                         f"{reason} frame received")
        assert mqtt.counters - before == Counter({reason: 1}), reason
    lines = [r.getMessage() for r in caplog.records
             if r.name == "pyjoynr.transports.mqtt.transport"]
    assert any("refused (encrypted)" in line and "SMRF frame" in line for line in lines), lines
    await peer.nothing_received()
    # still connected (never reconnected) and serving: a valid SMRF request is answered
    assert mqtt.connection_count(GBID) == 1
    message, rid, _ = station_request(peer, pair, "peer-proxy")
    await peer.publish(f"{pair.two.own_topic}/low", smrf.encode(message))
    _, reply = smrf_reply(await peer.receive(WAIT_S), rid)
    assert reply.response == [True]
    assert "hostile" not in dict(pair.two.router.routing_entries())


# ====================================================================== the GCD


def gcd_entry(pid: str) -> GlobalDiscoveryEntry:
    return GlobalDiscoveryEntry(
        Version(1, 0), "vehicle", "test/Radio", pid, ProviderQos(scope=ProviderScope.GLOBAL),
        now_ms(), now_ms() + 60_000, "", address_to_json(MqttAddress(GBID, "joynr/cc/cc-x")))


async def test_the_gcd_takes_both_joynr_topics_and_answers_in_smrf(
        stack: AsyncExitStack, tmp_path: Path, broker: Mosquitto) -> None:
    service = await stack.enter_async_context(GcdService(GcdSettings(
        gbid=GBID, broker_url=broker.url, sqlite_path=tmp_path / "gcd.sqlite",
        mqtt_client=mqtt_clients.current())))
    await service.mqtt.wait_connected(WAIT_S)
    peer = await RawPeer.open(stack, broker.port)
    java_topic = f"{GCD_TOPIC}/low"
    cpp_topic = f"{GCD_TOPIC}/low/{GCD_PARTICIPANT_ID}/low"
    sender = f"joynr-gcd-client-{uuid.uuid4().hex[:8]}"
    pid = f"p-{uuid.uuid4().hex[:8]}"
    add = GCD.methods["add_in_backends"]
    lookup = GCD.methods["lookup_participant_in"]

    # add through Java's topic, look up through C++'s, then the other way round
    calls = [
        (java_topic, add.name, [to_wire(gcd_entry(pid)), [GBID]], add.param_datatypes),
        (cpp_topic, lookup.name, [pid, [GBID]], lookup.param_datatypes),
        (cpp_topic, add.name, [to_wire(gcd_entry(pid + "-2")), [GBID]], add.param_datatypes),
        (java_topic, lookup.name, [pid + "-2", [GBID]], lookup.param_datatypes),
    ]
    for topic, method, params, datatypes in calls:
        message, rid = joynr_request(peer, GCD_PARTICIPANT_ID, method, params, datatypes,
                                     sender=sender, headers={"gb": GBID})
        await peer.publish(topic, smrf.encode(message), user_properties=[("c-gb", GBID)])
        got = await peer.receive(WAIT_S)
        assert got.topic == f"{peer.topic}/low", topic
        _, reply = smrf_reply(got, rid)
        assert reply.error is None, (topic, reply.error)
        if method == lookup.name:
            (found,) = reply.response or [None]
            entry = from_wire(found, GlobalDiscoveryEntry, "lookup result")
            assert entry.participant_id == params[0], found
    assert service.mqtt.backends[0].received_joynr == 4
    assert service.mqtt.counters == Counter()


# ====================================================================== gb: the GCD's backend


async def test_a_gcd_call_goes_to_the_backend_its_gb_header_names(
        stack: AsyncExitStack, tmp_path: Path) -> None:
    g1, g2 = "gbid-one", "gbid-two"
    brokers = {g: await stack.enter_async_context(Mosquitto(tmp_path / g)) for g in (g1, g2)}
    cc = await stack.enter_async_context(ClusterController(mqtt_cc_config(
        tmp_path / "cc", f"cc-gb-{uuid.uuid4().hex[:8]}",
        {g1: brokers[g1].url, g2: brokers[g2].url}, discovery__gcd="false")))
    mqtt = mqtt_of(cc)
    await mqtt.wait_connected(WAIT_S)
    # the GCD's entry as provisioned (in the default backend) and another global participant
    cc.router.add_route(GCD_PARTICIPANT_ID, MqttAddress(g1, GCD_TOPIC),
                        is_globally_visible=True, is_sticky=True)
    cc.router.add_route("somebody", MqttAddress(g1, "elsewhere/somebody"),
                        is_globally_visible=True)
    spies = {g: await RawPeer.open(stack, brokers[g].port) for g in (g1, g2)}
    for spy in spies.values():
        await spy.subscribe(f"{GCD_TOPIC}/#")
        await spy.subscribe("elsewhere/#")

    def call(recipient: str, headers: dict[str, str]) -> Message:
        return Message(MessageType.ONE_WAY, "cc-internal", recipient, now_ms() + 3_000,
                       OneWayRequest("touch", [], []).to_body(), custom_headers=headers)

    async def arrives_at(gbid: str, message: Message, topic: str) -> None:
        got = await spies[gbid].receive(WAIT_S)
        assert got.topic == topic and decode_frame(got.payload).id == message.id
        await spies[g1 if gbid == g2 else g2].nothing_received()

    for gbid in (g2, g1):
        message = call(GCD_PARTICIPANT_ID, {"gb": gbid})
        assert cc.router.route(message)
        await arrives_at(gbid, message, GCD_TOPIC)
    message = call(GCD_PARTICIPANT_ID, {})  # no header: the provisioned address
    cc.router.route(message)
    await arrives_at(g1, message, GCD_TOPIC)
    message = call("somebody", {"gb": g2})  # only calls to the GCD follow the header
    cc.router.route(message)
    await arrives_at(g1, message, "elsewhere/somebody")

    before = mqtt.counters["unknown-gbid"]
    cc.router.route(call(GCD_PARTICIPANT_ID, {"gb": "no-such-gbid"}))
    await eventually(lambda: mqtt.counters["unknown-gbid"] > before, WAIT_S,
                     "unknown GBID refused")
    assert mqtt.counters["unknown-gbid"] == before + 1
    for spy in spies.values():
        await spy.nothing_received()


async def gcd_and_cc(stack: AsyncExitStack, tmp_path: Path, broker: Mosquitto, *,
                     dialect: str) -> tuple[GcdService, ClusterController]:
    service = await stack.enter_async_context(GcdService(GcdSettings(
        gbid=GBID, broker_url=broker.url, sqlite_path=tmp_path / "gcd.sqlite",
        mqtt_client=mqtt_clients.current())))
    await service.mqtt.wait_connected(WAIT_S)
    cc = await stack.enter_async_context(ClusterController(mqtt_cc_config(
        tmp_path / "cc", f"cc-{uuid.uuid4().hex[:8]}", {GBID: broker.url},
        mqtt__dialect=dialect)))
    await mqtt_of(cc).wait_connected(WAIT_S)
    return service, cc


async def test_a_joynr_dialect_cc_and_the_gcd_talk_smrf(
        stack: AsyncExitStack, tmp_path: Path, broker: Mosquitto) -> None:
    service, cc = await gcd_and_cc(stack, tmp_path, broker, dialect="joynr")
    spy = await RawPeer.open(stack, broker.port)
    await spy.subscribe(f"{GCD_TOPIC}/#")
    await spy.subscribe(f"{cc.own_topic}/#")
    link = cc.gcd_link
    assert link is not None
    with pytest.raises(ApplicationError) as raised:
        await link.lookup_participant("nobody", [GBID])
    assert raised.value.error == "NO_ENTRY_FOR_PARTICIPANT"
    # (removeStale of the CC's start may come and go too; messages of two publishers arrive
    # in either order)
    seen: set[MessageType] = set()
    while len(seen) < 2:  # (bounded by receive's timeout)
        got = await spy.receive(WAIT_S)
        assert got.topic in (f"{GCD_TOPIC}/low", f"{cc.own_topic}/low"), got.topic
        assert got.payload[:2] == SMRF_START
        seen.add(smrf.decode(got.payload).type)
    assert seen == {MessageType.REQUEST, MessageType.REPLY}
    assert service.mqtt.backends[0].received_joynr >= 1


async def test_the_ccs_gcd_calls_carry_the_gb_header(
        stack: AsyncExitStack, tmp_path: Path, broker: Mosquitto) -> None:
    _, cc = await gcd_and_cc(stack, tmp_path, broker, dialect="joynr")
    spy = await RawPeer.open(stack, broker.port)
    await spy.subscribe(f"{GCD_TOPIC}/#")
    link = cc.gcd_link
    assert link is not None
    with pytest.raises(ApplicationError):
        await link.lookup_participant("nobody", [GBID])
    while True:  # (bounded by receive's timeout; removeStale of the CC's start may come too)
        request = await spy.receive(WAIT_S)
        if b"nobody" in request.payload:
            break
    assert smrf.decode(request.payload).custom_headers.get("gb") == GBID
    assert ("c-gb", GBID) in request.user_properties
