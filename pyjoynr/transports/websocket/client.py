"""libjoynr side of the websocket transport: the connection to the cluster controller.

Connects, sends the init frame with this runtime's client id, and hands every message frame
to the router as it arrives. Frames are those of the settings' ``dialect``: the project's
msgpack frames (``native``), or joynr's init frame and SMRF frames (``joynr``, for a cluster
controller of joynr's), then custom-signed with the settings' ``owner_id`` when it is set.
When the connection breaks it reconnects with exponential backoff (with jitter), sends init
again, runs ``on_connected`` (the runtime re-registers its participants and multicast
receivers there) and then lets the router retry what waited in its queues. Until
``on_connected`` is done, only the messages ``early`` lets through (the runtime's own
registration calls) are accepted; the others wait in the router's queues: the cluster
controller refuses a provider's answers and multicasts whose sender is not (yet again) routed
to the connection. What was queued for the connection but not written when it broke is routed
again and waits for the next connection.

The websocket protocol itself is websockets' sans-I/O implementation under the project's
asyncio layer (transports.websocket.connection).
"""

from __future__ import annotations

import asyncio
import logging
import random
import ssl
from collections import Counter
from collections.abc import Awaitable, Callable

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from pyjoynr.runtime.addresses import Address, WebSocketAddress
from pyjoynr.runtime.inlets import Inlet, InletKind
from pyjoynr.runtime.logs import get_logger
from pyjoynr.runtime.messages import FrameError, Message
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.tasks import TaskSupervisor
from pyjoynr.transports.dialects import encode_init, encode_joynr_init, frame_decoder, frame_encoder
from pyjoynr.transports.outbox import Outbox, unsendable_reason
from pyjoynr.transports.websocket.connection import ClientSideConnection, open_client_connection
from pyjoynr.transports.websocket.settings import (
    NATIVE,
    WebSocketClientSettings,
    client_ssl_context,
)

__all__ = ["WebSocketClientSettings", "WebSocketClientTransport"]

log = get_logger(__name__)

#: close code when the runtime stops (RFC 6455: normal closure)
NORMAL_CLOSURE = 1000


