"""libjoynr runtimes in joynr's dialect (``LibjoynrConfig(dialect="joynr")``), on real websocket
connections to a real cluster controller of this project, which rewrites nothing of what they
send.

What crosses the cluster controller is read at its router's audit hook (:class:`Wire`): every
message a transport accepted, with its envelope and body as they travel. A message that came in
an SMRF frame keeps that frame (``raw_smrf``), one that came in a native frame keeps that one
(``raw``), so the frame dialect of what a runtime sent is seen there too.

Checked: joynr's start sequence (``addNextHop`` of the routing proxy's own participantId, then
``getReplyToAddress``, then the discovery proxy's hop) and the native one unchanged; system calls
as SMRF frames with JSON bodies; calls, attributes, modelled errors, broadcasts with partitions
(only ``addMulticastReceiver``: no ``mrq``, no ``srp``, no ``sst``) and unregistering between
runtimes of both dialects; the replyTo only on requests to providers that are not local (two
cluster controllers over MQTT); reconnects (joynr's init frame and the start sequence again,
then every hop, receiver and provider registered again).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import pytest

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.libjoynr import (
    ApplicationError,
    JoynrTimeoutError,
    LibjoynrConfig,
    LibjoynrRuntime,
    ProviderQos,
    ProviderScope,
    connect,
)
from pyjoynr.libjoynr.advanced import (
    MessageNotSentError,
    ProviderRuntimeError,
    WebSocketClientSettings,
)
from pyjoynr.programming.system_interfaces import (
    DEFAULT_DISCOVERY_PARTICIPANT_ID,
    DEFAULT_ROUTING_PARTICIPANT_ID,
)
from pyjoynr.runtime.addresses import MqttAddress
from pyjoynr.runtime.bodies import BodyFormat, format_of
from pyjoynr.runtime.messages import Message, MessageType
from pyjoynr.runtime.payloads import Request, decode_payload
from pyjoynr.testing.brokers import Mosquitto
from pyjoynr.testing.cluster import eventually
from pyjoynr.transports.websocket.settings import JOYNR, NATIVE
from tests.support.mqtt_cluster import GBID, mqtt_cc_config, write_provisioning
from tests.support.radio import Country, FavoriteError, Radio, RadioProvider, Station
from tests.support.wire import Wire

pytestmark = pytest.mark.network

WAIT_S = 5.0
JOYNR_CONFIG = LibjoynrConfig(dialect=JOYNR)
MSGPACK, JSON = BodyFormat.MSGPACK, BodyFormat.JSON
WS_CLIENT_TYPE = "joynr.system.RoutingTypes.WebSocketClientAddress"
SYSTEM_IDS = (DEFAULT_ROUTING_PARTICIPANT_ID, DEFAULT_DISCOVERY_PARTICIPANT_ID)

Start = Callable[..., Awaitable[LibjoynrRuntime]]


def system_calls(wire: Wire, runtime: LibjoynrRuntime) -> list[Message]:
    """``runtime``'s requests to the cluster controller's Routing and Discovery."""
    return [m for m in wire.sent_by(runtime.client_id)
            if m.type is MessageType.REQUEST and m.recipient in SYSTEM_IDS]


def call_of(message: Message) -> tuple[str, str, list[Any]]:
    """(recipient, methodName, params) of a request with a JSON body."""
    assert format_of(message.body) is JSON, message.body[:80]
    body = json.loads(message.body)
    assert body["_typeName"] == "joynr.Request"
    return message.recipient, body["methodName"], body["params"]


def assert_smrf(messages: list[Message]) -> None:
    """Each message arrived in an SMRF frame (not in a native frame)."""
    assert messages
    for m in messages:
        assert m.raw_smrf is not None and m.raw is None, m.describe()


async def started(runtimes: Start, dialect: str) -> LibjoynrRuntime:
    config = JOYNR_CONFIG if dialect == JOYNR else LibjoynrConfig()
    return await runtimes(config=config)


# ====================================================================== settings


def test_the_dialect_setting_is_checked_and_sets_the_websocket_dialect() -> None:
    assert LibjoynrConfig().dialect == NATIVE
    assert LibjoynrConfig().websocket_settings.dialect == NATIVE
    with pytest.raises(ValueError, match=r"dialect must be one of 'native', 'joynr', got 'smrf'"):
        LibjoynrConfig(dialect="smrf")
    with pytest.raises(ValueError, match="multicast_body must be one of 'json', 'msgpack'"):
        LibjoynrConfig(multicast_body="cbor")
    # joynr's dialect brings joynr's frames, whatever the websocket settings say ...
    config = LibjoynrConfig(dialect=JOYNR, websocket=WebSocketClientSettings(max_queued=5))
    assert config.websocket_settings == WebSocketClientSettings(max_queued=5, dialect=JOYNR)
    # ... and joynr's frames alone stay possible (with this project's cluster controller)
    frames_only = LibjoynrConfig(websocket=WebSocketClientSettings(dialect=JOYNR))
    assert frames_only.websocket_settings.dialect == JOYNR and not frames_only.joynr_dialect
    assert LibjoynrConfig(multicast_body="msgpack").multicast_body_format is MSGPACK
    assert LibjoynrConfig().multicast_body_format is JSON


async def test_the_runtime_takes_the_dialect_and_the_multicast_body(cc, runtimes) -> None:
    joynr = await runtimes(config=LibjoynrConfig(dialect=JOYNR, multicast_body="msgpack"))
    native = await runtimes()
    assert (joynr.core.joynr_dialect, joynr.core.multicast_body) == (True, MSGPACK)
    assert (native.core.joynr_dialect, native.core.multicast_body) == (False, JSON)
    remote = joynr.core.remote
    assert (remote.routing.body_format, remote.discovery.body_format) == (JSON, JSON)
    assert native.core.remote.routing.body_format is MSGPACK
    dialects = {s.address.id: s.dialect for s in cc.websocket.client_summaries()}
    assert dialects == {joynr.client_id: JOYNR, native.client_id: NATIVE}


# ====================================================================== start sequence


async def test_the_start_sequence_is_joynrs(cc, runtimes) -> None:
    """addNextHop of the routing proxy's own participantId (with the runtime's
    WebSocketClientAddress, not globally visible), then getReplyToAddress, then the
    discovery proxy's hop: JSON bodies in SMRF frames."""
    wire = Wire(cc)
    runtime = await runtimes(config=JOYNR_CONFIG)
    routing, discovery = runtime.core.remote.routing, runtime.core.remote.discovery
    own = {"_typeName": WS_CLIENT_TYPE, "id": runtime.client_id}
    sent = wire.sent_by(runtime.client_id)
    assert_smrf(sent)
    assert [call_of(m) for m in sent] == [
        (DEFAULT_ROUTING_PARTICIPANT_ID, "addNextHop", [routing.participant_id, own, False]),
        (DEFAULT_ROUTING_PARTICIPANT_ID, "getReplyToAddress", []),
        (DEFAULT_ROUTING_PARTICIPANT_ID, "addNextHop", [discovery.participant_id, own, False]),
    ]
    (first, second, _) = sent
    assert json.loads(first.body)["paramDatatypes"] == [
        "String", WS_CLIENT_TYPE, "Boolean"]
    assert first.sender == routing.participant_id and first.reply_to is None
    assert second.sender == routing.participant_id
    # the answers come back in JSON, the first to the participant it made routable
    replies = wire.kinds(MessageType.REPLY, recipient=routing.participant_id)
    assert len(replies) == 3 and all(format_of(r.body) is JSON for r in replies)
    assert json.loads(replies[1].body)["response"] == [""]  # this CC has no global address
    assert runtime.core.reply_to_address is None


