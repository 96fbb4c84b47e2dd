"""Binary websocket data frames, written straight to bytes and read from them (pure: no I/O
but the entropy).

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

The reading side is the same idea. websockets parses every frame with a generator
(``Frame.parse`` over its stream reader: three or four ``read_exact`` steps, an ``Opcode``
enum, a ``Frame`` object, its checks); that was the largest row of the websocket paths'
profile, a quarter of their Python time. :func:`read_binary_frames` reads the frames that
make up nearly all of joynr's traffic, unfragmented binary data frames (FIN set, no RSV bit,
opcode 2, masked from a client and unmasked from a server as RFC 6455 demands, a length in 7,
16 or 64 bits no larger than the connection's ``max_size``), straight from the bytes received.
:class:`FrameReader` puts it in front of websockets' protocol object of one connection: it
reads such frames only while that object is open, has nothing buffered, no fragmented message
under way and its parser stands at a frame boundary (so that its state, its buffer, the close
handshake and the pings are never out of step), and hands every other byte to it: the first
frame that is anything else (a control frame, a text frame, a fragment, an RSV bit, a wrong
mask bit, a length over the limit, any malformed header) and all that follows it in the same
read. A binary frame that has begun but not ended at the end of a read is kept here (at most
its header and ``max_size`` bytes, as websockets would buffer it; its length is checked as
soon as it is all there, where websockets' parser checks it) until it is complete, and
handed to websockets when the connection stops being open or its stream ends, so that
websockets ends it as it would have (its parser's state depends on the bytes, not on how they
were split). tests/unit/test_websocket_reader.py checks the outcome against websockets' parser
alone for random sequences of frames of every kind, split at random points.

Costs a reader: a second reader of data frames beside websockets', which leans on things
websockets does not document: its protocol object's stream reader (``reader.buffer``),
``cur_size`` (a fragmented message under way), ``debug``, and its ``parser``, a chain of
generators that waits in ``StreamReader.at_eof`` called from ``Protocol.parse`` between two
frames. :func:`fast_reading_supported` checks them once per connection and, if a websockets
version lacks them, every byte goes to websockets as before (a unit test fails on such a
version, so that it does not go unnoticed; the differential test fails on one whose parser
waits there inside a frame). With websockets' own debug log on, every frame goes through its
parser, so that the log shows every frame.
"""

from __future__ import annotations

import inspect
import os
import struct
from collections.abc import Sequence
from typing import Any, Final

from websockets.protocol import OPEN, SERVER, Protocol
from websockets.streams import StreamReader

try:
    from websockets.speedups import apply_mask
except ImportError:  # (websockets built without its C extension)
    from websockets.utils import apply_mask

__all__ = ["FrameReader", "MaskSource", "binary_frames", "fast_reading_supported",
           "read_binary_frames"]

#: FIN set, no RSV bits, opcode 2 (binary)
_FIN_BINARY: Final = 0x82
_MASKED: Final = 0x80
_SHORT: Final = tuple(bytes((_FIN_BINARY, n)) for n in range(126))
_SHORT_MASKED: Final = tuple(bytes((_FIN_BINARY, _MASKED | n)) for n in range(126))
_MEDIUM: Final = struct.Struct("!BBH").pack
_LONG: Final = struct.Struct("!BBQ").pack
_KEY: Final = 4
_UNPACK_MEDIUM: Final = struct.Struct("!H").unpack_from
_UNPACK_LONG: Final = struct.Struct("!Q").unpack_from
#: the generator websockets' parser waits in between two frames, and its frame loop
_AT_EOF_CODE: Final = getattr(StreamReader.at_eof, "__code__", None)
_PARSE_CODE: Final = getattr(Protocol.parse, "__code__", None)
#: the limit of a protocol object made with ``max_size=None``
_NO_LIMIT: Final = 1 << 64


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


def read_binary_frames(data: bytes | bytearray, at: int, masked: bool, max_size: int,
                       payloads: list[Any]) -> tuple[int, int]:
    """Read the unfragmented binary data frames at the beginning of ``data[at:]`` (FIN, no RSV
    bit, opcode 2; masked if ``masked``, else unmasked; a payload of at most ``max_size``
    bytes) and append their payloads (unmasked; slices of ``data``) to ``payloads``.

    Returns ``(stop, wanted)``: ``stop`` is the offset of the first byte not read. ``wanted``
    is 0 when ``data[stop:]`` is empty or begins with something else than such a frame (for
    websockets' parser); else ``data[stop:]`` is the beginning of such a frame, incomplete,
    and ``wanted`` the number of bytes from ``stop`` it needs at least (exactly, once its
    header is complete)."""
    end = len(data)
    mask_bit = _MASKED if masked else 0
    append = payloads.append
    while True:
        left = end - at
        if left < 2:
            return at, (2 if left and data[at] == _FIN_BINARY else 0)
        if data[at] != _FIN_BINARY:
            return at, 0
        second = data[at + 1]
        if second & _MASKED != mask_bit:
            return at, 0
        n = second & 0x7F
        head = at + 2
        if n >= 126:
            # (a length not all there: wanted up to its end only, where websockets' parser
            # checks it against the limit, not up to the masking key behind it)
            if n == 126:
                head += 2
                if head > end:
                    return at, head - at
                (n,) = _UNPACK_MEDIUM(data, at + 2)
            else:
                head += 8
                if head > end:
                    return at, head - at
                (n,) = _UNPACK_LONG(data, at + 2)
        if n > max_size:
            return at, 0  # websockets refuses it (1009)
        if masked:
            stop = head + _KEY + n
            if stop > end:
                return at, stop - at
            # (both apply_mask()s take any bytes-like object and return bytes)
            append(apply_mask(data[head + _KEY:stop],  # type: ignore[arg-type]
                              data[head:head + _KEY]))  # type: ignore[arg-type]
        else:
            stop = head + n
            if stop > end:
                return at, stop - at
            append(data[head:stop])
        at = stop