class WebSocketClientTransport:
    """The router's transport for the WebSocketAddress of the cluster controller.

    For wss, the SSL context is ``ssl_context`` when given, else one made from the settings
    (``tls_ca_file``, or the system's trust store; an unusable file raises OSError here). Its
    background tasks (the connection loop, the re-registration after each connect) belong to
    ``tasks`` (a child supervisor of it), or to a supervisor of its own.
    """

    def __init__(
        self,
        router: MessageRouter,
        cc_address: WebSocketAddress,
        client_id: str,
        settings: WebSocketClientSettings | None = None,
        *,
        on_connected: Callable[[], Awaitable[None]] | None = None,
        ssl_context: ssl.SSLContext | None = None,
        tasks: TaskSupervisor | None = None,
        early: Callable[[Message], bool] | None = None,
    ) -> None:
        self.router = router
        self.cc_address = cc_address
        self.client_id = client_id
        self.settings = settings or WebSocketClientSettings()
        self.on_connected = on_connected
        self.counters: Counter[str] = Counter()
        self.connections = 0  # how many times a connection was established
        # made once, so that an unusable CA file is an error here, not a retried connect
        self._ssl_context = (ssl_context or client_ssl_context(self.settings)
                             if cc_address.protocol == "wss" else None)
        self._tasks = (tasks.child("websocket client") if tasks is not None
                       else TaskSupervisor("websocket client"))
        self._outbox: Outbox | None = None
        self._task: asyncio.Task[None] | None = None
        self._connected = asyncio.Event()
        #: on_connected is done for this connection: every message may go out
        self._registered = False
        self._early = early
        self._stopping = False
        router.register_transport(WebSocketAddress, self)

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    async def start(self, wait_s: float | None = 10.0) -> None:
        """Start connecting; wait up to ``wait_s`` for the first connection (None: don't)."""
        self._stopping = False
        if self._task is None:
            self._task = self._tasks.spawn(self._run(), name="ws-client")
        if wait_s is not None:
            try:
                await asyncio.wait_for(self._connected.wait(), wait_s)
            except TimeoutError:
                raise ConnectionError(
                    f"no connection to the cluster controller at {self.cc_address.url} "
                    f"within {wait_s} s"
                ) from None

    async def stop(self) -> None:
        """Close the connection (normal closure) and stop reconnecting."""
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
        limit = self.settings.max_queued
        if outbox is not None and outbox.pending > limit // 2:
            await outbox.wait_below(limit // 4)

    # ------------------------------------------------------------------ connection loop

    async def _run(self) -> None:
        s = self.settings
        delay = s.reconnect_initial_ms / 1000
        url = self.cc_address.url
        while True:
            try:
                ws = await open_client_connection(
                    url,
                    max_size=2 * s.max_frame_bytes,
                    ping_interval_s=s.ping_interval_ms / 1000,
                    ping_timeout_s=s.ping_timeout_ms / 1000,
                    # a dead peer is not waited for longer than the ping timeout
                    close_timeout_s=s.ping_timeout_ms / 1000,
                    open_timeout_s=s.open_timeout_ms / 1000,
                    ssl_context=self._ssl_context,
                    max_fragments=s.max_fragments_per_message,
                )
                try:
                    delay = s.reconnect_initial_ms / 1000
                    await self._serve(ws)
                finally:
                    try:
                        await ws.close(NORMAL_CLOSURE)
                    except BaseException:  # cancelled again while closing: just go
                        ws.abort()
                        raise
            except asyncio.CancelledError:
                raise
            except (OSError, InvalidHandshake, InvalidURI, TimeoutError, ConnectionClosed) as exc:
                log.info("cluster controller at %s not reachable (%s); retrying in %.2f s",
                         url, exc or type(exc).__name__, delay)
            except Exception:
                log.exception("websocket connection to %s failed; retrying in %.2f s", url, delay)
            await asyncio.sleep(delay * (0.8 + 0.4 * random.random()))
            delay = min(delay * 2, s.reconnect_max_ms / 1000)

    async def _serve(self, ws: ClientSideConnection) -> None:
        s = self.settings
        init = (encode_init(self.client_id) if s.dialect == NATIVE
                else encode_joynr_init(self.client_id))
        if not ws.send_frames([init]):
            return
        outbox = Outbox(ws, "cluster controller", s.max_queued, s.max_queued_bytes,
                        encode=frame_encoder(s.dialect, s.owner_id),
                        on_unencodable=self._unencodable, max_frame_bytes=s.max_frame_bytes)
        self._outbox = outbox
        self._connected.set()
        self.connections += 1
        log.info("connected to the cluster controller at %s as %s (connection %d)",
                 self.cc_address.url, self.client_id, self.connections)
        registering = self._tasks.spawn(self._after_connect(), name="ws-client-registering")
        try:
            await self._receive(ws)
        finally:
            self._connected.clear()
            self._registered = False
            self._outbox = None
            # so that it cannot outlive this connection
            await self._tasks.cancel(registering)
            leftover = outbox.close()
            close = ws.close_reason or "connection lost"
            log.log(logging.INFO if self._stopping else logging.WARNING,
                    "disconnected from the cluster controller (%s); %d unsent message(s) "
                    "wait for the next connection", close, len(leftover))
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
        """A message never to be written on the connection (no frame of it in the dialect,
        or one over the frame limit): dropped, and its requester told at once."""
        self.router.dropped_by_transport(
            message, unsendable_reason(error),
            f"not written as a {self.settings.dialect} frame: {error}", hop=self.cc_address,
            counters=self.counters, key="the cluster controller",
            name="websocket to the cluster controller", logger=log, unsendable=True)

    async def _receive(self, ws: ClientSideConnection) -> None:
        """Route the cluster controller's messages as they arrive until the connection ends."""
        router, origin = self.router, self.cc_address
        max_bytes = self.settings.max_frame_bytes
        decode = frame_decoder(self.settings.dialect)
        inlet = Inlet(InletKind.PARENT, origin, "the cluster controller",
                      "the cluster controller", self.counters, logger=log)

        def on_frame(frame: bytes | str) -> None:
            try:
                message = decode(frame, max_bytes, origin=origin)
            except FrameError as exc:
                router.refuse_frame(inlet, exc.reason, str(exc))
                return
            router.receive(message, inlet)

        ws.deliver(on_frame)
        await ws.wait_closed()
