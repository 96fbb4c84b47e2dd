"""The project's own MQTT client (transports.mqtt.mqtt5) against fake brokers written here: a
broker on 127.0.0.1 that speaks through the same packet core (server role) and then does
what a test asks: malformed packets, refusals, silence, reason codes, limits.

Hostile input: every malformed packet a broker could send ends that connection with a counted,
logged reason (``mqtt-<reason>`` in the transport's counters), the cluster controller
reconnects and goes on; nothing crashes. The rest checks the promises of the seam on this
client: PUBACK reason codes, CONNACK refusals, connect timeout, keep-alive, bounded disconnect,
the broker's receive maximum and maximum packet size, MQTT 3.1.1 oversized messages skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.testing.cluster import eventually
from pyjoynr.transports.mqtt.client import MqttSessionError, open_session
from pyjoynr.transports.mqtt.mqtt5 import packets as p
from pyjoynr.transports.mqtt.settings import MqttSettings, parse_broker_url
from tests.support.mqtt_cluster import GBID, mqtt_cc_config
from tests.unit.test_mqtt5_packets import MALFORMED

pytestmark = pytest.mark.network

WAIT_S = 10.0


class Peer:
    """One client connection as the fake broker sees it."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.decoder = p.Decoder("server")
        self.pending: list[p.Packet] = []

    async def next(self) -> p.Packet:
        while not self.pending:
            data = await self.reader.read(65536)
            if not data:
                raise ConnectionError("the client closed the connection")
            self.pending += self.decoder.feed(data)
        return self.pending.pop(0)

    async def expect(self, kind: type) -> p.Packet:
        while True:
            packet = await self.next()
            if isinstance(packet, kind):
                return packet
            if not isinstance(packet, p.Pingreq):
                raise AssertionError(f"expected {kind.__name__}, got {packet!r}")

    def send(self, data: bytes) -> None:
        self.writer.write(data)

    @property
    def version(self) -> int:
        return self.decoder.version

    async def accept(self, **properties: int) -> p.Connect:
        connect = await self.expect(p.Connect)
        assert isinstance(connect, p.Connect)
        props = {getattr(p, name.upper()): value for name, value in properties.items()}
        self.send(p.encode(p.Connack(properties=props if connect.version == p.V5 else {}),
                           connect.version))
        return connect

    async def answer_subscribe(self) -> p.Subscribe:
        subscribe = await self.expect(p.Subscribe)
        assert isinstance(subscribe, p.Subscribe)
        self.send(p.encode(p.Suback(subscribe.packet_id, [1]), self.version))
        return subscribe


Script = Callable[[Peer, int], Awaitable[None]]