async def test_the_native_start_sequence(cc, runtimes) -> None:
    """Both system proxies routable first (the addNextHop overload of the runtime's
    WebSocketClientAddress, the struct as its msgpack map of fields), then the global
    address."""
    wire = Wire(cc)
    runtime = await runtimes()
    sent = wire.sent_by(runtime.client_id)
    assert sent and all(m.raw is not None and format_of(m.body) is MSGPACK for m in sent)
    calls = [(m.recipient, decode_payload(Request, m.body)) for m in sent]
    routing, discovery = runtime.core.remote.routing, runtime.core.remote.discovery
    own = {"id": runtime.client_id}
    assert [(r, c.method_name, c.params) for r, c in calls] == [
        (DEFAULT_ROUTING_PARTICIPANT_ID, "add_next_hop", [routing.participant_id, own, False]),
        (DEFAULT_ROUTING_PARTICIPANT_ID, "add_next_hop", [discovery.participant_id, own, False]),
        (DEFAULT_ROUTING_PARTICIPANT_ID, "get_global_address", []),
    ]
    assert calls[0][1].param_datatypes == ["String", WS_CLIENT_TYPE, "Boolean"]


async def test_a_reply_to_address_read_at_start_is_parsed(tmp_path) -> None:
    """getReplyToAddress answers the serialized address: the runtime parses it."""
    async with AsyncExitStack() as stack:
        broker = await stack.enter_async_context(Mosquitto(tmp_path / "mosquitto"))
        cc = await stack.enter_async_context(ClusterController(mqtt_cc_config(
            tmp_path / "cc", "cc-reply-to", {GBID: broker.url})))
        runtime = await connect(cc.websocket_address.url, config=JOYNR_CONFIG,
                                timeout_ms=int(WAIT_S * 1000))
        stack.push_async_callback(runtime.core.stop)
        assert runtime.core.reply_to_address == MqttAddress(GBID, cc.own_topic)
        assert runtime.core.reply_to_address == cc.global_address


