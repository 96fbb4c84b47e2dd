"""What both websocket ends share: the init frame, the connection class and the send queue.

Message frames do not go through websockets' receive queue and ``recv()``: once a transport
calls :meth:`FrameConnectionMixin.deliver`, every complete data message is handed to its
handler straight from ``data_received`` (one call per websocket message, in order). And an
:class:`Outbox` writes every message waiting for the connection in one go: one websocket frame
per message, as the wire spec says, but one socket write for all of them. Both use websockets'
connection internals (``process_event``, ``send_context``, ``send_data``, ``protocol``), which is
why pyproject pins websockets to 15.x; tests/test_websocket_* exercise every path.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable
from typing import Any, Final

import msgpack
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.connection import Connection
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.frames import OP_BINARY, OP_CONT, OP_TEXT, Frame
from websockets.protocol import OPEN

from runtime.messages import FrameError, Message, encode_frame

__all__ = [
    "INIT_TYPE",
    "FrameClientConnection",
    "FrameServerConnection",
    "Outbox",
    "decode_init",
    "encode_init",
]

log = logging.getLogger(__name__)

INIT_TYPE: Final = "init"
MAX_CLIENT_ID_LENGTH: Final = 256


def encode_init(client_id: str) -> bytes:
    """The first frame of a libjoynr runtime: ``{"v": 1, "t": "init", "id": <client id>}``."""
    return msgpack.packb({"v": 1, "t": INIT_TYPE, "id": client_id})


def decode_init(frame: Any) -> str:
    """The client id of an init frame; raises FrameError with the reason."""
    if not isinstance(frame, bytes):
        raise FrameError("bad-init", "the first frame must be a binary init frame")
    if len(frame) > 1024:
        raise FrameError("bad-init", "init frame too large")
    try:
        data = msgpack.unpackb(frame, raw=False, strict_map_key=True)
    except (ValueError, msgpack.UnpackException) as exc:
        raise FrameError("bad-init", f"init frame is not msgpack: {exc}") from None
    if not isinstance(data, dict) or data.get("t") != INIT_TYPE:
        raise FrameError("bad-init", "the first frame must be an init frame")
    version = data.get("v")
    if type(version) is not int or version != 1:
        raise FrameError("bad-init", f"unsupported init version {str(version)[:40]!r}")
    client_id = data.get("id")
    if type(client_id) is not str or not 0 < len(client_id) <= MAX_CLIENT_ID_LENGTH:
        raise FrameError("bad-init", "init frame needs a client id of 1..256 characters")
    return client_id


#: what a handler receives: the payload of a binary message, or the text of a text message
FrameHandler = Callable[[bytes | str], None]

#: most messages written with one socket write
MAX_BATCH: Final = 256


class FrameConnectionMixin(Connection):
    """A websockets connection that hands complete messages to a handler as they arrive and
    writes several frames with one socket write."""

    _handler: FrameHandler | None = None
    _fragments: list[Frame] | None = None

    def deliver(self, handler: FrameHandler) -> None:
        """From now on, hand every data message to ``handler`` (first those already received
        but not yet read with ``recv()``). The handler runs inside ``data_received``: it must
        not block; whatever it raises is logged and the connection goes on."""
        self._handler = handler
        queued = self.recv_messages.frames.queue  # received before deliver(), not read
        while queued:
            self._data_frame(queued.popleft())
        self.recv_messages.maybe_resume()

    def process_event(self, event: Frame) -> None:  # type: ignore[override]
        if self._handler is not None and event.opcode in (OP_BINARY, OP_TEXT, OP_CONT):
            self._data_frame(event)
        else:
            super().process_event(event)

    def _data_frame(self, frame: Frame) -> None:
        handler = self._handler
        assert handler is not None
        if frame.fin and self._fragments is None:
            data = frame.data
        elif self._fragments is None:  # first fragment (websockets bounds the total size)
            self._fragments = [frame]
            return
        else:
            self._fragments.append(frame)
            if not frame.fin:
                return
            fragments, self._fragments = self._fragments, None
            frame = fragments[0]
            data = b"".join(f.data for f in fragments)
        try:
            if frame.opcode is OP_TEXT:
                handler(bytes(data).decode("utf-8", errors="replace"))
            else:
                handler(data if type(data) is bytes else bytes(data))
        except Exception:
            log.exception("websocket %s: handling a frame failed", self.remote_address)

    def send_data(self) -> None:
        """What websockets does, with one ``writelines`` for the frames (one syscall)."""
        data = self.protocol.data_to_send()
        if data and all(data):
            self.transport.writelines(data)
            return
        self.protocol.writes[:0] = data  # an end of stream among them: the careful way
        super().send_data()

    async def send_frames(self, frames: list[bytes]) -> None:
        """Send each of ``frames`` as one binary websocket message, with one socket write.
        Raises ConnectionClosed (having written nothing) when the connection is not open."""
        if len(frames) == 1:
            await self.send(frames[0])
            return
        protocol = self.protocol
        async with self.send_context():
            for frame in frames:
                protocol.send_binary(frame)


class FrameServerConnection(FrameConnectionMixin, ServerConnection):
    """The cluster controller's side of a libjoynr connection (``serve(create_connection=)``)."""


