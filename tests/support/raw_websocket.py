"""A websocket client of a cluster controller that writes joynr frames by hand (to send what
a libjoynr runtime never would: spoofed senders, expired or unroutable messages), and the
Radio's one-way ``note`` built as a message."""

from __future__ import annotations

import asyncio
import uuid
from contextlib import AsyncExitStack

from websockets.asyncio.client import ClientConnection, connect

from runtime.clock import now_ms
from runtime.interface import interface_def
from runtime.messages import Message, MessageType, encode_frame
from runtime.payloads import OneWayRequest
from tests.support.radio import Radio
from transports.websocket_common import encode_init

__all__ = ["RawClient", "note"]

CONNECT_TIMEOUT_S = 10.0
RADIO = interface_def(Radio)


class RawClient:
    """A websocket connection to a cluster controller that writes frames by hand."""

    def __init__(self, ws: ClientConnection, client_id: str) -> None:
        self.ws = ws
        self.client_id = client_id
        #: a participantId of its own, to send from
        self.pid = f"raw-{uuid.uuid4().hex[:8]}"

    @classmethod
    async def open(cls, stack: AsyncExitStack, url: str) -> RawClient:
        """Connect to ``url`` and say who this client is (closed when ``stack`` closes)."""
        ws = await asyncio.wait_for(connect(url, compression=None), CONNECT_TIMEOUT_S)
        stack.push_async_callback(ws.close)
        client = cls(ws, f"raw-client-{uuid.uuid4().hex[:8]}")
        await ws.send(encode_init(client.client_id))
        return client

    async def send(self, message: Message) -> int:
        """Send ``message``; the size of its frame."""
        frame = encode_frame(message)
        await self.ws.send(frame)
        return len(frame)


def note(sender: str, recipient: str, text: str, *, ttl_ms: int = 5_000,
         expiry_ms: int | None = None) -> Message:
    """A one-way ``note(text)`` call of the Radio interface, expiring in ``ttl_ms`` (or at
    ``expiry_ms``)."""
    return Message(MessageType.ONE_WAY, sender, recipient,
                   now_ms() + ttl_ms if expiry_ms is None else expiry_ms,
                   OneWayRequest("note", [text], RADIO.methods["note"].param_datatypes
                                 ).to_body())
