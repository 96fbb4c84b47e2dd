"""One Unix domain socket connection: an :class:`asyncio.Protocol` over joynr's UDS frames
(transports.uds.framing).

Complete frames go to a handler straight from ``data_received``, one call per frame, in order.
Frames that arrive before a handler is set (the init frame, and what follows it while the
server decides whether the connection may have its client id) wait in a backlog, taken by
:meth:`UdsConnection.recv` one by one or all by :meth:`UdsConnection.deliver`; the backlog
holds at most ``max_backlog_bytes`` (an empty backlog takes one frame of any size), and at the
bound reading pauses until frames are taken from it. A frame the reader cannot read (a wrong
cookie, a length over the limit) ends the connection at once: the stream is out of step
(``error`` says why); so does the peer's end in the middle of a frame (``truncated``).

:meth:`UdsConnection.send_frames` writes several message frames with one socket write;
``paused_writing`` and ``on_writable`` are the write-buffer flow control for the writer above
(transports.outbox.Outbox). There is no keep-alive: the kernel ends the connection when the
peer's process ends, whatever way it ends.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections import deque
from collections.abc import Callable
from typing import Any, cast

from pyjoynr.runtime.messages import FrameError
from pyjoynr.transports.uds.framing import FrameReader, frames, init_frame

__all__ = ["FrameHandler", "PeerCredentials", "UdsClosed", "UdsConnection"]

#: what a handler receives: the payload of a message frame
FrameHandler = Callable[[bytes], None]

_UCRED = struct.Struct("3i")


class UdsClosed(ConnectionError):
    """The connection ended before the frame awaited arrived."""


class PeerCredentials:
    """The process at the other end (SO_PEERCRED: its pid, uid and gid when it connected)."""

    __slots__ = ("gid", "pid", "uid")

    def __init__(self, pid: int, uid: int, gid: int) -> None:
        self.pid, self.uid, self.gid = pid, uid, gid

    def __repr__(self) -> str:
        return f"pid {self.pid} uid {self.uid}"


def peer_credentials(sock: Any) -> PeerCredentials | None:
    """The credentials of a Unix socket's peer; None where the system does not tell them."""
    option = getattr(socket, "SO_PEERCRED", None)
    if sock is None or option is None:
        return None
    try:
        pid, uid, gid = _UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, option, _UCRED.size))
    except OSError:
        return None
    return PeerCredentials(pid, uid, gid)


