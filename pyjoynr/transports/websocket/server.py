"""Cluster controller side of the websocket transport: the server libjoynr runtimes connect to.

Protocol: the client's first message is an init frame carrying its WebSocketClientAddress id
(see transports.dialects), within ``init_timeout_s``; every later message is a binary
message frame. Both frame dialects are served on one port: the init frame tells the
connection's dialect (the project's msgpack init, or joynr's JSON one), and the connection
keeps it: its frames are read in it (msgpack frames, or SMRF frames) and what is routed to it
is written in it, whatever dialect the message arrived in (the envelope is translated, the body
goes on untouched). Only ``path`` is served: other paths get an HTTP 404. Identity rules (the
same for both dialects):

- one live connection per id: a second connection claiming the id of a connection that still
  answers a ping is refused (close 1008, "client id in use"; what it sent after its init frame is
  dropped, counted "dropped-unaccepted"); one whose connection does not answer within the ping
  timeout replaces it. Both connections are served while that is decided: the old one's
  messages are routed, the new one is read (keep-alive, close frames) and what it sends after its
  init frame waits in its backlog (``max_backlog_bytes_per_connection``) to be routed in order
  once it is accepted; the old one's close is not waited for (it is aborted after the close
  timeout);
- the same liveness decides whether another connection may claim a participant routed to a
  connection (``connection_alive``, asked by the Routing provider; see runtime.rules);
- a connection speaks only for itself: a message whose sender is routed to another address
  is refused (spoofed sender, see runtime.rules), so are a provider's answers and
  multicasts whose sender has no route, and a multicast whose sender is not its provider;
  the Routing provider accepts add_next_hop from a connection only for that connection's
  own address (see cluster_controller.routing_provider);
- when a connection ends, every route and multicast receiver behind it is removed, and what was
  queued for it but not written is routed again (it waits for the client's next connection);
- what a connection (and all connections of one owner id) may hold is bounded by the quotas
  handed in (runtime.quotas; a cluster controller's, shared with its router and providers),
  told here when a connection begins, with its owner id, and ends;
- owner ids (wss with ``tls_client_ca_file``): the CN of a client's verified certificate is the
  owner id of its connection (a certificate without exactly one non-empty CN is refused, 1008,
  ``bad-certificate``); on a joynr-dialect connection with an owner id, every message must be
  custom-signed with exactly the owner id's UTF-8 bytes, as joynr's C++ cluster controller
  requires, else it is refused (``bad-owner``). Forwarded SMRF frames keep their signature.

A connection refused with 1008 is closed at once: what it sent after the refused frame is read
and dropped, and it has ``REFUSAL_CLOSE_TIMEOUT_S`` to answer the close frame before it is
aborted.

Every refused message is counted in ``counters`` and logged with its reason (rate-limited per
reason and peer: runtime.logs); the connection stays open, except for messages over twice
``max_frame_bytes``, which close it with 1009 (counted as "oversized-closed"), and messages in
more than ``max_fragments_per_message`` fragments, which close it with 1009 too (counted as
"too-many-fragments"). Stopping is graceful: no new connections, what is queued is written
(bounded in time), then every connection is closed with 1001 (going away).

The websocket protocol itself is websockets' sans-I/O implementation under the project's
asyncio layer (transports.websocket.connection).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from pyjoynr.runtime.addresses import Address, WebSocketAddress, WebSocketClientAddress
from pyjoynr.runtime.inlets import Inlet, InletKind
from pyjoynr.runtime.logs import get_logger, message_fields
from pyjoynr.runtime.messages import FrameError, Message
from pyjoynr.runtime.quotas import Quotas
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.tasks import TaskSupervisor
from pyjoynr.runtime.telemetry import Telemetry
from pyjoynr.transports.clients import ServedClient, ServedClients
from pyjoynr.transports.dialects import decode_any_init
from pyjoynr.transports.websocket.connection import ServerSideConnection, WebSocketConnection
from pyjoynr.transports.websocket.settings import JOYNR, WebSocketServerSettings, server_ssl_context

__all__ = ["ClientSummary", "WebSocketServerSettings", "WebSocketServerTransport"]

log = get_logger(__name__)

#: close codes (RFC 6455)
GOING_AWAY = 1001
POLICY_VIOLATION = 1008
MESSAGE_TOO_BIG = 1009

#: seconds a refused connection (1008) has to send its close frame before it is aborted: the
#: refusal does not wait for a client that writes without reading
REFUSAL_CLOSE_TIMEOUT_S = 1.0

def _host_port(peer: object) -> str:
    """``host:port`` (``[host]:port`` for IPv6) of a socket's peer address."""
    if isinstance(peer, tuple) and len(peer) >= 2:
        host = str(peer[0])
        return f"[{host}]:{peer[1]}" if ":" in host else f"{host}:{peer[1]}"
    return str(peer)


