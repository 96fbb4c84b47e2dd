"""A libjoynr runtime's link to its cluster controller, whatever socket carries it (websocket,
Unix domain socket): what both client transports do alike.

:class:`ParentLink` connects (with exponential backoff and jitter while the cluster controller
cannot be reached), sends the init frame with the runtime's client id, and hands every message
frame to the router as it arrives. After each connect it runs ``on_connected`` (the runtime's
start sequence and re-registration) and then lets the router retry what waited in its queues;
until ``on_connected`` is done only the messages ``early`` lets through (the runtime's own
registration calls) go out, the others wait in the router. What was queued for the connection
but not written when it broke is routed again and waits for the next connection.

A flavour gives the socket: how to connect (:meth:`ParentLink._connect`), which errors mean
"not reachable yet" (:attr:`ParentLink.unreachable`), how the init frame is written, how the
connection is closed and why it ended.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Protocol, TypeVar

from pyjoynr.runtime.addresses import Address
from pyjoynr.runtime.inlets import Inlet, InletKind
from pyjoynr.runtime.messages import FrameError, Message
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.tasks import TaskSupervisor
from pyjoynr.transports.dialects import frame_decoder
from pyjoynr.transports.outbox import FrameWriter, Outbox, unsendable_reason

__all__ = ["LinkSettings", "ParentLink"]


class LinkSettings(Protocol):
    """What the link reads of a client transport's settings."""

    @property
    def dialect(self) -> str: ...
    @property
    def max_frame_bytes(self) -> int: ...
    @property
    def max_queued(self) -> int: ...
    @property
    def max_queued_bytes(self) -> int: ...
    @property
    def reconnect_initial_ms(self) -> int: ...
    @property
    def reconnect_max_ms(self) -> int: ...


class LinkConnection(FrameWriter, Protocol):
    """What the link needs of a connection, beside writing frames."""

    def deliver(self, handler: Callable[[Any], None]) -> None: ...
    async def wait_closed(self) -> None: ...


#: a flavour's connection
C = TypeVar("C", bound=LinkConnection)
#: the cluster controller's address type of a flavour (WebSocketAddress, UdsAddress)
A = TypeVar("A", bound=Address)


