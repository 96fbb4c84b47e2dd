"""joynr's own wire: SMRF frames (docs/wire.md, "SMRF"): the codec. Pure module: no I/O.

Import it as :mod:`runtime.smrf`, which loads this module compiled (mypyc) when it was built
from this source, and from this source when not (:mod:`runtime.compiled`). It is plain,
fully typed Python either way; the few places where the two forms are fast in different ways
say so.

A frame is an 8-byte prefix, a FlatBuffer (root table ``smrf.Message``) and an optional
signature, exactly ``8 + msgSize + sigSize`` bytes::

    offset 0   uint16 LE  version (1)
    offset 2   uint16 LE  sigSize: bytes of the trailing signature
    offset 4   uint32 LE  msgSize: bytes of the FlatBuffer
    offset 8   the FlatBuffer (8-aligned in the frame)
    then       the signature (sigSize bytes)

Two layers:

- :func:`encode_smrf` / :func:`decode_smrf` translate between bytes and :class:`SmrfFrame`,
  SMRF's own fields (sender, recipient, ttl, flags, the header list, the body, the custom
  signature). The FlatBuffer is written and read by this module itself: the reader checks every
  offset, vtable, vector and string against the buffer before it touches it, and the alignment
  a FlatBuffers verifier checks, so arbitrary bytes give a :class:`SmrfError` or a frame,
  nothing else.
- :func:`encode` / :func:`decode` map :class:`~runtime.messages.Message` to a frame and back:
  header ``t`` = type, ``id`` = message id, ``re`` = replyTo (the address as JSON), ``ef`` =
  effort, ``c-<key>`` = custom headers, ``ttlMs`` = the absolute expiry date. :func:`decode`
  keeps the received frame in ``Message.raw_smrf`` and :func:`encode` returns it as it is, so
  that a forwarded frame goes on byte for byte (its signature too), as ``Message.raw`` does
  for the msgpack frame.

Both layers share the checking reader (``_read``) and the writer (``_write``);
:func:`decode` and :func:`encode`, the transports' per-message paths, go straight between
bytes and :class:`~runtime.messages.Message` without making an :class:`SmrfFrame`, and give
exactly what the frame layer and :func:`message_from_frame` / :func:`frame_from_message`
would. Two bounded caches spare repeated work: the checked layouts of table vtables (a sender
writes the same few) and the replyTo addresses (a runtime's requests all carry the same).

The writer stores ``isSigned`` and ``isEncrypted`` as ``false`` explicitly (their schema default
is true) and ``ttlAbsolute`` as ``true``; headers are sorted by key. A body is zlib-compressed
when the message asks for it (``Message.compressed``) or when it is longer than
``compress_above`` bytes (default :data:`DEFAULT_COMPRESS_ABOVE_BYTES`) and compressing makes it
shorter. Compressed bodies are always accepted, inflated up to the frame size limit.
Encrypted and (non-custom) signed frames are refused.
"""

from __future__ import annotations

import functools
import json
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from pyjoynr.runtime.addresses import Address, AddressError, address_from_dict
from pyjoynr.runtime.clock import now_ms as _wall_clock_ms
from pyjoynr.runtime.messages import (
    DEFAULT_MAX_FRAME_BYTES,
    INT64_MAX,
    MAX_HEADER_LENGTH,
    MAX_HEADERS,
    MAX_ID_LENGTH,
    Effort,
    FrameError,
    Message,
    MessageType,
)

__all__ = [
    "DEFAULT_COMPRESS_ABOVE_BYTES",
    "MAX_SIGNATURE_BYTES",
    "MAX_SMRF_HEADERS",
    "PREFIX_BYTES",
    "SMRF_VERSION",
    "SmrfError",
    "SmrfFrame",
    "decode",
    "decode_smrf",
    "encode",
    "encode_smrf",
    "frame_from_message",
    "message_from_frame",
]

SMRF_VERSION: Final = 1
PREFIX_BYTES: Final = 8
#: sigSize is a uint16
MAX_SIGNATURE_BYTES: Final = 0xFFFF
#: header entries a frame may carry: t, id, re, ef, the custom headers and some to spare
MAX_SMRF_HEADERS: Final = 2 * MAX_HEADERS
#: bodies longer than this are compressed (when that makes them shorter); ``None`` disables
DEFAULT_COMPRESS_ABOVE_BYTES: Final = 4096
#: the longest replyTo JSON accepted (an address's fields are at most 1,024 chars each)
MAX_REPLY_TO_CHARS: Final = 8192