def _host_key(peer: object) -> str:
    """The peer part of a rate-limiting key for a connection from ``peer`` (a socket's peer
    address): its host, whatever port it came from."""
    host = peer[0] if isinstance(peer, tuple) and peer else peer
    return f"host {host}"


def _close_reason(text: str) -> str:
    """A close reason that fits a control frame (123 bytes of UTF-8)."""
    return text.encode()[:120].decode(errors="ignore")


def _path_of(request: Request) -> str:
    """The path a handshake request asks for, without its query."""
    return request.path.split("?", 1)[0]


def _owner_id(ws: ServerSideConnection) -> str | None:
    """The owner id of a connection: the CN of the client's verified certificate, None when it
    presented none (or the connection is not TLS); FrameError (``bad-certificate``) for a
    certificate without exactly one non-empty CN."""
    certificate = ws.transport.get_extra_info("peercert")
    if not certificate:  # None without TLS, {} when no certificate was asked for or given
        return None
    names = [value for rdn in certificate.get("subject", ()) for key, value in rdn
             if key == "commonName"]
    if len(names) != 1 or not names[0]:
        raise FrameError("bad-certificate",
                         "the client certificate needs exactly one non-empty common name (CN)")
    return str(names[0])


#: a connected client of this server
_Client: TypeAlias = ServedClient[ServerSideConnection, WebSocketClientAddress]


@dataclass(frozen=True, slots=True)
class ClientSummary:
    """One connected client, for the status page: its address, where it connects from, since
    when (epoch seconds), and what waits to be written to it."""

    address: WebSocketClientAddress
    peer: str
    since_s: float
    pending: int
    pending_bytes: int
    #: the frame dialect it speaks: "native" or "joynr"
    dialect: str = "native"
    #: the CN of its client certificate (wss), if it presented one
    owner_id: str | None = None


