"""Binary websocket data frames, written straight to bytes (pure: no I/O but the entropy).

The websocket connections (transports/websocket/connection.py) drive websockets' sans-I/O
protocol objects for everything (the handshake, reading and checking every frame, control
frames, the close handshake) except one thing: writing an unfragmented binary message while
the connection is open and no extension was negotiated. That is a frame header and the
payload (RFC 6455, section 5.2): FIN and the binary opcode (0x82), the length in 7, 7+16 or
7+64 bits, and from a client a masking key and the payload masked with it. websockets makes a
Frame object per message, checks it, writes it through a BytesIO and draws each masking key
with a system call of its own; on the one-way path that was a fifth of a message's cost in the
transports. :func:`binary_frames` writes the same bytes (a test reads them back with
websockets' own parser, for every length class, masked and not) without those steps, and
:class:`MaskSource` draws the masking keys from the operating system's random source 1,024 at
a time (each key is still four bytes of that source, never reused: unpredictable to the peer,
as the RFC asks).

Costs a reader: a second writer of data frames beside websockets'; the connection uses it only
where the two must give the same bytes (an open connection, no extension, no fragmented
message under way) and websockets' otherwise.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from typing import Final

try:
    from websockets.speedups import apply_mask
except ImportError:  # (websockets built without its C extension)
    from websockets.utils import apply_mask

__all__ = ["MaskSource", "binary_frames"]

#: FIN set, no RSV bits, opcode 2 (binary)
_FIN_BINARY: Final = 0x82
_MASKED: Final = 0x80
_SHORT: Final = tuple(bytes((_FIN_BINARY, n)) for n in range(126))
_SHORT_MASKED: Final = tuple(bytes((_FIN_BINARY, _MASKED | n)) for n in range(126))
_MEDIUM: Final = struct.Struct("!BBH").pack
_LONG: Final = struct.Struct("!BBQ").pack
_KEY: Final = 4


class MaskSource:
    """Masking keys for a client's frames: four bytes of ``os.urandom`` each, drawn ``keys``
    at a time; every key is handed out once."""

    __slots__ = ("_at", "_block", "_keys")

    def __init__(self, keys: int = 1024) -> None:
        if keys < 1:
            raise ValueError(f"keys must be >= 1, not {keys}")
        self._keys = keys
        self._block = b""
        self._at = 0

    def next(self) -> bytes:
        at = self._at
        if at >= len(self._block):
            self._block = os.urandom(_KEY * self._keys)
            at = 0
        self._at = at + _KEY
        return self._block[at:at + _KEY]


def binary_frames(payloads: Sequence[bytes], masks: MaskSource | None = None) -> list[bytes]:
    """The frames of ``payloads``, one unfragmented binary message each, as the parts to write
    in order: per frame its header, then (``masks`` given: a client's frames) its masking key
    and its payload masked, else its payload as it is."""
    parts: list[bytes] = []
    append = parts.append
    if masks is None:
        for payload in payloads:
            n = len(payload)
            append(_SHORT[n] if n < 126 else _MEDIUM(_FIN_BINARY, 126, n) if n < 65536
                   else _LONG(_FIN_BINARY, 127, n))
            append(payload)
        return parts
    key_of = masks.next
    for payload in payloads:
        n = len(payload)
        append(_SHORT_MASKED[n] if n < 126 else _MEDIUM(_FIN_BINARY, _MASKED | 126, n)
               if n < 65536 else _LONG(_FIN_BINARY, _MASKED | 127, n))
        key = key_of()
        append(key)
        append(apply_mask(payload, key))
    return parts
