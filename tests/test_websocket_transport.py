"""Websocket transport details: TLS (wss), keep-alive (dead connections are detected), the
opening handshake's time limit, bounded memory for a client that does not read, and the
graceful stop (what is queued is written, then "going away")."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from pathlib import Path

import pytest
from websockets.asyncio.client import connect as websockets_connect
from websockets.asyncio.server import ServerConnection
from websockets.asyncio.server import serve as websockets_serve
from websockets.client import ClientProtocol
from websockets.exceptions import ConnectionClosedOK
from websockets.protocol import CONNECTING
from websockets.uri import parse_uri

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.libjoynr import LibjoynrConfig, connect
from pyjoynr.programming.system_interfaces import DEFAULT_ROUTING_PARTICIPANT_ID, Routing
from pyjoynr.runtime.addresses import WebSocketClientAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.interface import interface_def
from pyjoynr.runtime.messages import Message, MessageType, decode_frame, encode_frame
from pyjoynr.runtime.payloads import Reply, Request, decode_payload
from pyjoynr.testing.cluster import cc_config, eventually
from pyjoynr.transports.dialects import encode_init
from pyjoynr.transports.outbox import Outbox
from pyjoynr.transports.websocket.client import WebSocketClientSettings
from pyjoynr.transports.websocket.connection import ServerSideConnection, open_client_connection
from tests.support.radio import Radio, RadioProvider
from tests.support.tls import self_signed_certificate

WAIT_S = 5.0
ROUTING = interface_def(Routing)

log = logging.getLogger(__name__)


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    return self_signed_certificate(tmp_path)


async def test_wss_when_a_certificate_is_configured(tmp_path, certificate):
    cert, key = certificate
    config = cc_config(tmp_path, websocket__tls_certificate=cert, websocket__tls_private_key=key)
    async with ClusterController(config) as cc:
        assert cc.websocket_address.protocol == "wss"
        settings = WebSocketClientSettings(tls_ca_file=str(cert))
        provider_rt = await connect(cc.websocket_address, config=LibjoynrConfig(websocket=settings))
        consumer = await connect(cc.websocket_address, config=LibjoynrConfig(websocket=settings))
        try:
            await provider_rt.register_provider("d", RadioProvider())
            proxy = await consumer.build_proxy(Radio, "d")
            assert await proxy.current_station.get() == "FM4"
        finally:
            await provider_rt.core.stop()
            await consumer.core.stop()

        # a client that does not trust the certificate does not get in
        with pytest.raises(ConnectionError):
            await connect(cc.websocket_address, timeout_ms=1000,
                          config=LibjoynrConfig(websocket=WebSocketClientSettings()))


async def test_a_dead_connection_is_detected_and_its_id_can_be_taken_over(tmp_path):
    config = cc_config(tmp_path, websocket__ping_interval_s=0.1, websocket__ping_timeout_s=0.2)
    async with ClusterController(config) as cc:
        fast = WebSocketClientSettings(ping_interval_ms=100, ping_timeout_ms=200,
                                       reconnect_initial_ms=10_000, reconnect_max_ms=10_000)
        victim = await connect(cc.websocket_address, config=LibjoynrConfig(websocket=fast))
        try:
            pid = await victim.register_provider("d", RadioProvider())
            assert cc.router.has_route(pid)
            # the victim's process hangs: it stops reading its socket, so it answers no ping
            outbox = victim.core.transport._outbox
            assert outbox is not None
            outbox.ws.transport.pause_reading()
            await eventually(lambda: victim.client_id not in cc.websocket.clients,
                             timeout_s=5, what="dead connection detected")
            assert not cc.router.has_route(pid)
            # the same id may now connect again (e.g. the restarted process)
            again = await connect(cc.websocket_address, client_id=victim.client_id)
            try:
                assert victim.client_id in cc.websocket.clients
            finally:
                await again.core.stop()
        finally:
            await victim.core.stop()
            await asyncio.sleep(0)


async def test_two_claimants_of_a_dead_id_one_wins(tmp_path):
    config = cc_config(tmp_path, websocket__ping_interval_s=5, websocket__ping_timeout_s=0.3)
    async with ClusterController(config) as cc:
        quiet = WebSocketClientSettings(ping_interval_ms=5_000, ping_timeout_ms=5_000,
                                        reconnect_initial_ms=10_000, reconnect_max_ms=10_000)
        victim = await connect(cc.websocket_address, config=LibjoynrConfig(websocket=quiet))
        outbox = victim.core.transport._outbox
        assert outbox is not None
        outbox.ws.transport.pause_reading()  # hung: it will not answer the CC's ping
        claims = [
            connect(cc.websocket_address, client_id=victim.client_id, timeout_ms=2000,
                    config=LibjoynrConfig(websocket=quiet))
            for _ in range(2)
        ]
        results = await asyncio.gather(*claims, return_exceptions=True)
        try:
            winners = [r for r in results if not isinstance(r, BaseException)]
            assert len(winners) == 1, results
            assert isinstance(next(r for r in results if isinstance(r, BaseException)),
                              ConnectionError)
            assert cc.websocket.counters["id-in-use"] >= 1
            assert cc.websocket.counters["replaced-dead"] == 1
        finally:
            for runtime in winners:
                await runtime.core.stop()
            await victim.core.stop()


async def test_a_new_connection_is_served_while_it_takes_over_a_silent_ones_id(tmp_path):
    # a runtime whose connection went half-open (a laptop lid, a NAT timeout) reconnects with
    # its id: the CC pings the old connection for ping_timeout_s before it replaces it, and
    # meanwhile the new one must be served: its pings answered, its pongs read (or the CC's
    # keep-alive fails it), and what it sends after its init frame routed once it is accepted
    config = cc_config(tmp_path, websocket__ping_interval_s=0.5, websocket__ping_timeout_s=1.0)
    async with ClusterController(config) as cc:
        url = cc.websocket_address.url
        loop = asyncio.get_running_loop()
        silent = await SilentClient.open(url, "lid")
        try:
            await eventually(lambda: "lid" in cc.websocket.clients, what="connected")

            def holder() -> ServerSideConnection | None:
                client = cc.websocket._clients.get("lid")
                return None if client is None else client.conn

            old = holder()
            assert old is not None
            # the new connection keeps alive with the CC's settings: it fails (1011) unless
            # the CC answers its pings, and the CC fails it unless the CC reads its pongs
            new = await open_client_connection(
                url, max_size=1 << 20, ping_interval_s=0.5, ping_timeout_s=1.0,
                close_timeout_s=1.0, open_timeout_s=WAIT_S, ssl_context=None)
            received: list[Message] = []
            new.deliver(lambda frame: received.append(decode_frame(frame)))
            register = add_next_hop("lid-pid", "lid")
            started = loop.time()
            assert new.send_frames([encode_init("lid"), encode_frame(register)])
            # once the CC pings the old connection, the new one pings the CC: answered while the
            # CC still waits for the old connection's pong
            await eventually(lambda: old._pings, what="the CC pinging the old connection")
            await asyncio.wait_for(new.ping(), WAIT_S)
            assert holder() is old, "taken over before the pong"
            assert not cc.router.has_route("lid-pid")

            await eventually(lambda: holder() not in (None, old), what="taken over")
            took = loop.time() - started
            # accepted without waiting for the silent connection's close handshake, which it
            # never answers (it ends by itself, aborted after the close timeout)
            assert not old.closed.done()
            assert cc.websocket.counters["replaced-dead"] == 1
            # the message sent right after the init frame was routed, once: its reply came
            await eventually(lambda: received, what="the add_next_hop reply")
            assert [m.type for m in received] == [MessageType.REPLY]
            assert received[0].recipient == "lid-pid"
            assert decode_payload(Reply, received[0].body).error is None
            assert cc.router.route_of("lid-pid").address == WebSocketClientAddress("lid")

            # it stays up past ping interval + ping timeout after the take-over, both ends'
            # keep-alive going on
            await asyncio.sleep(0.5 + 1.0 + 0.5)
            assert new.open
            taker = holder()
            assert taker is not None and taker.open
            await eventually(old.closed.done, what="the silent connection ended")
            log.info("take-over of a silent connection's id: %.2f s (ping timeout 1.0 s)",
                     took)
            await new.close()
        finally:
            silent.close()


def add_next_hop(participant_id: str, client_id: str) -> Message:
    """A request to the CC's Routing provider that routes ``participant_id`` to the connection
    of ``client_id`` (as a libjoynr runtime sends it for each of its participants)."""
    method = ROUTING.methods["add_next_hop"]
    body = Request(uuid.uuid4().hex, "add_next_hop",
                   [participant_id, WebSocketClientAddress(client_id).to_dict(), False],
                   method.param_datatypes).to_body()
    return Message(type=MessageType.REQUEST, sender=participant_id,
                   recipient=DEFAULT_ROUTING_PARTICIPANT_ID,
                   expiry_date_ms=now_ms() + 60_000, body=body)


def one_way(recipient: str, body: bytes = b"\x80") -> Message:
    return Message(type=MessageType.ONE_WAY, sender="someone", recipient=recipient,
                   expiry_date_ms=now_ms() + 60_000, body=body)


async def test_stop_writes_what_is_queued_then_closes_going_away(tmp_path):
    cc = ClusterController(cc_config(tmp_path))
    await cc.start()
    try:
        # max_queue=None: the client reads on while its messages wait to be recv()ed
        async with websockets_connect(cc.websocket_address.url, compression=None,
                                      max_size=None, max_queue=None) as raw:
            await raw.send(encode_init("drained"))
            await eventually(lambda: "drained" in cc.websocket.clients, what="connected")
            cc.router.add_route("drained-pid", WebSocketClientAddress("drained"),
                                is_globally_visible=False)
            messages = [one_way("drained-pid") for _ in range(500)]
            for message in messages:
                cc.router.route(message)
            # the loop has not run since: all 500 wait in the connection's queue
            await cc.websocket.stop()

            received = []
            with pytest.raises(ConnectionClosedOK) as closed:
                async with asyncio.timeout(WAIT_S):
                    while True:
                        frame = await raw.recv()
                        assert isinstance(frame, bytes)
                        received.append(decode_frame(frame).id)
            assert received == [m.id for m in messages]
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
    finally:
        await cc.stop()


class SilentClient:
    """A websocket client that completes the opening handshake and sends its init frame, then
    reads nothing any more (asyncio's stream reader stops at 128 KiB): a hung process."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer

    @classmethod
    async def open(cls, url: str, client_id: str) -> SilentClient:
        uri = parse_uri(url)
        reader, writer = await asyncio.open_connection(uri.host, uri.port)
        protocol = ClientProtocol(uri)
        protocol.send_request(protocol.connect())
        writer.writelines(protocol.data_to_send())
        async with asyncio.timeout(WAIT_S):
            while protocol.state is CONNECTING:
                data = await reader.read(65536)
                assert data, "closed during the opening handshake"
                protocol.receive_data(data)
        assert protocol.handshake_exc is None
        protocol.send_binary(encode_init(client_id))
        writer.writelines(protocol.data_to_send())
        await writer.drain()
        return cls(writer)

    def close(self) -> None:
        self.writer.close()


async def test_a_client_that_does_not_read_holds_no_more_than_its_queue(tmp_path):
    config = cc_config(tmp_path, websocket__max_queued_per_connection=10,
                       websocket__ping_interval_s=30, websocket__ping_timeout_s=0.3)
    async with ClusterController(config) as cc:
        silent = await SilentClient.open(cc.websocket_address.url, "silent")
        try:
            await eventually(lambda: "silent" in cc.websocket.clients, what="connected")
            address = WebSocketClientAddress("silent")
            cc.router.add_route("silent-pid", address, is_globally_visible=False)
            big = one_way("silent-pid", b"\x00" * 64 * 1024)
            # the socket buffers fill up, then the transport's write buffer, then the queue
            # of 10: from then on sends are refused instead of piling up in memory
            for _ in range(1000):  # 64 MiB: far more than the buffers on the way
                if not cc.websocket.send(address, big):
                    break
                await asyncio.sleep(0)  # the queue is written from the event loop
            else:
                raise AssertionError("1000 messages of 64 KiB accepted for a client that "
                                     "does not read")
            assert "silent" in cc.websocket.clients  # refused, not disconnected
            assert not cc.websocket.send(address, one_way("silent-pid"))

            # stopping: the queue cannot be written, the client does not answer the close
            # handshake (the close timeout is the ping timeout); what was not written goes
            # back to the router, which keeps it for when the participant has a route again
            await cc.websocket.stop(drain_timeout_s=0.2)
            assert "silent" not in cc.websocket.clients
            assert not cc.router.has_route("silent-pid")
            assert cc.router.queued() == 10
        finally:
            silent.close()


async def test_a_connection_that_never_completes_its_handshake_is_closed():
    opened: list[ServerSideConnection] = []
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: ServerSideConnection(max_size=4096, ping_interval_s=None, ping_timeout_s=1,
                                     close_timeout_s=1, on_request=lambda ws, request: None,
                                     on_open=opened.append, handshake_timeout_s=0.2),
        "127.0.0.1", 0)
    try:
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and nothing more
        async with asyncio.timeout(WAIT_S):
            with contextlib.suppress(ConnectionResetError):  # closed either way
                assert await reader.read() == b""
        assert opened == []
        writer.close()
    finally:
        server.close()
        await server.wait_closed()