# ====================================================================== between runtimes


@pytest.mark.parametrize(("provider_dialect", "consumer_dialect"),
                         [(JOYNR, JOYNR), (NATIVE, JOYNR), (JOYNR, NATIVE)])
async def test_calls_attributes_and_errors(cc, runtimes, provider_dialect: str,
                                           consumer_dialect: str) -> None:
    wire = Wire(cc)
    provider_rt = await started(runtimes, provider_dialect)
    consumer_rt = await started(runtimes, consumer_dialect)
    provider = RadioProvider()
    pid = await provider_rt.register_provider("joynr.dialect", provider)
    proxy = await consumer_rt.build_proxy(Radio, "joynr.dialect", ttl_ms=3_000)
    assert proxy.provider_is_local and proxy.body_format is MSGPACK  # a provider of ours

    fm4 = Station("FM4", Country.AUSTRIA, 103.8)
    assert await proxy.add_favorite(fm4) is True
    assert await proxy.favorites() == [fm4]
    assert await proxy.current_station.get() == "FM4"
    await proxy.current_station.set("Oe1")
    assert provider.attribute_values["current_station"] == "Oe1"
    assert await proxy.volume.get() == 7
    with pytest.raises(ApplicationError) as info:
        await proxy.remove_favorite("nothing")
    assert info.value.error == FavoriteError.NOT_FOUND.name
    with pytest.raises(ProviderRuntimeError, match="the tuner broke"):
        await proxy.crash()
    await proxy.note("hello")
    await asyncio.wait_for(provider.noted.wait(), WAIT_S)

    seen: asyncio.Queue[str] = asyncio.Queue()
    subscription = await proxy.current_station.subscribe(seen.put_nowait)
    assert await asyncio.wait_for(seen.get(), WAIT_S) == "Oe1"
    provider.set_attribute("current_station", "Radio Wien")
    assert await asyncio.wait_for(seen.get(), WAIT_S) == "Radio Wien"
    await subscription.unsubscribe()
    publisher = provider.registrations[0].publisher
    await eventually(lambda: not publisher.subscription_ids, what="the provider's stop")

    # each runtime's frames are those of its dialect
    for runtime, dialect in ((provider_rt, provider_dialect), (consumer_rt, consumer_dialect)):
        sent = wire.sent_by(runtime.client_id)
        if dialect == JOYNR:
            assert_smrf(sent)
        else:
            assert sent and all(m.raw is not None for m in sent)
    # a local provider: joynr's dialect puts no replyTo on anything (and this CC has none)
    assert all(m.reply_to is None for m in wire.sent_by(consumer_rt.client_id))
    assert cc.router.has_route(pid)


@pytest.mark.parametrize(("provider_dialect", "consumer_dialect"),
                         [(JOYNR, JOYNR), (NATIVE, JOYNR), (JOYNR, NATIVE)])
