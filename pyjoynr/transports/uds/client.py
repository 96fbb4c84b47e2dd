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
from collections.abc import Awaitable, Callable

from pyjoynr.runtime.addresses import UdsAddress
from pyjoynr.runtime.logs import get_logger
from pyjoynr.runtime.messages import NATIVE, Message
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.tasks import TaskSupervisor
from pyjoynr.transports.dialects import (
    UDS_CLIENT_ADDRESS_TYPE,
    encode_init,
    encode_joynr_init,
    frame_encoder,
)
from pyjoynr.transports.parent import ParentLink
from pyjoynr.transports.uds.connection import UdsConnection
from pyjoynr.transports.uds.settings import UdsClientSettings

__all__ = ["UdsClientSettings", "UdsClientTransport"]

log = get_logger(__name__)


class UdsClientTransport(ParentLink[UdsConnection, UdsAddress]):
    """The router's transport for the UdsAddress of the cluster controller. Its background
    tasks belong to ``tasks`` (a child supervisor of it), or to a supervisor of its own."""

    task_prefix = "uds"

    def __init__(self, router: MessageRouter, cc_address: UdsAddress, client_id: str,
                 settings: UdsClientSettings | None = None, *,
                 on_connected: Callable[[], Awaitable[None]] | None = None,
                 tasks: TaskSupervisor | None = None,
                 early: Callable[[Message], bool] | None = None) -> None:
        self.settings = settings or UdsClientSettings()
        super().__init__(router, cc_address, client_id, self.settings, label="uds",
                         url=cc_address.url, logger=log, on_connected=on_connected,
                         tasks=tasks, early=early)

    async def _connect(self) -> UdsConnection:
        s = self.settings
        _transport, conn = await asyncio.get_running_loop().create_unix_connection(
            lambda: UdsConnection(max_frame_bytes=s.max_frame_bytes,
                                  max_backlog_bytes=s.max_queued_bytes, expect_init=False),
            self.cc_address.path)
        return conn

    def _send_init(self, conn: UdsConnection) -> bool:
        init = (encode_init(self.client_id) if self.settings.dialect == NATIVE
                else encode_joynr_init(self.client_id, UDS_CLIENT_ADDRESS_TYPE))
        return conn.send_init(init)

    def _frame_encoder(self) -> Callable[[Message], bytes]:
        return frame_encoder(self.settings.dialect)

    async def _close(self, conn: UdsConnection) -> None:
        if self._stopping:
            conn.abort()
        else:
            await conn.close()

    def _why_ended(self, conn: UdsConnection) -> str:
        if conn.error is not None:
            self.counters[conn.error.reason] += 1
            return str(conn.error)
        return "truncated frame" if conn.truncated else "connection lost"
