"""Messages and their msgpack frame (docs/wire.md). Pure module: no I/O.

Frame layout, version 1: one msgpack **map** with these keys (a map rather than a fixed array so
that fields can be added without a version bump; unknown keys are ignored):

====  ===========================  ======================================================
key   field                        type
====  ===========================  ======================================================
v     version                      int, must be 1
t     type                         str, one of the ten wire codes of :class:`MessageType`
id    message id                   non-empty str, unique per message
s     sender                       non-empty str (participantId; for ``m`` the provider)
r     recipient                    non-empty str (participantId; for ``m`` the multicast id)
x     expiry_date_ms               int, absolute epoch milliseconds
re    reply_to                     optional address map (see runtime.addresses)
ef    effort                       optional str ``"BEST_EFFORT"``; absent means NORMAL
h     custom headers               optional map str -> str
z     compressed                   optional bool
b     body                         bin: the payload, itself msgpack, opaque to the router
====  ===========================  ======================================================

:func:`decode_frame` validates every fixed field and raises :class:`FrameError` whose ``reason``
is a short code for counters (``not-msgpack``, ``oversized``, ``bad-field``, ...) and whose
message says exactly what was wrong. The body is never decoded here; the payload classes below
encode and decode it for the participants at either end.
"""

from __future__ import annotations

import itertools
import os
from collections import deque
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final, NoReturn

import msgpack

from pyjoynr.runtime.addresses import Address, AddressError, address_from_dict
from pyjoynr.runtime.errors import ProtocolError

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "DIALECTS",
    "JOYNR",
    "NATIVE",
    "REQUEST_TYPES",
    "WIRE_VERSION",
    "Effort",
    "FrameError",
    "Message",
    "MessageType",
    "decode_frame",
    "encode_frame",
    "held_bytes",
    "new_message_id",
    "with_reply_to",
]

WIRE_VERSION: Final = 1
#: the frame dialects: this project's msgpack frame (this module) and joynr's SMRF frame
#: (runtime.smrf); each transport link speaks one, and a Message is the same in both
NATIVE: Final = "native"
JOYNR: Final = "joynr"
DIALECTS: Final = (NATIVE, JOYNR)
DEFAULT_MAX_FRAME_BYTES: Final = 4 * 1024 * 1024
MAX_ID_LENGTH: Final = 512
MAX_HEADERS: Final = 64
MAX_HEADER_LENGTH: Final = 4096
INT64_MAX: Final = 2**63 - 1


class MessageType(StrEnum):
    REQUEST = "rq"
    REPLY = "rp"
    ONE_WAY = "o"
    SUBSCRIPTION_REQUEST = "arq"
    BROADCAST_SUBSCRIPTION_REQUEST = "brq"
    MULTICAST_SUBSCRIPTION_REQUEST = "mrq"
    SUBSCRIPTION_REPLY = "srp"
    SUBSCRIPTION_STOP = "sst"
    PUBLICATION = "p"
    MULTICAST = "m"


_TYPES: Final = {t.value: t for t in MessageType}

#: The message types whose sender's replyTo is learned and that expect an answer.
REQUEST_TYPES: Final = frozenset(
    {
        MessageType.REQUEST,
        MessageType.SUBSCRIPTION_REQUEST,
        MessageType.BROADCAST_SUBSCRIPTION_REQUEST,
        MessageType.MULTICAST_SUBSCRIPTION_REQUEST,
    }
)


class Effort(StrEnum):
    NORMAL = "NORMAL"
    BEST_EFFORT = "BEST_EFFORT"


# enum members as module constants for the per-message paths (a member lookup on the class
# costs several times a global lookup in CPython 3.11)
_NORMAL: Final = Effort.NORMAL


class FrameError(ProtocolError):
    """A frame was refused: ``reason`` (``not-msgpack``, ``oversized``, ``bad-field``, ...) and
    the message id when the frame had a readable one."""

    def __init__(self, reason: str, detail: str, message_id: str | None = None) -> None:
        super().__init__(detail, reason=reason)
        self.message_id = message_id


