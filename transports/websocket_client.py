"""libjoynr side of the websocket transport: the connection to the cluster controller.

Connects, sends the init frame with this runtime's client id, and hands every message frame
to the router. When the connection breaks it reconnects with exponential backoff (with jitter),
sends init again, runs ``on_connected`` (the runtime re-registers its participants and multicast
receivers there) and then lets the router retry what waited in its queues.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import ssl
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from runtime.addresses import Address, WebSocketAddress
from runtime.messages import DEFAULT_MAX_FRAME_BYTES, FrameError, Message, decode_frame
from runtime.router import MessageRouter
from transports.websocket_common import FrameClientConnection, Outbox, encode_init

__all__ = ["WebSocketClientSettings", "WebSocketClientTransport"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WebSocketClientSettings:
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    ping_interval_s: float = 20.0
    ping_timeout_s: float = 20.0
    reconnect_initial_s: float = 0.05
    reconnect_max_s: float = 5.0
    max_queued: int = 10_000
    ssl_context: ssl.SSLContext | None = None


class WebSocketClientTransport:
    """The router's transport for the WebSocketAddress of the cluster controller."""

    def __init__(
        self,
        router: MessageRouter,
        cc_address: WebSocketAddress,
        client_id: str,
        settings: WebSocketClientSettings | None = None,
        *,
        on_connected: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.router = router
        self.cc_address = cc_address
        self.client_id = client_id
        self.settings = settings or WebSocketClientSettings()
        self.on_connected = on_connected
        self.counters: Counter[str] = Counter()
        self.connections = 0  # how many times a connection was established
        self._outbox: Outbox | None = None
        self._task: asyncio.Task[None] | None = None
        self._connected = asyncio.Event()
        self._stopping = False
        router.register_transport(WebSocketAddress, self)

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    async def start(self, wait_s: float | None = 10.0) -> None:
        """Start connecting; wait up to ``wait_s`` for the first connection (None: don't)."""
        self._stopping = False
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="ws-client")
        if wait_s is not None:
            try:
                await asyncio.wait_for(self._connected.wait(), wait_s)
            except TimeoutError:
                raise ConnectionError(
                    f"no connection to the cluster controller at {self.cc_address.url} "
                    f"within {wait_s} s"
                ) from None

    async def stop(self) -> None:
        self._stopping = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._connected.clear()

    def send(self, address: Address, message: Message) -> bool:
        outbox = self._outbox
        return outbox is not None and self._connected.is_set() and outbox.put(message)

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
        delay = s.reconnect_initial_s
        url = self.cc_address.url
        while True:
            try:
                async with connect(
                    url,
                    ssl=s.ssl_context if self.cc_address.protocol == "wss" else None,
                    max_size=2 * s.max_frame_bytes,
                    ping_interval=s.ping_interval_s,
                    ping_timeout=s.ping_timeout_s,
                    compression=None,
                    # a dead peer is not waited for longer than the ping timeout
                    close_timeout=s.ping_timeout_s,
                    open_timeout=10,
                    create_connection=FrameClientConnection,
                ) as ws:
                    assert isinstance(ws, FrameClientConnection)
                    delay = s.reconnect_initial_s
                    await self._serve(ws)
            except asyncio.CancelledError:
                raise
            except (OSError, InvalidHandshake, InvalidURI, TimeoutError, ConnectionClosed) as exc:
                log.info("cluster controller at %s not reachable (%s); retrying in %.2f s",
                         url, exc or type(exc).__name__, delay)
            except Exception:
                log.exception("websocket connection to %s failed; retrying in %.2f s", url, delay)
            await asyncio.sleep(delay * (0.8 + 0.4 * random.random()))
            delay = min(delay * 2, s.reconnect_max_s)

    async def _serve(self, ws: FrameClientConnection) -> None:
        await ws.send(encode_init(self.client_id))
        outbox = Outbox(ws, "cluster controller", self.settings.max_queued)
        self._outbox = outbox
        self._connected.set()
        self.connections += 1
        log.info("connected to the cluster controller at %s as %s (connection %d)",
                 self.cc_address.url, self.client_id, self.connections)
        registering = asyncio.get_running_loop().create_task(self._after_connect())
        try:
            await self._receive(ws)
        finally:
            self._connected.clear()
            self._outbox = None
            registering.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await registering  # so that it cannot outlive this connection
            leftover = await outbox.close()
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
        self.router.transport_ready()

    async def _receive(self, ws: FrameClientConnection) -> None:
        """Route the cluster controller's frames as they arrive until the connection ends."""
        router, origin = self.router, self.cc_address
        max_bytes = self.settings.max_frame_bytes

        def on_frame(frame: bytes | str) -> None:
            try:
                message = decode_frame(frame, max_bytes, origin=origin)
            except FrameError as exc:
                self.counters[exc.reason] += 1
                log.warning("refused a frame from the cluster controller: %s", exc)
                return
            router.route(message)

        ws.deliver(on_frame)
        await ws.wait_closed()