async def test_broadcasts_with_partitions(cc, runtimes, provider_dialect: str,
                                          consumer_dialect: str) -> None:
    """A consumer in joynr's dialect subscribes with Routing.addMulticastReceiver alone and
    the subscription is complete then (no mrq, no srp); unsubscribing removes the receiver
    and sends no stop. A native consumer still sends mrq (and gets its srp)."""
    wire = Wire(cc)
    provider_rt = await started(runtimes, provider_dialect)
    consumer_rt = await started(runtimes, consumer_dialect)
    provider = RadioProvider()
    pid = await provider_rt.register_provider("joynr.dialect", provider)
    proxy = await consumer_rt.build_proxy(Radio, "joynr.dialect", ttl_ms=3_000)
    europe: asyncio.Queue[Station] = asyncio.Queue()
    anywhere: asyncio.Queue[Station] = asyncio.Queue()
    eu_one = await proxy.new_station.subscribe(europe.put_nowait, partitions=["eu", "+"])
    await proxy.new_station.subscribe(anywhere.put_nowait, partitions=["*"])
    receivers = cc.router.multicast_receivers
    assert receivers.receivers_for(f"{pid}/newStation/eu/de") == {proxy.participant_id}
    assert receivers.receivers_for(f"{pid}/newStation/us") == {proxy.participant_id}

    x = Station("X", Country.GERMANY, 99.9)
    provider.fire("new_station", x, partitions=["eu", "de"])
    assert await asyncio.wait_for(europe.get(), WAIT_S) == x
    assert await asyncio.wait_for(anywhere.get(), WAIT_S) == x
    y = Station("Y", Country.AUSTRIA)
    provider.fire("new_station", y, partitions=["us"])
    assert await asyncio.wait_for(anywhere.get(), WAIT_S) == y

    assert len(receivers) == 2
    await eu_one.unsubscribe()
    assert len(receivers) == 1  # the receiver of "*" only (removed before unsubscribe returns)
    z = Station("Z", Country.GERMANY)
    provider.fire("new_station", z, partitions=["eu", "fr"])
    assert await asyncio.wait_for(anywhere.get(), WAIT_S) == z
    await asyncio.sleep(0.2)
    assert europe.empty() and anywhere.empty()  # once each, and none after unsubscribing

    own = proxy.participant_id
    if consumer_dialect == JOYNR:
        registrations = [call_of(m)[1:] for m in system_calls(wire, consumer_rt)
                         if b"MulticastReceiver" in m.body]
        assert registrations == [
            ("addMulticastReceiver", [f"{pid}/newStation/eu/+", own, pid]),
            ("addMulticastReceiver", [f"{pid}/newStation/*", own, pid]),
            ("removeMulticastReceiver", [f"{pid}/newStation/eu/+", own, pid]),
        ]
        assert wire.kinds(MessageType.MULTICAST_SUBSCRIPTION_REQUEST) == []
        assert wire.kinds(MessageType.SUBSCRIPTION_REPLY) == []
        assert wire.kinds(MessageType.SUBSCRIPTION_STOP) == []
    else:
        assert len(wire.kinds(MessageType.MULTICAST_SUBSCRIPTION_REQUEST, sender=own)) == 2
        assert len(wire.kinds(MessageType.SUBSCRIPTION_REPLY, recipient=own)) == 2
        assert len(wire.kinds(MessageType.SUBSCRIPTION_STOP, sender=own)) == 1
    # the provider's multicasts: JSON by default, in either dialect
    multicasts = wire.kinds(MessageType.MULTICAST, sender=pid)
    assert multicasts and all(format_of(m.body) is JSON for m in multicasts)


async def test_msgpack_multicasts_when_configured(cc, runtimes) -> None:
    wire = Wire(cc)
    provider_rt = await runtimes(config=LibjoynrConfig(dialect=JOYNR, multicast_body="msgpack"))
    consumer_rt = await runtimes(config=JOYNR_CONFIG)
    provider = RadioProvider()
    pid = await provider_rt.register_provider("fleet", provider)
    proxy = await consumer_rt.build_proxy(Radio, "fleet", ttl_ms=3_000)
    seen: asyncio.Queue[Station] = asyncio.Queue()
    await proxy.new_station.subscribe(seen.put_nowait)
    y = Station("Y", Country.AUSTRIA)
    provider.fire("new_station", y)
    assert await asyncio.wait_for(seen.get(), WAIT_S) == y
    (multicast,) = wire.kinds(MessageType.MULTICAST, sender=pid)
    assert format_of(multicast.body) is MSGPACK and multicast.raw_smrf is not None