class FrameClientConnection(FrameConnectionMixin, ClientConnection):
    """A libjoynr runtime's connection to its cluster controller
    (``connect(create_connection=)``)."""


class Outbox:
    """A bounded queue of messages for one connection and the task that writes them.

    What was queued but not written when the connection ends is returned by ``close()`` so
    that the router can queue it again: a message accepted for a connection is not lost
    because that connection broke (the one frame being written at that moment may be).
    """

    def __init__(self, ws: FrameConnectionMixin, name: str, max_messages: int) -> None:
        self.ws = ws
        self.name = name
        self.max_messages = max_messages
        self._items: deque[Message] = deque()
        self._wakeup: asyncio.Future[None] | None = None
        self._drained: asyncio.Future[None] | None = None  # see wait_below()
        self._drained_level = 0
        self._task = asyncio.get_running_loop().create_task(self._write(), name=f"outbox-{name}")

    def put(self, message: Message) -> bool:
        """Queue a message; False when the connection is closing or the queue is full."""
        if self._task.done() or len(self._items) >= self.max_messages:
            return False
        self._items.append(message)
        wakeup = self._wakeup
        if wakeup is not None:
            self._wakeup = None
            if not wakeup.done():
                wakeup.set_result(None)
        return True

    async def _write(self) -> None:
        items, ws = self._items, self.ws
        loop = asyncio.get_running_loop()
        try:
            while True:
                while items:
                    n = min(len(items), MAX_BATCH)
                    batch = [items.popleft() for _ in range(n)]
                    if ws.protocol.state is not OPEN:
                        items.extendleft(reversed(batch))  # close() hands them back
                        return
                    await ws.send_frames([encode_frame(m) for m in batch])
                    drained = self._drained
                    if drained is not None and len(items) <= self._drained_level:
                        self._drained = None
                        if not drained.done():
                            drained.set_result(None)
                self._wakeup = loop.create_future()
                await self._wakeup
        except ConnectionClosed:
            pass
        except Exception:
            log.exception("writing to %s failed", self.name)
            await ws.close(1011, "write failure")

    @property
    def pending(self) -> int:
        return len(self._items)

    async def wait_below(self, level: int) -> None:
        """Return when at most ``level`` messages wait (or the connection is gone)."""
        if len(self._items) <= level or self._task.done():
            return
        if self._drained is None or self._drained.done():
            self._drained = asyncio.get_running_loop().create_future()
            self._task.add_done_callback(self._release)
        self._drained_level = level
        await self._drained

    def _release(self, _: object) -> None:
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    async def close(self) -> list[Message]:
        """Stop writing; return what was not written."""
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        leftover = list(self._items)
        self._items.clear()
        return leftover
