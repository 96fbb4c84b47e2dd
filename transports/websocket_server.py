"""Cluster controller side of the websocket transport: the server libjoynr runtimes connect to.

Protocol (spec/wire.md): the client's first frame is an init frame carrying its
WebSocketClientAddress id (see transports.websocket_common); every later frame is a binary
message frame. Identity rules:

- one live connection per id: a second connection claiming the id of a connection that still
  answers a ping is refused (close 1008, "client id in use"); one whose connection does not answer
  within the ping timeout replaces it;
- a connection speaks only for itself: a message whose sender is routed to another address
  is refused (spoofed sender); the Routing provider accepts add_next_hop from a connection only
  for that connection's own address (see cluster_controller.routing_provider);
- when a connection ends, every route and multicast receiver behind it is removed.

Every refused frame is logged with its reason and counted in ``counters``; the connection
stays open (except for frames websockets itself refuses as too big, which close it with 1009).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections import Counter
from dataclasses import dataclass

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from runtime.addresses import Address, WebSocketAddress, WebSocketClientAddress
from runtime.messages import DEFAULT_MAX_FRAME_BYTES, FrameError, Message, decode_frame
from runtime.router import MessageRouter
from runtime.rules import admit_from_client
from transports.websocket_common import FrameServerConnection, Outbox, decode_init

__all__ = ["WebSocketServerSettings", "WebSocketServerTransport"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WebSocketServerSettings:
    host: str = "127.0.0.1"
    port: int = 4242
    path: str = "/"
    #: frames larger than this are refused (counted, connection kept)
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    #: websocket keep-alive: ping every interval; no pong within the timeout = dead connection
    ping_interval_s: float = 20.0
    ping_timeout_s: float = 20.0
    #: seconds a new connection has to send its init frame
    init_timeout_s: float = 10.0
    #: messages waiting to be written to one connection before sends to it are refused
    max_queued_per_connection: int = 10_000
    ssl_context: ssl.SSLContext | None = None


def _close_reason(text: str) -> str:
    """A close reason that fits a control frame (123 bytes of UTF-8)."""
    return text.encode()[:120].decode(errors="ignore")


class _Client:
    __slots__ = ("address", "outbox", "ws")

    def __init__(self, ws: FrameServerConnection, address: WebSocketClientAddress,
                 outbox: Outbox) -> None:
        self.ws = ws
        self.address = address
        self.outbox = outbox


class WebSocketServerTransport:
    """Serves libjoynr runtimes; the router's transport for WebSocketClientAddress."""

    def __init__(self, router: MessageRouter, settings: WebSocketServerSettings) -> None:
        self.router = router
        self.settings = settings
        self.counters: Counter[str] = Counter()
        self._clients: dict[str, _Client] = {}
        self._claimed: set[str] = set()  # ids being taken over from a dead connection
        self._server: Server | None = None
        self._bound_port: int | None = None

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        s = self.settings
        self._server = await serve(
            self._handle,
            s.host,
            s.port,
            ssl=s.ssl_context,
            # websockets itself closes on frames over twice our limit, so that frames between
            # the two are refused one by one while the connection stays up
            max_size=2 * s.max_frame_bytes,
            ping_interval=s.ping_interval_s,
            ping_timeout=s.ping_timeout_s,
            compression=None,
            # a dead peer is not waited for longer than the ping timeout
            close_timeout=s.ping_timeout_s,
            process_request=self._check_path,
            create_connection=FrameServerConnection,
        )
        sockets = list(self._server.sockets)
        self._bound_port = sockets[0].getsockname()[1] if sockets else s.port
        self.router.register_transport(WebSocketClientAddress, self)

    def _check_path(self, connection: ServerConnection, request: object) -> object:
        path = getattr(request, "path", "/").split("?", 1)[0]
        if path != self.settings.path:
            self._refuse("refused-path", f"no joynr endpoint at {path[:200]!r}",
                         connection.remote_address)
            return connection.respond(404, f"no joynr endpoint at {path[:200]}\n")
        return None

    @property
    def address(self) -> WebSocketAddress:
        """Where libjoynr runtimes connect (the real port when 0 was configured)."""
        s = self.settings
        return WebSocketAddress("wss" if s.ssl_context else "ws", s.host,
                                self._bound_port or s.port, s.path)

    async def stop(self, drain_timeout_s: float = 5.0) -> None:
        """Stop accepting, let each connection write what is queued for it (at most
        ``drain_timeout_s``), then close every connection (going away)."""
        if self._server is None:
            return
        server, self._server = self._server, None
        server.close(close_connections=False)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + drain_timeout_s
        while any(c.outbox.pending for c in self._clients.values()) and (  # noqa: ASYNC110
            loop.time() < deadline  # bounded polling of several queues
        ):
            await asyncio.sleep(0.01)
        undrained = sum(c.outbox.pending for c in self._clients.values())
        if undrained:
            log.warning("closing with %d message(s) not yet written to clients", undrained)
        for client in list(self._clients.values()):
            with contextlib.suppress(ConnectionClosed):
                await client.ws.close(1001, "cluster controller shutting down")
        await server.wait_closed()

    @property
    def clients(self) -> list[str]:
        return list(self._clients)

    # ------------------------------------------------------------------ sending

    def send(self, address: Address, message: Message) -> bool:
        assert isinstance(address, WebSocketClientAddress)
        client = self._clients.get(address.id)
        return client is not None and client.outbox.put(message)

    # ------------------------------------------------------------------ connections

    def _refuse(self, reason: str, detail: str, peer: object) -> None:
        self.counters[reason] += 1
        log.warning("websocket %s: refused: %s", peer, detail)

    async def _handle(self, ws: FrameServerConnection) -> None:
        peer = ws.remote_address
        try:
            first = await asyncio.wait_for(ws.recv(), self.settings.init_timeout_s)
            client_id = decode_init(first)
        except TimeoutError:
            self._refuse("init-timeout", "no init frame in time", peer)
            await ws.close(1008, "init frame expected")
            return
        except FrameError as exc:
            self._refuse(exc.reason, str(exc), peer)
            await ws.close(1008, _close_reason(str(exc)))
            return
        except ConnectionClosed:
            return

        if not await self._take_id(client_id, ws, peer):
            return
        address = WebSocketClientAddress(client_id)
        client = _Client(ws, address, Outbox(ws, f"client {client_id}",
                                             self.settings.max_queued_per_connection))
        self._clients[client_id] = client
        self._claimed.discard(client_id)
        log.info("websocket client %s connected from %s", client_id, peer)
        try:
            await self._receive(client, peer)
        finally:
            await self._disconnected(client)

    async def _take_id(self, client_id: str, ws: FrameServerConnection, peer: object) -> bool:
        """Bind ``client_id`` to ``ws`` unless a live connection holds it."""
        if client_id in self._claimed:
            self._refuse("id-in-use", f"client id {client_id} is being taken over", peer)
            await ws.close(1008, "client id in use")
            return False
        old = self._clients.get(client_id)
        if old is None:
            return True
        # while the ping is awaited another claimant may take the id: only the one that
        # finds it still held by the silent connection replaces it
        if await self._answers_ping(old.ws) or self._clients.get(client_id) is not old:
            self._refuse("id-in-use", f"client id {client_id} belongs to a live connection", peer)
            await ws.close(1008, "client id in use")
            return False
        log.warning("websocket client %s: previous connection is dead, replacing it", client_id)
        self.counters["replaced-dead"] += 1
        self._claimed.add(client_id)  # until _handle registers the new connection
        try:
            await self._disconnected(old)
            await old.ws.close(1001, "replaced by a new connection")
        except BaseException:
            self._claimed.discard(client_id)
            raise
        return True

    async def _answers_ping(self, ws: ServerConnection) -> bool:
        try:
            waiter = await ws.ping()
            await asyncio.wait_for(waiter, self.settings.ping_timeout_s)
        except (TimeoutError, ConnectionClosed):
            return False
        return True

    async def _receive(self, client: _Client, peer: object) -> None:
        """Route the client's frames as they arrive (in data_received) until it is gone."""
        router, table = self.router, self.router.table
        max_bytes = self.settings.max_frame_bytes
        address = client.address
        ws = client.ws

        def on_frame(frame: bytes | str) -> None:
            if self._clients.get(address.id) is not client:
                return  # replaced or disconnected: what it still sends is not routed
            try:
                message = decode_frame(frame, max_bytes, origin=address)
            except FrameError as exc:
                self._refuse(exc.reason, f"client {address.id}: {exc}", peer)
                return
            refusal = admit_from_client(table.get(message.sender), address)
            if refusal is not None:
                self._refuse(refusal.reason, f"client {address.id}: {message.describe()}: "
                             f"{refusal.detail}", peer)
                return
            router.route(message)

        ws.deliver(on_frame)
        await ws.wait_closed()
        rcvd, sent = ws.protocol.close_rcvd, ws.protocol.close_sent
        if (rcvd is not None and rcvd.code == 1009) or (sent is not None and sent.code == 1009):
            self._refuse("oversized-closed", f"client {address.id}: frame too big", peer)

    async def _disconnected(self, client: _Client) -> None:
        if self._clients.get(client.address.id) is not client:
            return  # already replaced and cleaned up
        del self._clients[client.address.id]
        # routes first, at once: whoever sees the client gone sees its routes gone too
        removed = self.router.remove_routes_at(client.address)
        leftover = await client.outbox.close()
        log.info("websocket client %s disconnected: %d route(s) removed, %d unsent message(s) "
                 "queued again", client.address.id, len(removed), len(leftover))
        # its participants have no route now: the messages wait until they register again
        for message in leftover:
            self.router.route(message)