class WebSocketServerTransport:
    """Serves libjoynr runtimes; the router's transport for WebSocketClientAddress.

    Its background tasks (one per connection, for the init frame and the end of the
    connection) belong to ``tasks`` (a child supervisor of it), or to a supervisor of its own.
    """

    def __init__(self, router: MessageRouter, settings: WebSocketServerSettings, *,
                 tasks: TaskSupervisor | None = None, telemetry: Telemetry | None = None,
                 quotas: Quotas | None = None) -> None:
        """``telemetry``: the process's counters and limit of repeated warnings (its own by
        default). ``quotas``: what each connection may hold, told of each connection's begin
        and end (none: nothing bounded)."""
        self.router = router
        self._quotas = quotas
        self.telemetry = Telemetry() if telemetry is None else telemetry
        self.settings = settings
        self.counters: Counter[str] = Counter()
        #: the starts and ends of connections and what their peers did that is no refusal
        #: (connected, disconnected, no-pong, no-handshake, handler-failed, ...): logged
        #: rate-limited per peer host, counted here
        self.connection_events: Counter[str] = Counter()
        self._tasks = (tasks.child("websocket server") if tasks is not None
                       else TaskSupervisor("websocket server"))
        #: the connected clients, by client id (transports.clients)
        self._clients: ServedClients[ServerSideConnection, WebSocketClientAddress] = (
            ServedClients(router, quotas=quotas, counters=self.counters, event=self._event,
                          logger=log, label="websocket client", outbox_label="client"))
        self._connections: set[ServerSideConnection] = set()
        self._handlers: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None
        self._bound_port: int | None = None

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        s = self.settings

        def connection() -> ServerSideConnection:
            made = ServerSideConnection(
                # messages between the limit and twice the limit are refused one by one while
                # the connection stays up; websockets closes it (1009) on bigger ones
                max_size=2 * s.max_frame_bytes,
                ping_interval_s=s.ping_interval_s,
                ping_timeout_s=s.ping_timeout_s,
                # a dead peer is not waited for longer than the ping timeout
                close_timeout_s=s.ping_timeout_s,
                on_request=self._check_path,
                on_open=self._opened,
                tracked=self._connections,
                max_fragments=s.max_fragments_per_message,
                max_backlog_bytes=s.max_backlog_bytes_per_connection,
            )
            made.report = self._connection_event
            return made

        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(connection, s.host, s.port,
                                                ssl=server_ssl_context(s))
        sockets = self._server.sockets
        self._bound_port = sockets[0].getsockname()[1] if sockets else s.port
        self.router.register_transport(WebSocketClientAddress, self)

    def _check_path(self, ws: ServerSideConnection, request: Request) -> Response | None:
        path = _path_of(request)
        if path != self.settings.path and path not in self.settings.uid_paths:
            self._refuse("refused-path", f"no joynr endpoint at {path[:200]!r}",
                         ws.remote_address)
            return ws.protocol.reject(404, f"no joynr endpoint at {path[:200]}\n")
        return None

    def _opened(self, ws: ServerSideConnection) -> None:
        task = self._tasks.spawn(self._handle(ws), name=f"websocket {ws.remote_address}")
        self._handlers.add(task)
        task.add_done_callback(self._handlers.discard)

    @property
    def listening(self) -> bool:
        return self._server is not None

    @property
    def address(self) -> WebSocketAddress:
        """Where libjoynr runtimes connect (the real port when 0 was configured)."""
        s = self.settings
        return WebSocketAddress("wss" if s.tls else "ws", s.host, self._bound_port or s.port,
                                s.path)

    async def stop(self, drain_timeout_s: float = 5.0) -> None:
        """Stop accepting, let each connection write what is queued for it (at most
        ``drain_timeout_s``), then close every connection (going away)."""
        if self._server is None:
            return
        server, self._server = self._server, None
        server.close()
        undrained = await self._clients.drain(drain_timeout_s)
        if undrained:
            log.warning("closing with %d message(s) not yet written to clients", undrained)
        closing = [ws.close(GOING_AWAY, "cluster controller shutting down")
                   for ws in list(self._connections)]
        await asyncio.gather(*closing)
        if self._handlers:  # each one cleans up after its connection
            await asyncio.wait(list(self._handlers))
        await server.wait_closed()

    @property
    def on_client_gone(self) -> Callable[[WebSocketClientAddress, list[str]], None] | None:
        """Told when a connection has ended: its address and the participants that were
        routed to it (the local directory keeps their providers for a grace period)."""
        return self._clients.on_client_gone

    @on_client_gone.setter
    def on_client_gone(self, told: Callable[[WebSocketClientAddress, list[str]], None] | None
                       ) -> None:
        self._clients.on_client_gone = told

    @property
    def clients(self) -> list[str]:
        return self._clients.ids

    def client_summaries(self) -> list[ClientSummary]:
        return [ClientSummary(c.address, _host_port(c.peer), c.since, c.outbox.pending,
                              c.outbox.pending_bytes, c.dialect, c.owner_id)
                for c in self._clients]

    def pending_to(self, client_id: str) -> int:
        """Messages waiting to be written to one connected client (0 if it is not connected)."""
        return self._clients.pending_to(client_id)

    def pending_bytes_to(self, client_id: str) -> int:
        """The bytes the messages waiting to be written to one connected client hold."""
        return self._clients.pending_bytes_to(client_id)

    # ------------------------------------------------------------------ sending

    def send(self, address: Address, message: Message) -> bool:
        assert isinstance(address, WebSocketClientAddress)
        return self._clients.send(address.id, message)

    # ------------------------------------------------------------------ connections

    def _refuse(self, reason: str, detail: str, peer: object, client: str | None = None,
                message: Message | None = None) -> None:
        """Count and log a refusal; the log line is rate-limited per reason and peer: the
        client once it is known (its id), else the host the connection came from (a flood
        of connections comes from ever new ports; see runtime.logs)."""
        self.counters[reason] += 1
        key = f"client {client}" if client is not None else _host_key(peer)
        extra: dict[str, object] = {} if message is None else message_fields(message)
        if client is not None:
            extra["clientId"] = client
        self.telemetry.warn(log, reason, key, "websocket %s: refused (%s): %s", peer, reason,
                            detail, extra=extra)

    def _event(self, event: str, peer: object, msg: str, *args: object,
               level: int = logging.INFO, exc_info: bool = False,
               extra: dict[str, object] | None = None) -> None:
        """Count and log the start or end of a connection or what its peer did (no refusal):
        rate-limited per event and peer host, so that a flood of connections writes the
        first line of each in full and then a summary (see runtime.logs)."""
        self.connection_events[event] += 1
        self.telemetry.warn(log, event, _host_key(peer), msg, *args, level=level,
                            exc_info=exc_info, extra=extra)

    def _connection_event(self, ws: WebSocketConnection, event: str, level: int,
                          exc_info: bool, msg: str, *args: object) -> None:
        """A connection's :attr:`~WebSocketConnection.report`."""
        self._event(event, ws.remote_address, msg, *args, level=level, exc_info=exc_info)

    async def _handle(self, ws: ServerSideConnection) -> None:
        peer = ws.remote_address
        try:
            owner_id = _owner_id(ws)
            first = await asyncio.wait_for(ws.recv(), self.settings.init_timeout_s)
            client_id, dialect = decode_any_init(first)
        except TimeoutError:
            self._refuse("init-timeout", "no init frame in time", peer)
            await ws.close(POLICY_VIOLATION, "init frame expected",
                           timeout_s=REFUSAL_CLOSE_TIMEOUT_S)
            return
        except FrameError as exc:
            self._refuse(exc.reason, str(exc), peer)
            await ws.close(POLICY_VIOLATION, _close_reason(str(exc)),
                           timeout_s=REFUSAL_CLOSE_TIMEOUT_S)
            return
        except ConnectionClosed:
            return

        if not await self._take_id(client_id, ws, peer):
            return
        s = self.settings
        # the uid of its messages (access control): its certificate's CN, else its path's
        request = ws.request
        uid = owner_id if owner_id is not None else s.uid_paths.get(
            _path_of(request) if request is not None else "", "")
        client = self._clients.accept(
            ws, WebSocketClientAddress(client_id), client_id=client_id, dialect=dialect,
            owner_id=owner_id, peer=peer,
            max_queued=s.max_queued_per_connection,
            max_queued_bytes=s.max_queued_bytes_per_connection,
            max_frame_bytes=s.max_frame_bytes)
        self._event("connected", peer, "websocket client %s connected from %s (%s frames%s)",
                    client_id, peer, dialect, "" if owner_id is None else f", owner id {owner_id}",
                    extra={"clientId": client_id})
        try:
            await self._receive(client, peer, uid)
        finally:
            self._clients.end(client)

    async def _take_id(self, client_id: str, ws: ServerSideConnection, peer: object) -> bool:
        """Bind ``client_id`` to ``ws`` unless a live connection holds it. Both connections
        are served meanwhile: the old one's messages are routed, and the new one is read (its
        pings answered, its pongs taken) while what it sends after its init frame waits in its
        connection's backlog, to be routed in order once it is accepted."""
        old = self._clients.get(client_id)
        if old is None:
            return True
        # while the ping is awaited another claimant may take the id: only the one that
        # finds it still held by the silent connection replaces it (and nothing is awaited
        # from then until _handle has registered it)
        if await self._answers_ping(old.conn) or self._clients.get(client_id) is not old:
            await self._refuse_claim(ws, client_id, "belongs to a live connection", peer)
            return False
        self.counters["replaced-dead"] += 1
        self.telemetry.warn(log, "replaced-dead", f"client {client_id}",
                            "websocket client %s: previous connection is dead, replacing it",
                            client_id)
        self._clients.end(old)
        # not waited for: a peer that answers no ping would hold the new connection up for
        # the close timeout; it ends by itself within it (aborted at the latest)
        old.conn.start_close(GOING_AWAY, "replaced by a new connection")
        return True

    async def _refuse_claim(self, ws: ServerSideConnection, client_id: str, why: str,
                            peer: object) -> None:
        """Refuse a connection's claim of ``client_id`` (1008); what it sent after its init
        frame is dropped, counted as "dropped-unaccepted"."""
        dropped = ws.discard_backlog()
        self.counters["dropped-unaccepted"] += dropped
        self._refuse("id-in-use", f"client id {client_id} {why}"
                     + (f"; {dropped} message(s) sent after the init frame dropped"
                        if dropped else ""), peer, client_id)
        await ws.close(POLICY_VIOLATION, "client id in use", timeout_s=REFUSAL_CLOSE_TIMEOUT_S)

    async def connection_alive(self, address: Address) -> bool:
        """Whether the connection behind ``address`` (a WebSocketClientAddress) is alive: it
        is connected and answers a ping within the ping timeout. A connection that does not
        answer is closed (going away; its close handshake is not waited for) and everything
        behind it removed, as when a new connection takes over its client id (counted
        "closed-dead")."""
        if type(address) is not WebSocketClientAddress:
            return False
        client = self._clients.get(address.id)
        if client is None:
            return False
        if await self._answers_ping(client.conn):
            return True
        if self._clients.get(address.id) is client:
            self.counters["closed-dead"] += 1
            self.telemetry.warn(log, "closed-dead", _host_key(client.peer),
                                "websocket client %s did not answer a ping within %.1f s: "
                                "closing it", address.id, self.settings.ping_timeout_s)
            self._clients.end(client)
            # not waited for (as in a take-over of its client id): it ends by itself
            client.conn.start_close(GOING_AWAY, "did not answer a ping")
        return False

    async def _answers_ping(self, ws: ServerSideConnection) -> bool:
        try:
            await asyncio.wait_for(ws.ping(), self.settings.ping_timeout_s)
        except (TimeoutError, ConnectionClosed):
            return False
        return True

    async def _receive(self, client: _Client, peer: object, uid: str = "") -> None:
        """Hand the client's messages to the router's way in as they arrive (in
        data_received) until it is gone."""
        router = self.router
        address = client.address
        ws = client.conn
        # the peer of this connection's refusals in the audit log: the id it claimed and the
        # host it connected from
        host = peer[0] if isinstance(peer, tuple) and peer else peer
        inlet = Inlet(
            InletKind.CLIENT, address, f"websocket client {address.id} from {_host_port(peer)}",
            f"client {address.id}", self.counters, peer=f"client {address.id} from {host}",
            # on a joynr connection with an owner id, the signature every message must carry
            signature=(client.owner_id.encode("utf-8")
                       if client.owner_id is not None and client.dialect == JOYNR else None),
            uid=uid, log_fields={"clientId": address.id}, logger=log)

        ws.deliver(self._clients.frame_handler(client, inlet, self.settings.max_frame_bytes))
        await ws.wait_closed()
        closed = ws.protocol.close_exc
        if ws.too_many_fragments:
            router.refuse_frame(inlet, "too-many-fragments",
                                f"a message in more than {ws.max_fragments} fragments")
        elif MESSAGE_TOO_BIG in (closed.rcvd and closed.rcvd.code,
                                 closed.sent and closed.sent.code):
            router.refuse_frame(inlet, "oversized-closed", "message too big")