# one Packer per process (each call resets its buffer); packb would build a new one per call
_pack = msgpack.Packer(use_bin_type=True).pack
_unpackb = msgpack.unpackb

_ABSENT = object()

_id_prefix = os.urandom(6).hex()
_id_counter = itertools.count()


#: random_id's ids not handed out yet (a deque: popleft is atomic, so threads never share one)
_random_ids: deque[str] = deque()
#: ids made per os.urandom call
_RANDOM_IDS_PER_CALL: Final = 256
os.register_at_fork(after_in_child=_random_ids.clear)  # a child must not repeat its parent's


def random_id() -> str:
    """32 random hex digits, unpredictable as ``uuid.uuid4().hex`` (request and subscription
    ids, which a forged reply or publication would have to guess), from os.urandom in batches
    of 256: one system call per 256 ids instead of one each."""
    try:
        return _random_ids.popleft()
    except IndexError:
        pool = os.urandom(16 * _RANDOM_IDS_PER_CALL).hex()
        _random_ids.extend(pool[at:at + 32] for at in range(32, len(pool), 32))
        return pool[:32]


def new_message_id() -> str:
    """A process-unique message id (random prefix per process, counter)."""
    return f"{_id_prefix}-{next(_id_counter)}"


@dataclass(slots=True)
class Message:
    """One message. ``body`` is the msgpack-encoded payload (see runtime.payloads).

    Messages are not changed after they are made; a changed copy is made with
    ``dataclasses.replace``, which must clear ``raw`` and ``raw_smrf`` (``raw=None,
    raw_smrf=None``) when it changes anything on the wire (:func:`with_reply_to` for the
    replyTo of every request that leaves a cluster controller over MQTT). ``origin``, ``raw``
    and ``raw_smrf`` are not on the wire: the receiving transport passes the address the
    message arrived from to :func:`decode_frame`, which keeps the received frame in ``raw`` so
    that forwarding sends those bytes again without encoding; ``runtime.smrf.decode`` keeps a
    received SMRF frame in ``raw_smrf`` the same way. Each encoder uses only its own one."""

    type: MessageType
    sender: str
    recipient: str
    expiry_date_ms: int
    body: bytes = b""
    id: str = field(default_factory=new_message_id)
    reply_to: Address | None = None
    effort: Effort = Effort.NORMAL
    custom_headers: dict[str, str] = field(default_factory=dict)
    compressed: bool = False
    # not on the wire: where the message came from, and the frame it was decoded from
    origin: Address | None = field(default=None, compare=False, repr=False)
    raw: bytes | None = field(default=None, compare=False, repr=False)
    #: SMRF frames only (runtime.smrf): the custom signature appended to the frame (joynr puts
    #: the owner id there); the msgpack frame does not carry it
    custom_signature: bytes | None = None
    #: not on the wire: the SMRF frame the message was decoded from (runtime.smrf)
    raw_smrf: bytes | None = field(default=None, compare=False, repr=False)
    #: not on the wire: the user id of whoever sent it, as the way in of the router that
    #: received it names it (the connection's owner: a client certificate's CN, a Unix peer's
    #: user, a configured name; runtime.inlets), for access control; None: made in this process
    creator: str | None = field(default=None, compare=False, repr=False)

    @property
    def is_request_type(self) -> bool:
        return self.type in REQUEST_TYPES

    def describe(self) -> str:
        """A short form for log lines."""
        return f"{self.type.name} {self.id} {self.sender} -> {self.recipient}"