class FakeBroker:
    """Runs ``script(peer, n)`` for the n-th connection (from 0); counts connections."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.connections = 0
        self.server: asyncio.Server | None = None
        self.errors: list[BaseException] = []

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        n = self.connections
        self.connections += 1
        try:
            await self.script(Peer(reader, writer), n)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except Exception as exc:  # surfaces in the test
            self.errors.append(exc)
        finally:
            writer.close()

    async def __aenter__(self) -> FakeBroker:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.server.wait_closed(), 2)

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.sockets[0].getsockname()[1])

    def url(self, version: str = "5") -> str:
        return f"mqtt://127.0.0.1:{self.port}?version={version}"


async def hold(peer: Peer) -> None:
    """Answer PINGREQs and (UN)SUBSCRIBEs until the client goes."""
    while True:
        packet = await peer.next()
        if isinstance(packet, p.Pingreq):
            peer.send(b"\xd0\x00")
        elif isinstance(packet, p.Subscribe):
            peer.send(p.encode(p.Suback(packet.packet_id, [1]), peer.version))
        elif isinstance(packet, p.Unsubscribe):
            peer.send(p.encode(p.Unsuback(packet.packet_id, [0]), peer.version))


@pytest.fixture
async def stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as s:
        yield s


# ====================================================================== hostile brokers


@pytest.mark.parametrize("name", sorted(n for n in MALFORMED if not n.startswith("CONNACK")))
async def test_a_malformed_packet_ends_the_connection_counted_and_logged_then_reconnects(
        stack: AsyncExitStack, tmp_path: Path, caplog: pytest.LogCaptureFixture,
        name: str) -> None:
    data, reason = MALFORMED[name]

    async def script(peer: Peer, n: int) -> None:
        await peer.accept()
        await peer.answer_subscribe()
        if n == 0:
            peer.send(data)
        await hold(peer)  # (and the CC's multicast subscriptions)

    broker = await stack.enter_async_context(FakeBroker(script))
    cc = await stack.enter_async_context(ClusterController(mqtt_cc_config(
        tmp_path, f"cc-{uuid.uuid4().hex[:8]}", {GBID: broker.url()},
        discovery__gcd="false")))
    assert cc.mqtt is not None
    mqtt = cc.mqtt
    # (the first connection may break before the CC counts it as established)
    await eventually(lambda: broker.connections >= 2 and mqtt.connected(GBID), WAIT_S,
                     "the reconnect")
    assert mqtt.counters[f"mqtt-{reason}"] == 1
    assert any(f"refused ({reason})" in r.getMessage() and r.levelno == logging.WARNING
               for r in caplog.records)
    assert not broker.errors


@pytest.mark.parametrize("connack", [b"\x20\x03\x00\x01\x00", b"\x20\x05\x00\x00\x02\x7f\x00",
                                     b"\x20\x03\x01\x87\x00", b"\x30\x03\x00\x01t"],
                         ids=["unknown-code", "bad-property", "present-on-failure",
                              "publish-before-connack"])
async def test_a_malformed_connack_fails_the_connect_with_its_reason(connack: bytes) -> None:
    async def script(peer: Peer, n: int) -> None:
        await peer.expect(p.Connect)
        peer.send(connack)
        await hold(peer)

    refusals: list[str] = []
    async with FakeBroker(script) as broker:
        with pytest.raises(MqttSessionError):
            async with open_session(parse_broker_url(broker.url()), MqttSettings(),
                                    client_id="c", on_refusal=lambda r, d: refusals.append(r)):
                pass
    assert len(refusals) == 1


async def test_a_garbage_flood_is_refused_from_its_header(stack: AsyncExitStack) -> None:
    """A broker announcing a packet larger than the limit: refused before the body."""
    sent = asyncio.Event()

    async def script(peer: Peer, n: int) -> None:
        await peer.accept()
        await peer.answer_subscribe()
        peer.send(b"\x30" + p.encode_varint(50_000_000))
        peer.send(b"x" * 100_000)
        sent.set()
        await hold(peer)

    refusals: list[str] = []
    broker = await stack.enter_async_context(FakeBroker(script))
    settings = MqttSettings(max_message_bytes=10_000)
    async with open_session(parse_broker_url(broker.url()), settings, client_id="c",
                            on_refusal=lambda r, d: refusals.append(r)) as session:
        await session.subscribe("t/#", 1)
        with pytest.raises(MqttSessionError, match="packet-too-large"):
            await asyncio.wait_for(session.receive(lambda t, b: None), WAIT_S)
    assert refusals == ["packet-too-large"]


# ====================================================================== the seam's promises


async def test_puback_reason_codes_reach_the_caller() -> None:
    async def script(peer: Peer, n: int) -> None:
        await peer.accept()
        for code in (0x00, 0x10, 0x87):
            publish = await peer.expect(p.Publish)
            assert isinstance(publish, p.Publish)
            peer.send(p.encode(p.Puback(publish.packet_id, code)))
        await hold(peer)

    async with FakeBroker(script) as broker, open_session(
            parse_broker_url(broker.url()), MqttSettings(), client_id="c") as session:
        codes = [await session.publish("t/x", b"m", 1, 60) for _ in range(3)]
    assert codes == [0x00, 0x10, 0x87]


async def test_connect_details_credentials_session_and_limits() -> None:
    seen: list[p.Connect] = []

    async def script(peer: Peer, n: int) -> None:
        seen.append(await peer.accept())
        await hold(peer)

    async with FakeBroker(script) as broker:
        url = parse_broker_url(f"mqtt://user:pa%20ss@127.0.0.1:{broker.port}")
        settings = MqttSettings(keepalive_s=17, session_expiry_s=99, max_message_bytes=1000)
        async with open_session(url, settings, client_id="cid"):
            pass
        async with open_session(parse_broker_url(broker.url("3.1.1")),
                                MqttSettings(session_expiry_s=0), client_id="c311"):
            pass
    v5, v311 = seen
    assert (v5.client_id, v5.username, v5.password, v5.keepalive) == ("cid", "user", b"pa ss", 17)
    assert v5.clean_start is False and v5.version == p.V5
    assert v5.properties == {p.SESSION_EXPIRY: 99, p.MAXIMUM_PACKET_SIZE: 1000 + 5120}
    assert (v311.version, v311.clean_start, v311.properties) == (p.V311, True, {})


@pytest.mark.parametrize(("version", "code", "text"), [
    ("5", 0x86, "bad user name or password"), ("5", 0x87, "not authorized"),
    ("3.1.1", 5, "not authorized")])
async def test_a_refusing_connack_is_a_session_error_naming_the_reason(
        version: str, code: int, text: str) -> None:
    async def script(peer: Peer, n: int) -> None:
        connect = await peer.expect(p.Connect)
        assert isinstance(connect, p.Connect)
        peer.send(p.encode(p.Connack(False, code), connect.version))
        await hold(peer)

    async with FakeBroker(script) as broker:
        with pytest.raises(MqttSessionError, match=text):
            async with open_session(parse_broker_url(broker.url(version)), MqttSettings(),
                                    client_id="c"):
                pass


async def test_a_silent_broker_fails_the_connect_within_the_timeout() -> None:
    async def script(peer: Peer, n: int) -> None:
        await asyncio.sleep(WAIT_S)

    async with FakeBroker(script) as broker:
        with pytest.raises(MqttSessionError, match=r"no answer within 0\.2 s"):
            async with open_session(parse_broker_url(broker.url()),
                                    MqttSettings(connect_timeout_s=0.2), client_id="c"):
                pass


async def test_keepalive_pings_and_a_broker_that_stops_answering_is_left() -> None:
    pings = 0

    async def script(peer: Peer, n: int) -> None:
        nonlocal pings
        await peer.accept(server_keep_alive=1)  # the broker's keep-alive wins
        while True:
            packet = await peer.next()
            if isinstance(packet, p.Pingreq):
                pings += 1
                if pings == 1:
                    peer.send(b"\xd0\x00")  # the first is answered, the second not

    async with FakeBroker(script) as broker, open_session(
            parse_broker_url(broker.url()), MqttSettings(keepalive_s=60), client_id="c"
    ) as session:
        with pytest.raises(MqttSessionError, match="keep-alive"):
            await asyncio.wait_for(session.receive(lambda t, b: None), WAIT_S)
    assert pings == 2


async def test_disconnect_is_bounded_when_the_broker_never_closes() -> None:
    async def script(peer: Peer, n: int) -> None:
        await peer.accept()
        await peer.expect(p.Disconnect)
        await asyncio.sleep(WAIT_S)  # ... and keeps the socket open

    async with FakeBroker(script) as broker:
        async with asyncio.timeout(WAIT_S / 2):  # the disconnect returns by itself
            async with open_session(parse_broker_url(broker.url()), MqttSettings(),
                                    client_id="c"):
                pass


async def test_the_brokers_receive_maximum_bounds_what_is_in_flight() -> None:
    most = 0

    async def script(peer: Peer, n: int) -> None:
        nonlocal most
        await peer.accept(receive_maximum=2)
        unacked: set[int] = set()
        loop = asyncio.get_running_loop()

        def ack(pid: int) -> None:
            unacked.discard(pid)
            peer.send(p.encode(p.Puback(pid)))

        while True:  # each acknowledged 10 ms after it arrived
            publish = await peer.expect(p.Publish)
            assert isinstance(publish, p.Publish)
            unacked.add(publish.packet_id)
            most = max(most, len(unacked))
            loop.call_later(0.01, ack, publish.packet_id)

    async with FakeBroker(script) as broker, open_session(
            parse_broker_url(broker.url()), MqttSettings(), client_id="c") as session:
        codes = await asyncio.gather(*(session.publish("t", bytes([i]), 1, None)
                                       for i in range(8)))
    assert codes == [0] * 8
    assert most == 2


async def test_a_message_larger_than_the_broker_takes_is_refused_before_sending() -> None:
    async def script(peer: Peer, n: int) -> None:
        await peer.accept(maximum_packet_size=100)
        await hold(peer)

    async with FakeBroker(script) as broker, open_session(
            parse_broker_url(broker.url()), MqttSettings(), client_id="c") as session:
        with pytest.raises(ValueError, match="at most 100"):
            await session.publish("t", b"x" * 200, 1, None)
        assert await session.publish("t", b"x" * 10, 0, None) == 0


async def test_311_oversized_message_is_skipped_acknowledged_and_the_next_delivered() -> None:
    acked: list[int] = []

    async def script(peer: Peer, n: int) -> None:
        await peer.accept()
        peer.send(p.encode(p.Publish("t/big", b"x" * 10_000, 1, 7), p.V311)
                  + p.encode(p.Publish("t/small", b"ok", 1, 8), p.V311))
        while True:
            packet = await peer.next()
            if isinstance(packet, p.Puback):
                acked.append(packet.packet_id)

    refusals: list[str] = []
    got: list[tuple[str, bytes]] = []
    settings = MqttSettings(max_message_bytes=100)
    async with FakeBroker(script) as broker, open_session(
            parse_broker_url(broker.url("3.1.1")), settings, client_id="c",
            on_refusal=lambda r, d: refusals.append(r)) as session:
        receiving = asyncio.ensure_future(session.receive(lambda t, b: got.append((t, b))))
        await eventually(lambda: acked == [7, 8], WAIT_S, "both acknowledged")
        receiving.cancel()
    assert got == [("t/small", b"ok")]
    assert refusals == ["packet-too-large"]


async def test_messages_before_the_handler_are_delivered_first_in_order() -> None:
    async def script(peer: Peer, n: int) -> None:
        await peer.accept()
        for i in range(5):
            peer.send(p.encode(p.Publish("t", bytes([i]), 1, i + 1)))
        await hold(peer)

    got: list[bytes] = []
    async with FakeBroker(script) as broker, open_session(
            parse_broker_url(broker.url()), MqttSettings(), client_id="c") as session:
        await asyncio.sleep(0.1)  # they arrive before anyone receives
        receiving = asyncio.ensure_future(session.receive(lambda t, b: got.append(b)))
        await eventually(lambda: len(got) == 5, WAIT_S, "five messages")
        receiving.cancel()
    assert got == [bytes([i]) for i in range(5)]


async def test_publishes_in_flight_fail_with_a_session_error_when_the_connection_ends() -> None:
    async def script(peer: Peer, n: int) -> None:
        await peer.accept()
        await peer.expect(p.Publish)
        peer.writer.close()  # no PUBACK: gone

    async with FakeBroker(script) as broker, open_session(
            parse_broker_url(broker.url()), MqttSettings(), client_id="c") as session:
        with pytest.raises(MqttSessionError):
            await asyncio.wait_for(session.publish("t", b"m", 1, None), WAIT_S)
        with pytest.raises(MqttSessionError):  # and later ones at once
            await session.publish("t", b"m", 1, None)
