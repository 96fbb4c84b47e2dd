"""A websocket client of a cluster controller that writes joynr frames by hand (to send what
a libjoynr runtime never would: spoofed senders, expired or unroutable messages), in either
frame dialect (the project's msgpack frames, or joynr's init frame and SMRF frames), and the
Radio's one-way ``note`` built as a message."""

from __future__ import annotations

import asyncio
import ssl
import uuid
from contextlib import AsyncExitStack

from websockets.asyncio.client import ClientConnection, connect

from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.interface import interface_def
from pyjoynr.runtime.messages import Message, MessageType
from pyjoynr.runtime.payloads import OneWayRequest
from pyjoynr.transports.dialects import encode_init, encode_joynr_init, frame_decoder, frame_encoder
from pyjoynr.transports.websocket.settings import NATIVE
from tests.support.radio import Radio

__all__ = ["RawClient", "close_raw", "note"]

CONNECT_TIMEOUT_S = 10.0
RECEIVE_TIMEOUT_S = 5.0
RADIO = interface_def(Radio)


async def close_raw(ws: ClientConnection) -> None:
    """End a hand-written client's connection. A client a test left hung (its reading paused:
    a process that answers nothing) can read no close frame of its peer, so it is aborted, as
    the end of its process would be; a close handshake there waits out websockets' close
    timeout (10 s) and proves nothing."""
    if not ws.transport.is_reading():
        ws.transport.abort()
    await ws.close()


class RawClient:
    """A websocket connection to a cluster controller that writes frames by hand, in its
    ``dialect`` (``native`` or ``joynr``; joynr frames custom-signed with ``owner_id`` when it
    is set)."""

    def __init__(self, ws: ClientConnection, client_id: str, dialect: str = NATIVE,
                 owner_id: str = "") -> None:
        self.ws = ws
        self.client_id = client_id
        self.dialect = dialect
        #: a participantId of its own, to send from
        self.pid = f"raw-{uuid.uuid4().hex[:8]}"
        self._encode = frame_encoder(dialect, owner_id)
        self._decode = frame_decoder(dialect)

    @classmethod
    async def open(cls, stack: AsyncExitStack, url: str, *, dialect: str = NATIVE,
                   client_id: str | None = None, owner_id: str = "", init: bool = True,
                   ssl_context: ssl.SSLContext | None = None) -> RawClient:
        """Connect to ``url`` and say who this client is, in ``dialect`` (closed when
        ``stack`` closes); ``init=False``: say nothing yet."""
        ws = await asyncio.wait_for(connect(url, compression=None, max_size=None,
                                            ssl=ssl_context), CONNECT_TIMEOUT_S)
        stack.push_async_callback(close_raw, ws)
        client = cls(ws, client_id or f"raw-client-{uuid.uuid4().hex[:8]}", dialect, owner_id)
        if init:
            await ws.send(encode_init(client.client_id) if dialect == NATIVE
                          else encode_joynr_init(client.client_id))
        return client

    def frame(self, message: Message) -> bytes:
        """The frame of ``message`` in this client's dialect."""
        return self._encode(message)

    async def send(self, message: Message) -> int:
        """Send ``message``; the size of its frame."""
        frame = self._encode(message)
        await self.ws.send(frame)
        return len(frame)

    async def send_frame(self, frame: bytes | str) -> None:
        """Send one websocket message as it is (binary, or text for a ``str``)."""
        await self.ws.send(frame)

    async def receive_frame(self, timeout_s: float = RECEIVE_TIMEOUT_S) -> bytes:
        frame = await asyncio.wait_for(self.ws.recv(), timeout_s)
        assert isinstance(frame, bytes), f"a text frame: {frame!r}"
        return frame

    async def receive(self, timeout_s: float = RECEIVE_TIMEOUT_S) -> Message:
        """The next message, read in this client's dialect."""
        message: Message = self._decode(await self.receive_frame(timeout_s), 1 << 30)
        return message


def note(sender: str, recipient: str, text: str, *, ttl_ms: int = 5_000,
         expiry_ms: int | None = None) -> Message:
    """A one-way ``note(text)`` call of the Radio interface, expiring in ``ttl_ms`` (or at
    ``expiry_ms``)."""
    return Message(MessageType.ONE_WAY, sender, recipient,
                   now_ms() + ttl_ms if expiry_ms is None else expiry_ms,
                   OneWayRequest("note", [text], RADIO.methods["note"].param_datatypes
                                 ).to_body())
