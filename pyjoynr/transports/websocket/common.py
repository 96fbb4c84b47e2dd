"""What both websocket ends share: the init frames and the send queue of a connection.

The protocol between a libjoynr runtime and its cluster controller: the runtime's first
websocket message is an init frame (binary, at most 1 KiB, a client id of 1..256 characters);
every later message either way is one binary message frame, one websocket message per joynr
message. Two dialects, told by the init frame (:func:`decode_any_init`); a connection keeps
its dialect for every frame either way:

- ``native``: the init frame is a msgpack map ``{"v": 1, "t": "init", "id": <client id>}``,
  message frames are the msgpack frames of runtime.messages;
- ``joynr`` (joynr's Java, C++ and JavaScript runtimes): the init frame is the JSON of the
  runtime's WebSocketClientAddress, ``{"_typeName":"joynr.system.RoutingTypes.
  WebSocketClientAddress","id":"<client id>"}`` in UTF-8, told by its exact first bytes
  (:data:`JOYNR_INIT_PREFIX`: ``_typeName`` first, no whitespace, as joynr's runtimes write it);
  message frames are SMRF frames (runtime.smrf).

An :class:`Outbox` holds the messages routed to one connection until they are written, in a
bounded queue (runtime.queues: at most so many messages and bytes; an empty outbox takes one
message of any size). It writes as every writer of the project does (transports.coalescing):
the first message of a loop turn goes out at once when none waits before it; the others wait
for a callback scheduled at that moment (not a task), and every message waiting when it runs
goes out with one socket write (one websocket message each; at most ``MAX_BATCH`` messages and
about ``MAX_BATCH_BYTES`` per write). It stops while the transport's write buffer is full and
goes on when it drains, so the memory a slow peer can hold is bounded by the outbox's limits
plus the write buffer, which takes at most about ``MAX_BATCH_BYTES`` beyond its high-water
mark.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable, Iterable
from itertools import islice
from typing import Any, Final

import msgpack

from pyjoynr.runtime import smrf
from pyjoynr.runtime.logs import get_logger
from pyjoynr.runtime.messages import (
    MESSAGE_OVERHEAD_BYTES,
    FrameError,
    Message,
    decode_frame,
    encode_frame,
    held_bytes,
)
from pyjoynr.runtime.queues import BoundedQueue
from pyjoynr.transports.coalescing import TurnCoalescer
from pyjoynr.transports.websocket.connection import WebSocketConnection
from pyjoynr.transports.websocket.settings import JOYNR, NATIVE

__all__ = [
    "INIT_TYPE",
    "JOYNR_INIT_PREFIX",
    "MAX_INIT_BYTES",
    "Decoder",
    "Encoder",
    "FrameTooBig",
    "Outbox",
    "decode_any_init",
    "decode_init",
    "decode_joynr_init",
    "encode_init",
    "encode_joynr_init",
    "frame_decoder",
    "frame_encoder",
    "unsendable_reason",
]

log = get_logger(__name__)

INIT_TYPE: Final = "init"
MAX_CLIENT_ID_LENGTH: Final = 256
MAX_INIT_BYTES: Final = 1024
#: the address type of joynr's init frame
WEBSOCKET_CLIENT_ADDRESS_TYPE: Final = "joynr.system.RoutingTypes.WebSocketClientAddress"
#: how joynr's init frame starts, byte for byte (joynr's cluster controllers test this prefix)
JOYNR_INIT_PREFIX: Final = b'{"_typeName":"' + WEBSOCKET_CLIENT_ADDRESS_TYPE.encode() + b'"'


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


def encode_joynr_init(client_id: str) -> bytes:
    """joynr's init frame: ``{"_typeName":"joynr.system.RoutingTypes.WebSocketClientAddress",
    "id":"<client id>"}`` in UTF-8, ``_typeName`` first and no whitespace (joynr's cluster
    controllers recognise it by those first bytes)."""
    return json.dumps({"_typeName": WEBSOCKET_CLIENT_ADDRESS_TYPE, "id": client_id},
                      separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data = dict(pairs)
    if len(data) != len(pairs):
        raise ValueError("a key appears twice")
    return data


def decode_joynr_init(frame: Any) -> str:
    """The client id of joynr's init frame (see :func:`encode_joynr_init`): binary, starting
    with :data:`JOYNR_INIT_PREFIX`, at most 1 KiB of UTF-8 JSON, an object with exactly the
    keys ``_typeName`` and ``id`` (each once), the id a string of 1..256 characters; raises
    FrameError (``bad-init``) otherwise."""
    if not isinstance(frame, bytes):
        raise FrameError("bad-init", "the first frame must be a binary init frame")
    if len(frame) > MAX_INIT_BYTES:
        raise FrameError("bad-init", "init frame too large")
    if not frame.startswith(JOYNR_INIT_PREFIX):
        raise FrameError("bad-init", "the first frame must be an init frame")
    try:
        data = json.loads(frame.decode("utf-8"), object_pairs_hook=_unique_keys)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError, JSONDecodeError too
        raise FrameError("bad-init", f"joynr init frame is not a JSON object: {exc}") from None
    if not isinstance(data, dict) or data.get("_typeName") != WEBSOCKET_CLIENT_ADDRESS_TYPE:
        raise FrameError("bad-init", "joynr init frame is not a WebSocketClientAddress")
    if set(data) != {"_typeName", "id"}:
        others = sorted(set(data) - {"_typeName", "id"})
        raise FrameError("bad-init", "joynr init frame needs exactly the keys _typeName and "
                         f"id, got {str(others)[:80] if others else 'no id'}")
    client_id = data["id"]
    if type(client_id) is not str or not 0 < len(client_id) <= MAX_CLIENT_ID_LENGTH:
        raise FrameError("bad-init", "init frame needs a client id of 1..256 characters")
    return client_id


def decode_any_init(frame: Any) -> tuple[str, str]:
    """The client id and the dialect (``native`` or ``joynr``) of a connection's first frame;
    raises FrameError (``bad-init``) for anything but a valid init frame of either dialect."""
    if isinstance(frame, bytes) and frame.startswith(JOYNR_INIT_PREFIX):
        return decode_joynr_init(frame), JOYNR
    return decode_init(frame), NATIVE


#: what writes a message's frame (runtime.messages.encode_frame, runtime.smrf.encode, ...)
Encoder = Callable[[Message], bytes]
#: what reads a frame: ``(frame, max_bytes, origin=)`` -> the message, or FrameError
Decoder = Callable[..., Message]


def frame_encoder(dialect: str, owner_id: str = "") -> Encoder:
    """The encoder of ``dialect``'s message frames; for ``joynr`` with ``owner_id``, every
    frame is custom-signed with the owner id's UTF-8 bytes."""
    if dialect == NATIVE:
        return encode_frame
    if not owner_id:
        return smrf.encode
    signature = owner_id.encode("utf-8")
    encode = smrf.encode

    def signed(message: Message) -> bytes:
        if message.custom_signature != signature:
            message = dataclasses.replace(message, custom_signature=signature, raw=None,
                                          raw_smrf=None)
        return encode(message)

    return signed


def frame_decoder(dialect: str) -> Decoder:
    """The decoder of ``dialect``'s message frames."""
    return decode_frame if dialect == NATIVE else smrf.decode


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

    def __init__(self, ws: WebSocketConnection, name: str, max_messages: int,
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
