"""Hostile MQTT payloads at a cluster controller's own topic, against real CCs on mosquitto.

Every scenario starts a real mosquitto broker, two cluster controllers linked by it (a Radio
provider behind CC two, a proxy for it behind CC one) and a raw MQTT 5 client on the same broker,
which publishes onto a CC's own topic (the CC subscribes to ``<own topic>/#``). Every scenario
then checks:

- the refusal is clear: exactly the right counter of the CC's MQTT transport went up by one,
  nothing else was refused (by either CC), and one WARNING line of
  ``transports.mqtt.transport`` says what was wrong;
- nothing was delivered: the provider did not get the hostile call, the raw client got no
  answer for it, and no routing entry was learned for the hostile sender;
- nothing else was disturbed: the CC still serves the raw client (a valid request of it is
  answered by the provider), the legitimate proxy on CC one still completes a request/reply
  across the broker, and both CCs' routing tables are exactly what they were.

The raw client receives its answers on a topic of its own, given as the replyTo of its requests.
Some scenarios check what must be accepted as precisely (a payload of exactly the size limit,
the first copy of a duplicate, an absurd but valid expiry). A scenario marked xfail (strict)
states what the CC should do and does not yet; once it does, the marker must go.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiomqtt
import msgpack
import pytest

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.programming.discovery_types import DiscoveryEntry, ProviderQos, ProviderScope, Version
from pyjoynr.programming.system_interfaces import (
    DEFAULT_DISCOVERY_PARTICIPANT_ID,
    DEFAULT_ROUTING_PARTICIPANT_ID,
    Discovery,
    Routing,
)
from pyjoynr.runtime.addresses import MqttAddress, WebSocketAddress, WebSocketClientAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.interface import interface_def, to_wire
from pyjoynr.runtime.messages import Message, MessageType, decode_frame, encode_frame
from pyjoynr.runtime.payloads import (
    MulticastPublication,
    OneWayRequest,
    Reply,
    Request,
    SubscriptionRequest,
    decode_payload,
)
from pyjoynr.runtime.routing import RoutingEntry
from pyjoynr.testing.brokers import Mosquitto
from pyjoynr.testing.cluster import eventually
from pyjoynr.transports.mqtt.transport import MqttTransport
from tests.support.mqtt_cluster import GBID, MqttPair, start_pair
from tests.support.radio import Country, Radio, Station

pytestmark = [pytest.mark.network, pytest.mark.usefixtures("mqtt_client")]

WAIT_S = 5.0
MQTT_LOG = "pyjoynr.transports.mqtt.transport"
RADIO = interface_def(Radio)
ROUTING = interface_def(Routing)
DISCOVERY = interface_def(Discovery)
ADD_FAVORITE = RADIO.methods["add_favorite"].param_datatypes
NOTE = RADIO.methods["note"].param_datatypes
LIMIT = 4096  # mqtt.max_message_bytes of the CCs in the oversized tests
#: small messages at once (no Nagle delay waiting for the peer's delayed ACK)
NODELAY = (socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def mqtt_of(cc: ClusterController) -> MqttTransport:
    assert cc.mqtt is not None
    return cc.mqtt


def log_lines(caplog: pytest.LogCaptureFixture, level: int = logging.WARNING) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == MQTT_LOG and r.levelno >= level]


def assert_logged(caplog: pytest.LogCaptureFixture, *fragments: str,
                  level: int = logging.WARNING) -> None:
    lines = [r.getMessage() for r in caplog.records if r.name == MQTT_LOG and r.levelno == level]
    assert any(all(f in line for f in fragments) for line in lines), (
        f"no {logging.getLevelName(level)} log line of {MQTT_LOG} with {fragments}; "
        f"got: {lines}")


# ====================================================================== a raw MQTT client


class RawMqtt:
    """An MQTT 5 client speaking the joynr wire protocol by hand; answers come to ``topic``."""

    def __init__(self, client: aiomqtt.Client, topic: str) -> None:
        self.client = client
        self.topic = topic
        self.address = MqttAddress(GBID, topic)
        self.pid = f"raw-{uuid.uuid4()}"
        self.inbox: asyncio.Queue[tuple[str, bytes]] = asyncio.Queue()

    @classmethod
    async def open(cls, stack: AsyncExitStack, port: int) -> RawMqtt:
        name = uuid.uuid4().hex[:12]
        client = aiomqtt.Client("127.0.0.1", port, identifier=f"raw-{name}",
                                protocol=aiomqtt.ProtocolVersion.V5, timeout=WAIT_S,
                                socket_options=[NODELAY])
        await asyncio.wait_for(stack.enter_async_context(client), WAIT_S)
        raw = cls(client, f"raw/{name}")
        await asyncio.wait_for(client.subscribe(f"{raw.topic}/#", qos=1), WAIT_S)
        reader = asyncio.get_running_loop().create_task(raw._read())

        async def stop_reader() -> None:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)

        stack.push_async_callback(stop_reader)  # before the client disconnects
        return raw

    async def _read(self) -> None:
        async for message in self.client.messages:
            payload = message.payload
            assert isinstance(payload, bytes), payload
            self.inbox.put_nowait((message.topic.value, payload))

    async def publish(self, topic: str, payload: bytes, qos: int = 1) -> None:
        """Publish; with QoS 1 or 2 this returns once the broker has the message."""
        await asyncio.wait_for(self.client.publish(topic, payload, qos=qos), WAIT_S)

    async def receive(self, timeout_s: float = WAIT_S) -> Message:
        topic, payload = await asyncio.wait_for(self.inbox.get(), timeout_s)
        assert topic == self.topic
        return decode_frame(payload)

    async def nothing_received(self, wait_s: float = 0.3) -> None:
        try:
            topic, payload = await asyncio.wait_for(self.inbox.get(), wait_s)
        except TimeoutError:
            return
        raise AssertionError(f"unexpected message on {topic}: {payload[:300]!r}")

    def request(self, recipient: str, method: str, params: list[Any], datatypes: list[str], *,
                sender: str | None = None, ttl_ms: int = 3000,
                expiry_date_ms: int | None = None, reply_to: Any = "mine"
                ) -> tuple[Message, str]:
        """A request; ``reply_to``: "mine" (this client's topic), an address, or None."""
        rid = uuid.uuid4().hex
        message = Message(
            type=MessageType.REQUEST, sender=sender or self.pid, recipient=recipient,
            expiry_date_ms=now_ms() + ttl_ms if expiry_date_ms is None else expiry_date_ms,
            body=Request(rid, method, params, datatypes).to_body(),
            reply_to=self.address if reply_to == "mine" else reply_to,
        )
        return message, rid

    def radio_request(self, pair: MqttPair, station: Station, **kwargs: Any
                      ) -> tuple[Message, str]:
        return self.request(pair.provider_pid, "add_favorite", [to_wire(station)], ADD_FAVORITE,
                            **kwargs)

    async def answer(self, rid: str) -> Reply:
        """The next message must be the reply to ``rid``."""
        answer = await self.receive()
        assert answer.type is MessageType.REPLY, answer
        assert answer.recipient == self.pid
        reply = decode_payload(Reply, answer.body)
        assert reply.request_reply_id == rid
        return reply


def one_way(recipient: str, text: str, *, sender: str, ttl_ms: int = 3000,
            expiry_date_ms: int | None = None) -> Message:
    return Message(
        type=MessageType.ONE_WAY, sender=sender, recipient=recipient,
        expiry_date_ms=now_ms() + ttl_ms if expiry_date_ms is None else expiry_date_ms,
        body=OneWayRequest("note", [text], NOTE).to_body(),
    )


# ====================================================================== the scene


@dataclass
class Scene:
    """Broker, two CCs (provider behind two, proxy behind one) and a raw MQTT client."""

    broker: Mosquitto
    pair: MqttPair
    proxy: Any
    raw: RawMqtt

    @property
    def one(self) -> ClusterController:
        return self.pair.one

    @property
    def two(self) -> ClusterController:
        return self.pair.two

    def stations(self) -> list[str]:
        return [s.name for s in self.pair.provider.stations]

    def tables(self, *ignore: str) -> dict[str, dict[str, RoutingEntry]]:
        """Both CCs' routing tables, without the raw client's own (refreshed) entry."""
        skip = {self.raw.pid, *ignore}
        return {name: {pid: e for pid, e in cc.router.routing_entries() if pid not in skip}
                for name, cc in (("one", self.one), ("two", self.two))}

    def counters(self) -> tuple[Counter[str], Counter[str]]:
        return mqtt_of(self.one).counters.copy(), mqtt_of(self.two).counters.copy()

    async def still_works(self) -> None:
        """The legitimate proxy on CC one completes a request/reply with the provider."""
        name = f"station-{uuid.uuid4().hex[:8]}"
        added = await asyncio.wait_for(
            self.proxy.add_favorite(Station(name, Country.AUSTRIA, 99.9)), WAIT_S)
        assert added is True
        assert self.stations()[-1] == name

    async def raw_is_served(self) -> str:
        """A valid request of the raw client, published to CC two, is answered; returns the
        name of the station it added. Messages of one publisher arrive in order, so whatever
        the raw client published before was handled first."""
        station = Station(f"raw-{uuid.uuid4().hex[:8]}", Country.GERMANY)
        message, rid = self.raw.radio_request(self.pair, station)
        await self.raw.publish(self.two.own_topic, encode_frame(message))
        reply = await self.raw.answer(rid)
        assert (reply.error, reply.response) == (None, [True])
        return station.name

    async def publish(self, cc: ClusterController, payloads: list[bytes], *,
                      topic: str | None = None, qos: int = 1) -> None:
        """Publish ``payloads`` to ``cc``'s own topic; return once ``cc`` has taken each."""
        mqtt = mqtt_of(cc)
        before = mqtt.received
        for payload in payloads:
            await self.raw.publish(topic or cc.own_topic, payload, qos)
        await eventually(lambda: mqtt.received >= before + len(payloads), WAIT_S,
                         f"{len(payloads)} payload(s) received by {cc.id}")
        assert mqtt.received == before + len(payloads)


async def start_scene(stack: AsyncExitStack, tmp_path: Path, **overrides: Any) -> Scene:
    broker = await stack.enter_async_context(Mosquitto(tmp_path / "mosquitto"))
    pair = await start_pair(stack, tmp_path, {GBID: broker.url}, **overrides)
    proxy = await asyncio.wait_for(pair.proxy(ttl_ms=3000), WAIT_S)
    raw = await RawMqtt.open(stack, broker.port)
    scene = Scene(broker, pair, proxy, raw)
    await scene.still_works()
    await scene.raw_is_served()
    # CC two learned both callers' replyTo; CC one has the provisioned route to the provider
    assert scene.two.router.route_of(proxy.participant_id).address == MqttAddress(
        GBID, scene.one.own_topic)
    assert scene.two.router.route_of(raw.pid).address == raw.address
    assert scene.one.router.route_of(pair.provider_pid).address == MqttAddress(
        GBID, scene.two.own_topic)
    assert scene.counters() == (Counter(), Counter())
    # the answers are out: what the CCs publish from here on is the tests' business
    await eventually(lambda: not mqtt_of(scene.one).pending() and not mqtt_of(scene.two).pending(),
                     WAIT_S, "the CCs acknowledged by the broker")
    return scene


@pytest.fixture
async def stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as s:
        yield s


@pytest.fixture
async def scene(stack: AsyncExitStack, tmp_path: Path, caplog: pytest.LogCaptureFixture
                ) -> Scene:
    caplog.set_level(logging.INFO)
    return await start_scene(stack, tmp_path)


@dataclass
class Before:
    """What an attack must not change."""

    counters_one: Counter[str]
    counters_two: Counter[str]
    router_one: Counter[str]
    router_two: Counter[str]
    tables: dict[str, dict[str, RoutingEntry]]
    stations: list[str]
    notes: list[str]
    warnings: int


def snapshot(scene: Scene, caplog: pytest.LogCaptureFixture) -> Before:
    one, two = scene.counters()
    return Before(one, two, scene.one.telemetry.counters.copy(),
                  scene.two.telemetry.counters.copy(),
                  scene.tables(), scene.stations(), list(scene.pair.provider.notes),
                  len(log_lines(caplog)))


def assert_refused_once(scene: Scene, before: Before, caplog: pytest.LogCaptureFixture,
                        cc: ClusterController, reason: str, *fragments: str) -> None:
    """``cc`` refused exactly one payload, for ``reason``, and said so in one WARNING line;
    nothing else was refused or dropped, by either CC."""
    one, two = scene.counters()
    refused, other = (two, one) if cc is scene.two else (one, two)
    refused_before, other_before = ((before.counters_two, before.counters_one)
                                    if cc is scene.two else
                                    (before.counters_one, before.counters_two))
    assert refused - refused_before == Counter({reason: 1}), refused
    assert other == other_before
    assert scene.one.telemetry.counters == before.router_one
    assert scene.two.telemetry.counters == before.router_two
    assert len(log_lines(caplog)) == before.warnings + 1, log_lines(caplog)[before.warnings:]
    assert_logged(caplog, "refused", *fragments)


async def assert_undisturbed(scene: Scene, before: Before, *ignore: str,
                             added: tuple[str, ...] = ()) -> None:
    """Nothing was delivered or learned (but the stations ``added`` by valid requests); the
    raw client and the proxy are still served."""
    served = await scene.raw_is_served()  # the next message: a hostile answer came before it
    await scene.raw.nothing_received(0.05)
    assert scene.stations() == [*before.stations, *added, served]  # nothing hostile got there
    assert scene.pair.provider.notes == before.notes
    assert scene.tables(*ignore) == before.tables
    await scene.still_works()


# ====================================================================== 1. bad payloads


_DROP = object()


def frame(scene: Scene, name: str, **changes: Any) -> dict[str, Any]:
    """The fields of a valid request to the provider (adding station ``hostile-<name>``,
    from sender ``hostile-<name>-…``, replyTo the raw client), with ``changes`` applied
    (``_DROP``: remove the field)."""
    message, _ = scene.raw.radio_request(
        scene.pair, Station(f"hostile-{name}", Country.AUSTRIA),
        sender=f"hostile-{name}-{uuid.uuid4().hex[:8]}")
    data: dict[str, Any] = msgpack.unpackb(encode_frame(message))
    for key, value in changes.items():
        if value is _DROP:
            del data[key]
        else:
            data[key] = value
    return data


def pack(data: Any) -> bytes:
    return msgpack.packb(data, use_bin_type=True)


def bad(name: str, reason: str, fragment: str, make: Callable[[Scene, str], bytes]
        ) -> tuple[str, str, str, Callable[[Scene, str], bytes]]:
    return name, reason, fragment, make


def _changed(**changes: Any) -> Callable[[Scene, str], bytes]:
    return lambda scene, name: pack(frame(scene, name, **changes))


IN_PROCESS = {"_typeName": "joynr.system.RoutingTypes.InProcessAddress"}
MQTT_NO_TOPIC = {"_typeName": "joynr.system.RoutingTypes.MqttAddress", "brokerUri": GBID}

BAD_PAYLOADS = [
    bad("garbage", "not-msgpack", "not valid msgpack",
        lambda s, n: b"\xc1\xde\xad\xbe\xef garbage"),
    bad("empty", "not-msgpack", "not valid msgpack", lambda s, n: b""),
    bad("json-text", "not-msgpack", "not valid msgpack",
        lambda s, n: b'{"v": 1, "t": "rq", "id": "x"}'),
    bad("truncated", "not-msgpack", "not valid msgpack",
        lambda s, n: pack(frame(s, n))[:-7]),
    bad("trailing-garbage", "not-msgpack", "not valid msgpack",
        lambda s, n: pack(frame(s, n)) + b"\x00\x01"),
    bad("lying-length", "not-msgpack", "not valid msgpack",
        lambda s, n: b"\xdb\xff\xff\xff\xff" + b"x" * 16),
    bad("huge-map-count", "not-msgpack", "not valid msgpack",
        lambda s, n: b"\xdf\xff\xff\xff\xff"),
    bad("deep-nesting", "not-msgpack", "not valid msgpack",
        lambda s, n: b"\x91" * 100_000 + b"\xc0"),
    bad("int-map-keys", "not-msgpack", "not valid msgpack", lambda s, n: pack({1: 2})),
    bad("non-map", "not-a-map", "must be a msgpack map",
        lambda s, n: pack([1, "rq", "id", "s", "r", now_ms() + 5000, b""])),
    bad("nil", "not-a-map", "must be a msgpack map", lambda s, n: pack(None)),
    bad("sender-int", "bad-field", "sender", _changed(s=42)),
    bad("recipient-empty", "bad-field", "recipient", _changed(r="")),
    bad("recipient-too-long", "bad-field", "recipient", _changed(r="r" * 513)),
    bad("id-missing", "missing-field", "message id", _changed(id=_DROP)),
    bad("id-bytes", "bad-field", "message id", _changed(id=b"an-id")),
    bad("expiry-str", "bad-field", "expiry", _changed(x="tomorrow")),
    bad("expiry-negative", "bad-field", "expiry", _changed(x=-5)),
    bad("expiry-over-int64", "bad-field", "outside 0..int64", _changed(x=2**64 - 1)),
    bad("body-str", "bad-field", "body", _changed(b="text")),
    bad("body-missing", "missing-field", "body", _changed(b=_DROP)),
    bad("headers-int-values", "bad-field", "custom headers", _changed(h={"k": 1})),
    bad("compressed-int", "bad-field", "compressed", _changed(z=1)),
    bad("effort-unknown", "bad-field", "effort", _changed(ef="FASTEST")),
    bad("reply-to-inprocess", "bad-reply-to", "replyTo", _changed(re=IN_PROCESS)),
    bad("reply-to-mqtt-without-topic", "bad-reply-to", "replyTo", _changed(re=MQTT_NO_TOPIC)),
    bad("reply-to-str", "bad-reply-to", "replyTo", _changed(re="raw/topic")),
    # topics one cannot publish to: a broker disconnects a client that tries
    bad("reply-to-wildcard-plus", "bad-reply-to", "not a topic name",
        _changed(re={**MQTT_NO_TOPIC, "topic": "raw/+/x"})),
    bad("reply-to-wildcard-hash", "bad-reply-to", "not a topic name",
        _changed(re={**MQTT_NO_TOPIC, "topic": "raw/#"})),
    bad("reply-to-nul", "bad-reply-to", "not a topic name",
        _changed(re={**MQTT_NO_TOPIC, "topic": "raw/nul\x00topic"})),
    bad("reply-to-system-topic", "bad-reply-to", "not a topic name",
        _changed(re={**MQTT_NO_TOPIC, "topic": "$SYS/x"})),
    bad("unknown-version", "unknown-version", "unsupported frame version", _changed(v=2)),
    bad("version-str", "unknown-version", "unsupported frame version", _changed(v="1")),
    bad("version-true", "unknown-version", "unsupported frame version", _changed(v=True)),
    bad("unknown-type", "unknown-type", "unknown message type", _changed(t="evil")),
    bad("type-init", "unknown-type", "unknown message type", _changed(t="init")),
    bad("type-int", "unknown-type", "unknown message type", _changed(t=1)),
]


@pytest.mark.parametrize(("reason", "fragment", "make"),
                         [(r, f, m) for _, r, f, m in BAD_PAYLOADS],
                         ids=[name for name, _, _, _ in BAD_PAYLOADS])
async def test_bad_payload_is_refused_and_nothing_else_is_disturbed(
    *, scene: Scene, caplog: pytest.LogCaptureFixture, request: pytest.FixtureRequest,
    reason: str, fragment: str, make: Callable[[Scene, str], bytes],
) -> None:
    name = request.node.callspec.id
    payload = make(scene, name)
    before = snapshot(scene, caplog)

    await scene.publish(scene.two, [payload])

    # the line names the backend and the topic the payload came on
    assert_refused_once(scene, before, caplog, scene.two, reason, fragment,
                        f"backend {GBID}", f"topic {scene.two.own_topic}")
    assert not [pid for pid, _ in scene.two.router.routing_entries()
                if pid.startswith(f"hostile-{name}-")]
    await assert_undisturbed(scene, before)


async def test_bad_payload_on_a_subtopic_is_refused_the_same_way(
        scene: Scene, caplog: pytest.LogCaptureFixture) -> None:
    # the CC subscribes to <own topic>/#: anything below its topic reaches it as well
    topic = f"{scene.two.own_topic}/some/sub/topic"
    before = snapshot(scene, caplog)
    await scene.publish(scene.two, [pack(frame(scene, "sub", v=99))], topic=topic)
    assert_refused_once(scene, before, caplog, scene.two, "unknown-version",
                        "unsupported frame version 99", f"topic {topic}")
    await assert_undisturbed(scene, before)


@pytest.mark.parametrize("qos", [0, 2])
async def test_bad_payload_at_other_qos_levels_is_refused(
        scene: Scene, caplog: pytest.LogCaptureFixture, qos: int) -> None:
    before = snapshot(scene, caplog)
    await scene.publish(scene.two, [b"\xc1 not msgpack"], qos=qos)
    assert_refused_once(scene, before, caplog, scene.two, "not-msgpack", "not valid msgpack")
    await assert_undisturbed(scene, before)


async def test_refusals_are_counted_on_the_attacked_cc_only(
        scene: Scene, caplog: pytest.LogCaptureFixture) -> None:
    before = snapshot(scene, caplog)
    await scene.publish(scene.one, [b"\xc1 at cc one"])
    assert_refused_once(scene, before, caplog, scene.one, "not-msgpack", "not valid msgpack",
                        f"topic {scene.one.own_topic}")
    await assert_undisturbed(scene, before)


# ====================================================================== 2. expired


@pytest.mark.parametrize("kind", ["request", "one-way"])
async def test_expired_message_is_refused_not_delivered_and_not_learned(
        scene: Scene, caplog: pytest.LogCaptureFixture, kind: str) -> None:
    sender = f"expired-{uuid.uuid4().hex[:8]}"
    expiry = now_ms() - 1000
    if kind == "request":
        message, _ = scene.raw.radio_request(scene.pair, Station("expired", Country.AUSTRIA),
                                             sender=sender, expiry_date_ms=expiry)
    else:
        message = one_way(scene.pair.provider_pid, "expired", sender=sender,
                          expiry_date_ms=expiry)
    before = snapshot(scene, caplog)

    await scene.publish(scene.two, [encode_frame(message)])

    assert_refused_once(scene, before, caplog, scene.two, "expired", message.id, "expired",
                        "ms ago")
    assert not scene.two.router.has_route(sender)  # its replyTo was not learned
    await assert_undisturbed(scene, before)  # no answer, no call, no note


async def test_an_expired_message_does_not_block_a_fresh_one_with_its_id(
        scene: Scene, caplog: pytest.LogCaptureFixture) -> None:
    # an expired message is not remembered as seen: a valid one with the same id still goes
    message, rid = scene.raw.radio_request(scene.pair, Station("late", Country.AUSTRIA),
                                           expiry_date_ms=now_ms() - 1000)
    before = snapshot(scene, caplog)
    await scene.publish(scene.two, [encode_frame(message)])
    assert_refused_once(scene, before, caplog, scene.two, "expired", message.id)

    fresh = Message(type=message.type, sender=message.sender, recipient=message.recipient,
                    expiry_date_ms=now_ms() + 3000, body=message.body, id=message.id,
                    reply_to=message.reply_to)
    await scene.raw.publish(scene.two.own_topic, encode_frame(fresh))
    reply = await scene.raw.answer(rid)
    assert (reply.error, reply.response) == (None, [True])
    assert scene.stations()[-1] == "late"
    assert mqtt_of(scene.two).counters == Counter({"expired": 1})


# ====================================================================== 3. replyTo


def _reply_to_cases(scene: Scene) -> dict[str, Any]:
    return {
        "none": None,
        # the connection of the provider's own runtime: learning it would route the sender
        # to the provider's libjoynr runtime
        "websocket-client-of-the-provider": WebSocketClientAddress(
            scene.pair.rt_two.client_id),
        "websocket-server": WebSocketAddress("ws", "127.0.0.1", 4242, "/"),
    }


@pytest.mark.parametrize("case", ["none", "websocket-client-of-the-provider",
                                  "websocket-server"])
async def test_request_without_mqtt_reply_to_is_refused(
        scene: Scene, caplog: pytest.LogCaptureFixture, case: str) -> None:
    reply_to = _reply_to_cases(scene)[case]
    sender = f"no-reply-to-{uuid.uuid4().hex[:8]}"
    message, _ = scene.raw.radio_request(scene.pair, Station("no-reply-to", Country.AUSTRIA),
                                         sender=sender, reply_to=reply_to)
    # the frame codec accepts these addresses: the MQTT transport is the one to refuse them
    assert decode_frame(encode_frame(message)).reply_to == reply_to
    before = snapshot(scene, caplog)

    await scene.publish(scene.two, [encode_frame(message)])

    assert_refused_once(scene, before, caplog, scene.two, "no-reply-to", message.id,
                        "without an MQTT replyTo", repr(reply_to))
    assert not scene.two.router.has_route(sender)
    await assert_undisturbed(scene, before)


async def test_subscription_request_without_reply_to_is_refused(
        scene: Scene, caplog: pytest.LogCaptureFixture) -> None:
    sender = f"no-reply-to-{uuid.uuid4().hex[:8]}"
    message = Message(
        type=MessageType.SUBSCRIPTION_REQUEST, sender=sender,
        recipient=scene.pair.provider_pid, expiry_date_ms=now_ms() + 3000,
        body=SubscriptionRequest(uuid.uuid4().hex, "current_station").to_body())
    before = snapshot(scene, caplog)
    await scene.publish(scene.two, [encode_frame(message)])
    assert_refused_once(scene, before, caplog, scene.two, "no-reply-to", message.id,
                        "without an MQTT replyTo")
    assert not scene.two.router.has_route(sender)
    assert not scene.pair.provider.registrations[0].publisher.subscription_ids
    await assert_undisturbed(scene, before)


# ====================================================================== 4. oversized


@pytest.fixture
async def small_scene(stack: AsyncExitStack, tmp_path: Path, caplog: pytest.LogCaptureFixture
                      ) -> Scene:
    caplog.set_level(logging.INFO)
    return await start_scene(stack, tmp_path, mqtt__max_message_bytes=str(LIMIT))


def padded(scene: Scene, station: str, size: int) -> tuple[bytes, str]:
    """A valid request (an unknown key pads it: ignored by the codec) of exactly ``size``
    bytes, and its request id."""
    message, rid = scene.raw.radio_request(scene.pair, Station(station, Country.AUSTRIA))
    data: dict[str, Any] = msgpack.unpackb(encode_frame(message))
    data["pad"] = b""
    data["pad"] = b"\x00" * (size - len(pack(data)))
    raw = pack(data)
    if len(raw) != size:  # the bin header grew (8 -> 16 -> 32 bit length)
        data["pad"] = data["pad"][: size - len(raw)]
        raw = pack(data)
    assert len(raw) == size
    return raw, rid


@pytest.mark.parametrize("size", [LIMIT + 1, LIMIT + 4096])
async def test_oversized_payload_is_refused(
        small_scene: Scene, caplog: pytest.LogCaptureFixture, size: int) -> None:
    scene = small_scene
    payload, _ = padded(scene, "oversized", size)
    before = snapshot(scene, caplog)

    await scene.publish(scene.two, [payload])

    assert_refused_once(scene, before, caplog, scene.two, "oversized",
                        f"frame of {size} bytes exceeds {LIMIT} bytes")
    await assert_undisturbed(scene, before)


@pytest.mark.parametrize("size", [64 * 1024, 2 * 1024 * 1024])
async def test_far_oversized_payload_never_reaches_the_cc(
        small_scene: Scene, caplog: pytest.LogCaptureFixture, size: int) -> None:
    # the CC's MQTT 5 CONNECT says the largest packet it takes (its limit plus room for the
    # topic and properties): the broker drops bigger ones for it, they are never buffered
    scene = small_scene
    payload, _ = padded(scene, "far-oversized", size)
    mqtt = mqtt_of(scene.two)
    received = mqtt.received
    before = snapshot(scene, caplog)

    await scene.raw.publish(scene.two.own_topic, payload)
    await asyncio.sleep(0.5)

    assert mqtt.received == received
    assert scene.counters() == (before.counters_one, before.counters_two)
    assert mqtt.connection_count(GBID) == 1  # never disconnected
    await assert_undisturbed(scene, before)


async def test_payload_of_exactly_the_limit_is_accepted(
        small_scene: Scene, caplog: pytest.LogCaptureFixture) -> None:
    scene = small_scene
    payload, rid = padded(scene, "just-fits", LIMIT)
    before = snapshot(scene, caplog)
    await scene.raw.publish(scene.two.own_topic, payload)
    reply = await scene.raw.answer(rid)
    assert (reply.error, reply.response) == (None, [True])
    assert scene.stations() == [*before.stations, "just-fits"]
    assert scene.counters() == (before.counters_one, before.counters_two)
    await scene.still_works()


# ====================================================================== 5. duplicates


async def test_duplicate_one_way_is_delivered_once(
        scene: Scene, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=MQTT_LOG)
    provider = scene.pair.provider
    message = one_way(scene.pair.provider_pid, "only once", sender=scene.raw.pid)
    before = snapshot(scene, caplog)

    await scene.publish(scene.two, [encode_frame(message), encode_frame(message)])

    await asyncio.wait_for(provider.noted.wait(), WAIT_S)
    served = await scene.raw_is_served()  # after both copies: the second one would be there
    assert provider.notes == ["only once"]
    assert mqtt_of(scene.two).counters - before.counters_two == Counter({"duplicate": 1})
    assert scene.counters()[0] == before.counters_one
    # a QoS 1 redelivery is normal: logged at DEBUG, not as a warning
    assert_logged(caplog, "duplicate", message.id, level=logging.DEBUG)
    assert len(log_lines(caplog)) == before.warnings
    assert scene.stations() == [*before.stations, served]
    await scene.raw.nothing_received()
    await scene.still_works()


async def test_duplicate_request_is_answered_once(
        scene: Scene, caplog: pytest.LogCaptureFixture) -> None:
    message, rid = scene.raw.radio_request(scene.pair, Station("twice", Country.AUSTRIA))
    before = snapshot(scene, caplog)
    await scene.publish(scene.two, [encode_frame(message)] * 2)
    reply = await scene.raw.answer(rid)
    assert (reply.error, reply.response) == (None, [True])
    served = await scene.raw_is_served()  # the second copy would have been answered first
    await scene.raw.nothing_received()
    assert scene.stations() == [*before.stations, "twice", served]
    assert mqtt_of(scene.two).counters - before.counters_two == Counter({"duplicate": 1})
    assert len(log_lines(caplog)) == before.warnings
    await scene.still_works()


async def test_a_reused_message_id_is_dropped_whatever_it_carries(
        scene: Scene, caplog: pytest.LogCaptureFixture) -> None:
    # the duplicate check is by id: a second message with the id of one already received is
    # dropped even when its content differs
    first, rid = scene.raw.radio_request(scene.pair, Station("first", Country.AUSTRIA))
    second, _ = scene.raw.radio_request(scene.pair, Station("second", Country.AUSTRIA))
    second.id = first.id
    before = snapshot(scene, caplog)
    await scene.publish(scene.two, [encode_frame(first), encode_frame(second)])
    reply = await scene.raw.answer(rid)
    assert reply.response == [True]
    served = await scene.raw_is_served()
    await scene.raw.nothing_received()
    assert scene.stations() == [*before.stations, "first", served]
    assert mqtt_of(scene.two).counters - before.counters_two == Counter({"duplicate": 1})


# ====================================================================== 6. no relaying


async def test_request_to_a_provider_behind_mqtt_is_not_relayed(
        scene: Scene, caplog: pytest.LogCaptureFixture) -> None:
    # CC one routes the provider to CC two's topic (provisioned): a request that arrived over
    # MQTT must not be published again
    sender = f"relay-{uuid.uuid4().hex[:8]}"
    message, _ = scene.raw.radio_request(scene.pair, Station("relayed", Country.AUSTRIA),
                                         sender=sender)
    two_received, two_published = mqtt_of(scene.two).received, mqtt_of(scene.two).published
    one_published = mqtt_of(scene.one).published
    before = snapshot(scene, caplog)

    await scene.publish(scene.one, [encode_frame(message)])

    assert_refused_once(scene, before, caplog, scene.one, "refused-relay", message.id,
                        "not relayed", repr(MqttAddress(GBID, scene.two.own_topic)))
    assert mqtt_of(scene.one).published == one_published  # nothing left CC one
    await asyncio.sleep(0.2)
    assert mqtt_of(scene.two).received == two_received  # nothing reached CC two
    assert mqtt_of(scene.two).published == two_published
    # (CC one did learn the hostile sender's replyTo: it learns before it routes; the route
    # expires with the request)
    await assert_undisturbed(scene, before, sender)


@pytest.mark.parametrize("kind", ["request", "one-way", "reply"])
async def test_message_to_a_learned_mqtt_participant_is_not_relayed(
        scene: Scene, caplog: pytest.LogCaptureFixture, kind: str) -> None:
    # CC two learned the proxy's replyTo (CC one's topic): a message for the proxy that came
    # over MQTT is not sent on to CC one
    proxy_pid = scene.proxy.participant_id
    sender = f"relay-{uuid.uuid4().hex[:8]}"
    if kind == "request":
        message, _ = scene.raw.request(proxy_pid, "add_favorite", [], ADD_FAVORITE,
                                       sender=sender)
    elif kind == "one-way":
        message = one_way(proxy_pid, "relayed", sender=sender)
    else:
        message = Message(type=MessageType.REPLY, sender=sender, recipient=proxy_pid,
                          expiry_date_ms=now_ms() + 3000,
                          body=Reply(uuid.uuid4().hex, response=[True]).to_body())
    one_received = mqtt_of(scene.one).received
    two_published = mqtt_of(scene.two).published
    before = snapshot(scene, caplog)

    await scene.publish(scene.two, [encode_frame(message)])

    assert_refused_once(scene, before, caplog, scene.two, "refused-relay", message.id,
                        "not relayed", repr(MqttAddress(GBID, scene.one.own_topic)))
    assert mqtt_of(scene.two).published == two_published
    await asyncio.sleep(0.2)
    assert mqtt_of(scene.one).received == one_received
    await assert_undisturbed(scene, before, sender)


async def test_a_waiting_message_whose_recipient_turns_out_to_be_behind_mqtt_is_dropped(
        scene: Scene, caplog: pytest.LogCaptureFixture) -> None:
    # a message for a participant CC two does not know waits for a route; the route that
    # appears (a learned replyTo) leads back into the backend: the message is not relayed, and
    # the router reports it dropped (counted and logged there, not as a refused payload)
    later = f"later-{uuid.uuid4().hex[:8]}"
    waiting = one_way(later, "relayed", sender=f"relay-{uuid.uuid4().hex[:8]}")
    router = scene.two.router
    await scene.publish(scene.two, [encode_frame(waiting)])
    assert router.queued(later) == 1
    before = scene.counters()

    teacher, rid = scene.raw.radio_request(scene.pair, Station("teaches", Country.AUSTRIA),
                                           sender=later)
    await scene.publish(scene.two, [encode_frame(teacher)])
    answer = await scene.raw.receive()  # the request itself is served
    assert (answer.type, answer.recipient) == (MessageType.REPLY, later)
    reply = decode_payload(Reply, answer.body)
    assert (reply.request_reply_id, reply.error, reply.response) == (rid, None, [True])

    assert router.queued() == 0
    assert scene.two.telemetry.counters["dropped-refused-relay"] == 1
    assert scene.counters() == before
    assert any(waiting.id in r.getMessage() and "not relayed" in r.getMessage()
               for r in caplog.records if r.name == "pyjoynr.runtime.router")
    await scene.raw.nothing_received()  # the waiting message did not go out
    await scene.still_works()


async def test_reply_to_the_cc_itself_is_refused(
        scene: Scene, caplog: pytest.LogCaptureFixture) -> None:
    # a request whose replyTo is the CC's own topic: its answer would come back to the CC and
    # loop; it cannot be answered, so it is refused like a request without replyTo
    own = MqttAddress(GBID, scene.two.own_topic)
    sender = f"self-{uuid.uuid4().hex[:8]}"
    message, _ = scene.raw.radio_request(scene.pair, Station("self", Country.AUSTRIA),
                                         sender=sender, reply_to=own)
    mqtt = mqtt_of(scene.two)
    published = mqtt.published
    before = snapshot(scene, caplog)

    await scene.publish(scene.two, [encode_frame(message)])

    assert_refused_once(scene, before, caplog, scene.two, "bad-reply-to", message.id,
                        "own address")
    assert not scene.two.router.has_route(sender)
    assert mqtt.published == published  # not to itself, not anywhere
    await assert_undisturbed(scene, before)


# ====================================================================== 7. a burst


def _burst_payloads(scene: Scene, count: int) -> tuple[list[bytes], Counter[str]]:
    """``count`` mixed bad payloads and the refusals they must cause."""
    expected: Counter[str] = Counter()
    payloads: list[bytes] = []
    pid = scene.pair.provider_pid
    for n in range(count):
        kind = n % (len(BAD_PAYLOADS) + 3)
        if kind < len(BAD_PAYLOADS):
            name, reason, _, make = BAD_PAYLOADS[kind]
            payloads.append(make(scene, f"burst-{n}-{name}"))
        elif kind == len(BAD_PAYLOADS):
            reason = "expired"
            payloads.append(encode_frame(one_way(pid, f"burst-{n}", sender=f"burst-{n}",
                                                 expiry_date_ms=now_ms() - 10)))
        elif kind == len(BAD_PAYLOADS) + 1:
            reason = "no-reply-to"
            message, _ = scene.raw.radio_request(
                scene.pair, Station(f"burst-{n}", Country.AUSTRIA), sender=f"burst-{n}",
                reply_to=None)
            payloads.append(encode_frame(message))
        else:
            reason = "refused-relay"
            payloads.append(encode_frame(one_way(scene.proxy.participant_id, f"burst-{n}",
                                                 sender=f"burst-{n}")))
        expected[reason] += 1
    return payloads, expected


async def test_a_burst_of_bad_payloads_then_a_good_request(
        scene: Scene, caplog: pytest.LogCaptureFixture) -> None:
    payloads, expected = _burst_payloads(scene, 200)
    assert len(payloads) == 200 and len(expected) >= 9
    good, rid = scene.raw.radio_request(scene.pair, Station("after-the-burst", Country.GERMANY))
    mqtt = mqtt_of(scene.two)
    received = mqtt.received
    before = snapshot(scene, caplog)

    for n, payload in enumerate(payloads):
        await scene.raw.publish(scene.two.own_topic, payload, qos=1 + n % 2)
    await scene.raw.publish(scene.two.own_topic, encode_frame(good))

    reply = await scene.raw.answer(rid)
    assert (reply.error, reply.response) == (None, [True])
    await eventually(lambda: mqtt.received >= received + 201, WAIT_S, "all 201 received")
    assert mqtt.received == received + 201
    assert mqtt.counters - before.counters_two == expected
    assert scene.counters()[0] == before.counters_one
    # one line per reason (all came from one backend): repeats are counted, not logged
    assert len(log_lines(caplog)) == before.warnings + len(expected)
    assert scene.stations() == [*before.stations, "after-the-burst"]
    assert scene.pair.provider.notes == before.notes
    assert not [pid for pid, _ in scene.two.router.routing_entries()
                if pid.startswith(("burst-", "hostile-burst-"))]
    assert not [pid for pid, _ in scene.one.router.routing_entries()
                if pid.startswith(("burst-", "hostile-burst-"))]
    await assert_undisturbed(scene, before, added=("after-the-burst",))


# ====================================================================== 8. absurd values


async def test_request_with_an_absurd_expiry_is_answered(
        scene: Scene, caplog: pytest.LogCaptureFixture) -> None:
    # an expiry of int64 max is valid for the codec; the answer inherits it, and its MQTT 5
    # message expiry interval (a four-byte integer of seconds) must be capped to be published
    message, rid = scene.raw.radio_request(scene.pair, Station("absurd", Country.AUSTRIA),
                                           expiry_date_ms=2**63 - 1)
    mqtt = mqtt_of(scene.two)
    before = snapshot(scene, caplog)
    await scene.raw.publish(scene.two.own_topic, encode_frame(message))
    reply = await scene.raw.answer(rid)
    assert (reply.error, reply.response) == (None, [True])
    await eventually(lambda: mqtt.pending() == 0, WAIT_S, "nothing left to publish")
    assert scene.counters() == (before.counters_one, before.counters_two)
    assert len(log_lines(caplog)) == before.warnings
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    await assert_undisturbed(scene, before, added=("absurd",))


# ====================================================================== 9. system providers


async def _system_call(scene: Scene, recipient: str, method: str, params: list[Any],
                       datatypes: list[str]) -> Reply:
    """A request of the raw client to CC two's system provider, and its answer."""
    message, rid = scene.raw.request(recipient, method, params, datatypes)
    await scene.raw.publish(scene.two.own_topic, encode_frame(message))
    return await scene.raw.answer(rid)


async def test_system_providers_do_not_serve_mqtt_peers(
        scene: Scene, caplog: pytest.LogCaptureFixture) -> None:
    # over MQTT the caller's identity would be the CC's own MQTT address: a broker client
    # could add routes to it and register providers in the CC's local discovery
    pid = f"hostile-system-{uuid.uuid4().hex[:8]}"
    own = MqttAddress(GBID, scene.two.own_topic)
    entry = DiscoveryEntry(Version(1, 2), scene.pair.domain, "test/Radio", pid,
                           ProviderQos(scope=ProviderScope.GLOBAL), now_ms(), now_ms() + 60_000)
    calls = [
        (DEFAULT_ROUTING_PARTICIPANT_ID, "add_next_hop", [pid, own.to_dict(), True],
         ROUTING.methods["add_next_hop"].param_datatypes),
        (DEFAULT_ROUTING_PARTICIPANT_ID, "remove_next_hop", [scene.proxy.participant_id],
         ROUTING.methods["remove_next_hop"].param_datatypes),
        (DEFAULT_DISCOVERY_PARTICIPANT_ID, "add", [to_wire(entry)],
         DISCOVERY.methods["add"].param_datatypes),
        (DEFAULT_DISCOVERY_PARTICIPANT_ID, "remove", [scene.pair.provider_pid],
         DISCOVERY.methods["remove"].param_datatypes),
    ]
    before = snapshot(scene, caplog)
    for recipient, method, params, datatypes in calls:
        reply = await _system_call(scene, recipient, method, params, datatypes)
        assert reply.response is None
        assert reply.error is not None and reply.error["type"] == "ProviderRuntimeException"
        assert "serves its local participants only" in reply.error["message"]
    refusals = [r.getMessage() for r in caplog.records
                if r.name == "pyjoynr.programming.providers" and r.levelno == logging.WARNING]
    # all from one backend: the first in full, the repeats counted, not logged one by one
    assert len(refusals) == 1, refusals
    assert "serves local participants only" in refusals[0]
    assert not scene.two.router.has_route(pid)
    assert [e.participant_id for e in scene.two.discovery.entries()] == [scene.pair.provider_pid]
    assert scene.counters() == (before.counters_one, before.counters_two)
    await assert_undisturbed(scene, before)


# ====================================================================== forged multicasts


def multicast(scene: Scene, sender: str, name: str) -> bytes:
    multicast_id = f"{scene.pair.provider_pid}/newStation"
    body = MulticastPublication(multicast_id, [to_wire(Station(name, Country.AUSTRIA))]
                                ).to_body()
    return encode_frame(Message(type=MessageType.MULTICAST, sender=sender,
                                recipient=multicast_id, expiry_date_ms=now_ms() + 5000,
                                body=body))


async def test_a_multicast_of_a_local_provider_from_mqtt_is_refused(
        scene: Scene, caplog: pytest.LogCaptureFixture) -> None:
    # a receiver on CC two, where the provider is local: only CC two publishes its multicasts
    local_proxy = await asyncio.wait_for(
        scene.pair.rt_two.build_proxy(Radio, scene.pair.domain), WAIT_S)
    received: asyncio.Queue[Station] = asyncio.Queue()
    await asyncio.wait_for(local_proxy.new_station.subscribe(received.put_nowait), WAIT_S)
    before = snapshot(scene, caplog)

    # onto CC two's own topic, in the provider's name
    await scene.publish(scene.two, [multicast(scene, scene.pair.provider_pid, "forged")])
    assert_refused_once(scene, before, caplog, scene.two, "foreign-multicast",
                        scene.pair.provider_pid, "local to this cluster controller")
    await assert_undisturbed(scene, before)
    scene.pair.provider.fire("new_station", Station("real", Country.GERMANY))
    assert (await asyncio.wait_for(received.get(), WAIT_S)).name == "real"
    await asyncio.sleep(0.2)
    assert received.empty()


async def test_a_multicast_whose_sender_is_not_its_provider_is_refused(
        scene: Scene, caplog: pytest.LogCaptureFixture) -> None:
    # a receiver on CC one: CC one subscribes to the provider's multicast topics
    received: asyncio.Queue[Station] = asyncio.Queue()
    await asyncio.wait_for(scene.proxy.new_station.subscribe(received.put_nowait,
                                                             partitions=["*"]), WAIT_S)
    topic = f"{scene.pair.provider_pid}/newStation"
    # acknowledged by the broker, not only wanted: a multicast published before the SUBACK
    # may not reach CC one
    await eventually(lambda: mqtt_of(scene.one).multicast_topics_subscribed(GBID), WAIT_S,
                     "CC one subscribed")
    before = snapshot(scene, caplog)

    await scene.publish(scene.one, [multicast(scene, "someone-else", "forged")], topic=topic)
    assert_refused_once(scene, before, caplog, scene.one, "forged-multicast",
                        "'someone-else' is not the provider")
    await assert_undisturbed(scene, before)
    scene.pair.provider.fire("new_station", Station("real", Country.GERMANY))
    assert (await asyncio.wait_for(received.get(), WAIT_S)).name == "real"
    await asyncio.sleep(0.2)
    assert received.empty()
