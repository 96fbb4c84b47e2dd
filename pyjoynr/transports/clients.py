"""The client connections a cluster controller serves, whatever socket carries them (websocket,
Unix domain socket): what each server does alike once a client has said who it is.

:class:`ServedClients` holds a server's connected clients by client id. It

- accepts a client (:meth:`~ServedClients.accept`): its outbox (transports.outbox, bounded in
  messages and bytes, written in the client's dialect; a message that can never be written in
  it is dropped and its requester answered at once), its begin told to the quotas, logged;
- hands what the client sends to the router's way in (:meth:`~ServedClients.frame_handler`:
  each frame decoded in the client's dialect, refused one by one when it does not decode;
  nothing routed once the client is replaced or gone);
- writes what the router routes to a client (:meth:`~ServedClients.send`);
- ends a client (:meth:`~ServedClients.end`): routes behind it removed first (whoever sees it
  gone sees its routes gone), the quotas told, what waited in its outbox routed again (its
  participants have no route now: it waits in the router's queues until they come back),
  ``on_client_gone`` told of the participants that were routed to it.

The servers keep what differs: the socket, the init frame and how a claimed client id is
taken over (a websocket peer is asked for a pong, a Unix socket's peer is alive while its
connection is open), and the words of their log lines (``label``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, Generic, Protocol, TypeVar

from pyjoynr.runtime.addresses import Address
from pyjoynr.runtime.inlets import Inlet
from pyjoynr.runtime.messages import FrameError, Message
from pyjoynr.runtime.quotas import Quotas
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.transports.dialects import frame_decoder, frame_encoder
from pyjoynr.transports.outbox import FrameWriter, Outbox, unsendable_reason

__all__ = ["ServedClient", "ServedClients"]

#: a server's connection (websocket or Unix socket), as the outbox writes to it
C = TypeVar("C", bound=FrameWriter)
#: the address type of a server's clients (WebSocketClientAddress, UdsClientAddress)
A = TypeVar("A", bound=Address)


class EventLog(Protocol):
    """A server's log of connection events: counted and logged rate-limited per peer."""

    def __call__(self, event: str, peer: Any, msg: str, *args: object,
                 level: int = logging.INFO, exc_info: bool = False,
                 extra: dict[str, object] | None = None) -> None: ...


class ServedClient(Generic[C, A]):
    """One connected client: its connection, address, outbox, dialect, owner id, since when
    (epoch seconds) and its peer as the server's log lines name it."""

    __slots__ = ("address", "client_id", "conn", "dialect", "outbox", "owner_id", "peer",
                 "since")

    def __init__(self, conn: C, address: A, outbox: Outbox, *, client_id: str, dialect: str,
                 owner_id: str | None, peer: Any) -> None:
        self.conn = conn
        self.client_id = client_id
        self.address = address
        self.outbox = outbox
        self.dialect = dialect
        self.owner_id = owner_id
        self.peer = peer
        self.since = time.time()