def with_reply_to(message: Message, reply_to: Address | None) -> Message:
    """A copy of ``message`` with another replyTo and without the frames it arrived in:
    ``dataclasses.replace(message, reply_to=reply_to, raw=None, raw_smrf=None)``, made by
    the constructor directly (replace looks up the fields and builds their arguments each
    time). tests/unit/test_messages.py keeps it to every field."""
    return Message(message.type, message.sender, message.recipient, message.expiry_date_ms,
                   message.body, message.id, reply_to, message.effort, message.custom_headers,
                   message.compressed, message.origin, None, message.custom_signature, None,
                   message.creator)


#: what a message holds besides its body and frame (the object, ids, headers), about
MESSAGE_OVERHEAD_BYTES: Final = 512


def held_bytes(message: Message) -> int:
    """The memory a waiting message holds, about: its body, the frame it arrived in (a
    decoded message keeps both; ``raw`` or ``raw_smrf``) and its other fields. Queues are
    bounded by this sum."""
    raw, raw_smrf = message.raw, message.raw_smrf
    return (len(message.body) + (0 if raw is None else len(raw))
            + (0 if raw_smrf is None else len(raw_smrf)) + MESSAGE_OVERHEAD_BYTES)


def encode_frame(message: Message) -> bytes:
    """The frame of ``message``: the one it arrived in, if it did."""
    if message.raw is not None:
        return message.raw
    frame: dict[str, Any] = {
        "v": WIRE_VERSION,
        # a MessageType is a str: msgpack writes the member as its value (without the enum's
        # ``.value`` property, slow in CPython 3.11)
        "t": message.type,
        "id": message.id,
        "s": message.sender,
        "r": message.recipient,
        "x": message.expiry_date_ms,
        "b": message.body,
    }
    if message.reply_to is not None:
        frame["re"] = message.reply_to.to_dict()
    if message.effort is not _NORMAL:
        frame["ef"] = message.effort.value
    if message.custom_headers:
        frame["h"] = message.custom_headers
    if message.compressed:
        frame["z"] = True
    return _pack(frame)


def _str_field(frame: dict[str, Any], key: str, name: str, message_id: str | None) -> str:
    value = frame.get(key)
    if value is None:
        raise FrameError("missing-field", f"frame has no {name} ({key!r})", message_id)
    if type(value) is not str:
        raise FrameError(
            "bad-field", f"{name} ({key!r}) must be a string, not {type(value).__name__}",
            message_id,
        )
    if not value or len(value) > MAX_ID_LENGTH:
        raise FrameError(
            "bad-field", f"{name} ({key!r}) must have 1..{MAX_ID_LENGTH} characters", message_id
        )
    return value


def decode_frame(frame: bytes | str, max_bytes: int = DEFAULT_MAX_FRAME_BYTES, *,
                 origin: Address | None = None) -> Message:
    """Decode and validate one frame that arrived from ``origin`` (the payload of a binary
    websocket message; a text message's ``str`` is refused as not-binary); raises
    :class:`FrameError` with the reason."""
    if type(frame) is not bytes and not isinstance(frame, (bytearray, memoryview)):
        raise FrameError("not-binary", f"a frame must be binary, got {type(frame).__name__}")
    if len(frame) > max_bytes:
        raise FrameError("oversized", f"frame of {len(frame)} bytes exceeds {max_bytes} bytes")
    try:
        # msgpack's defaults (1.0 and later) are what a frame needs: strings as str, str map keys
        # only, arrays as lists; spelled out, the keyword arguments cost a tenth of the call
        data = _unpackb(frame)
    except (ValueError, msgpack.UnpackException, RecursionError) as exc:
        raise FrameError("not-msgpack", f"frame is not valid msgpack: {exc}") from None
    if type(data) is not dict:
        raise FrameError("not-a-map", f"frame must be a msgpack map, got {type(data).__name__}")
    # the common case in one test; the slow path (_explain_bad_header) says exactly what is
    # wrong. (Subscripts in a try block: cheaper than .get() per field.)
    try:
        version, message_id, sender, recipient = data["v"], data["id"], data["s"], data["r"]
        expiry, message_type = data["x"], _TYPES[data["t"]]
    except (KeyError, TypeError):  # a field missing; a type that is no key (unhashable)
        _explain_bad_header(data)
    if not (
        version == WIRE_VERSION and type(version) is int
        and type(message_id) is str and 0 < len(message_id) <= MAX_ID_LENGTH
        and type(sender) is str and 0 < len(sender) <= MAX_ID_LENGTH
        and type(recipient) is str and 0 < len(recipient) <= MAX_ID_LENGTH
        and type(expiry) is int and 0 <= expiry <= INT64_MAX
    ):
        _explain_bad_header(data)
    body = data.get("b", _ABSENT)
    if type(body) is not bytes:
        if body is _ABSENT:
            raise FrameError("missing-field", "frame has no body ('b')", message_id)
        raise FrameError("bad-field", f"body ('b') must be binary, not {type(body).__name__}",
                         message_id)
    if len(data) != 7:  # the seven fields above are all there: anything else is optional
        reply_to, effort, headers, compressed = _optional_fields(data, message_id)
    else:
        reply_to, effort, headers, compressed = None, _NORMAL, {}, False
    if type(frame) is not bytes:
        frame = bytes(frame)
    return Message(message_type, sender, recipient, expiry, body, message_id,
                   reply_to, effort, headers, compressed, origin, frame)


