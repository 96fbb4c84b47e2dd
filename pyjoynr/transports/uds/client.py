"""libjoynr side of the Unix domain socket transport: the connection to the cluster controller
on the same host.

Connects to the socket file, sends the init frame with this runtime's client id (joynr's
``UdsClientAddress`` JSON in the ``joynr`` dialect, as joynr's runtimes do; the project's
msgpack init in ``native``) and hands every message frame to the router as it arrives. While
the socket is not there it retries, with backoff up to ``reconnect_max_ms`` (joynr's runtimes
retry every 500 ms). Unlike joynr's JavaScript runtime, which stops for good when an
established connection breaks, it connects again, runs ``on_connected`` (the runtime's start
sequence and re-registration), and then lets the router retry what waited in its queues, as
the websocket client does; until ``on_connected`` is done only what ``early`` lets through goes
out. What was queued but not written when the connection broke is routed again.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import Counter
from collections.abc import Awaitable, Callable

from pyjoynr.runtime.addresses import Address, UdsAddress
from pyjoynr.runtime.inlets import Inlet, InletKind
from pyjoynr.runtime.logs import get_logger
from pyjoynr.runtime.messages import NATIVE, FrameError, Message
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.tasks import TaskSupervisor
from pyjoynr.transports.dialects import (
    UDS_CLIENT_ADDRESS_TYPE,
    encode_init,
    encode_joynr_init,
    frame_decoder,
    frame_encoder,
)
from pyjoynr.transports.outbox import Outbox, unsendable_reason
from pyjoynr.transports.uds.connection import UdsConnection
from pyjoynr.transports.uds.settings import UdsClientSettings

__all__ = ["UdsClientSettings", "UdsClientTransport"]

log = get_logger(__name__)


class UdsClientTransport:
    """The router's transport for the UdsAddress of the cluster controller. Its background
    tasks belong to ``tasks`` (a child supervisor of it), or to a supervisor of its own."""

    def __init__(self, router: MessageRouter, cc_address: UdsAddress, client_id: str,
                 settings: UdsClientSettings | None = None, *,
                 on_connected: Callable[[], Awaitable[None]] | None = None,
                 tasks: TaskSupervisor | None = None,
                 early: Callable[[Message], bool] | None = None) -> None:
        self.router = router
        self.cc_address = cc_address
        self.client_id = client_id
        self.settings = settings or UdsClientSettings()
        self.on_connected = on_connected
        self.counters: Counter[str] = Counter()
        self.connections = 0
        self._tasks = (tasks.child("uds client") if tasks is not None
                       else TaskSupervisor("uds client"))
        self._outbox: Outbox | None = None
        self._task: asyncio.Task[None] | None = None
        self._connected = asyncio.Event()
        self._registered = False
        self._early = early
        self._stopping = False
        router.register_transport(UdsAddress, self)

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    async def start(self, wait_s: float | None = 10.0) -> None:
        """Start connecting; wait up to ``wait_s`` for the first connection (None: don't)."""
        self._stopping = False
        if self._task is None:
            self._task = self._tasks.spawn(self._run(), name="uds-client")
        if wait_s is not None:
            try:
                await asyncio.wait_for(self._connected.wait(), wait_s)
            except TimeoutError:
                raise ConnectionError(f"no connection to the cluster controller at "
                                      f"{self.cc_address.url} within {wait_s} s") from None

    async def stop(self) -> None:
        """Close the connection and stop reconnecting."""
        self._stopping = True
        task, self._task = self._task, None
        await self._tasks.cancel(task)
        self._connected.clear()

    def send(self, address: Address, message: Message) -> bool:
        outbox = self._outbox
        if outbox is None or not self._connected.is_set():
            return False
        if not self._registered and self._early is not None and not self._early(message):
            return False
        return outbox.put(message)

    async def wait_writable(self) -> None:
        """Flow control for senders: while more than half of the outgoing queue is taken,
        wait until three quarters of it are free again."""
        outbox = self._outbox
        limit = self.settings.max_queued
        if outbox is not None and outbox.pending > limit // 2:
            await outbox.wait_below(limit // 4)

    async def _run(self) -> None:
        s = self.settings
        delay = s.reconnect_initial_ms / 1000
        path = self.cc_address.path
        loop = asyncio.get_running_loop()
        while True:
            try:
                _transport, conn = await loop.create_unix_connection(
                    lambda: UdsConnection(max_frame_bytes=s.max_frame_bytes,
                                          max_backlog_bytes=s.max_queued_bytes,
                                          expect_init=False), path)
                try:
                    delay = s.reconnect_initial_ms / 1000
                    await self._serve(conn)
                finally:
                    if self._stopping:
                        conn.abort()
                    else:
                        await conn.close()
            except asyncio.CancelledError:
                raise
            except OSError as exc:
                log.info("cluster controller at %s not reachable (%s); retrying in %.2f s",
                         self.cc_address.url, exc, delay)
            except Exception:
                log.exception("uds connection to %s failed; retrying in %.2f s",
                              self.cc_address.url, delay)
            await asyncio.sleep(delay * (0.8 + 0.4 * random.random()))
            delay = min(delay * 2, s.reconnect_max_ms / 1000)

    async def _serve(self, conn: UdsConnection) -> None:
        s = self.settings
        init = (encode_init(self.client_id) if s.dialect == NATIVE
                else encode_joynr_init(self.client_id, UDS_CLIENT_ADDRESS_TYPE))
        if not conn.send_init(init):
            return
        outbox = Outbox(conn, "cluster controller", s.max_queued, s.max_queued_bytes,
                        encode=frame_encoder(s.dialect), on_unencodable=self._unencodable,
                        max_frame_bytes=s.max_frame_bytes)
        self._outbox = outbox
        self._connected.set()
        self.connections += 1
        log.info("connected to the cluster controller at %s as %s (connection %d)",
                 self.cc_address.url, self.client_id, self.connections)
        registering = self._tasks.spawn(self._after_connect(), name="uds-client-registering")
        try:
            self._receive(conn)
            await conn.wait_closed()
        finally:
            self._connected.clear()
            self._registered = False
            self._outbox = None
            await self._tasks.cancel(registering)
            leftover = outbox.close()
            if conn.error is not None:
                self.counters[conn.error.reason] += 1
            log.log(logging.INFO if self._stopping else logging.WARNING,
                    "disconnected from the cluster controller (%s); %d unsent message(s) wait "
                    "for the next connection",
                    conn.error or ("truncated frame" if conn.truncated else "connection lost"),
                    len(leftover))
            for message in leftover:
                self.router.route(message)

    async def _after_connect(self) -> None:
        if self.on_connected is not None:
            try:
                await self.on_connected()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("re-registration with the cluster controller failed")
        self._registered = True
        self.router.transport_ready()

    def _unencodable(self, message: Message, error: Exception) -> None:
        self.router.dropped_by_transport(
            message, unsendable_reason(error),
            f"not written as a {self.settings.dialect} frame: {error}", hop=self.cc_address,
            counters=self.counters, key="the cluster controller",
            name="uds to the cluster controller", logger=log, unsendable=True)

    def _receive(self, conn: UdsConnection) -> None:
        """Route the cluster controller's messages as they arrive."""
        router, origin = self.router, self.cc_address
        max_bytes = self.settings.max_frame_bytes
        decode = frame_decoder(self.settings.dialect)
        inlet = Inlet(InletKind.PARENT, origin, "the cluster controller",
                      "the cluster controller", self.counters, logger=log)

        def on_frame(frame: bytes) -> None:
            try:
                message = decode(frame, max_bytes, origin=origin)
            except FrameError as exc:
                router.refuse_frame(inlet, exc.reason, str(exc))
                return
            router.receive(message, inlet)

        conn.deliver(on_frame)