CUSTOM_HEADER_PREFIX: Final = "c-"

_INT64_MIN: Final = -(2**63)
_TYPES: Final = {t.value: t for t in MessageType}
_EFFORTS: Final = {e.value: e for e in Effort}
_NORMAL: Final = Effort.NORMAL  # (a global: a member lookup on the class costs more)

_PREFIX = struct.Struct("<HHI")
_U32 = struct.Struct("<I")
_u32_pack = _U32.pack

# --- reading integers ----------------------------------------------------------------------
# The reader's per-message paths read a few dozen little-endian integers. Compiled (mypyc),
# indexing bytes is a C operation and assembling the integer from them is the fastest way;
# as plain Python, one ``struct`` call is (it costs about a third of four indexings). Each
# reader takes the way of the form the module runs in; both give the same value.

#: whether this module runs compiled: a compiled module is loaded from an extension module,
#: not from its ``.py`` source
COMPILED: Final = not __file__.endswith(".py")
_unpack_u32 = _U32.unpack_from
_unpack_i32 = struct.Struct("<i").unpack_from
_unpack_u16 = struct.Struct("<H").unpack_from
_unpack_i64 = struct.Struct("<q").unpack_from


def _u32(buf: bytes, at: int) -> int:
    """The uint32 at ``at`` (the caller checked that its 4 bytes are in ``buf``)."""
    if COMPILED:
        return buf[at] | buf[at + 1] << 8 | buf[at + 2] << 16 | buf[at + 3] << 24
    value: int = _unpack_u32(buf, at)[0]
    return value


def _i32(buf: bytes, at: int) -> int:
    """The int32 at ``at``."""
    if COMPILED:
        value = buf[at] | buf[at + 1] << 8 | buf[at + 2] << 16 | buf[at + 3] << 24
        return value - 0x1_0000_0000 if value & 0x8000_0000 else value
    signed: int = _unpack_i32(buf, at)[0]
    return signed


def _u16(buf: bytes, at: int) -> int:
    """The uint16 at ``at``."""
    if COMPILED:
        return buf[at] | buf[at + 1] << 8
    value: int = _unpack_u16(buf, at)[0]
    return value


def _i64(buf: bytes, at: int) -> int:
    """The int64 at ``at`` (read once per frame: ``struct`` in both forms)."""
    value: int = _unpack_i64(buf, at)[0]
    return value


# --- the writer's fixed layout ------------------------------------------------------------
# 0   uint32 root offset -> 28
# 4   vtable of Message: 24 bytes (size, table size, 10 field offsets)
# 28  Message table: soffset, recipient, sender, headers, body (uoffsets), ttlMs (at 48,
#     8-aligned), ttlAbsolute, isSigned, isEncrypted, isCompressed, isCustomSigned, padding
# 64  vtable shared by every Header table: 8 bytes (size, table size, key, value)
# 72  headers vector (count, offsets), the Header tables (12 bytes each), the strings, the body
_MESSAGE_TABLE: Final = 28
_HEADER_VTABLE: Final = 64
_HEADERS_VECTOR: Final = 72
#: the bytes 0..27, the same in every frame this module writes: root offset, Message vtable
_ROOT_AND_VTABLE: Final = struct.pack(
    "<I12H", _MESSAGE_TABLE,
    24, 36,  # vtable bytes, table bytes
    4, 8, 20, 28, 29, 30, 31, 12, 16, 32,  # field offsets in vtable slot order (schema order)
)
#: the prefix and the FlatBuffer's first 72 bytes: root offset and vtable (given as the bytes
#: above), the Message table, the Header vtable
_START = struct.Struct("<HHI28si4Iq5B3x4H")


class SmrfError(FrameError):
    """An SMRF frame was refused: ``reason`` is a short code (``truncated``,
    ``bad-flatbuffer``, ``encrypted``, ...; docs/wire.md lists them), the text says what was
    wrong."""

    def __init__(self, detail: str, *, reason: str, message_id: str | None = None) -> None:
        super().__init__(reason, detail, message_id)


