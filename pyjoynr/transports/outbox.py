"""The send queue of one connection between a libjoynr runtime and its cluster controller,
whatever carries it (websocket, Unix domain socket): a bounded queue and its write rule.

An :class:`Outbox` holds the messages routed to one connection until they are written, in a
bounded queue (runtime.queues: at most so many messages and bytes; an empty outbox takes one
message of any size). It writes as every writer of the project does (transports.coalescing):
the first message of a loop turn goes out at once when none waits before it; the others wait
for a callback scheduled at that moment (not a task), and every message waiting when it runs
goes out with one socket write (one frame each; at most ``MAX_BATCH`` messages and
about ``MAX_BATCH_BYTES`` per write). It stops while the transport's write buffer is full and
goes on when it drains, so the memory a slow peer can hold is bounded by the outbox's limits
plus the write buffer, which takes at most about ``MAX_BATCH_BYTES`` beyond its high-water
mark.

The connection it writes to is a :class:`FrameWriter`: what the websocket connection and the
Unix domain socket connection both offer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from itertools import islice
from typing import Final, Protocol

from pyjoynr.runtime.logs import get_logger
from pyjoynr.runtime.messages import MESSAGE_OVERHEAD_BYTES, Message, encode_frame, held_bytes
from pyjoynr.runtime.queues import BoundedQueue
from pyjoynr.transports.coalescing import TurnCoalescer
from pyjoynr.transports.dialects import Encoder

__all__ = ["MAX_BATCH", "MAX_BATCH_BYTES", "FrameTooBig", "FrameWriter", "Outbox",
           "unsendable_reason"]

log = get_logger(__name__)


class FrameWriter(Protocol):
    """A connection an :class:`Outbox` writes frames to."""

    #: called when the transport's write buffer has drained (writing may go on)
    on_writable: Callable[[], None] | None

    @property
    def paused_writing(self) -> bool:
        """The transport's write buffer is over its high-water mark."""
        ...

    @property
    def open(self) -> bool:
        """Frames may still be written."""
        ...

    def send_frames(self, frames: list[bytes]) -> bool:
        """Write the frames, one message each, with one socket write; False when not open."""
        ...

    def fail(self, code: int, reason: str) -> None:
        """End the connection after a write failure."""
        ...


#: most messages written with one socket write (the bytes bound below is the one that matters
#: for memory)
MAX_BATCH: Final = 1024
#: one socket write takes further messages only while it holds fewer bytes than this
MAX_BATCH_BYTES: Final = 1024 * 1024


class FrameTooBig(ValueError):
    """A message's frame is bigger than its connection's frame limit."""

    reason = "too-big"


def unsendable_reason(error: Exception) -> str:
    """The reason a message an outbox dropped is counted under: ``too-big`` or
    ``unencodable``."""
    return FrameTooBig.reason if isinstance(error, FrameTooBig) else "unencodable"