async def test_system_calls_are_smrf_frames_with_json_bodies(cc, runtimes) -> None:
    """Registering, discovering, subscribing, unsubscribing, unregistering and closing: every
    call to the Routing and Discovery providers, in joynr's JSON, each answered in JSON."""
    wire = Wire(cc)
    provider_rt, consumer_rt = await runtimes(config=JOYNR_CONFIG), await runtimes(
        config=JOYNR_CONFIG)
    provider = RadioProvider()
    pid = await provider_rt.register_provider(
        "joynr.dialect", provider, qos=ProviderQos(scope=ProviderScope.LOCAL))
    proxy = await consumer_rt.build_proxy(Radio, "joynr.dialect", ttl_ms=3_000)
    subscription = await proxy.new_station.subscribe(lambda station: None, partitions=["a"])
    await subscription.unsubscribe()
    await proxy.close()
    await provider_rt.unregister_provider(pid)
    assert not cc.router.has_route(pid)
    assert not [e for e in cc.discovery.entries() if e.participant_id == pid]

    provider_calls = [call_of(m)[:2] for m in system_calls(wire, provider_rt)]
    assert provider_calls[3:] == [
        (DEFAULT_ROUTING_PARTICIPANT_ID, "addNextHop"),
        (DEFAULT_DISCOVERY_PARTICIPANT_ID, "add"),
        (DEFAULT_DISCOVERY_PARTICIPANT_ID, "remove"),
        (DEFAULT_ROUTING_PARTICIPANT_ID, "removeNextHop"),
    ]
    add = json.loads(system_calls(wire, provider_rt)[4].body)
    assert add["paramDatatypes"] == ["joynr.types.DiscoveryEntry", "Boolean", "String[]"]
    assert add["params"][0]["participantId"] == pid
    consumer_calls = [call_of(m)[:2] for m in system_calls(wire, consumer_rt)]
    assert consumer_calls[3:] == [
        (DEFAULT_DISCOVERY_PARTICIPANT_ID, "lookup"),
        (DEFAULT_ROUTING_PARTICIPANT_ID, "addNextHop"),
        (DEFAULT_ROUTING_PARTICIPANT_ID, "addMulticastReceiver"),
        (DEFAULT_ROUTING_PARTICIPANT_ID, "removeMulticastReceiver"),
        (DEFAULT_ROUTING_PARTICIPANT_ID, "removeNextHop"),
    ]
    lookup = json.loads(system_calls(wire, consumer_rt)[3].body)
    assert lookup["paramDatatypes"] == [
        "String[]", "String", "joynr.types.DiscoveryQos", "String[]"]
    # the proxy of a local provider is not globally visible
    assert call_of(system_calls(wire, consumer_rt)[4])[2][2] is False
    for runtime in (provider_rt, consumer_rt):
        calls = system_calls(wire, runtime)
        assert_smrf(calls)
        answered = {m.sender for m in calls}
        replies = [m for m in wire.kinds(MessageType.REPLY) if m.recipient in answered]
        assert len(replies) == len(calls)
        assert all(format_of(r.body) is JSON for r in replies)


# ====================================================================== replyTo