@dataclass(frozen=True, slots=True)
class SmrfFrame:
    """SMRF's fields as they are on the wire. ``body`` is the body uncompressed; ``compressed``
    says whether it is (or is to be) compressed in the frame. ``custom_signature`` is the
    signature appended by "custom signing" (``None``: the frame is not custom-signed)."""

    sender: str
    recipient: str
    ttl_ms: int
    ttl_absolute: bool = True
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    compressed: bool = False
    custom_signature: bytes | None = None


# --- encoding ------------------------------------------------------------------------------
# Both encoders end in _write: encode_smrf with a frame's fields (its headers sorted here),
# encode with a Message's, whose headers it lists in that order by construction.

def _utf8(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise SmrfError(f"{what} is not encodable as UTF-8", reason="bad-field") from None


def encode_smrf(frame: SmrfFrame) -> bytes:
    """The frame's bytes: prefix, FlatBuffer, signature (if any), exactly that long."""
    headers = sorted(
        (_utf8(key, "a header key"), _utf8(value, "a header value"))
        for key, value in frame.headers
    )
    return _write(_utf8(frame.recipient, "recipient"), _utf8(frame.sender, "sender"),
                  frame.ttl_ms, frame.ttl_absolute, headers,
                  zlib.compress(frame.body) if frame.compressed else frame.body,
                  frame.compressed, frame.custom_signature)


#: the NUL that ends a string and the padding to 4 bytes, by the string's length % 4
_STRING_ENDS: Final = (b"\0\0\0\0", b"\0\0\0", b"\0\0", b"\0")


def _write(recipient: bytes, sender: bytes, ttl_ms: int,  # noqa: PLR0917 - a frame's fields
           ttl_absolute: bool, headers: list[tuple[bytes, bytes]], body: bytes, compressed: bool,
           signature: bytes | None) -> bytes:
    """The frame of these fields, UTF-8 encoded already: ``headers`` in the order written
    (sorted by key), ``body`` as stored (already compressed when ``compressed``). The layout
    is the fixed one above: the headers vector and tables, then the strings (recipient,
    sender, each header's key and value), then the body."""
    if not _INT64_MIN <= ttl_ms <= INT64_MAX:
        raise SmrfError(f"ttlMs {ttl_ms} is outside int64", reason="bad-field")
    if signature is not None and len(signature) > MAX_SIGNATURE_BYTES:
        raise SmrfError(f"signature of {len(signature)} bytes exceeds {MAX_SIGNATURE_BYTES}",
                        reason="bad-field")
    count = len(headers)
    tables_at = _HEADERS_VECTOR + 4 + 4 * count
    at = tables_at + 12 * count  # where the next string goes
    # each string: its length, its bytes, a NUL and the padding to 4 bytes; one loop writes
    # the strings and (words) the headers vector and tables, which refer to them
    parts = [b"", b""]  # the start and the words, packed last
    string_at = []
    for data in (recipient, sender):
        string_at.append(at)
        length = len(data)
        parts += (_u32_pack(length), data, _STRING_ENDS[length % 4])
        at += (length + 8) & ~3
    # the vector: its count, each entry's uoffset to its table; each table: the soffset to the
    # shared Header vtable, the uoffsets to its key and its value (all fit uint32)
    words = [count, *range(4 * count, 12 * count, 8)]
    table = tables_at
    for key, value in headers:
        length = len(key)
        parts += (_u32_pack(length), key, _STRING_ENDS[length % 4])
        words += (table - _HEADER_VTABLE, at - (table + 4))
        at += (length + 8) & ~3
        length = len(value)
        parts += (_u32_pack(length), value, _STRING_ENDS[length % 4])
        words.append(at - (table + 8))
        at += (length + 8) & ~3
        table += 12
    body_at = at
    size = body_at + 4 + len(body)
    padding = -size % 8
    parts[0] = _START.pack(
        SMRF_VERSION, 0 if signature is None else len(signature), size + padding,
        _ROOT_AND_VTABLE,
        _MESSAGE_TABLE - 4,  # soffset: the vtable is at 4
        string_at[0] - (_MESSAGE_TABLE + 4),
        string_at[1] - (_MESSAGE_TABLE + 8),
        _HEADERS_VECTOR - (_MESSAGE_TABLE + 12),
        body_at - (_MESSAGE_TABLE + 16),
        ttl_ms,
        1 if ttl_absolute else 0,
        0,  # isSigned, written although false: its default is true
        0,  # isEncrypted, likewise
        1 if compressed else 0,
        0 if signature is None else 1,
        8, 12, 4, 8,  # the Header vtable
    )
    parts[1] = struct.pack(f"<{len(words)}I", *words)
    parts += (_u32_pack(len(body)), body, b"\0" * padding,
              b"" if signature is None else signature)
    return b"".join(parts)


# --- decoding ------------------------------------------------------------------------------
# Positions are offsets in the frame, not copied out: the FlatBuffer starts at PREFIX_BYTES
# (8, which keeps every alignment it has) and ends at ``end``, the first byte after it.
# _read makes every check of the frame layer and returns the fields; decode_smrf puts them
# into an SmrfFrame, decode maps them to a Message (_message) without that frame.

def _bad(detail: str) -> SmrfError:
    return SmrfError(detail, reason="bad-flatbuffer")


#: the size of each field of the schema's tables, by slot (schema order): Message's recipient,
#: sender, ttlMs, ttlAbsolute, isSigned, isEncrypted, isCompressed, headers, body,
#: isCustomSigned; Header's key and value (uoffsets: 4)
_WIDTHS: Final = {"Message": (4, 4, 8, 1, 1, 1, 1, 4, 4, 1), "Header": (4, 4)}
#: readers of the first n entries of a vtable (n up to the fields of the largest table)
_VTABLE_ENTRIES: Final = tuple(struct.Struct(f"<{n}H")
                               for n in range(len(_WIDTHS["Message"]) + 1))
#: where a vtable's entries of the schema's fields end, by table
_ENTRIES_END: Final = {what: 4 + 2 * len(widths) for what, widths in _WIDTHS.items()}
#: table layouts (vtable contents) kept checked; a sender writes the same few again and again
LAYOUTS_CACHED: Final = 64


@functools.lru_cache(maxsize=LAYOUTS_CACHED)
def _layout(what: str, entries: bytes, size: int, alignment: int) -> tuple[int, ...]:
    """The offset of each field in a ``what`` table by slot, 0 for an absent one, from its
    vtable's ``entries`` (those after the two sizes, of the schema's fields). Checked: each
    field lies inside the table's ``size`` bytes, aligned to its width (``alignment``: the
    table's position % 8). It depends on these arguments alone: kept for the next table of
    the same layout (a refusal is not kept)."""
    widths = _WIDTHS[what]
    present = _VTABLE_ENTRIES[len(entries) // 2].unpack(entries)
    offsets = present + (0,) * (len(widths) - len(present))
    for slot, offset in enumerate(offsets):
        if offset:
            width = widths[slot]
            if offset < 4 or offset + width > size or (alignment + offset) % width:
                raise _bad(f"{what} field {slot} at table offset {offset} is invalid")
    return offsets


def _table(buf: bytes, pos: int, end: int, what: str) -> tuple[int, int, tuple[int, ...]]:
    """The ``what`` table at ``pos``: its vtable's position, its size and its fields' offsets
    (:func:`_layout`). Checked: the table and its vtable lie in the FlatBuffer."""
    if pos % 4 or pos + 4 > end:
        raise _bad(f"{what} table at {pos} is misaligned or outside the buffer")
    vtable = pos - _i32(buf, pos)
    if vtable < PREFIX_BYTES or vtable % 2 or vtable + 4 > end:
        raise _bad(f"{what} vtable at {vtable} is misaligned or outside the buffer")
    vtable_size = _u16(buf, vtable)
    size = _u16(buf, vtable + 2)
    if vtable_size < 4 or vtable_size % 2 or vtable + vtable_size > end:
        raise _bad(f"{what} vtable size {vtable_size} is invalid")
    if size < 4 or pos + size > end:
        raise _bad(f"{what} table size {size} is invalid")
    # the schema's entries only: a kept layout's key stays small, whatever the vtable's size
    entries = buf[vtable + 4:vtable + min(vtable_size, _ENTRIES_END[what])]
    return vtable, size, _layout(what, entries, size, pos % 8)


def _target(buf: bytes, at: int, end: int, what: str) -> int:
    """Where the uoffset at ``at`` points (checked: aligned, 4 bytes inside the FlatBuffer)."""
    target = at + _u32(buf, at)
    if target % 4 or target + 4 > end:
        raise _bad(f"{what} at {target} is misaligned or outside the buffer")
    return target


def _string(buf: bytes, at: int, end: int, what: str) -> str:
    """The string the uoffset at ``at`` points to (checked as by :func:`_target`, and:
    inside, NUL-terminated, UTF-8)."""
    at += _u32(buf, at)
    if at % 4 or at + 4 > end:  # _target's check, inline: the header loop calls this a lot
        raise _bad(f"{what} at {at} is misaligned or outside the buffer")
    length = _u32(buf, at)
    stop = at + 4 + length
    if stop >= end or buf[stop] != 0:
        raise _bad(f"{what}: string of {length} bytes is not inside the buffer or unterminated")
    try:
        return buf[at + 4:stop].decode("utf-8")
    except UnicodeDecodeError:
        raise SmrfError(f"{what} is not valid UTF-8", reason="bad-utf8") from None


def _missing(what: str) -> SmrfError:
    return SmrfError(f"frame has no {what}", reason="missing-field")


def _inflate(data: bytes, limit: int) -> bytes:
    try:
        inflater = zlib.decompressobj()
        body = inflater.decompress(data, limit + 1)
    except zlib.error as exc:
        raise SmrfError(f"compressed body is not a zlib stream: {exc}",
                        reason="bad-compression") from None
    if len(body) > limit:
        raise SmrfError(f"compressed body inflates to more than {limit} bytes",
                        reason="oversized")
    if not inflater.eof or inflater.unused_data:
        raise SmrfError("compressed body is truncated or followed by other bytes",
                        reason="bad-compression")
    return body


def decode_smrf(data: bytes | bytearray | memoryview | str,
                max_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> SmrfFrame:
    """Decode and check one frame; raises :class:`SmrfError` with the reason. ``max_bytes``
    bounds the frame and the inflated body of a compressed one."""
    (_, sender, recipient, ttl_ms, ttl_absolute, headers, body, compressed,
     signature) = _read(data, max_bytes)
    return SmrfFrame(sender, recipient, ttl_ms, ttl_absolute, tuple(headers), body, compressed,
                     signature)


#: what _read returns: the frame's bytes (the ``raw_smrf`` to keep), sender, recipient, ttlMs,
#: ttlAbsolute, the headers, the body (inflated), isCompressed, the custom signature (None:
#: not custom-signed)
_Fields = tuple[bytes | None, str, str, int, bool, Sequence[tuple[str, str]], bytes, bool,
                bytes | None]


def _read(data: bytes | bytearray | memoryview | str, max_bytes: int) -> _Fields:
    """Every check of the frame layer (see :func:`decode_smrf`); the frame's fields."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise SmrfError(f"a frame must be binary, got {type(data).__name__}",
                        reason="not-binary")
    size = len(data)
    if size > max_bytes:
        raise SmrfError(f"frame of {size} bytes exceeds {max_bytes} bytes", reason="oversized")
    if size < PREFIX_BYTES:
        raise SmrfError(f"frame of {size} bytes is shorter than its prefix", reason="truncated")
    frame = data if type(data) is bytes else bytes(data)
    version, sig_size, msg_size = _PREFIX.unpack_from(frame, 0)
    if version != SMRF_VERSION:
        raise SmrfError(f"unsupported SMRF version {version}", reason="unknown-version")
    end = PREFIX_BYTES + msg_size
    if size < end + sig_size:
        raise SmrfError(f"frame of {size} bytes is shorter than the {end + sig_size} its "
                        f"prefix says", reason="truncated")
    if size > end + sig_size:
        raise SmrfError(f"frame of {size} bytes is longer than the {end + sig_size} its "
                        f"prefix says", reason="bad-size")
    if msg_size < 8:
        raise _bad(f"FlatBuffer of {msg_size} bytes is too short")
    table = PREFIX_BYTES + _u32(frame, PREFIX_BYTES)
    (recipient_at, sender_at, ttl_at, absolute_at, signed_at, encrypted_at, compressed_at,
     headers_at, body_at, custom_signed_at) = _table(frame, table, end, "Message")[2]
    # the bools: absent ones have the schema's default (isSigned, isEncrypted: true)
    if not encrypted_at or frame[table + encrypted_at]:
        raise SmrfError("encrypted messages are not supported", reason="encrypted")
    if not signed_at or frame[table + signed_at]:
        raise SmrfError("signed messages are not supported (only custom signatures)",
                        reason="signed")
    custom_signed = bool(custom_signed_at) and frame[table + custom_signed_at] != 0
    if sig_size and not custom_signed:
        raise SmrfError(f"frame has a signature of {sig_size} bytes but is not custom-signed",
                        reason="bad-signature")
    if not recipient_at:
        raise _missing("recipient")
    recipient = _string(frame, table + recipient_at, end, "recipient")
    if not sender_at:
        raise _missing("sender")
    sender = _string(frame, table + sender_at, end, "sender")
    ttl_ms = _i64(frame, table + ttl_at) if ttl_at else 0
    headers = _headers(frame, _target(frame, table + headers_at, end, "headers"), end) \
        if headers_at else []
    body = b""
    if body_at:
        vector = _target(frame, table + body_at, end, "body")
        length = _u32(frame, vector)
        if vector + 4 + length > end:
            raise _bad(f"body of {length} bytes is not inside the buffer")
        body = frame[vector + 4:vector + 4 + length]
    compressed = bool(compressed_at) and frame[table + compressed_at] != 0
    if compressed:
        body = _inflate(body, max_bytes)
    ttl_absolute = not absolute_at or frame[table + absolute_at] != 0
    return (frame, sender, recipient, ttl_ms, ttl_absolute, headers, body, compressed,
            frame[end:] if custom_signed else None)


def _headers(buf: bytes, vector: int, end: int) -> list[tuple[str, str]]:
    """The header list, the vector at ``vector`` of Header tables (checked)."""
    count = _u32(buf, vector)
    if count > MAX_SMRF_HEADERS:
        raise SmrfError(f"{count} headers exceed {MAX_SMRF_HEADERS}", reason="bad-field")
    if vector + 4 + 4 * count > end:
        raise _bad(f"headers vector of {count} entries is not inside the buffer")
    headers = []
    # the vtable of the previous table, its size and field offsets: writers share one vtable
    # among all Header tables, and a table of the same vtable needs only the checks that
    # depend on where the table is (the fields' alignment does not: they are 4 bytes wide,
    # and the table 4-aligned)
    vtable = size = key_at = value_at = -1
    for entry in range(vector + 4, vector + 4 + 4 * count, 4):
        table = entry + _u32(buf, entry)
        if table % 4 or table + 4 > end:  # (_target's check, inline)
            raise _bad(f"Header table at {table} is misaligned or outside the buffer")
        if table - _i32(buf, table) != vtable or table + size > end:
            vtable, size, (key_at, value_at) = _table(buf, table, end, "Header")
        if not key_at:
            raise _missing("header key")
        key = _string(buf, table + key_at, end, "header key")
        if not value_at:
            raise _missing("header value")
        headers.append((key, _string(buf, table + value_at, end, "header value")))
    return headers


# --- the Message mapping -------------------------------------------------------------------

def frame_from_message(message: Message,
                       compress_above: int | None = DEFAULT_COMPRESS_ABOVE_BYTES) -> SmrfFrame:
    """The SMRF fields of ``message`` (see the module docstring for the mapping)."""
    headers = [("t", message.type.value), ("id", message.id)]
    if message.reply_to is not None:
        headers.append(("re", _reply_to_json(message.reply_to)))
    if message.effort is not Effort.NORMAL:
        headers.append(("ef", message.effort.value))
    headers.extend((CUSTOM_HEADER_PREFIX + key, value)
                   for key, value in message.custom_headers.items())
    return SmrfFrame(message.sender, message.recipient, message.expiry_date_ms, True,
                     tuple(headers), message.body,
                     _stored_body(message, compress_above)[1], message.custom_signature)


def _stored_body(message: Message, compress_above: int | None) -> tuple[bytes, bool]:
    """The body as the frame stores it and whether that is compressed."""
    body = message.body
    if message.compressed:
        return zlib.compress(body), True
    if compress_above is not None and len(body) > compress_above:
        # only when it pays: a frame's reader inflates again
        deflated = zlib.compress(body)
        if len(deflated) < len(body):
            return deflated, True
    return body, False


#: replyTo JSONs kept (written and read): a runtime's requests all carry the same one
REPLY_TOS_CACHED: Final = 64


@functools.lru_cache(maxsize=REPLY_TOS_CACHED)
def _reply_to_json(address: Address) -> str:
    """The ``re`` header of ``address``; addresses are immutable, their hash is kept."""
    return json.dumps(address.to_dict(), separators=(",", ":"))


def encode(message: Message, compress_above: int | None = DEFAULT_COMPRESS_ABOVE_BYTES) -> bytes:
    """The SMRF frame of ``message``: the one it arrived in (``raw_smrf``), if it did. The
    same bytes as ``encode_smrf(frame_from_message(message, compress_above))``, without
    making that frame."""
    raw_smrf = message.raw_smrf
    if raw_smrf is not None:
        return raw_smrf
    body, compressed = _stored_body(message, compress_above)
    try:
        # the headers in the order encode_smrf sorts them to, by construction: every custom
        # key starts with "c-", and b"c" < b"ef" < b"id" < b"re" < b"t"
        # (the enums are StrEnums: their members are their values)
        headers = sorted([((CUSTOM_HEADER_PREFIX + key).encode(), value.encode())
                          for key, value in message.custom_headers.items()]
                         ) if message.custom_headers else []
        if message.effort is not _NORMAL:
            headers.append((b"ef", message.effort.encode()))
        headers.append((b"id", message.id.encode()))
        if message.reply_to is not None:
            headers.append((b"re", _reply_to_json(message.reply_to).encode()))
        headers.append((b"t", message.type.encode()))
        recipient, sender = message.recipient.encode(), message.sender.encode()
    except UnicodeEncodeError:
        # a lone surrogate somewhere: the general path says where
        return encode_smrf(frame_from_message(message, compress_above))
    return _write(recipient, sender, message.expiry_date_ms, True, headers, body, compressed,
                  message.custom_signature)



def _id_like(value: str, name: str, message_id: str | None) -> None:
    if not value or len(value) > MAX_ID_LENGTH:
        raise SmrfError(f"{name} must have 1..{MAX_ID_LENGTH} characters", reason="bad-field",
                        message_id=message_id)


def message_from_frame(frame: SmrfFrame, *, origin: Address | None = None,
                       now_ms: int | None = None, raw_smrf: bytes | None = None) -> Message:
    """The :class:`Message` of a decoded frame; raises :class:`SmrfError` for a frame that is
    no valid joynr message. A relative ttl is turned into an expiry date with ``now_ms``
    (default: the wall clock). ``raw_smrf`` (the frame's bytes) is kept in the message when its
    ttl is absolute: forwarding a relative ttl unchanged would extend the message's life."""
    return _message((raw_smrf, frame.sender, frame.recipient, frame.ttl_ms, frame.ttl_absolute,
                     frame.headers, frame.body, frame.compressed, frame.custom_signature),
                    origin, now_ms)


def _message(frame: _Fields, origin: Address | None, now_ms: int | None) -> Message:
    """:func:`message_from_frame` of a frame's fields."""
    (raw_smrf, sender, recipient, ttl_ms, ttl_absolute, headers, body, compressed,
     signature) = frame
    # the joynr headers and the custom ones (without their prefix), checked
    fields: dict[str, str] = {}
    custom: dict[str, str] = {}
    for key, value in headers:
        if key.startswith(CUSTOM_HEADER_PREFIX):
            name = key[2:]
            if name in custom:
                raise SmrfError(f"header {key[:40]!r} appears twice", reason="bad-field")
            if len(custom) == MAX_HEADERS:
                raise SmrfError(f"more than {MAX_HEADERS} custom headers", reason="bad-field")
            if len(name) + len(value) > MAX_HEADER_LENGTH:
                raise SmrfError(f"custom header {name[:40]!r} is longer than "
                                f"{MAX_HEADER_LENGTH} chars", reason="bad-field")
            custom[name] = value
        elif key in fields:
            raise SmrfError(f"header {key[:40]!r} appears twice", reason="bad-field")
        else:
            fields[key] = value  # unknown ones (e.g. "cr") are read and not kept
    raw_id = fields.get("id")
    message_id = raw_id if raw_id is not None and len(raw_id) <= MAX_ID_LENGTH else None
    raw_type = fields.get("t")
    if raw_type is None:
        raise SmrfError("frame has no type header 't'", reason="missing-field")
    message_type = _TYPES.get(raw_type)
    if message_type is None:
        raise SmrfError(f"unknown message type {raw_type[:40]!r}", reason="unknown-type")
    if raw_id is None:
        raise SmrfError("frame has no message id header 'id'", reason="missing-field")
    # the common case in one test; the calls below say exactly what is wrong
    if not (message_id and 0 < len(sender) <= MAX_ID_LENGTH
            and 0 < len(recipient) <= MAX_ID_LENGTH):
        _id_like(raw_id, "message id", message_id)
        _id_like(sender, "sender", message_id)
        _id_like(recipient, "recipient", message_id)
    if ttl_ms < 0:
        raise SmrfError(f"ttlMs {ttl_ms} is negative", reason="bad-field",
                        message_id=message_id)
    expiry = ttl_ms
    if not ttl_absolute:
        expiry = min((_wall_clock_ms() if now_ms is None else now_ms) + expiry, INT64_MAX)
        raw_smrf = None
    raw_reply_to = fields.get("re")
    # an empty replyTo is none: joynr's Java libjoynr writes what its cluster controller's
    # getReplyToAddress answered, and a cluster controller without a backend has no address
    reply_to = _reply_to(raw_reply_to) if raw_reply_to else None
    effort = _NORMAL
    raw_effort = fields.get("ef")
    if raw_effort is not None:
        found = _EFFORTS.get(raw_effort)
        if found is None:
            raise SmrfError(f"unknown effort {raw_effort[:40]!r}", reason="bad-field")
        effort = found
    return Message(message_type, sender, recipient, expiry, body, raw_id, reply_to, effort,
                   custom, compressed, origin, None, signature, raw_smrf)


@functools.lru_cache(maxsize=REPLY_TOS_CACHED)
def _reply_to(raw: str) -> Address:
    """The address of an ``re`` header (checked). Kept for the next message with the same
    header: addresses are immutable (a refusal is not kept)."""
    try:
        if len(raw) > MAX_REPLY_TO_CHARS:
            raise AddressError(f"longer than {MAX_REPLY_TO_CHARS} chars")
        data = json.loads(raw)
        _check_encodable_strings(data)
        return address_from_dict(data)
    except (ValueError, RecursionError) as exc:  # AddressError and JSONDecodeError too
        raise SmrfError(f"replyTo is not a valid address: {exc}",
                        reason="bad-reply-to") from None


def _check_encodable_strings(data: object) -> None:
    """Refuse a lone surrogate (JSON's ``\\ud800``) in the keys and string values of a JSON
    object: every frame this message goes out in must be able to encode it."""
    if isinstance(data, dict):
        for key, value in data.items():
            for text in (key, value):
                if isinstance(text, str):
                    try:
                        text.encode("utf-8")
                    except UnicodeEncodeError:
                        raise AddressError("a string is not encodable as UTF-8") from None


def decode(data: bytes | bytearray | memoryview | str,
           max_bytes: int = DEFAULT_MAX_FRAME_BYTES, *, origin: Address | None = None,
           now_ms: int | None = None) -> Message:
    """Decode one SMRF frame into a :class:`Message`; raises :class:`SmrfError` (a
    ``ValueError``) with the reason for anything else. The frame is kept in
    ``Message.raw_smrf`` (when its ttl is absolute, as joynr's runtimes write it), so that
    :func:`encode` sends it again unchanged; ``Message.raw`` stays ``None``: it holds msgpack
    frames only. The same as ``message_from_frame(decode_smrf(data), ...)`` without making
    that frame."""
    return _message(_read(data, max_bytes), origin, now_ms)
