"""What both websocket ends share: the init frame and the per-connection send queue."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from typing import Any, Final

import msgpack
from websockets.asyncio.connection import Connection
from websockets.exceptions import ConnectionClosed

from runtime.messages import FrameError, Message, encode_frame

__all__ = ["INIT_TYPE", "Outbox", "decode_init", "encode_init"]

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


class Outbox:
    """A bounded queue of messages for one connection and the task that writes them.

    What was queued but not written when the connection ends is returned by ``close()`` so
    that the router can queue it again: a message accepted for a connection is not lost
    because that connection broke (the one frame being written at that moment may be).
    """

    def __init__(self, ws: Connection, name: str, max_messages: int) -> None:
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
                    await ws.send(encode_frame(items.popleft()))
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