def _explain_bad_header(data: dict[str, Any]) -> NoReturn:
    """Raise the FrameError for the first fixed field that is wrong (or missing)."""
    raw_id = data.get("id")
    message_id = raw_id if type(raw_id) is str and len(raw_id) <= MAX_ID_LENGTH else None
    version = data.get("v")
    if version != WIRE_VERSION or type(version) is not int:
        raise FrameError("unknown-version", f"unsupported frame version {version!r}", message_id)
    raw_type = data.get("t")
    if type(raw_type) is not str or raw_type not in _TYPES:
        raise FrameError("unknown-type", f"unknown message type {str(raw_type)[:40]!r}",
                         message_id)
    message_id = _str_field(data, "id", "message id", message_id)
    _str_field(data, "s", "sender", message_id)
    _str_field(data, "r", "recipient", message_id)
    expiry = data.get("x")
    if type(expiry) is not int:
        raise FrameError("bad-field", "expiry ('x') must be an absolute int of epoch ms",
                         message_id)
    raise FrameError("bad-field", f"expiry {expiry} is outside 0..int64", message_id)


def _optional_fields(
    data: dict[str, Any], message_id: str | None
) -> tuple[Address | None, Effort, dict[str, str], bool]:
    reply_to = None
    raw_reply_to = data.get("re")
    if raw_reply_to is not None:
        try:
            reply_to = address_from_dict(raw_reply_to)
        except AddressError as exc:
            raise FrameError("bad-reply-to", f"replyTo is not a valid address: {exc}",
                             message_id) from None

    effort = Effort.NORMAL
    raw_effort = data.get("ef")
    if raw_effort is not None:
        if raw_effort not in ("NORMAL", "BEST_EFFORT") or type(raw_effort) is not str:
            raise FrameError("bad-field", f"unknown effort {str(raw_effort)[:40]!r}", message_id)
        effort = Effort(raw_effort)

    headers = data.get("h")
    if headers is None:
        headers = {}
    elif not isinstance(headers, dict) or len(headers) > MAX_HEADERS or not all(
        type(k) is str and type(v) is str and len(k) + len(v) <= MAX_HEADER_LENGTH
        for k, v in headers.items()
    ):
        raise FrameError(
            "bad-field",
            f"custom headers ('h') must be a map of at most {MAX_HEADERS} short strings",
            message_id,
        )

    compressed = data.get("z", False)
    if type(compressed) is not bool:
        raise FrameError("bad-field", "compressed flag ('z') must be a bool", message_id)

    return reply_to, effort, headers, compressed
