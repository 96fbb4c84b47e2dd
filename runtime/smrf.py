"""joynr's own wire: SMRF frames (docs/wire.md, "SMRF"). Pure module: no I/O.

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

The writer stores ``isSigned`` and ``isEncrypted`` as ``false`` explicitly (their schema default
is true) and ``ttlAbsolute`` as ``true``; headers are sorted by key. A body is zlib-compressed
when the message asks for it (``Message.compressed``) or when it is longer than
``compress_above`` bytes (default :data:`DEFAULT_COMPRESS_ABOVE_BYTES`) and compressing makes it
shorter. Compressed bodies are always accepted, inflated up to the frame size limit.
Encrypted and (non-custom) signed frames are refused.
"""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass
from typing import Final, cast

from runtime.addresses import Address, AddressError, address_from_dict
from runtime.clock import now_ms as _wall_clock_ms
from runtime.messages import (
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

_PREFIX = struct.Struct("<HHI")
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")

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
_FIXED = struct.Struct("<I12Hi4Iq5B3x4H")  # root, vtable, table, header vtable = 72 bytes
_MESSAGE_VTABLE: Final = (
    24, 36,  # vtable bytes, table bytes
    4, 8, 20, 28, 29, 30, 31, 12, 16, 32,  # field offsets in vtable slot order (schema order)
)
_HEADER_TABLE = struct.Struct("<iII")


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

def _utf8(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise SmrfError(f"{what} is not encodable as UTF-8", reason="bad-field") from None


def encode_smrf(frame: SmrfFrame) -> bytes:
    """The frame's bytes: prefix, FlatBuffer, signature (if any), exactly that long."""
    _check_encodable(frame)
    return _encode(frame, zlib.compress(frame.body) if frame.compressed else frame.body)


def _check_encodable(frame: SmrfFrame) -> None:
    if not _INT64_MIN <= frame.ttl_ms <= INT64_MAX:
        raise SmrfError(f"ttlMs {frame.ttl_ms} is outside int64", reason="bad-field")
    signature = frame.custom_signature
    if signature is not None and len(signature) > MAX_SIGNATURE_BYTES:
        raise SmrfError(f"signature of {len(signature)} bytes exceeds {MAX_SIGNATURE_BYTES}",
                        reason="bad-field")


#: the NUL that ends a string and the padding to 4 bytes, by the string's length % 4
_STRING_ENDS: Final = (b"\0\0\0\0", b"\0\0\0", b"\0\0", b"\0")


def _encode(frame: SmrfFrame, body: bytes) -> bytes:
    """The frame with ``body`` as the stored body (already compressed if it is to be)."""
    signature = b"" if frame.custom_signature is None else frame.custom_signature
    headers = sorted(
        (_utf8(key, "a header key"), _utf8(value, "a header value"))
        for key, value in frame.headers
    )
    count = len(headers)
    strings = [_utf8(frame.recipient, "recipient"), _utf8(frame.sender, "sender")]
    for key, value in headers:
        strings.append(key)
        strings.append(value)
    # positions: the vector, the header tables, then the strings, then the body
    tables_at = _HEADERS_VECTOR + 4 + 4 * count
    at = tables_at + 12 * count
    string_at = []
    for data in strings:
        string_at.append(at)
        at += (len(data) + 8) & ~3  # length, bytes, NUL, padded to 4
    body_at = at
    size = body_at + 4 + len(body)
    padding = -size % 8
    parts = [
        _PREFIX.pack(SMRF_VERSION, len(signature), size + padding),
        _FIXED.pack(
            _MESSAGE_TABLE, *_MESSAGE_VTABLE,
            _MESSAGE_TABLE - 4,  # soffset: the vtable is at 4
            string_at[0] - (_MESSAGE_TABLE + 4),
            string_at[1] - (_MESSAGE_TABLE + 8),
            _HEADERS_VECTOR - (_MESSAGE_TABLE + 12),
            body_at - (_MESSAGE_TABLE + 16),
            frame.ttl_ms,
            1 if frame.ttl_absolute else 0,
            0,  # isSigned, written although false: its default is true
            0,  # isEncrypted, likewise
            1 if frame.compressed else 0,
            0 if frame.custom_signature is None else 1,
            8, 12, 4, 8,  # the Header vtable
        ),
        struct.pack(f"<{count + 1}I", count, *(4 * count + 8 * i for i in range(count))),
    ]
    for i in range(count):
        table = tables_at + 12 * i
        parts.append(_HEADER_TABLE.pack(
            table - _HEADER_VTABLE,
            string_at[2 + 2 * i] - (table + 4),
            string_at[3 + 2 * i] - (table + 8),
        ))
    for data in strings:
        parts += (_U32.pack(len(data)), data, _STRING_ENDS[len(data) % 4])
    parts += (_U32.pack(len(body)), body, b"\0" * padding, signature)
    return b"".join(parts)


# --- decoding ------------------------------------------------------------------------------

def _bad(detail: str) -> SmrfError:
    return SmrfError(detail, reason="bad-flatbuffer")


#: the size of each field of the schema's tables, by slot (schema order): Message's recipient,
#: sender, ttlMs, ttlAbsolute, isSigned, isEncrypted, isCompressed, headers, body,
#: isCustomSigned; Header's key and value (uoffsets: 4)
_MESSAGE_WIDTHS: Final = (4, 4, 8, 1, 1, 1, 1, 4, 4, 1)
_HEADER_WIDTHS: Final = (4, 4)
_U16_PAIR = struct.Struct("<HH")
#: readers of the first n entries of a vtable (n up to the fields of the largest table)
_VTABLE_ENTRIES: Final = tuple(struct.Struct(f"<{n}H")
                               for n in range(len(_MESSAGE_WIDTHS) + 1))


def _fields(buf: bytes, pos: int, what: str, widths: tuple[int, ...]) -> list[int]:
    """The position of each field of the table at ``pos`` (``widths``: the schema's fields'
    sizes, by slot), -1 for an absent one. Checked: the table and its vtable lie in the
    buffer, each field inside the table's inline part and aligned to its size; the vtable's
    entries beyond the schema's fields are not read."""
    end = len(buf)
    if pos % 4 or pos + 4 > end:
        raise _bad(f"{what} table at {pos} is misaligned or outside the buffer")
    vtable = pos - _I32.unpack_from(buf, pos)[0]
    if vtable < 0 or vtable % 2 or vtable + 4 > end:
        raise _bad(f"{what} vtable at {vtable} is misaligned or outside the buffer")
    vtable_size, size = _U16_PAIR.unpack_from(buf, vtable)
    if vtable_size < 4 or vtable_size % 2 or vtable + vtable_size > end:
        raise _bad(f"{what} vtable size {vtable_size} is invalid")
    if size < 4 or pos + size > end:
        raise _bad(f"{what} table size {size} is invalid")
    entries = _VTABLE_ENTRIES[min(vtable_size // 2 - 2, len(widths))]
    fields = [-1] * len(widths)
    for slot, offset in enumerate(entries.unpack_from(buf, vtable + 4)):
        if offset:
            width = widths[slot]
            if offset < 4 or offset + width > size or (pos + offset) % width:
                raise _bad(f"field {slot} at table offset {offset} is invalid")
            fields[slot] = pos + offset
    return fields


def _flag(buf: bytes, at: int, default: bool) -> bool:
    """The bool field at ``at`` (-1: absent, ``default``)."""
    return default if at < 0 else buf[at] != 0


def _target(buf: bytes, at: int, what: str) -> int:
    """Where the uoffset at ``at`` points (checked: aligned, 4 bytes inside the buffer)."""
    target = at + _U32.unpack_from(buf, at)[0]
    if target % 4 or target + 4 > len(buf):
        raise _bad(f"{what} at {target} is misaligned or outside the buffer")
    return target


def _string(buf: bytes, at: int, what: str) -> str:
    """The string field at ``at`` (the uoffset to it; -1: absent, refused)."""
    if at < 0:
        raise SmrfError(f"frame has no {what}", reason="missing-field")
    at = _target(buf, at, what)
    length = _U32.unpack_from(buf, at)[0]
    end = at + 4 + length
    if end >= len(buf) or buf[end] != 0:
        raise _bad(f"{what}: string of {length} bytes is not inside the buffer or unterminated")
    try:
        return buf[at + 4:end].decode("utf-8")
    except UnicodeDecodeError:
        raise SmrfError(f"{what} is not valid UTF-8", reason="bad-utf8") from None


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
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise SmrfError(f"a frame must be binary, got {type(data).__name__}",
                        reason="not-binary")
    size = len(data)
    if size > max_bytes:
        raise SmrfError(f"frame of {size} bytes exceeds {max_bytes} bytes", reason="oversized")
    if size < PREFIX_BYTES:
        raise SmrfError(f"frame of {size} bytes is shorter than its prefix", reason="truncated")
    frame = bytes(data)
    msg_size, sig_size = _check_prefix(frame)
    buf = frame[PREFIX_BYTES:PREFIX_BYTES + msg_size]
    if msg_size < 8:
        raise _bad(f"FlatBuffer of {msg_size} bytes is too short")
    (recipient_at, sender_at, ttl_at, absolute_at, signed_at, encrypted_at, compressed_at,
     headers_at, body_at, custom_signed_at) = _fields(buf, _U32.unpack_from(buf, 0)[0],
                                                      "Message", _MESSAGE_WIDTHS)
    if _flag(buf, encrypted_at, True):
        raise SmrfError("encrypted messages are not supported", reason="encrypted")
    if _flag(buf, signed_at, True):
        raise SmrfError("signed messages are not supported (only custom signatures)",
                        reason="signed")
    custom_signed = _flag(buf, custom_signed_at, False)
    if sig_size and not custom_signed:
        raise SmrfError(f"frame has a signature of {sig_size} bytes but is not custom-signed",
                        reason="bad-signature")
    recipient = _string(buf, recipient_at, "recipient")
    sender = _string(buf, sender_at, "sender")
    ttl_ms = 0 if ttl_at < 0 else _I64.unpack_from(buf, ttl_at)[0]
    headers = () if headers_at < 0 else _headers(buf, _target(buf, headers_at, "headers"))
    body = b""
    if body_at >= 0:
        vector = _target(buf, body_at, "body")
        length = _U32.unpack_from(buf, vector)[0]
        if vector + 4 + length > len(buf):
            raise _bad(f"body of {length} bytes is not inside the buffer")
        body = buf[vector + 4:vector + 4 + length]
    compressed = _flag(buf, compressed_at, False)
    if compressed:
        body = _inflate(body, max_bytes)
    signature = frame[PREFIX_BYTES + msg_size:] if custom_signed else None
    return SmrfFrame(sender, recipient, ttl_ms, _flag(buf, absolute_at, True), headers, body,
                     compressed, signature)


def _check_prefix(frame: bytes) -> tuple[int, int]:
    """The FlatBuffer's and the signature's sizes, checked against the frame's."""
    size = len(frame)
    version, sig_size, msg_size = _PREFIX.unpack_from(frame, 0)
    if version != SMRF_VERSION:
        raise SmrfError(f"unsupported SMRF version {version}", reason="unknown-version")
    expected = PREFIX_BYTES + msg_size + sig_size
    if size < expected:
        raise SmrfError(f"frame of {size} bytes is shorter than the {expected} its prefix says",
                        reason="truncated")
    if size > expected:
        raise SmrfError(f"frame of {size} bytes is longer than the {expected} its prefix says",
                        reason="bad-size")
    return msg_size, sig_size


def _headers(buf: bytes, vector: int) -> tuple[tuple[str, str], ...]:
    """The header list, the vector at ``vector`` of Header tables (checked)."""
    count = _U32.unpack_from(buf, vector)[0]
    if count > MAX_SMRF_HEADERS:
        raise SmrfError(f"{count} headers exceed {MAX_SMRF_HEADERS}", reason="bad-field")
    if vector + 4 + 4 * count > len(buf):
        raise _bad(f"headers vector of {count} entries is not inside the buffer")
    headers = []
    for entry in range(vector + 4, vector + 4 + 4 * count, 4):
        key_at, value_at = _fields(buf, _target(buf, entry, "header"), "Header",
                                   _HEADER_WIDTHS)
        headers.append((_string(buf, key_at, "header key"),
                        _string(buf, value_at, "header value")))
    return tuple(headers)


# --- the Message mapping -------------------------------------------------------------------

def frame_from_message(message: Message,
                       compress_above: int | None = DEFAULT_COMPRESS_ABOVE_BYTES) -> SmrfFrame:
    """The SMRF fields of ``message`` (see the module docstring for the mapping)."""
    return _frame_and_body(message, compress_above)[0]


def _frame_and_body(message: Message, compress_above: int | None
                    ) -> tuple[SmrfFrame, bytes]:
    """The frame of ``message`` and its body as stored (compressed or not)."""
    headers = [("t", message.type.value), ("id", message.id)]
    if message.reply_to is not None:
        headers.append(("re", json.dumps(message.reply_to.to_dict(), separators=(",", ":"))))
    if message.effort is not Effort.NORMAL:
        headers.append(("ef", message.effort.value))
    headers.extend((CUSTOM_HEADER_PREFIX + key, value)
                   for key, value in message.custom_headers.items())
    body = stored = message.body
    compressed = message.compressed
    if compressed:
        stored = zlib.compress(body)
    elif compress_above is not None and len(body) > compress_above:
        # only when it pays: a frame's reader inflates again
        deflated = zlib.compress(body)
        if len(deflated) < len(body):
            compressed, stored = True, deflated
    return SmrfFrame(message.sender, message.recipient, message.expiry_date_ms, True,
                     tuple(headers), body, compressed, message.custom_signature), stored


def encode(message: Message, compress_above: int | None = DEFAULT_COMPRESS_ABOVE_BYTES) -> bytes:
    """The SMRF frame of ``message``: the one it arrived in (``raw_smrf``), if it did."""
    raw_smrf = message.raw_smrf
    if raw_smrf is not None:
        return raw_smrf
    frame, stored = _frame_and_body(message, compress_above)
    _check_encodable(frame)
    return _encode(frame, stored)


def _id_like(value: str, name: str, message_id: str | None) -> None:
    if not value or len(value) > MAX_ID_LENGTH:
        raise SmrfError(f"{name} must have 1..{MAX_ID_LENGTH} characters", reason="bad-field",
                        message_id=message_id)


def _split_headers(
    headers: tuple[tuple[str, str], ...],
) -> tuple[dict[str, str], dict[str, str]]:
    """The joynr headers and the custom ones (without their prefix), checked."""
    fields: dict[str, str] = {}
    custom: dict[str, str] = {}
    for key, value in headers:
        if key in fields or (key.startswith(CUSTOM_HEADER_PREFIX)
                             and key[len(CUSTOM_HEADER_PREFIX):] in custom):
            raise SmrfError(f"header {key[:40]!r} appears twice", reason="bad-field")
        if key.startswith(CUSTOM_HEADER_PREFIX):
            if len(custom) == MAX_HEADERS:
                raise SmrfError(f"more than {MAX_HEADERS} custom headers", reason="bad-field")
            name = key[len(CUSTOM_HEADER_PREFIX):]
            if len(name) + len(value) > MAX_HEADER_LENGTH:
                raise SmrfError(f"custom header {name[:40]!r} is longer than "
                                f"{MAX_HEADER_LENGTH} chars", reason="bad-field")
            custom[name] = value
        else:
            fields[key] = value  # unknown ones (e.g. "cr") are read and not kept
    return fields, custom


def message_from_frame(frame: SmrfFrame, *, origin: Address | None = None,
                       now_ms: int | None = None, raw_smrf: bytes | None = None) -> Message:
    """The :class:`Message` of a decoded frame; raises :class:`SmrfError` for a frame that is
    no valid joynr message. A relative ttl is turned into an expiry date with ``now_ms``
    (default: the wall clock). ``raw_smrf`` (the frame's bytes) is kept in the message when its
    ttl is absolute: forwarding a relative ttl unchanged would extend the message's life."""
    fields, custom = _split_headers(frame.headers)
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
    _id_like(raw_id, "message id", message_id)
    _id_like(frame.sender, "sender", message_id)
    _id_like(frame.recipient, "recipient", message_id)
    if frame.ttl_ms < 0:
        raise SmrfError(f"ttlMs {frame.ttl_ms} is negative", reason="bad-field",
                        message_id=message_id)
    expiry = frame.ttl_ms
    if not frame.ttl_absolute:
        expiry = min((_wall_clock_ms() if now_ms is None else now_ms) + expiry, INT64_MAX)
    reply_to = None
    raw_reply_to = fields.get("re")
    if raw_reply_to is not None:
        try:
            if len(raw_reply_to) > MAX_REPLY_TO_CHARS:
                raise AddressError(f"longer than {MAX_REPLY_TO_CHARS} chars")
            data = json.loads(raw_reply_to)
            _check_encodable_strings(data)
            reply_to = address_from_dict(data)
        except (ValueError, RecursionError) as exc:  # AddressError and JSONDecodeError too
            raise SmrfError(f"replyTo is not a valid address: {exc}",
                            reason="bad-reply-to") from None
    effort = Effort.NORMAL
    raw_effort = fields.get("ef")
    if raw_effort is not None:
        found = _EFFORTS.get(raw_effort)
        if found is None:
            raise SmrfError(f"unknown effort {raw_effort[:40]!r}", reason="bad-field")
        effort = found
    return Message(message_type, frame.sender, frame.recipient, expiry, frame.body, raw_id,
                   reply_to, effort, custom, frame.compressed, origin, None,
                   frame.custom_signature, raw_smrf if frame.ttl_absolute else None)


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
    frames only."""
    frame = decode_smrf(data, max_bytes)
    # binary: decode_smrf refused anything else
    raw = data if isinstance(data, bytes) else bytes(cast("bytearray | memoryview", data))
    return message_from_frame(frame, origin=origin, now_ms=now_ms, raw_smrf=raw)
