"""libjoynr side of the websocket transport: the connection to the cluster controller.

Connects, sends the init frame with this runtime's client id, and hands every message frame
to the router as it arrives. Frames are those of the settings' ``dialect``: the project's
msgpack frames (``native``), or joynr's init frame and SMRF frames (``joynr``, for a cluster
controller of joynr's), then custom-signed with the settings' ``owner_id`` when it is set.
When the connection breaks it reconnects as transports.parent says (backoff, init again,
``on_connected``, then the router's queues retried; until ``on_connected`` is done only what
``early`` lets through goes out: the cluster controller refuses a provider's answers and
multicasts whose sender is not (yet again) routed to the connection).

The websocket protocol itself is websockets' sans-I/O implementation under the project's
asyncio layer (transports.websocket.connection).
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from pyjoynr.runtime.addresses import WebSocketAddress
from pyjoynr.runtime.logs import get_logger
from pyjoynr.runtime.messages import Message
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.tasks import TaskSupervisor
from pyjoynr.transports.dialects import encode_init, encode_joynr_init, frame_encoder
from pyjoynr.transports.parent import ParentLink
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


class WebSocketClientTransport(ParentLink[ClientSideConnection, WebSocketAddress]):
    """The router's transport for the WebSocketAddress of the cluster controller.

    For wss, the SSL context is ``ssl_context`` when given, else one made from the settings
    (``tls_ca_file``, or the system's trust store; an unusable file raises OSError here). Its
    background tasks (the connection loop, the re-registration after each connect) belong to
    ``tasks`` (a child supervisor of it), or to a supervisor of its own.
    """

    unreachable = (OSError, InvalidHandshake, InvalidURI, TimeoutError, ConnectionClosed)
    task_prefix = "ws"

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
        self.settings = settings or WebSocketClientSettings()
        # made once, so that an unusable CA file is an error here, not a retried connect
        self._ssl_context = (ssl_context or client_ssl_context(self.settings)
                             if cc_address.protocol == "wss" else None)
        super().__init__(router, cc_address, client_id, self.settings, label="websocket",
                         url=cc_address.url, logger=log, on_connected=on_connected,
                         tasks=tasks, early=early)

    async def _connect(self) -> ClientSideConnection:
        s = self.settings
        return await open_client_connection(
            self.cc_address.url,
            max_size=2 * s.max_frame_bytes,
            ping_interval_s=s.ping_interval_ms / 1000,
            ping_timeout_s=s.ping_timeout_ms / 1000,
            # a dead peer is not waited for longer than the ping timeout
            close_timeout_s=s.ping_timeout_ms / 1000,
            open_timeout_s=s.open_timeout_ms / 1000,
            ssl_context=self._ssl_context,
            max_fragments=s.max_fragments_per_message,
        )

    def _send_init(self, conn: ClientSideConnection) -> bool:
        init = (encode_init(self.client_id) if self.settings.dialect == NATIVE
                else encode_joynr_init(self.client_id))
        return conn.send_frames([init])

    def _frame_encoder(self) -> Callable[[Message], bytes]:
        return frame_encoder(self.settings.dialect, self.settings.owner_id)

    async def _close(self, conn: ClientSideConnection) -> None:
        try:
            await conn.close(NORMAL_CLOSURE)
        except BaseException:  # cancelled again while closing: just go
            conn.abort()
            raise

    def _why_ended(self, conn: ClientSideConnection) -> str:
        return conn.close_reason or "connection lost"