async def test_a_backlog_is_read_to_its_bound_in_bytes_then_reading_waits_for_it():
    # messages that arrive before a handler is set (a server deciding whether the connection
    # may take over a client id) are kept while reading goes on, up to max_backlog_bytes;
    # then the peer waits (TCP flow control), and nothing is lost once a handler takes them
    bound = 64 * 1024
    opened: list[ServerSideConnection] = []
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: ServerSideConnection(max_size=4096, ping_interval_s=None, ping_timeout_s=1,
                                     close_timeout_s=1, on_request=lambda ws, request: None,
                                     on_open=opened.append, max_backlog_bytes=bound),
        "127.0.0.1", 0)
    client = None
    try:
        port = server.sockets[0].getsockname()[1]
        client = await open_client_connection(
            f"ws://127.0.0.1:{port}/", max_size=4096, ping_interval_s=None, ping_timeout_s=1,
            close_timeout_s=1, open_timeout_s=WAIT_S, ssl_context=None)
        await eventually(lambda: opened, what="opened")
        ws = opened[0]
        # read while under the bound: a ping is answered with messages waiting
        assert client.send_frames([b"first"])
        await eventually(lambda: ws.backlog == 1, what="the first message kept")
        await asyncio.wait_for(client.ping(), WAIT_S)

        sent = [i.to_bytes(4, "big") * 256 for i in range(2048)]  # 1 KiB each, 2 MiB
        assert client.send_frames(sent)
        await eventually(lambda: ws._backlog_bytes >= bound, what="the backlog full")
        await eventually(lambda: ws._reading_paused, what="reading paused")
        assert ws.backlog < len(sent)  # the rest waits in the socket buffers
        # the bound holds, beside what the read that reached it brought
        assert ws._backlog_bytes <= bound + 1024 * 1024

        received: list[bytes | str] = []
        ws.deliver(received.append)
        await eventually(lambda: len(received) == 1 + len(sent), what="everything delivered")
        assert received == [b"first", *sent]
    finally:
        if client is not None:
            await client.close()
        server.close()
        await server.wait_closed()


