"""joynr's Unix domain socket frames, written and read (pure: no I/O).

A frame is a 4-byte magic cookie, the payload's length as a 4-byte unsigned big-endian integer
(network byte order, though the socket is local) and the payload. Two cookies: ``MJI1`` before
the one init frame a client sends first (its payload the client's address), ``MJM1`` before
every message frame either way (one joynr message each). joynr's runtimes allow any length a
32-bit field holds; a reader here takes at most ``max_payload`` bytes.

:class:`FrameReader` takes bytes as they arrive and gives the complete frames; what it cannot
read is a :class:`~pyjoynr.runtime.messages.FrameError` with the reason (``bad-cookie``: a
cookie that is neither of the two, or the init cookie where a message frame was due;
``oversized-closed``: a length over the limit, told from the header alone, before the payload
arrives; ``bad-init``: an init frame longer than ``max_init_payload``, 1 KiB, told the same
way). Once it has raised, the stream is out of step and the connection must end. The
bytes it holds are at most one header and one payload up to the limit.
"""

from __future__ import annotations

import struct
from typing import Final

from pyjoynr.runtime.messages import FrameError

__all__ = ["HEADER_BYTES", "INIT_COOKIE", "MESSAGE_COOKIE", "FrameReader", "frame",
           "frames", "init_frame"]

#: precedes the client's init frame
INIT_COOKIE: Final = b"MJI1"
#: precedes every message frame
MESSAGE_COOKIE: Final = b"MJM1"
#: cookie and length
HEADER_BYTES: Final = 8
#: the longest init frame payload read (a client address: the init frames of
#: transports.dialects take at most 1 KiB)
MAX_INIT_PAYLOAD: Final = 1024
#: the largest length the 4-byte field holds
MAX_LENGTH_FIELD: Final = 0xFFFF_FFFF

_HEADER = struct.Struct(">4sI")
_pack_header = _HEADER.pack
_unpack_header = _HEADER.unpack_from


def frame(payload: bytes, cookie: bytes = MESSAGE_COOKIE) -> bytes:
    """One frame of ``payload``."""
    if len(payload) > MAX_LENGTH_FIELD:
        raise ValueError(f"a payload of {len(payload)} bytes does not fit a UDS frame")
    return _pack_header(cookie, len(payload)) + payload


def init_frame(payload: bytes) -> bytes:
    """The init frame of ``payload`` (the client's address)."""
    return frame(payload, INIT_COOKIE)


def frames(payloads: list[bytes]) -> bytes:
    """Message frames of ``payloads``, one after the other, as one buffer (one socket write)."""
    if len(payloads) == 1:
        return frame(payloads[0])
    parts: list[bytes] = []
    append = parts.append
    for payload in payloads:
        append(_pack_header(MESSAGE_COOKIE, len(payload)))
        append(payload)
    return b"".join(parts)


class FrameReader:
    """Reads frames from a byte stream: the first one an init frame when ``expect_init``, every
    other a message frame (see the module docstring)."""

    __slots__ = ("_buffer", "_expect_init", "_need", "max_init_payload", "max_payload")

    def __init__(self, max_payload: int, *, expect_init: bool = True,
                 max_init_payload: int = MAX_INIT_PAYLOAD) -> None:
        if max_payload < 0:
            raise ValueError(f"max_payload must be >= 0, got {max_payload}")
        self.max_payload = max_payload
        self.max_init_payload = max_init_payload
        self._expect_init = expect_init
        self._buffer = bytearray()
        #: the bytes the frame begun in the buffer needs to be complete (a header at least)
        self._need = HEADER_BYTES

    @property
    def buffered(self) -> int:
        """Bytes held: the start of a frame not yet complete."""
        return len(self._buffer)

    @property
    def mid_frame(self) -> bool:
        """A frame has begun and is not complete (the stream ending now truncates it)."""
        return bool(self._buffer)

    def feed(self, data: bytes) -> list[tuple[bool, bytes]]:
        """The frames ``data`` completes, as (is the init frame, payload); FrameError for a
        frame it cannot read (then nothing more can be read)."""
        buffer = self._buffer
        if buffer:
            buffer += data
            if len(buffer) < self._need:
                return []  # (a big frame arriving in pieces is copied once, at its end)
            view = bytes(buffer)
            buffer.clear()
        else:
            view = data
        out: list[tuple[bool, bytes]] = []
        offset = 0
        end = len(view)
        limit = self.max_payload
        need = HEADER_BYTES
        while end - offset >= HEADER_BYTES:
            cookie, length = _unpack_header(view, offset)
            if self._expect_init:
                if cookie != INIT_COOKIE:
                    raise FrameError("bad-cookie", _cookie_text(cookie, INIT_COOKIE))
                if length > self.max_init_payload:
                    raise FrameError("bad-init", f"an init frame of {length} bytes announced: "
                                     f"at most {self.max_init_payload} are taken")
            elif cookie != MESSAGE_COOKIE:
                raise FrameError("bad-cookie", _cookie_text(cookie, MESSAGE_COOKIE))
            if length > limit:
                raise FrameError("oversized-closed", f"a frame of {length} bytes announced: "
                                 f"at most {limit} are taken")
            start = offset + HEADER_BYTES
            if end - start < length:
                need = HEADER_BYTES + length
                break
            out.append((self._expect_init, view[start:start + length]))
            self._expect_init = False
            offset = start + length
        if offset < end:
            buffer += view[offset:]
        self._need = need
        return out


def _cookie_text(cookie: bytes, expected: bytes) -> str:
    return f"frame starts with {cookie!r}, not the cookie {expected.decode()}"