class UdsConnection(asyncio.Protocol):
    """One connection (see the module docstring); ``expect_init``: the first frame read is an
    init frame (the server's side)."""

    transport: asyncio.Transport | None = None

    def __init__(self, *, max_frame_bytes: int, max_backlog_bytes: int,
                 expect_init: bool, tracked: set[UdsConnection] | None = None,
                 on_made: Callable[[UdsConnection], None] | None = None) -> None:
        self.reader = FrameReader(max_frame_bytes, expect_init=expect_init)
        self.max_backlog_bytes = max_backlog_bytes
        self.loop = asyncio.get_running_loop()
        #: done when the connection has ended
        self.closed: asyncio.Future[None] = self.loop.create_future()
        #: the peer's process (server side: read when the connection is made)
        self.peer: PeerCredentials | None = None
        #: the frame the reader could not read, which ended the connection
        self.error: FrameError | None = None
        #: the peer ended the connection in the middle of a frame
        self.truncated = False
        #: True while the transport's write buffer is above its high-water mark
        self.paused_writing = False
        #: called when writing may go on (the buffer drained) and when the connection ends
        self.on_writable: Callable[[], None] | None = None
        self._handler: FrameHandler | None = None
        self._backlog: deque[bytes] = deque()
        self._backlog_bytes = 0
        self._backlog_waiter: asyncio.Future[None] | None = None
        self._reading_paused = False
        self._tracked = tracked
        self._on_made = on_made

    # ------------------------------------------------------------------ public API

    @property
    def open(self) -> bool:
        transport = self.transport
        return transport is not None and not transport.is_closing()

    def send_init(self, payload: bytes) -> bool:
        """Write the init frame of ``payload``; False when not open."""
        if not self.open:
            return False
        assert self.transport is not None
        self.transport.write(init_frame(payload))
        return True

    def send_frames(self, payloads: list[bytes]) -> bool:
        """Write message frames of ``payloads`` with one socket write; False when not open."""
        transport = self.transport
        if transport is None or transport.is_closing():
            return False
        if payloads:
            transport.write(frames(payloads))
        return True

    def deliver(self, handler: FrameHandler) -> None:
        """Hand every frame to ``handler``: first those in the backlog, in order, then each
        one as it arrives."""
        backlog = self._backlog
        while backlog:
            payload = backlog.popleft()
            self._backlog_bytes -= len(payload)
            handler(payload)
        self._handler = handler
        self._resume_own_reading()

    async def recv(self) -> bytes:
        """The next frame; UdsClosed when the connection ended before it came."""
        while not self._backlog:
            if self.closed.done():
                raise UdsClosed("connection closed")
            waiter = self.loop.create_future()
            self._backlog_waiter = waiter
            try:
                await asyncio.wait([waiter, self.closed], return_when=asyncio.FIRST_COMPLETED)
            finally:
                self._backlog_waiter = None
        payload = self._backlog.popleft()
        self._backlog_bytes -= len(payload)
        self._resume_own_reading()
        return payload

    def discard_backlog(self) -> int:
        """Drop the frames not yet taken; how many."""
        dropped = len(self._backlog)
        self._backlog.clear()
        self._backlog_bytes = 0
        self._resume_own_reading()
        return dropped

    def fail(self, code: int = 0, reason: str = "") -> None:
        """End the connection at once (after a write failure: ``code`` and ``reason`` are not
        sent anywhere; the signature is the one transports.outbox expects)."""
        self.abort()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    async def close(self, timeout_s: float = 1.0) -> None:
        """Close after what is written has gone out (at most ``timeout_s``, then abort)."""
        transport = self.transport
        if transport is None:
            return
        transport.close()
        try:
            await asyncio.wait_for(asyncio.shield(self.closed), timeout_s)
        except TimeoutError:
            transport.abort()
            await self.closed

    async def wait_closed(self) -> None:
        await asyncio.shield(self.closed)

    # ------------------------------------------------------------------ asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (uvloop's transports are not asyncio.Transport subclasses, but have its methods)
        self.transport = cast(asyncio.Transport, transport)
        if self._tracked is not None:
            self._tracked.add(self)
        if self.reader._expect_init:  # the server's side: who is at the other end
            self.peer = peer_credentials(self.transport.get_extra_info("socket"))
        if self._on_made is not None:
            self._on_made(self)

    def data_received(self, data: bytes) -> None:
        try:
            payloads = self.reader.feed(data)
        except FrameError as exc:
            self.error = exc
            self.abort()
            return
        handler = self._handler
        if handler is not None and not self._backlog:
            for _is_init, payload in payloads:
                if self.transport is None or self.transport.is_closing():
                    return  # the handler ended it: what follows is not read
                handler(payload)
            return
        for _is_init, payload in payloads:
            self._backlog.append(payload)
            self._backlog_bytes += len(payload)
        waiter = self._backlog_waiter
        if waiter is not None and not waiter.done() and self._backlog:
            waiter.set_result(None)
        if (self._backlog_bytes > self.max_backlog_bytes and not self._reading_paused
                and self.transport is not None):
            self._reading_paused = True
            self.transport.pause_reading()

    def eof_received(self) -> bool | None:
        if self.reader.mid_frame:
            self.truncated = True
        return None  # close

    def connection_lost(self, exc: Exception | None) -> None:
        if self._tracked is not None:
            self._tracked.discard(self)
        if not self.closed.done():
            self.closed.set_result(None)
        self.paused_writing = False
        if self.on_writable is not None:
            self.on_writable()

    def pause_writing(self) -> None:
        self.paused_writing = True

    def resume_writing(self) -> None:
        self.paused_writing = False
        if self.on_writable is not None:
            self.on_writable()

    def _resume_own_reading(self) -> None:
        if (self._reading_paused and self._backlog_bytes <= self.max_backlog_bytes
                and self.transport is not None and not self.transport.is_closing()):
            self._reading_paused = False
            self.transport.resume_reading()