class CountingTransport:
    """A real transport, with its writes counted (everything passes through)."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self.writes: list[int] = []  # the messages' bytes per write call

    def write(self, data: bytes) -> None:
        self.writes.append(len(data))
        self._transport.write(data)

    def writelines(self, data: list[bytes]) -> None:
        self.writes.append(sum(map(len, data)))
        self._transport.writelines(data)

    def __getattr__(self, name: str) -> object:
        return getattr(self._transport, name)


async def test_an_outbox_writes_a_turns_first_message_at_once_and_the_rest_together():
    received: list[bytes] = []
    all_there = asyncio.Event()

    async def collect(ws: ServerConnection) -> None:
        async for frame in ws:
            assert isinstance(frame, bytes)
            received.append(frame)
            if len(received) == 7:
                all_there.set()

    async with websockets_serve(collect, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        connection = await open_client_connection(
            f"ws://127.0.0.1:{port}/", max_size=1 << 20, ping_interval_s=None,
            ping_timeout_s=WAIT_S, close_timeout_s=WAIT_S, open_timeout_s=WAIT_S,
            ssl_context=None)
        counting = connection.transport = CountingTransport(connection.transport)
        outbox = Outbox(connection, "test", max_messages=100, max_bytes=1 << 20)
        messages = [Message(MessageType.ONE_WAY, "s", "r", now_ms() + 60_000,
                            b"x" * (10 + i), f"m-{i}") for i in range(7)]
        assert outbox.put(messages[0])
        assert len(counting.writes) == 1  # at once, within this loop turn
        for message in messages[1:6]:
            assert outbox.put(message)
        assert len(counting.writes) == 1 and outbox.pending == 5  # these wait for the turn's end
        await asyncio.sleep(0)  # the turn ends
        assert len(counting.writes) == 2 and outbox.pending == 0  # ... and went out together
        assert outbox.put(messages[6])  # a new turn: at once again
        assert len(counting.writes) == 3 and outbox.pending == 0
        async with asyncio.timeout(WAIT_S):
            await all_there.wait()
        assert [decode_frame(frame).id for frame in received] == [m.id for m in messages]
        await connection.close()


async def test_binary_messages_are_read_by_the_connections_own_reader_the_rest_by_websockets():
    # both ends read binary messages with their own reader (transports/websocket/framing.py:
    # FrameReader); a client's frames cut at odd points, with a ping, a text message and a
    # fragmented message among them, arrive whole and in order, the ping is answered and the
    # close handshake completes as websockets runs it
    opened: list[ServerSideConnection] = []
    got: list[bytes | str] = []

    def on_open(ws: ServerSideConnection) -> None:
        opened.append(ws)
        ws.deliver(got.append)

    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: ServerSideConnection(max_size=1 << 20, ping_interval_s=None, ping_timeout_s=1,
                                     close_timeout_s=1, on_request=lambda ws, request: None,
                                     on_open=on_open),
        "127.0.0.1", 0)
    client = None
    try:
        port = server.sockets[0].getsockname()[1]
        client = await open_client_connection(
            f"ws://127.0.0.1:{port}/", max_size=1 << 20, ping_interval_s=None, ping_timeout_s=1,
            close_timeout_s=1, open_timeout_s=WAIT_S, ssl_context=None)
        await eventually(lambda: opened, what="opened")
        ws = opened[0]
        to_client: list[bytes | str] = []
        client.deliver(to_client.append)
        sent = [bytes([i % 251]) * n for i, n in enumerate([0, 5, 125, 126, 65535, 65536, 300])]
        assert client.send_frames(sent) and ws.send_frames(sent)
        await eventually(lambda: len(got) == len(to_client) == len(sent), what="both read")
        assert got == sent and to_client == sent
        assert ws._reader.frames_read == client._reader.frames_read == len(sent)
        await client.close()
        await asyncio.wait_for(ws.wait_closed(), WAIT_S)
        assert ws.protocol.close_code == 1000

        # a raw client: the frames of websockets' client protocol object, written in pieces
        got.clear()
        raw = ClientProtocol(parse_uri(f"ws://127.0.0.1:{port}/"), max_size=1 << 20)
        raw.send_request(raw.connect())
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"".join(raw.data_to_send()))
        raw.receive_data(await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WAIT_S))
        assert [type(e).__name__ for e in raw.events_received()] == ["Response"]
        raw.send_binary(b"one")
        raw.send_binary(b"two" * 100)
        raw.send_ping(b"p")
        raw.send_text(b"three")
        raw.send_binary(b"four", fin=False)
        raw.send_continuation(b"-five", fin=True)
        raw.send_binary(b"six" * 30_000)
        raw.send_close(1000, "done")
        stream = b"".join(raw.data_to_send())
        for at, cut in enumerate(range(0, len(stream), 333)):
            writer.write(stream[cut:cut + 333])
            await writer.drain()
            if at % 3 == 0:
                await asyncio.sleep(0.001)  # so that the server reads it in several reads
        answer = b""
        async with asyncio.timeout(WAIT_S):
            while chunk := await reader.read(65536):
                answer += chunk
        raw.receive_data(answer)
        raw.receive_eof()
        frames = [(e.opcode.name, bytes(e.data)) for e in raw.events_received()]
        assert frames[0] == ("PONG", b"p") and frames[1][0] == "CLOSE"
        assert raw.close_rcvd is not None and raw.close_rcvd.code == 1000
        await eventually(lambda: len(got) == 5, what="the raw client's messages")
        assert got == [b"one", b"two" * 100, "three", b"four-five", b"six" * 30_000]
        writer.close()
    finally:
        if client is not None:
            await client.close()
        server.close()
        await server.wait_closed()