class ParentLink(Generic[C, A]):
    """The router's transport for the address of the cluster controller (see the module
    docstring). Its background tasks (the connection loop, the re-registration after each
    connect) belong to ``tasks`` (a child supervisor of it), or to a supervisor of its own.

    ``label`` names the flavour in log lines (``"websocket"``, ``"uds"``), ``url`` is where
    the cluster controller is (for log lines and errors), ``logger`` the flavour's (its
    module's, so that log lines keep their logger names)."""

    #: errors of a connect that mean the cluster controller is not reachable (yet): logged
    #: at INFO and retried; any other is logged with its traceback and retried
    unreachable: tuple[type[BaseException], ...] = (OSError,)
    #: the short name of the flavour in task names ("ws", "uds")
    task_prefix = "link"

    def __init__(self, router: MessageRouter, cc_address: A, client_id: str,
                 settings: LinkSettings, *, label: str, url: str, logger: logging.Logger,
                 on_connected: Callable[[], Awaitable[None]] | None = None,
                 tasks: TaskSupervisor | None = None,
                 early: Callable[[Message], bool] | None = None) -> None:
        self.router = router
        self.cc_address = cc_address
        self.client_id = client_id
        self.on_connected = on_connected
        self.counters: Counter[str] = Counter()
        self.connections = 0  # how many times a connection was established
        self._label = label
        self._url = url
        self._logger = logger
        self._link_settings = settings
        self._tasks = (tasks.child(f"{label} client") if tasks is not None
                       else TaskSupervisor(f"{label} client"))
        self._outbox: Outbox | None = None
        self._task: asyncio.Task[None] | None = None
        self._connected = asyncio.Event()
        #: on_connected is done for this connection: every message may go out
        self._registered = False
        self._early = early
        self._stopping = False
        router.register_transport(type(cc_address), self)

    # ------------------------------------------------------------------ what a flavour gives

    async def _connect(self) -> C:
        """A new connection to the cluster controller; raises when there is none."""
        raise NotImplementedError

    def _send_init(self, conn: C) -> bool:
        """Write the init frame with the runtime's client id; False when the connection is
        already gone."""
        raise NotImplementedError

    def _frame_encoder(self) -> Callable[[Message], bytes]:
        """How the outbox writes a message (the settings' dialect)."""
        raise NotImplementedError

    async def _close(self, conn: C) -> None:
        """Close ``conn`` when its turn has ended (the link stops, or it broke)."""
        raise NotImplementedError

    def _why_ended(self, conn: C) -> str:
        """Why ``conn`` ended, for the log line (counted in ``counters`` where it was the
        peer's fault)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ the runtime's side

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    async def start(self, wait_s: float | None = 10.0) -> None:
        """Start connecting; wait up to ``wait_s`` for the first connection (None: don't)."""
        self._stopping = False
        if self._task is None:
            self._task = self._tasks.spawn(self._run(), name=f"{self.task_prefix}-client")
        if wait_s is not None:
            try:
                await asyncio.wait_for(self._connected.wait(), wait_s)
            except TimeoutError:
                raise ConnectionError(
                    f"no connection to the cluster controller at {self._url} "
                    f"within {wait_s} s") from None

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
            return False  # it waits in the router until the runtime has registered again
        return outbox.put(message)

    async def wait_writable(self) -> None:
        """Flow control for senders: while more than half of the outgoing queue is taken,
        wait until three quarters of it are free again (returns at once when disconnected:
        then the router's own bounded queue applies)."""
        outbox = self._outbox
        limit = self._link_settings.max_queued
        if outbox is not None and outbox.pending > limit // 2:
            await outbox.wait_below(limit // 4)

    # ------------------------------------------------------------------ connection loop

    async def _run(self) -> None:
        s = self._link_settings
        delay = s.reconnect_initial_ms / 1000
        url = self._url
        logger = self._logger
        while True:
            try:
                conn = await self._connect()
                try:
                    delay = s.reconnect_initial_ms / 1000
                    await self._serve(conn)
                finally:
                    await self._close(conn)
            except asyncio.CancelledError:
                raise
            except self.unreachable as exc:
                logger.info("cluster controller at %s not reachable (%s); retrying in %.2f s",
                         url, exc or type(exc).__name__, delay)
            except Exception:
                logger.exception("%s connection to %s failed; retrying in %.2f s", self._label,
                              url, delay)
            await asyncio.sleep(delay * (0.8 + 0.4 * random.random()))
            delay = min(delay * 2, s.reconnect_max_ms / 1000)

    async def _serve(self, conn: C) -> None:
        s = self._link_settings
        logger = self._logger
        if not self._send_init(conn):
            return
        outbox = Outbox(conn, "cluster controller", s.max_queued, s.max_queued_bytes,
                        encode=self._frame_encoder(), on_unencodable=self._unencodable,
                        max_frame_bytes=s.max_frame_bytes)
        self._outbox = outbox
        self._connected.set()
        self.connections += 1
        logger.info("connected to the cluster controller at %s as %s (connection %d)",
                 self._url, self.client_id, self.connections)
        registering = self._tasks.spawn(self._after_connect(),
                                        name=f"{self.task_prefix}-client-registering")
        try:
            await self._receive(conn)
        finally:
            self._connected.clear()
            self._registered = False
            self._outbox = None
            # so that it cannot outlive this connection
            await self._tasks.cancel(registering)
            leftover = outbox.close()
            logger.log(logging.INFO if self._stopping else logging.WARNING,
                    "disconnected from the cluster controller (%s); %d unsent message(s) "
                    "wait for the next connection", self._why_ended(conn), len(leftover))
            for message in leftover:
                self.router.route(message)

    async def _after_connect(self) -> None:
        if self.on_connected is not None:
            try:
                await self.on_connected()
            except asyncio.CancelledError:
                raise
            except Exception:
                self._logger.exception("re-registration with the cluster controller failed")
        self._registered = True
        self.router.transport_ready()

    def _unencodable(self, message: Message, error: Exception) -> None:
        """A message never to be written on the connection (no frame of it in the dialect,
        or one over the frame limit): dropped, and its requester told at once."""
        self.router.dropped_by_transport(
            message, unsendable_reason(error),
            f"not written as a {self._link_settings.dialect} frame: {error}",
            hop=self.cc_address, counters=self.counters, key="the cluster controller",
            name=f"{self._label} to the cluster controller", logger=self._logger,
            unsendable=True)

    async def _receive(self, conn: C) -> None:
        """Route the cluster controller's messages as they arrive until the connection ends."""
        router, origin = self.router, self.cc_address
        max_bytes = self._link_settings.max_frame_bytes
        decode = frame_decoder(self._link_settings.dialect)
        inlet = Inlet(InletKind.PARENT, origin, "the cluster controller",
                      "the cluster controller", self.counters, logger=self._logger)

        def on_frame(frame: bytes | str) -> None:
            try:
                message = decode(frame, max_bytes, origin=origin)
            except FrameError as exc:
                router.refuse_frame(inlet, exc.reason, str(exc))
                return
            router.receive(message, inlet)

        conn.deliver(on_frame)
        await conn.wait_closed()
