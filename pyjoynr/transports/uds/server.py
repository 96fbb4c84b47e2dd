"""Cluster controller side of the Unix domain socket transport: the server libjoynr runtimes on
the same host connect to, beside websocket.

Protocol (joynr's, transports.uds.framing): the client's first frame is an init frame (cookie
``MJI1``) whose payload is its address, within ``init_timeout_s``; every later frame either way
is a message frame (cookie ``MJM1``), one joynr message each. The server answers nothing to the
init frame. Both dialects of transports.dialects are served: joynr's init payload is the JSON
of a ``UdsClientAddress`` (``{"_typeName":"joynr.system.RoutingTypes.UdsClientAddress",
"id":"<client id>"}``) and its message frames are SMRF frames; the project's is its msgpack
init and frames. A connection keeps its dialect, and what is routed to it is written in it.

The rules of a websocket client connection hold here, for the address
``UdsClientAddress(<client id>)``:

- one connection per client id: a second connection claiming the id of a connection that is
  still open is refused (closed, counted ``id-in-use``; what it sent after its init frame is
  dropped, counted ``dropped-unaccepted``). There is no keep-alive to ask: the kernel ends a
  connection when its process ends, so an open connection is a live one, and a client that
  reconnects finds its old connection gone;
- a connection speaks only for itself (runtime.rules through the router's way in, one Inlet
  per connection); when it ends, every route and multicast receiver behind it is removed and
  what was queued for it but not written is routed again;
- what a connection (and all connections of one owner id) may hold is bounded by the quotas
  handed in; the owner id is taken from the peer's credentials (SO_PEERCRED): its user name
  (``owner = "user"``); ``allowed_uids`` limits who may connect at all (others are refused,
  ``bad-peer``);
- what is routed to a connection waits in its outbox (transports.outbox: bounded in messages
  and bytes, coalesced writes, paused while the socket's buffer is full).

Refusals are counted in ``counters`` and logged rate-limited per reason and peer (the client
id once known, else the peer's uid). As joynr's server does, a frame the stream cannot be read
past ends the connection: a wrong cookie (``bad-cookie``), a length over ``max_frame_bytes``
(``oversized-closed``, told from the header, before the payload is read), a bad init frame
or one announcing more than 1 KiB (``bad-init``), no init in time (``init-timeout``), the
peer's end in the middle of a frame (``truncated-frame``). A message frame that does not
decode (an SMRF frame that is not one, an unknown version, an expired message) is refused
alone, and the connection goes on.

The socket file: a file at ``path`` that is a socket no process listens on (left by a cluster
controller that died) is replaced; one a process listens on is refused (OSError, the start
fails), and so is a file that is no socket. It is made with ``permissions`` (never wider while
it is made) and removed on stop if it is still the one made.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import pwd
import socket
import stat
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

from pyjoynr.runtime.addresses import Address, UdsAddress, UdsClientAddress
from pyjoynr.runtime.inlets import Inlet, InletKind
from pyjoynr.runtime.logs import get_logger, message_fields
from pyjoynr.runtime.messages import FrameError, Message
from pyjoynr.runtime.quotas import Quotas
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.tasks import TaskSupervisor
from pyjoynr.runtime.telemetry import Telemetry
from pyjoynr.transports.clients import ServedClient, ServedClients
from pyjoynr.transports.dialects import (
    UDS_CLIENT_ADDRESS_TYPE,
    decode_any_init,
)
from pyjoynr.transports.uds.connection import PeerCredentials, UdsClosed, UdsConnection
from pyjoynr.transports.uds.settings import UdsServerSettings

__all__ = ["UdsClientSummary", "UdsServerSettings", "UdsServerTransport"]

log = get_logger(__name__)

#: seconds a refused connection has to take what was written before it is aborted
REFUSAL_CLOSE_TIMEOUT_S = 1.0


def _peer_key(peer: PeerCredentials | None) -> str:
    """The peer part of a rate-limiting key for a connection from ``peer``: its uid."""
    return "uid unknown" if peer is None else f"uid {peer.uid}"


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name or str(uid)
    except KeyError:
        return str(uid)


#: a connected client of this server
_Client: TypeAlias = ServedClient[UdsConnection, UdsClientAddress]


@dataclass(frozen=True, slots=True)
class UdsClientSummary:
    """One connected client, for the status page: its address, its process, since when (epoch
    seconds), what waits to be written to it, its dialect and owner id (its user)."""

    address: UdsClientAddress
    peer: str
    since_s: float
    pending: int
    pending_bytes: int
    dialect: str
    owner_id: str | None


class UdsServerTransport:
    """Serves libjoynr runtimes over a Unix domain socket; the router's transport for
    UdsClientAddress (see the module docstring)."""

    def __init__(self, router: MessageRouter, settings: UdsServerSettings, *,
                 tasks: TaskSupervisor | None = None, telemetry: Telemetry | None = None,
                 quotas: Quotas | None = None) -> None:
        self.router = router
        self.settings = settings
        self._quotas = quotas
        self.telemetry = Telemetry() if telemetry is None else telemetry
        self.counters: Counter[str] = Counter()
        #: the starts and ends of connections (connected, disconnected, ...): logged
        #: rate-limited per peer uid, counted here
        self.connection_events: Counter[str] = Counter()
        self._tasks = (tasks.child("uds server") if tasks is not None
                       else TaskSupervisor("uds server"))
        #: the connected clients, by client id (transports.clients)
        self._clients: ServedClients[UdsConnection, UdsClientAddress] = ServedClients(
            router, quotas=quotas, counters=self.counters, event=self._event, logger=log,
            label="uds client", outbox_label="uds client")
        self._connections: set[UdsConnection] = set()
        self._handlers: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None
        self._inode: tuple[int, int] | None = None  # (device, inode) of the file made

    # ------------------------------------------------------------------ lifecycle

    @property
    def address(self) -> UdsAddress:
        """Where libjoynr runtimes connect."""
        return UdsAddress(self.settings.path)

    @property
    def listening(self) -> bool:
        return self._server is not None

    async def start(self) -> None:
        s = self.settings
        sock = await self._bind(s.path, s.permissions)

        def connection() -> UdsConnection:
            return UdsConnection(max_frame_bytes=s.max_frame_bytes,
                                 max_backlog_bytes=s.max_backlog_bytes_per_connection,
                                 expect_init=True, tracked=self._connections,
                                 on_made=self._opened)

        loop = asyncio.get_running_loop()
        try:
            self._server = await loop.create_unix_server(connection, sock=sock)
        except BaseException:
            sock.close()
            self._remove_file()
            raise
        self.router.register_transport(UdsClientAddress, self)

    async def _bind(self, path: str, permissions: int) -> socket.socket:
        """A listening socket at ``path`` (see the module docstring for a file already there)."""
        try:
            existing = os.lstat(path)
        except FileNotFoundError:
            existing = None
        if existing is not None:
            if not stat.S_ISSOCK(existing.st_mode):
                raise OSError(errno.EEXIST, f"{path} exists and is not a socket: not replaced")
            if await self._listened_on(path):
                raise OSError(errno.EADDRINUSE,
                              f"{path}: another process serves this socket")
            log.warning("replacing the stale socket file %s (no process serves it)", path)
            os.unlink(path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            # the file is never more open than configured, not even while it is made
            old_mask = os.umask(0o777 & ~permissions & 0o777 | 0o111)
            try:
                sock.bind(path)
            finally:
                os.umask(old_mask)
            os.chmod(path, permissions)
            made = os.lstat(path)
            self._inode = (made.st_dev, made.st_ino)
            sock.listen(256)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        return sock

    @staticmethod
    async def _listened_on(path: str) -> bool:
        try:
            _reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(path), 1.0)
        except (OSError, TimeoutError):
            return False
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        return True

    def _remove_file(self) -> None:
        """Remove the socket file if it is still the one this server made."""
        made, self._inode = self._inode, None
        if made is None:
            return
        try:
            now = os.lstat(self.settings.path)
            if (now.st_dev, now.st_ino) == made:
                os.unlink(self.settings.path)
        except OSError:
            pass

    def _opened(self, conn: UdsConnection) -> None:
        task = self._tasks.spawn(self._handle(conn), name=f"uds {conn.peer}")
        self._handlers.add(task)
        task.add_done_callback(self._handlers.discard)

    async def stop(self, drain_timeout_s: float = 5.0) -> None:
        """Stop accepting, let each connection write what is queued for it (at most
        ``drain_timeout_s``), close every connection, remove the socket file."""
        if self._server is None:
            return
        server, self._server = self._server, None
        server.close()
        self._remove_file()
        await self._clients.drain(drain_timeout_s)
        await asyncio.gather(*(conn.close() for conn in list(self._connections)))
        if self._handlers:
            await asyncio.wait(list(self._handlers))
        await server.wait_closed()

    @property
    def on_client_gone(self) -> Callable[[UdsClientAddress, list[str]], None] | None:
        """Told when a connection has ended: its address and the participants routed to it."""
        return self._clients.on_client_gone

    @on_client_gone.setter
    def on_client_gone(self, told: Callable[[UdsClientAddress, list[str]], None] | None
                       ) -> None:
        self._clients.on_client_gone = told

    @property
    def clients(self) -> list[str]:
        return self._clients.ids

    def client_summaries(self) -> list[UdsClientSummary]:
        return [UdsClientSummary(c.address, repr(c.peer), c.since, c.outbox.pending,
                                 c.outbox.pending_bytes, c.dialect, c.owner_id)
                for c in self._clients]

    def pending_to(self, client_id: str) -> int:
        return self._clients.pending_to(client_id)

    def pending_bytes_to(self, client_id: str) -> int:
        return self._clients.pending_bytes_to(client_id)

    # ------------------------------------------------------------------ sending

    def send(self, address: Address, message: Message) -> bool:
        assert isinstance(address, UdsClientAddress)
        return self._clients.send(address.id, message)

    async def connection_alive(self, address: Address) -> bool:
        """Whether the connection behind ``address`` (a UdsClientAddress) is open (the kernel
        ends it when its process ends)."""
        if type(address) is not UdsClientAddress:
            return False
        client = self._clients.get(address.id)
        return client is not None and client.conn.open

    # ------------------------------------------------------------------ connections

    def _refuse(self, reason: str, detail: str, peer: PeerCredentials | None,
                client: str | None = None, message: Message | None = None) -> None:
        """Count and log a refusal, rate-limited per reason and peer (the client id once
        known, else the peer's uid)."""
        self.counters[reason] += 1
        key = f"client {client}" if client is not None else _peer_key(peer)
        extra: dict[str, object] = {} if message is None else message_fields(message)
        if client is not None:
            extra["clientId"] = client
        self.telemetry.warn(log, reason, key, "uds %s: refused (%s): %s", peer, reason, detail,
                            extra=extra)

    def _event(self, event: str, peer: PeerCredentials | None, msg: str, *args: object,
               level: int = logging.INFO, exc_info: bool = False,
               extra: dict[str, object] | None = None) -> None:
        self.connection_events[event] += 1
        self.telemetry.warn(log, event, _peer_key(peer), msg, *args, level=level,
                            exc_info=exc_info, extra=extra)

    def _owner_id(self, peer: PeerCredentials | None) -> str | None:
        """The owner id of a connection from ``peer``; FrameError (``bad-peer``) for a peer
        not allowed."""
        s = self.settings
        if s.allowed_uids and (peer is None or peer.uid not in s.allowed_uids):
            raise FrameError("bad-peer", f"uid {'unknown' if peer is None else peer.uid} may "
                             "not connect (allowed_uids)")
        if s.owner == "none" or peer is None:
            return None
        return _user_name(peer.uid)

    def _uid(self, peer: PeerCredentials | None) -> str:
        """The uid of a connection's messages (access control): the name ``uids`` gives its
        peer's user name or numeric uid, else the user name; "" for an unknown peer."""
        if peer is None:
            return ""
        name = _user_name(peer.uid)
        uids = self.settings.uids
        return uids.get(name, uids.get(str(peer.uid), name))

    async def _handle(self, conn: UdsConnection) -> None:
        peer = conn.peer
        try:
            owner_id = self._owner_id(peer)
            first = await asyncio.wait_for(conn.recv(), self.settings.init_timeout_s)
            client_id, dialect = decode_any_init(first, UDS_CLIENT_ADDRESS_TYPE)
        except TimeoutError:
            self._refuse("init-timeout", "no init frame in time", peer)
            await conn.close(REFUSAL_CLOSE_TIMEOUT_S)
            return
        except FrameError as exc:
            self._refuse(exc.reason, str(exc), peer)
            await conn.close(REFUSAL_CLOSE_TIMEOUT_S)
            return
        except UdsClosed:
            self._stream_refusal(conn, peer, None)
            return

        old = self._clients.get(client_id)
        if old is not None and old.conn.open:
            dropped = conn.discard_backlog()
            self.counters["dropped-unaccepted"] += dropped
            self._refuse("id-in-use", f"client id {client_id} belongs to an open connection"
                         + (f"; {dropped} message(s) sent after the init frame dropped"
                            if dropped else ""), peer, client_id)
            await conn.close(REFUSAL_CLOSE_TIMEOUT_S)
            return
        if old is not None:
            self._clients.end(old)
        s = self.settings
        client = self._clients.accept(
            conn, UdsClientAddress(client_id), client_id=client_id, dialect=dialect,
            owner_id=owner_id, peer=peer,
            max_queued=s.max_queued_per_connection,
            max_queued_bytes=s.max_queued_bytes_per_connection,
            max_frame_bytes=s.max_frame_bytes)
        self._event("connected", peer, "uds client %s connected (%s; %s frames%s)", client_id,
                    peer, dialect, "" if owner_id is None else f", owner id {owner_id}",
                    extra={"clientId": client_id})
        try:
            await self._receive(client, peer)
        finally:
            self._clients.end(client)

    def _stream_refusal(self, conn: UdsConnection, peer: PeerCredentials | None,
                        client: str | None, inlet: Inlet | None = None) -> None:
        """Count and log why the stream ended, if it was the peer's fault."""
        if conn.error is not None:
            reason, detail = conn.error.reason, str(conn.error)
        elif conn.truncated:
            reason, detail = "truncated-frame", "the connection ended in the middle of a frame"
        else:
            return
        if inlet is not None:
            self.router.refuse_frame(inlet, reason, detail)
        else:
            self._refuse(reason, detail, peer, client)

    async def _receive(self, client: _Client, peer: PeerCredentials | None) -> None:
        """Hand the client's messages to the router's way in as they arrive until it is gone."""
        address = client.address
        conn = client.conn
        inlet = Inlet(InletKind.CLIENT, address, f"uds client {address.id} ({peer})",
                      f"client {address.id}", self.counters,
                      peer=f"client {address.id} from {peer}", uid=self._uid(peer),
                      log_fields={"clientId": address.id}, logger=log)

        conn.deliver(self._clients.frame_handler(client, inlet, self.settings.max_frame_bytes))
        await conn.wait_closed()
        self._stream_refusal(conn, peer, address.id, inlet)
