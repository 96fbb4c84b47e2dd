"""Floods of remote input aimed at the log, against real cluster controllers.

Each path that a websocket client, an MQTT publisher or a connection attempt reaches is driven
10,000 times, and the lines the process logs at INFO and above (what a real handler on the root
logger gets) are counted: per-call events (registrations, next hops, evictions) are logged at
DEBUG only, refusals and connection lines are rate-limited (the first line of a key in full,
the rest counted), so each path writes a handful of lines however long it goes on, while the
counters count every one of the 10,000.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.gcd.interface import GCD_PARTICIPANT_ID, GCD_TOPIC, GlobalCapabilitiesDirectory
from pyjoynr.gcd.service import GcdService, GcdSettings
from pyjoynr.programming.discovery_types import (
    DiscoveryEntry,
    GlobalDiscoveryEntry,
    ProviderQos,
    ProviderScope,
    Version,
)
from pyjoynr.programming.system_interfaces import (
    DEFAULT_DISCOVERY_PARTICIPANT_ID,
    DEFAULT_ROUTING_PARTICIPANT_ID,
    Discovery,
    Routing,
    address_to_json,
)
from pyjoynr.runtime.addresses import MqttAddress, WebSocketClientAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.interface import interface_def, to_wire
from pyjoynr.runtime.messages import Message, MessageType, encode_frame
from pyjoynr.runtime.payloads import Reply, Request, decode_payload
from pyjoynr.testing.brokers import Mosquitto
from pyjoynr.transports.dialects import encode_init
from pyjoynr.transports.websocket.settings import JOYNR, NATIVE
from tests.support.mqtt_clients import RawPeer
from tests.support.raw_websocket import RawClient
from tests.test_mqtt_hostile import mqtt_of, start_scene
from tests.test_websocket_dialects import HOSTILE
from tests.test_websocket_dialects import start_cc as start_dialect_cc
from tests.test_websocket_hostile import BAD_FRAMES

pytestmark = pytest.mark.network

#: hostile inputs per path
N = 10_000
#: lines (INFO and above) a path may write for its N inputs
BOUND = 5
GCD_GBID = "joynrdefaultgbid"
WAIT_S = 30.0

ROUTING = interface_def(Routing)
DISCOVERY = interface_def(Discovery)


#: the loggers of the test's own clients (aiomqtt's), whose lines are not the CC's
ATTACKERS = ("mqtt",)


class Lines(logging.Handler):
    """The records the process logs at INFO and above, as a handler on the root logger
    (but the attacking clients' own)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if not record.name.startswith(ATTACKERS):
            self.records.append(record)

    def since(self, mark: int) -> list[str]:
        return [f"{r.levelname} {r.name}: {r.getMessage()}" for r in self.records[mark:]]


@pytest.fixture
def lines(caplog: pytest.LogCaptureFixture) -> Iterator[Lines]:
    caplog.set_level(logging.INFO)  # the root logger at INFO: DEBUG lines are not made
    handler = Lines()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


@pytest.fixture
async def stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as s:
        yield s


async def eventually(condition: Any, what: str, timeout_s: float = WAIT_S) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


def assert_bounded(lines: Lines, mark: int, what: str, bound: int = BOUND) -> None:
    logged = lines.since(mark)
    assert len(logged) <= bound, (f"{len(logged)} lines for {N} {what} (at most {bound}): "
                                  f"{logged[:8]}")


# ====================================================================== websocket calls


def request(raw: RawClient, recipient: str, method: str, params: list[Any],
            datatypes: list[str]) -> Message:
    return Message(MessageType.REQUEST, raw.pid, recipient, now_ms() + 60_000,
                   Request(uuid.uuid4().hex, method, params, datatypes).to_body())


async def pipelined(raw: RawClient, messages: list[Message]) -> list[Reply]:
    """Send every request at once, then read their replies (in any order)."""
    await asyncio.gather(*(raw.ws.send(raw.frame(m)) for m in messages))
    replies = []
    while len(replies) < len(messages):
        answer = await raw.receive(WAIT_S)
        if answer.type is MessageType.REPLY:
            replies.append(decode_payload(Reply, answer.body))
    return replies


def add_next_hop(raw: RawClient, participant_id: str, address: dict[str, Any]) -> Message:
    return request(raw, DEFAULT_ROUTING_PARTICIPANT_ID, "add_next_hop",
                   [participant_id, address, False],
                   ROUTING.methods["add_next_hop"].param_datatypes)


async def registered_raw(stack: AsyncExitStack, cc: ClusterController,
                         dialect: str = NATIVE) -> RawClient:
    raw = await RawClient.open(stack, cc.websocket_address.url, dialect=dialect)
    own = WebSocketClientAddress(raw.client_id).to_dict()
    [reply] = await pipelined(raw, [add_next_hop(raw, raw.pid, own)])
    assert reply.error is None, reply.error
    return raw


async def test_next_hops_past_the_connection_bound_write_a_bounded_log(
        stack: AsyncExitStack, tmp_path: Path, lines: Lines) -> None:
    cc = await start_dialect_cc(stack, tmp_path, connection_bounds__max_routes_per_connection=1)
    raw = await registered_raw(stack, cc)  # holds its one route
    own = WebSocketClientAddress(raw.client_id).to_dict()
    router = cc.router
    mark = len(lines.records)
    replies = await pipelined(raw, [add_next_hop(raw, f"past-{n}-{uuid.uuid4().hex[:6]}", own)
                                    for n in range(N)])
    assert all(r.error is not None and "max_routes_per_connection" in str(r.error)
               for r in replies)
    assert cc.quotas.counters["bound-routes-per-connection"] == N
    assert len(router.participants_at(WebSocketClientAddress(raw.client_id))) == 1
    assert_bounded(lines, mark, "next hops past the connection bound")


async def test_registrations_next_hops_and_their_end_write_a_bounded_log(
        stack: AsyncExitStack, tmp_path: Path, lines: Lines) -> None:
    # (the connection bounds raised: what is logged while they are not reached)
    cc = await start_dialect_cc(stack, tmp_path,
                                discovery__vanished_provider_grace_s=0.1,
                                connection_bounds__max_routes_per_connection=2 * N,
                                connection_bounds__max_providers_per_connection=2 * N)
    raw = await registered_raw(stack, cc)
    own = WebSocketClientAddress(raw.client_id).to_dict()
    providers = [f"flood-{n}-{uuid.uuid4().hex[:6]}" for n in range(N)]
    router, discovery = cc.telemetry.counters.copy(), cc.discovery.counters.copy()

    mark = len(lines.records)
    replies = await pipelined(raw, [add_next_hop(raw, pid, own) for pid in providers])
    assert [r.error for r in replies] == [None] * N
    assert len(cc.router.participants_at(WebSocketClientAddress(raw.client_id))) == N + 1
    assert_bounded(lines, mark, "next hops")

    mark = len(lines.records)
    add = DISCOVERY.methods["add"]
    replies = await pipelined(raw, [request(
        raw, DEFAULT_DISCOVERY_PARTICIPANT_ID, "add",
        [to_wire(DiscoveryEntry(Version(1, 0), "flood", "test/Thing", pid,
                                ProviderQos(scope=ProviderScope.LOCAL), now_ms(),
                                now_ms() + 600_000))], add.param_datatypes)
        for pid in providers])
    assert [r.error for r in replies] == [None] * N
    assert_bounded(lines, mark, "provider registrations")
    assert cc.discovery.counters["registered"] - discovery["registered"] == N

    # the same again, refused (another client's address; a participant of this CC itself)
    mark = len(lines.records)
    router = cc.telemetry.counters.copy()
    other = WebSocketClientAddress("someone-else").to_dict()
    replies = await pipelined(raw, [add_next_hop(raw, pid, other) for pid in providers])
    assert all(r.error is not None for r in replies)
    refused = cc.telemetry.counters - router
    assert sum(refused.values()) == N, refused
    assert_bounded(lines, mark, "refused next hops (another client's address)")

    mark = len(lines.records)
    router = cc.telemetry.counters.copy()
    replies = await pipelined(raw, [add_next_hop(raw, DEFAULT_DISCOVERY_PARTICIPANT_ID, own)
                                    for _ in range(N)])
    assert all(r.error is not None for r in replies)
    assert_bounded(lines, mark, "refused next hops (a sticky route)")
    assert cc.telemetry.counters["route-rejected-sticky"] - router[
        "route-rejected-sticky"] == N

    # the connection ends: its routes go, its providers after the grace period
    mark = len(lines.records)
    await raw.ws.close()
    await eventually(lambda: cc.discovery.counters["vanished-provider-removed"]
                     - discovery["vanished-provider-removed"] == N, "the providers removed")
    assert_bounded(lines, mark, "providers of a connection that ended")
    assert cc.telemetry.counters["routes-removed-at-address"] - router[
        "routes-removed-at-address"] == N + 1
    assert cc.discovery.counters["unregistered"] - discovery["unregistered"] == N


def _mixed(kinds: list[Any], make: Any) -> tuple[list[bytes | str], Counter[str]]:
    frames: list[bytes | str] = []
    expected: Counter[str] = Counter()
    for n in range(N):
        frame, reason = make(kinds[n % len(kinds)])
        frames.append(frame)
        expected[reason] += 1
    return frames, expected


async def test_refused_frames_of_each_kind_in_both_dialects_write_a_bounded_log(
        stack: AsyncExitStack, tmp_path: Path, lines: Lines) -> None:
    cc = await start_dialect_cc(stack, tmp_path)
    native = await registered_raw(stack, cc, NATIVE)
    joynr = await registered_raw(stack, cc, JOYNR)
    bad_native = [(make, reason) for _, make, reason, _ in BAD_FRAMES]
    bad_joynr = [(make, reason) for name, make, reason in HOSTILE if name != "oversized"]
    for raw, frames, expected in (
            (native, *_mixed(bad_native, lambda kind: (kind[0](), kind[1]))),
            (joynr, *_mixed(bad_joynr, lambda kind: (kind[0](joynr, native.pid), kind[1])))):
        before = cc.websocket.counters.copy()
        mark = len(lines.records)
        for frame in frames:
            await raw.send_frame(frame)
        # frames of one connection are handled in order: once a call is answered, all were
        [reply] = await pipelined(raw, [add_next_hop(
            raw, raw.pid, WebSocketClientAddress(raw.client_id).to_dict())])
        assert reply.error is None
        assert cc.websocket.counters - before == expected
        # the first line of each reason in full, the rest counted
        assert_bounded(lines, mark, f"refused {raw.dialect} frames", bound=len(expected))


# ====================================================================== connection floods


async def _connect(port: int, path: str, init: bytes | None) -> None:
    """One websocket connection written by hand: the handshake, ``init`` (None: a bad one),
    then the end of the TCP connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                     "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                     "Sec-WebSocket-Version: 13\r\n\r\n".encode())
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101"), head
        payload = b"\xc1 not an init" if init is None else init
        # a masked binary frame (mask key 0: the payload as it is)
        writer.write(struct.pack("!BB", 0x82, 0x80 | len(payload)) + b"\0\0\0\0" + payload)
        await writer.drain()
        if init is None:  # refused: leave once the server's close frame comes
            await reader.read(2)
    finally:
        writer.close()


async def _flood(cc: ClusterController, inits: list[bytes | None], parallel: int = 32) -> None:
    port, path = cc.websocket_address.port, cc.websocket_address.path
    queue = list(reversed(inits))

    async def worker() -> None:
        while queue:
            await _connect(port, path, queue.pop())

    await asyncio.gather(*(worker() for _ in range(parallel)))


async def test_a_flood_of_connections_writes_a_bounded_log(
        stack: AsyncExitStack, tmp_path: Path, lines: Lines) -> None:
    cc = await start_dialect_cc(stack, tmp_path)
    ws = cc.websocket
    refusals = ws.counters.copy()

    mark = len(lines.records)
    await _flood(cc, [encode_init(f"flood-{n}") for n in range(N)])
    await eventually(lambda: ws.connection_events["disconnected"] == N, "every connection ended")
    assert_bounded(lines, mark, "connections")
    assert ws.connection_events["connected"] == N

    mark = len(lines.records)
    await _flood(cc, [None] * N)
    await eventually(lambda: sum((ws.counters - refusals).values()) == N, "every refusal")
    assert_bounded(lines, mark, "connections with a bad init frame")
    assert not ws.clients


# ====================================================================== MQTT


async def test_learned_route_evictions_over_mqtt_write_a_bounded_log(
        stack: AsyncExitStack, tmp_path: Path, lines: Lines) -> None:
    # (room for all of them in the queue of their recipient: none is answered)
    scene = await start_scene(stack, tmp_path, routing__max_learned_routes=20,
                              router__max_queued_per_recipient=2 * N)
    two = scene.two
    before = two.telemetry.counters["evicted-learned-route"]
    # requests of N senders (each teaches its replyTo route) for a participant nobody has
    payloads = [encode_frame(scene.raw.request(
        "nobody-here", "favorites", [], [], sender=f"sender-{n}", ttl_ms=60_000)[0])
        for n in range(N)]
    mqtt = mqtt_of(two)
    received = mqtt.received
    mark = len(lines.records)
    for start in range(0, N, 200):
        await asyncio.gather(*(scene.raw.client.publish(two.own_topic, payload, qos=0)
                               for payload in payloads[start:start + 200]))
    await eventually(lambda: mqtt.received - received == N, f"{N} received")
    # all but the few the table had room for evicted one each
    assert two.telemetry.counters["evicted-learned-route"] - before >= N - 20, (
        two.telemetry.counters, mqtt.counters)
    assert_bounded(lines, mark, "learned routes evicted")


# ====================================================================== the GCD over MQTT


async def test_hostile_gcd_calls_over_mqtt_write_a_bounded_log(
        stack: AsyncExitStack, tmp_path: Path, lines: Lines) -> None:
    """N messages to a GCD's topic from one publisher: a third that do not decode, a third
    calling a method it does not have, a third adding an entry whose priority is out of its
    range (Long): every one refused and counted, none stored, a few lines logged."""
    broker = await stack.enter_async_context(Mosquitto(tmp_path / "mosquitto"))
    service = await stack.enter_async_context(GcdService(GcdSettings(
        gbid=GCD_GBID, broker_url=broker.url, sqlite_path=tmp_path / "gcd.sqlite")))
    await service.mqtt.wait_connected(WAIT_S)
    peer = await RawPeer.open(stack, broker.port)
    add = interface_def(GlobalCapabilitiesDirectory).methods["add"]
    entry = to_wire(GlobalDiscoveryEntry(
        Version(1, 0), "vehicle", "test/Radio", "flooded", ProviderQos(scope=ProviderScope.GLOBAL),
        now_ms(), now_ms() + 60_000, "", address_to_json(MqttAddress(GCD_GBID, peer.topic))))
    entry["qos"]["priority"] = 2 ** 63
    third = N // 3

    def call(n: int, method: str, params: list[Any], datatypes: list[str]) -> bytes:
        return encode_frame(Message(
            MessageType.REQUEST, f"asker-{n}", GCD_PARTICIPANT_ID, now_ms() + 60_000,
            Request(uuid.uuid4().hex, method, params, datatypes).to_body(),
            reply_to=MqttAddress(GCD_GBID, peer.topic)))

    payloads = ([b"\x00not a frame" + struct.pack(">I", n) for n in range(third)]
                + [call(n, "no_such_method", [], []) for n in range(third)]
                + [call(n, "add", [entry], add.param_datatypes) for n in range(N - 2 * third)])
    mqtt = service.mqtt
    received, refused = mqtt.received, service.telemetry.counters["refused-request"]
    mark = len(lines.records)
    for start in range(0, N, 200):
        await asyncio.gather(*(peer.publish(f"{GCD_TOPIC}/low", payload)
                               for payload in payloads[start:start + 200]))
    await eventually(lambda: mqtt.received - received == N, f"{N} received")
    await eventually(lambda: service.telemetry.counters["refused-request"] - refused == N - third,
                     f"{N - third} requests refused")
    assert sum(mqtt.counters.values()) >= third, mqtt.counters  # the frames that did not decode
    assert await service.store.count() == 0
    assert_bounded(lines, mark, "hostile GCD calls")