class ServedClients(Generic[C, A]):
    """The connected clients of one server, by client id (see the module docstring).

    ``label`` starts the log lines about a client (``"websocket client"``, ``"uds client"``),
    ``outbox_label`` names its outbox in theirs; ``counters`` are the server's, ``event`` its
    log of connection events and ``logger`` its logger."""

    def __init__(self, router: MessageRouter, *, quotas: Quotas | None,
                 counters: Counter[str], event: EventLog, logger: logging.Logger,
                 label: str, outbox_label: str) -> None:
        self.router = router
        self._quotas = quotas
        self._counters = counters
        self._event = event
        self._log = logger
        self._label = label
        self._outbox_label = outbox_label
        self._by_id: dict[str, ServedClient[C, A]] = {}
        #: told when a connection has ended: its address and the participants that were
        #: routed to it (the local directory keeps their providers for a grace period)
        self.on_client_gone: Callable[[A, list[str]], None] | None = None

    def __iter__(self) -> Iterator[ServedClient[C, A]]:
        return iter(list(self._by_id.values()))

    def __len__(self) -> int:
        return len(self._by_id)

    @property
    def ids(self) -> list[str]:
        return list(self._by_id)

    def get(self, client_id: str) -> ServedClient[C, A] | None:
        return self._by_id.get(client_id)

    def pending_to(self, client_id: str) -> int:
        """Messages waiting to be written to one connected client (0 if it is not connected)."""
        client = self._by_id.get(client_id)
        return 0 if client is None else client.outbox.pending

    def pending_bytes_to(self, client_id: str) -> int:
        """The bytes the messages waiting to be written to one connected client hold."""
        client = self._by_id.get(client_id)
        return 0 if client is None else client.outbox.pending_bytes

    def send(self, client_id: str, message: Message) -> bool:
        """Queue ``message`` in the outbox of the client ``client_id``; False when it is not
        connected or its outbox refuses it (full)."""
        client = self._by_id.get(client_id)
        return client is not None and client.outbox.put(message)

    async def drain(self, timeout_s: float) -> int:
        """Wait (at most ``timeout_s``) until every outbox has written what it holds; the
        messages still unwritten then."""
        draining = [asyncio.ensure_future(c.outbox.wait_below(0))
                    for c in self._by_id.values() if c.outbox.pending]
        if draining:
            _, late = await asyncio.wait(draining, timeout=timeout_s)
            for waiter in late:
                waiter.cancel()
        return sum(c.outbox.pending for c in self._by_id.values())

    def accept(self, conn: C, address: A, *, client_id: str, dialect: str,
               owner_id: str | None, peer: Any, max_queued: int, max_queued_bytes: int,
               max_frame_bytes: int) -> ServedClient[C, A]:
        """``conn`` is the client ``client_id`` at ``address`` from now on (the server has
        taken over or ended an earlier connection of that id): its outbox made, the quotas
        told, its connection logged."""

        def unencodable(message: Message, error: Exception) -> None:
            # never to be written on this connection: its requester is told at once
            reason = unsendable_reason(error)
            self.router.dropped_by_transport(
                message, reason, f"not written as a {dialect} frame: {error}", hop=address,
                counters=self._counters, key=f"client {client_id}",
                name=f"{self._label} {client_id}", logger=self._log, unsendable=True)

        outbox = Outbox(conn, f"{self._outbox_label} {client_id}", max_queued, max_queued_bytes,
                        encode=frame_encoder(dialect), on_unencodable=unencodable,
                        max_frame_bytes=max_frame_bytes)
        client: ServedClient[C, A] = ServedClient(
            conn, address, outbox, client_id=client_id, dialect=dialect, owner_id=owner_id,
            peer=peer)
        self._by_id[client_id] = client
        if self._quotas is not None:
            self._quotas.connected(address, owner_id)
        return client

    def frame_handler(self, client: ServedClient[C, A], inlet: Inlet,
                      max_frame_bytes: int) -> Callable[[Any], None]:
        """What the connection of ``client`` calls with each frame it reads: decoded in the
        client's dialect and handed to the router's way in over ``inlet``; a frame that does
        not decode is refused alone (counted and logged by the router, rate-limited)."""
        router = self.router
        by_id = self._by_id
        client_id = client.client_id
        origin = client.address
        decode = frame_decoder(client.dialect)

        def on_frame(frame: Any) -> None:
            if by_id.get(client_id) is not client:
                return  # replaced or disconnected: what it still sends is not routed
            try:
                message = decode(frame, max_frame_bytes, origin=origin)
            except FrameError as exc:
                router.refuse_frame(inlet, exc.reason, str(exc))
                return
            try:
                router.receive(message, inlet)
            except Exception:  # a defect: counted and logged with its traceback, rate-limited
                router.refuse_frame(inlet, "handler-failed",
                                    f"routing {message.describe()} failed",
                                    level=logging.ERROR, exc_info=True)

        return on_frame

    def end(self, client: ServedClient[C, A]) -> None:
        """``client``'s connection has ended or was replaced: everything behind it removed
        (see the module docstring). Nothing happens for a client already ended."""
        client_id = client.client_id
        if self._by_id.get(client_id) is not client:
            return  # already replaced and cleaned up
        del self._by_id[client_id]
        # routes first, at once: whoever sees the client gone sees its routes gone too
        removed = self.router.remove_routes_at(client.address)
        if self._quotas is not None:
            self._quotas.disconnected(client.address)
        leftover = client.outbox.close()
        self._event("disconnected", client.peer,
                    f"{self._label} %s disconnected: %d route(s) removed, %d unsent "
                    "message(s) queued again", client_id, len(removed), len(leftover),
                    extra={"clientId": client_id})
        if self.on_client_gone is not None and removed:
            try:
                self.on_client_gone(client.address, removed)
            except Exception:
                self._event("clean-up-failed", client.peer,
                            f"{self._label} %s: clean-up after the end failed", client_id,
                            level=logging.ERROR, exc_info=True)
        # its participants have no route now: the messages wait until they register again
        for message in leftover:
            self.router.route(message)