def fast_reading_supported(protocol: Protocol) -> bool:
    """Whether websockets' protocol object has what :class:`FrameReader` needs to know where
    its parser stands (see the module docstring)."""
    reader = getattr(protocol, "reader", None)
    return (_AT_EOF_CODE is not None and _PARSE_CODE is not None
            and isinstance(getattr(reader, "buffer", None), bytearray)
            and hasattr(protocol, "cur_size")
            and inspect.isgenerator(getattr(protocol, "parser", None)))


def _frame_loop(parser: Any) -> Any:
    """The generator of websockets' frame loop (``Protocol.parse``) in the chain of generators
    its ``parser`` is (a server's and a client's parse the handshake first, then run the
    frame loop); None: not in it (the handshake, or ``discard`` after the close)."""
    while parser is not None:
        if parser.gi_code is _PARSE_CODE:
            return parser
        parser = parser.gi_yieldfrom
    return None


class FrameReader:
    """The bytes one connection receives, read into messages: unfragmented binary frames by
    :func:`read_binary_frames` while websockets' ``protocol`` object stands at a frame
    boundary with nothing buffered, everything else by that object (see the module
    docstring). Pure: no I/O; what the protocol object has to send waits in its
    ``data_to_send()`` as before."""

    __slots__ = ("_buffer", "_frames", "_limit", "_masked", "_parser", "_pending", "_wanted",
                 "enabled", "frames_read", "protocol")

    def __init__(self, protocol: Protocol) -> None:
        self.protocol = protocol
        #: False: every byte goes to websockets (a version without what this reader needs,
        #: or its debug log on)
        self.enabled = fast_reading_supported(protocol) and not getattr(protocol, "debug", False)
        #: the binary frames this reader read itself
        self.frames_read = 0
        self._masked = protocol.side is SERVER  # a server reads a client's masked frames
        max_size = protocol.max_size
        self._limit = _NO_LIMIT if max_size is None else max_size
        # websockets' stream reader's buffer (one bytearray for the connection's life)
        self._buffer = protocol.reader.buffer if self.enabled else b""
        self._parser: Any = None  # the protocol object's parser when _frames was found
        self._frames: Any = None  # the generator of websockets' frame loop in it
        self._pending: bytearray | None = None  # the beginning of a binary frame
        self._wanted = 0  # the bytes it needs at least

    def _between_frames(self) -> bool:
        """Whether websockets' parser waits between two frames (in its frame loop's
        ``at_eof``), not inside a frame nor in ``discard`` after the close."""
        parser = self.protocol.parser
        frames = self._frames
        if frames is None or parser is not self._parser:
            self._parser = parser
            frames = self._frames = _frame_loop(parser)
            if frames is None:
                return False
        inner = frames.gi_yieldfrom
        return inner is not None and inner.gi_code is _AT_EOF_CODE

    def feed(self, data: bytes) -> list[Any]:
        """Read ``data``; returned in their order: the payload (bytes) of each binary message
        read here, then the events of websockets' ``events_received()`` (frames, a handshake
        request or response: never bytes) for what was handed to it."""
        protocol = self.protocol
        pending = self._pending
        if protocol.state is not OPEN or not self.enabled:
            if pending is not None:
                self._pending = None
                protocol.receive_data(bytes(pending))
            protocol.receive_data(data)
            return protocol.events_received()
        payloads: list[Any] = []
        at = 0
        if pending is not None:
            # complete the frame begun in an earlier read first
            while True:
                need = self._wanted - len(pending)
                if need > len(data) - at:
                    pending += data[at:] if at else data
                    return payloads
                pending += data[at:at + need]
                at += need
                stop, wanted = read_binary_frames(pending, 0, self._masked, self._limit,
                                                  payloads)
                if wanted:  # its header is complete now: its length is known
                    self._wanted = wanted
                    continue
                self._pending = None
                if stop:  # the frame
                    payload = payloads[0]
                    if type(payload) is not bytes:
                        payloads[0] = bytes(payload)
                    self.frames_read += 1
                    break
                # a length over the limit: for websockets, with all that follows
                protocol.receive_data(bytes(pending))
                if at < len(data):
                    protocol.receive_data(data[at:])
                return protocol.events_received()
        elif (self._buffer or protocol.cur_size is not None or protocol.extensions
              or not self._between_frames()):
            protocol.receive_data(data)
            return protocol.events_received()
        before = len(payloads)
        at, wanted = read_binary_frames(data, at, self._masked, self._limit, payloads)
        self.frames_read += len(payloads) - before
        if wanted:  # a frame begun: kept until it is complete
            self._pending = bytearray(data[at:])
            self._wanted = wanted
        elif at < len(data):  # something else: websockets reads it and all that follows
            protocol.receive_data(data[at:] if at else data)
            payloads += protocol.events_received()
        return payloads

    def feed_eof(self) -> None:
        """The end of the stream: a frame begun goes to websockets first (which ends the
        connection as it would have with it), then the end (``receive_eof``, idempotent)."""
        pending = self._pending
        if pending is not None:
            self._pending = None
            self.protocol.receive_data(bytes(pending))
        self.protocol.receive_eof()