async def test_requests_to_providers_that_are_not_local_carry_the_reply_to(tmp_path) -> None:
    """Two cluster controllers over MQTT: CC "one" knows the provider of CC "two" from its
    provisioning (not local). A joynr-dialect proxy in a runtime of CC one puts CC one's
    reply-to address on its requests (rq, arq) and nothing else; towards the same provider
    from a runtime of CC two (local) it puts none. The native dialect is unchanged: every
    message but one-way requests carries it."""
    async with AsyncExitStack() as stack:
        broker = await stack.enter_async_context(Mosquitto(tmp_path / "mosquitto"))
        two = await stack.enter_async_context(ClusterController(mqtt_cc_config(
            tmp_path / "two", "cc-two-reply-to", {GBID: broker.url})))
        domain, pid = "reply.to", "radio-reply-to"
        provisioning = write_provisioning(tmp_path / "provisioning.toml", {
            "participant_id": pid, "domain": domain, "interface": "test/Radio",
            "version": "1.2", "gbid": GBID, "topic": two.own_topic})
        one = await stack.enter_async_context(ClusterController(mqtt_cc_config(
            tmp_path / "one", "cc-one-reply-to", {GBID: broker.url},
            discovery__provisioning_file=str(provisioning))))
        for cc in (one, two):
            assert cc.mqtt is not None
            await cc.mqtt.wait_connected(10)
        wire = Wire(one)

        async def runtime(cc: ClusterController, config: LibjoynrConfig) -> LibjoynrRuntime:
            started = await connect(cc.websocket_address.url, config=config, timeout_ms=10_000)
            stack.push_async_callback(started.core.stop)
            return started

        provider_rt = await runtime(two, JOYNR_CONFIG)
        provider = RadioProvider()
        await provider_rt.register_provider(domain, provider, participant_id=pid,
                                            qos=ProviderQos(scope=ProviderScope.GLOBAL))
        remote_rt = await runtime(one, JOYNR_CONFIG)
        local_rt = await runtime(two, JOYNR_CONFIG)
        native_rt = await runtime(one, LibjoynrConfig())
        assert remote_rt.core.reply_to_address == one.global_address
        assert local_rt.core.reply_to_address == two.global_address

        async def exercise(rt: LibjoynrRuntime, wire: Wire, *, local: bool) -> str:
            proxy = await rt.build_proxy(Radio, domain, ttl_ms=5_000)
            assert proxy.provider_is_local is local
            assert await proxy.current_station.get() == "FM4"
            await proxy.note(f"from {rt.client_id}")
            seen: asyncio.Queue[str] = asyncio.Queue()
            subscription = await proxy.current_station.subscribe(seen.put_nowait)
            assert await asyncio.wait_for(seen.get(), 10) == "FM4"
            await subscription.unsubscribe()
            await eventually(lambda: wire.kinds(MessageType.SUBSCRIPTION_STOP,
                                                sender=proxy.participant_id),
                             what="the subscription stop")
            return proxy.participant_id

        remote = await exercise(remote_rt, wire, local=False)
        carried = {(m.type, m.reply_to) for m in wire.sent_by(remote_rt.client_id)
                   if m.sender == remote}
        assert carried == {(MessageType.REQUEST, one.global_address),
                           (MessageType.SUBSCRIPTION_REQUEST, one.global_address),
                           (MessageType.ONE_WAY, None), (MessageType.SUBSCRIPTION_STOP, None)}
        # its hop at CC one: globally visible (its provider is not local)
        entry = one.router.route_of(remote)
        assert entry is not None and entry.is_globally_visible
        # system calls (to local providers) carry none
        assert {m.reply_to for m in system_calls(wire, remote_rt)} == {None}

        native = await exercise(native_rt, wire, local=False)
        carried = {(m.type, m.reply_to) for m in wire.sent_by(native_rt.client_id)
                   if m.sender == native}
        assert carried == {(MessageType.REQUEST, one.global_address),
                           (MessageType.SUBSCRIPTION_REQUEST, one.global_address),
                           (MessageType.ONE_WAY, None),
                           (MessageType.SUBSCRIPTION_STOP, one.global_address)}

        wire_two = Wire(two)
        local = await exercise(local_rt, wire_two, local=True)
        sent = [m for m in wire_two.sent_by(local_rt.client_id) if m.sender == local]
        assert {m.type for m in sent} == {
            MessageType.REQUEST, MessageType.SUBSCRIPTION_REQUEST, MessageType.ONE_WAY,
            MessageType.SUBSCRIPTION_STOP}
        assert {m.reply_to for m in sent} == {None}
        await eventually(lambda: len(provider.notes) == 3, timeout_s=10, what="the notes")


# ====================================================================== reconnect


