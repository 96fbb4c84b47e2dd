"""What both websocket ends share: the init frame and the send queue of a connection.

The protocol between a libjoynr runtime and its cluster controller: the runtime's first
websocket message is an init frame, a msgpack map ``{"v": 1, "t": "init", "id": <client id>}``
(binary, at most 1 KiB, a client id of 1..256 characters); every later message either way is
one binary message frame (runtime.messages), one websocket message per joynr message.

An :class:`Outbox` holds the messages routed to one connection until they are written: the
first message of a loop turn goes out at once when none waits before it; the others wait for a
callback scheduled at that moment (not a task), and every message waiting when it runs goes out
with one socket write (one websocket message each). It stops while
the transport's write buffer is full and goes on when it drains, so the memory a slow peer can
hold is bounded by the outbox's limits (messages and bytes) plus the write buffer, which takes
at most about ``MAX_BATCH_BYTES`` beyond its high-water mark.
"""

from __future__ import annotations

import asyncio
from collections import deque
from itertools import islice
from typing import Any, Final

import msgpack

from runtime.logs import get_logger
from runtime.messages import MESSAGE_OVERHEAD_BYTES, FrameError, Message, encode_frame
from transports.websocket_connection import WebSocketConnection

__all__ = [
    "INIT_TYPE",
    "MAX_INIT_BYTES",
    "Outbox",
    "decode_init",
    "encode_init",
]

log = get_logger(__name__)

INIT_TYPE: Final = "init"
MAX_CLIENT_ID_LENGTH: Final = 256
MAX_INIT_BYTES: Final = 1024


def encode_init(client_id: str) -> bytes:
    """The first frame of a libjoynr runtime: ``{"v": 1, "t": "init", "id": <client id>}``."""
    return msgpack.packb({"v": 1, "t": INIT_TYPE, "id": client_id})


def decode_init(frame: Any) -> str:
    """The client id of an init frame; raises FrameError with the reason."""
    if not isinstance(frame, bytes):
        raise FrameError("bad-init", "the first frame must be a binary init frame")
    if len(frame) > MAX_INIT_BYTES:
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


#: most messages written with one socket write (the bytes bound below is the one that matters
#: for memory)
MAX_BATCH: Final = 1024
#: one socket write takes further messages only while it holds fewer bytes than this
MAX_BATCH_BYTES: Final = 1024 * 1024


class Outbox:
    """A bounded queue of messages for one connection, written as described in the module
    docstring.

    What was queued but not written when the connection ends is returned by :meth:`close`
    so that the router can queue it again: a message accepted for a connection is not lost
    because that connection broke (what the kernel had not sent yet may be).
    """

    def __init__(self, ws: WebSocketConnection, name: str, max_messages: int,
                 max_bytes: int) -> None:
        self.ws = ws
        self.name = name
        self.max_messages = max_messages
        #: the bytes its messages may hold (runtime.messages.held_bytes); an empty outbox
        #: takes one message of any size
        self.max_bytes = max_bytes
        self._items: deque[Message] = deque()
        self._bytes = 0  # what the items hold (runtime.messages.held_bytes), summed
        self._loop = asyncio.get_running_loop()
        self._scheduled = False
        self._done = False  # closed, or the connection is no longer open
        self._drained: asyncio.Future[None] | None = None  # see wait_below()
        self._drained_level = 0
        ws.on_writable = self._write

    def put(self, message: Message) -> bool:
        """Queue a message; False when the connection is gone or the queue is full (in
        messages or in bytes)."""
        items = self._items
        if self._done or len(items) >= self.max_messages:
            return False
        raw = message.raw  # held_bytes(message), inline: this runs once per message
        size = len(message.body) + (0 if raw is None else len(raw)) + MESSAGE_OVERHEAD_BYTES
        if items and self._bytes + size > self.max_bytes:
            return False
        if not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self._write)
            # the first message of a loop turn goes out at once when none waits before it
            # (no latency added); the later ones of the turn wait for _write at its end and go
            # out together (one system call for a burst)
            if not items and self._write_now(message):
                return True
        items.append(message)
        self._bytes += size
        return True

    def _write_now(self, message: Message) -> bool:
        """Write ``message`` alone, now; False when it cannot (paused, closed, or it failed:
        then it is queued as any other and _write deals with it)."""
        ws = self.ws
        if ws.paused_writing or not ws.open:
            return False
        try:
            return ws.send_frames([encode_frame(message)])
        except Exception:  # (_write logs it, ends the connection and gives it back)
            return False

    @property
    def pending(self) -> int:
        """Messages not yet handed to the transport."""
        return len(self._items)

    @property
    def pending_bytes(self) -> int:
        """The bytes the messages not yet handed to the transport hold."""
        return self._bytes

    def _write(self) -> None:
        self._scheduled = False
        if self._done:
            return
        items, ws = self._items, self.ws
        if not ws.open:
            self._finish()
            return
        try:
            while items and not ws.paused_writing:
                if len(items) <= MAX_BATCH and self._bytes <= MAX_BATCH_BYTES:
                    # the usual case: all of it in one write
                    ws.send_frames([encode_frame(m) for m in items])
                    items.clear()
                    self._bytes = 0
                    break
                # bounded in messages and in bytes: what one write hands over stays in the
                # transport's buffer until the peer reads it
                frames: list[bytes] = []
                batch_bytes = held = 0
                for message in islice(items, MAX_BATCH):
                    frame = encode_frame(message)
                    frames.append(frame)
                    batch_bytes += len(frame)
                    raw = message.raw
                    held += len(message.body) + (0 if raw is None else len(raw))
                    if batch_bytes >= MAX_BATCH_BYTES:
                        break
                ws.send_frames(frames)
                for _ in range(len(frames)):
                    items.popleft()
                self._bytes -= held + len(frames) * MESSAGE_OVERHEAD_BYTES
        except Exception:
            log.exception("writing to %s failed", self.name)
            self._finish()
            ws.fail(1011, "write failure")
            return
        drained = self._drained
        if drained is not None and len(items) <= self._drained_level:
            self._drained = None
            if not drained.done():
                drained.set_result(None)

    def _finish(self) -> None:
        self._done = True
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    async def wait_below(self, level: int) -> None:
        """Return when at most ``level`` messages wait (or the connection is gone)."""
        if len(self._items) <= level or self._done:
            return
        if self._drained is None or self._drained.done():
            self._drained = self._loop.create_future()
        self._drained_level = level
        await self._drained

    def close(self) -> list[Message]:
        """Stop writing; return what was not written."""
        self._finish()
        if self.ws.on_writable == self._write:
            self.ws.on_writable = None
        leftover = list(self._items)
        self._items.clear()
        self._bytes = 0
        return leftover