class Outbox:
    """A bounded queue of messages for one connection, written as described in the module
    docstring.

    What was queued but not written when the connection ends is returned by :meth:`close`
    so that the router can queue it again: a message accepted for a connection is not lost
    because that connection broke (what the kernel had not sent yet may be).

    ``encode`` writes each message's frame (the connection's dialect: :func:`frame_encoder`).
    A message it cannot encode (it raises), or whose frame is bigger than ``max_frame_bytes``
    (the connection's frame limit, which the peer holds to as well; 0: none; then the error is
    a :class:`FrameTooBig`), is dropped and handed to ``on_unencodable`` with the error
    (default: logged); the connection and the other messages go on.
    """

    def __init__(self, ws: FrameWriter, name: str, max_messages: int,
                 max_bytes: int, *, encode: Encoder = encode_frame,
                 on_unencodable: Callable[[Message, Exception], None] | None = None,
                 max_frame_bytes: int = 0) -> None:
        self.ws = ws
        self.name = name
        self.encode = encode
        self.max_frame_bytes = max_frame_bytes
        # the native encoder writes a message that arrived in a native frame as that frame:
        # taken here without a call per message
        self._native = encode is encode_frame
        self.on_unencodable = on_unencodable
        #: the messages waiting, at most ``max_messages``, and the bytes they hold
        #: (runtime.messages.held_bytes) at most ``max_bytes`` (an empty outbox takes one
        #: message of any size)
        self._queue: BoundedQueue[Message] = BoundedQueue(max_messages, max_bytes,
                                                          size_of=held_bytes)
        self._loop = asyncio.get_running_loop()
        self._turn = TurnCoalescer(self._loop, self._queue.items, self._write)
        self._done = False  # closed, or the connection is no longer open
        self._drained: asyncio.Future[None] | None = None  # see wait_below()
        self._drained_level = 0
        ws.on_writable = self._write

    def put(self, message: Message) -> bool:
        """Queue a message; False when the connection is gone or the queue is full (in
        messages or in bytes)."""
        if self._done:
            return False
        # held_bytes(message), inline: this runs once per message
        raw, raw_smrf = message.raw, message.raw_smrf
        size = (len(message.body) + (0 if raw is None else len(raw))
                + (0 if raw_smrf is None else len(raw_smrf)) + MESSAGE_OVERHEAD_BYTES)
        queue, turn = self._queue, self._turn
        if turn.scheduled:  # not the first of the turn: it waits
            return queue.offer(message, size) is None
        if queue.admit(size) is not None:
            return False
        if not (turn.at_once() and self._write_now(message)):
            queue.push(message, size)
        return True

    def _write_now(self, message: Message) -> bool:
        """Write ``message`` alone, now; False when it cannot (paused, closed, or it failed:
        then it is queued as any other and _write deals with it)."""
        ws = self.ws
        if ws.paused_writing:
            return False
        try:
            return ws.send_frames([self._frame(message)])  # (False: not open)
        except Exception:  # (_write drops what it cannot encode, or logs the failure, ends
            return False   # the connection and gives the messages back)

    def _frame(self, message: Message) -> bytes:
        """The frame of ``message``; raises what the encoder raises, FrameTooBig for a frame
        over the connection's limit."""
        raw = message.raw
        frame = raw if raw is not None and self._native else self.encode(message)
        limit = self.max_frame_bytes
        if limit and len(frame) > limit:
            raise FrameTooBig(f"a frame of {len(frame)} bytes: the connection takes at most "
                              f"{limit} (max_frame_bytes)")
        return frame

    @property
    def pending(self) -> int:
        """Messages not yet handed to the transport."""
        return len(self._queue.items)

    @property
    def pending_bytes(self) -> int:
        """The bytes the messages not yet handed to the transport hold."""
        return self._queue.bytes

    def _write(self) -> None:
        """Write what waits (at the end of a turn, and when the write buffer drained)."""
        if self._done:
            return
        queue, ws, encode = self._queue, self.ws, self.encode
        if not ws.open:
            self._finish()
            return
        items = queue.items
        try:
            while items and not ws.paused_writing:
                if len(items) <= MAX_BATCH and queue.bytes <= MAX_BATCH_BYTES:
                    # the usual case: all of it in one write
                    try:
                        frames = ([m.raw or encode(m) for m in items] if self._native
                                  else [encode(m) for m in items])
                        limit = self.max_frame_bytes
                        if limit and max(map(len, frames)) > limit:
                            frames = self._encode_each(items)
                    except Exception:
                        frames = self._encode_each(items)
                    ws.send_frames(frames)
                    queue.clear()
                    break
                # bounded in messages and in bytes: what one write hands over stays in the
                # transport's buffer until the peer reads it
                frames = []
                batch_bytes = taken = 0
                for message in islice(items, MAX_BATCH):
                    taken += 1
                    try:
                        frame = self._frame(message)
                    except Exception as exc:
                        self._unencodable(message, exc)
                        continue
                    frames.append(frame)
                    batch_bytes += len(frame)
                    if batch_bytes >= MAX_BATCH_BYTES:
                        break
                ws.send_frames(frames)
                for _ in range(taken):
                    queue.release(held_bytes(queue.popleft()))
        except Exception:
            log.exception("writing to %s failed", self.name)
            self._finish()
            ws.fail(1011, "write failure")
            return
        drained = self._drained
        if drained is not None and len(queue.items) <= self._drained_level:
            self._drained = None
            if not drained.done():
                drained.set_result(None)

    def _encode_each(self, messages: Iterable[Message]) -> list[bytes]:
        """The frames of ``messages``, without those that cannot be encoded (dropped)."""
        frames = []
        for message in messages:
            try:
                frames.append(self._frame(message))
            except Exception as exc:
                self._unencodable(message, exc)
        return frames

    def _unencodable(self, message: Message, error: Exception) -> None:
        # told after this write: what the handler routes (an error answer in the message's
        # place) may come back to this outbox, whose queue is being written now
        self._loop.call_soon(self._tell_unencodable, message, error)

    def _tell_unencodable(self, message: Message, error: Exception) -> None:
        if self.on_unencodable is not None:
            self.on_unencodable(message, error)
        else:
            log.warning("writing to %s: dropped %s: it cannot be encoded: %s", self.name,
                        message.describe(), error)

    def _finish(self) -> None:
        self._done = True
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    async def wait_below(self, level: int) -> None:
        """Return when at most ``level`` messages wait (or the connection is gone)."""
        if len(self._queue.items) <= level or self._done:
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
        return self._queue.drain()