async def test_after_a_reconnect_the_start_sequence_and_registrations_again(cc, runtimes
                                                                            ) -> None:
    """A reconnect sends joynr's init frame again (the connection is a joynr one again), runs
    the start sequence again and registers every hop, receiver and provider again: this CC,
    like joynr's C++ one, forgets the routes of a closed connection."""
    provider_rt = await runtimes(config=JOYNR_CONFIG)
    consumer_rt = await runtimes(config=JOYNR_CONFIG)
    provider = RadioProvider()
    pid = await provider_rt.register_provider("joynr.dialect", provider)
    proxy = await consumer_rt.build_proxy(Radio, "joynr.dialect", ttl_ms=3_000)
    seen: asyncio.Queue[Station] = asyncio.Queue()
    await proxy.new_station.subscribe(seen.put_nowait, partitions=["eu"])

    async def reconnect(runtime: LibjoynrRuntime, own: str) -> None:
        wire = Wire(cc)
        await runtime.core.transport.stop()
        # the CC forgets the routes of the closed connection
        await eventually(lambda: runtime.client_id not in cc.websocket.clients
                         and not cc.router.has_route(own), what="the connection gone")
        await runtime.core.transport.start()
        await eventually(lambda: runtime.core.transport.connections == 2
                         and runtime.client_id in cc.websocket.clients, what="reconnected")
        dialects = {s.address.id: s.dialect for s in cc.websocket.client_summaries()}
        assert dialects[runtime.client_id] == JOYNR
        await eventually(lambda: cc.router.has_route(pid)
                         and cc.router.has_route(proxy.participant_id)
                         and cc.router.multicast_receivers.receivers_for(
                             f"{pid}/newStation/eu") == {proxy.participant_id}
                         and [e for e in cc.discovery.entries() if e.participant_id == pid],
                         what="registered again")
        sent = wire.sent_by(runtime.client_id)
        assert_smrf(sent)
        routing, discovery = runtime.core.remote.routing, runtime.core.remote.discovery
        address = {"_typeName": WS_CLIENT_TYPE, "id": runtime.client_id}
        assert [call_of(m)[1:] for m in sent[:3]] == [
            ("addNextHop", [routing.participant_id, address, False]),
            ("getReplyToAddress", []),
            ("addNextHop", [discovery.participant_id, address, False]),
        ]
        assert await proxy.current_station.get() == "FM4"
        station = Station(f"after-{runtime.client_id}", Country.AUSTRIA)
        provider.fire("new_station", station, partitions=["eu"])
        assert await asyncio.wait_for(seen.get(), WAIT_S) == station

    await reconnect(consumer_rt, proxy.participant_id)
    await reconnect(provider_rt, pid)


@pytest.mark.parametrize("dialect", [JOYNR, NATIVE])
async def test_a_broadcast_subscription_whose_receiver_fails_is_forgotten(
        cc, runtimes, dialect: str) -> None:
    """addMulticastReceiver unanswered (the connection is down): the subscription fails and
    leaves nothing behind, neither in the proxy nor in what the runtime registers again."""
    provider_rt = await runtimes()
    provider = RadioProvider()
    pid = await provider_rt.register_provider("joynr.dialect", provider)
    config = LibjoynrConfig(dialect=dialect, system_ttl_ms=200, reply_grace_ms=50)
    consumer_rt = await runtimes(config=config)
    proxy = await consumer_rt.build_proxy(Radio, "joynr.dialect", ttl_ms=3_000)
    await consumer_rt.core.transport.stop()
    # unanswered: the proxy's own deadline (the system ttl plus the reply grace) or the
    # runtime's queue expiring the call first (a MessageNotSent answer), whichever comes first
    with pytest.raises((JoynrTimeoutError, MessageNotSentError)):
        await proxy.new_station.subscribe(lambda station: None, partitions=["eu"])
    assert proxy.subscriptions == []
    assert not consumer_rt.core.router.multicast_receivers.receivers_for(f"{pid}/newStation/eu")
    await consumer_rt.core.transport.start()
    await eventually(lambda: consumer_rt.core.transport.connections == 2
                     and cc.router.has_route(proxy.participant_id), what="registered again")
    assert await proxy.current_station.get() == "FM4"
    assert not cc.router.multicast_receivers.receivers_for(f"{pid}/newStation/eu")
