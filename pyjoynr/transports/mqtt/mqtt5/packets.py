"""MQTT control packets (5.0 and 3.1.1): pure encoding and strict decoding, no I/O.

:class:`Decoder` takes bytes as they arrive and returns the complete packets in them. Every
deviation from the specification that a peer could send is a :class:`ProtocolViolation` with a
short reason (for counters and logs), a description, and the MQTT 5 reason code to disconnect
with; nothing else is raised whatever the bytes. A packet announced larger than the maximum
packet size is refused from its fixed header, before its body is buffered.

The decoder has two roles: ``"client"`` accepts what a server sends (CONNACK, PUBLISH,
PUBACK, SUBACK, UNSUBACK, PINGRESP, DISCONNECT), ``"server"`` what a client sends (CONNECT,
PUBLISH, PUBACK, SUBSCRIBE, UNSUBSCRIBE, PINGREQ, DISCONNECT): the client uses the first, the
tests' fake brokers the second. QoS 2 and enhanced authentication (AUTH) are not spoken: their
packets are violations.

Properties are a dict from property id to value; the two properties that may repeat (user
property, subscription identifier) hold lists.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, TypeVar

T = TypeVar("T")

__all__ = [
    "CONNACK",
    "CONNECT",
    "DISCONNECT",
    "PINGREQ",
    "PINGRESP",
    "PUBACK",
    "PUBLISH",
    "SUBACK",
    "SUBSCRIBE",
    "UNSUBACK",
    "UNSUBSCRIBE",
    "V5",
    "V311",
    "Connack",
    "Connect",
    "Decoder",
    "Disconnect",
    "Oversized",
    "Packet",
    "Pingreq",
    "Pingresp",
    "Properties",
    "ProtocolViolation",
    "Puback",
    "Publish",
    "Suback",
    "Subscribe",
    "Unsuback",
    "Unsubscribe",
    "encode",
    "encode_properties",
    "encode_publish",
    "encode_varint",
]

V311: Final = 4  # the protocol level of MQTT 3.1.1
V5: Final = 5

CONNECT, CONNACK, PUBLISH, PUBACK = 1, 2, 3, 4
PUBREC, PUBREL, PUBCOMP = 5, 6, 7
SUBSCRIBE, SUBACK, UNSUBSCRIBE, UNSUBACK = 8, 9, 10, 11
PINGREQ, PINGRESP, DISCONNECT, AUTH = 12, 13, 14, 15

PACKET_NAMES: Final = {
    1: "CONNECT", 2: "CONNACK", 3: "PUBLISH", 4: "PUBACK", 5: "PUBREC", 6: "PUBREL",
    7: "PUBCOMP", 8: "SUBSCRIBE", 9: "SUBACK", 10: "UNSUBSCRIBE", 11: "UNSUBACK",
    12: "PINGREQ", 13: "PINGRESP", 14: "DISCONNECT", 15: "AUTH",
}

#: the largest value of a variable byte integer (four bytes)
MAX_VARINT: Final = 268_435_455

# MQTT 5 reason codes used here by name
MALFORMED: Final = 0x81
PROTOCOL_ERROR: Final = 0x82
PACKET_TOO_LARGE: Final = 0x95
TOPIC_ALIAS_INVALID: Final = 0x94
QOS_NOT_SUPPORTED: Final = 0x9B


class ProtocolViolation(Exception):
    """A peer broke the protocol: ``reason`` (short, for counters), the message says how,
    ``code`` is the MQTT 5 reason code to disconnect with."""

    def __init__(self, reason: str, detail: str, code: int = MALFORMED) -> None:
        super().__init__(detail)
        self.reason = reason
        self.code = code


Properties = dict[int, Any]

# ---------------------------------------------------------------------- properties

_BYTE, _U16, _U32, _VARINT, _UTF8, _BINARY, _PAIR = range(7)

# property id -> (name, type, packet types it may appear in); WILL (0) for will properties
_WILL = 0
PROPERTIES: Final[dict[int, tuple[str, int, frozenset[int]]]] = {
    0x01: ("payload format indicator", _BYTE, frozenset({PUBLISH, _WILL})),
    0x02: ("message expiry interval", _U32, frozenset({PUBLISH, _WILL})),
    0x03: ("content type", _UTF8, frozenset({PUBLISH, _WILL})),
    0x08: ("response topic", _UTF8, frozenset({PUBLISH, _WILL})),
    0x09: ("correlation data", _BINARY, frozenset({PUBLISH, _WILL})),
    0x0B: ("subscription identifier", _VARINT, frozenset({PUBLISH, SUBSCRIBE})),
    0x11: ("session expiry interval", _U32, frozenset({CONNECT, CONNACK, DISCONNECT})),
    0x12: ("assigned client identifier", _UTF8, frozenset({CONNACK})),
    0x13: ("server keep alive", _U16, frozenset({CONNACK})),
    0x15: ("authentication method", _UTF8, frozenset({CONNECT, CONNACK, AUTH})),
    0x16: ("authentication data", _BINARY, frozenset({CONNECT, CONNACK, AUTH})),
    0x17: ("request problem information", _BYTE, frozenset({CONNECT})),
    0x18: ("will delay interval", _U32, frozenset({_WILL})),
    0x19: ("request response information", _BYTE, frozenset({CONNECT})),
    0x1A: ("response information", _UTF8, frozenset({CONNACK})),
    0x1C: ("server reference", _UTF8, frozenset({CONNACK, DISCONNECT})),
    0x1F: ("reason string", _UTF8, frozenset({CONNACK, PUBACK, PUBREC, PUBREL, PUBCOMP, SUBACK,
                                               UNSUBACK, DISCONNECT, AUTH})),
    0x21: ("receive maximum", _U16, frozenset({CONNECT, CONNACK})),
    0x22: ("topic alias maximum", _U16, frozenset({CONNECT, CONNACK})),
    0x23: ("topic alias", _U16, frozenset({PUBLISH})),
    0x24: ("maximum qos", _BYTE, frozenset({CONNACK})),
    0x25: ("retain available", _BYTE, frozenset({CONNACK})),
    0x26: ("user property", _PAIR, frozenset(range(16))),
    0x27: ("maximum packet size", _U32, frozenset({CONNECT, CONNACK})),
    0x28: ("wildcard subscription available", _BYTE, frozenset({CONNACK})),
    0x29: ("subscription identifier available", _BYTE, frozenset({CONNACK})),
    0x2A: ("shared subscription available", _BYTE, frozenset({CONNACK})),
}
PAYLOAD_FORMAT, MESSAGE_EXPIRY, CONTENT_TYPE, RESPONSE_TOPIC = 0x01, 0x02, 0x03, 0x08
CORRELATION_DATA, SUBSCRIPTION_ID, SESSION_EXPIRY = 0x09, 0x0B, 0x11
ASSIGNED_CLIENT_ID, SERVER_KEEP_ALIVE, REASON_STRING = 0x12, 0x13, 0x1F
RECEIVE_MAXIMUM, TOPIC_ALIAS_MAXIMUM, TOPIC_ALIAS, MAXIMUM_QOS = 0x21, 0x22, 0x23, 0x24
USER_PROPERTY, MAXIMUM_PACKET_SIZE = 0x26, 0x27
#: the properties that may appear more than once
_REPEATABLE: Final = frozenset({USER_PROPERTY, SUBSCRIPTION_ID})
#: byte properties whose value is 0 or 1
_BOOLEAN: Final = frozenset({0x01, 0x17, 0x19, 0x24, 0x25, 0x28, 0x29, 0x2A})
#: integer properties that must not be 0
_NONZERO: Final = frozenset({SUBSCRIPTION_ID, RECEIVE_MAXIMUM, TOPIC_ALIAS,
                             MAXIMUM_PACKET_SIZE})

# the reason codes each acknowledgement may carry (MQTT 5)
CONNACK_CODES: Final = frozenset({
    0x00, 0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8A, 0x8C, 0x90, 0x95,
    0x97, 0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9F})
PUBACK_CODES: Final = frozenset({0x00, 0x10, 0x80, 0x83, 0x87, 0x90, 0x91, 0x97, 0x99})
SUBACK_CODES: Final = frozenset({0x00, 0x01, 0x02, 0x80, 0x83, 0x87, 0x8F, 0x91, 0x97, 0x9E,
                                 0xA1, 0xA2})
UNSUBACK_CODES: Final = frozenset({0x00, 0x11, 0x80, 0x83, 0x87, 0x8F, 0x91})
DISCONNECT_CODES: Final = frozenset({
    0x00, 0x04, 0x80, 0x81, 0x82, 0x83, 0x87, 0x89, 0x8B, 0x8D, 0x8E, 0x8F, 0x90, 0x93, 0x94,
    0x95, 0x96, 0x97, 0x98, 0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9E, 0x9F, 0xA0, 0xA1, 0xA2})
#: MQTT 3.1.1 CONNACK return codes
CONNACK_CODES_311: Final = frozenset(range(6))


# ---------------------------------------------------------------------- packets


@dataclass(slots=True)
class Connect:
    client_id: str
    clean_start: bool = True
    keepalive: int = 60
    username: str | None = None
    password: bytes | None = None
    properties: Properties = field(default_factory=dict)
    version: int = V5
    type: int = CONNECT


@dataclass(slots=True)
class Connack:
    session_present: bool = False
    reason_code: int = 0
    properties: Properties = field(default_factory=dict)
    type: int = CONNACK


@dataclass(slots=True)
class Publish:
    topic: str
    payload: bytes
    qos: int = 0
    packet_id: int = 0
    dup: bool = False
    retain: bool = False
    properties: Properties = field(default_factory=dict)
    type: int = PUBLISH


@dataclass(slots=True)
class Puback:
    packet_id: int
    reason_code: int = 0
    properties: Properties = field(default_factory=dict)
    type: int = PUBACK


@dataclass(slots=True)
class Subscribe:
    packet_id: int
    #: (topic filter, subscription options byte: QoS in the low two bits, then no local,
    #: retain as published, retain handling)
    subscriptions: list[tuple[str, int]]
    properties: Properties = field(default_factory=dict)
    type: int = SUBSCRIBE


@dataclass(slots=True)
class Suback:
    packet_id: int
    reason_codes: list[int]
    properties: Properties = field(default_factory=dict)
    type: int = SUBACK


@dataclass(slots=True)
class Unsubscribe:
    packet_id: int
    topic_filters: list[str]
    properties: Properties = field(default_factory=dict)
    type: int = UNSUBSCRIBE


@dataclass(slots=True)
class Unsuback:
    packet_id: int
    #: empty with MQTT 3.1.1 (its UNSUBACK has none)
    reason_codes: list[int] = field(default_factory=list)
    properties: Properties = field(default_factory=dict)
    type: int = UNSUBACK


@dataclass(slots=True)
class Pingreq:
    type: int = PINGREQ


@dataclass(slots=True)
class Pingresp:
    type: int = PINGRESP


@dataclass(slots=True)
class Disconnect:
    reason_code: int = 0
    properties: Properties = field(default_factory=dict)
    type: int = DISCONNECT


@dataclass(slots=True)
class Oversized:
    """An MQTT 3.1.1 PUBLISH larger than the maximum packet size: skipped, never buffered
    (only its topic and packet id were read, to acknowledge it)."""

    topic: str
    qos: int
    packet_id: int
    size: int
    type: int = 0


Packet = (Oversized | Connect | Connack | Publish | Puback | Subscribe | Suback | Unsubscribe
          | Unsuback | Pingreq | Pingresp | Disconnect)


# ---------------------------------------------------------------------- encoding


def encode_varint(value: int) -> bytes:
    if not 0 <= value <= MAX_VARINT:
        raise ValueError(f"{value} does not fit a variable byte integer")
    if value < 128:
        return bytes((value,))
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _utf8(text: str) -> bytes:
    data = text.encode()
    if len(data) > 0xFFFF:
        raise ValueError(f"string of {len(data)} bytes: at most 65535")
    return len(data).to_bytes(2, "big") + data


def _binary(data: bytes) -> bytes:
    if len(data) > 0xFFFF:
        raise ValueError(f"binary data of {len(data)} bytes: at most 65535")
    return len(data).to_bytes(2, "big") + data


def _property_value(kind: int, value: Any) -> bytes:
    if kind == _BYTE:
        return bytes((value,))
    if kind == _U16:
        return int(value).to_bytes(2, "big")
    if kind == _U32:
        return int(value).to_bytes(4, "big")
    if kind == _VARINT:
        return encode_varint(value)
    if kind == _UTF8:
        return _utf8(value)
    if kind == _BINARY:
        return _binary(value)
    name, text = value
    return _utf8(name) + _utf8(text)


def encode_properties(properties: Properties) -> bytes:
    """The property block: its length, then each property (repeatable ones from lists)."""
    out = bytearray()
    for pid, value in properties.items():
        kind = PROPERTIES[pid][1]
        for one in (value if pid in _REPEATABLE else (value,)):
            out += encode_varint(pid)
            out += _property_value(kind, one)
    return encode_varint(len(out)) + bytes(out)


def _packet(first: int, body: bytes) -> bytes:
    return bytes((first,)) + encode_varint(len(body)) + body


def encode_publish(topic: bytes, payload: bytes, qos: int, packet_id: int,
                   properties: bytes, *, dup: bool = False, retain: bool = False) -> bytes:
    """A PUBLISH from parts already encoded: ``topic`` with its two-byte length,
    ``properties`` the whole block (b"" for MQTT 3.1.1). The hot path of the client."""
    first = 0x30 | (qos << 1) | (0x08 if dup else 0) | (0x01 if retain else 0)
    length = len(topic) + len(properties) + len(payload) + (2 if qos else 0)
    header = bytes((first, length)) if length < 128 else bytes((first,)) + encode_varint(length)
    if qos:
        return b"".join((header, topic, packet_id.to_bytes(2, "big"), properties, payload))
    return b"".join((header, topic, properties, payload))


def _id_and_properties(packet_id: int, properties: Properties, v5: bool) -> bytes:
    """The variable header of SUBSCRIBE, SUBACK, UNSUBSCRIBE and UNSUBACK: the packet id, then
    (MQTT 5) the properties."""
    head = packet_id.to_bytes(2, "big")
    return head + encode_properties(properties) if v5 else head


def encode(packet: Packet, version: int = V5) -> bytes:
    """The bytes of any packet (``version`` for those whose form depends on it)."""
    v5 = version == V5
    if isinstance(packet, Publish):
        return encode_publish(_utf8(packet.topic), packet.payload, packet.qos,
                              packet.packet_id,
                              encode_properties(packet.properties) if v5 else b"",
                              dup=packet.dup, retain=packet.retain)
    if isinstance(packet, Puback):
        if v5 and (packet.reason_code or packet.properties):
            body = (packet.packet_id.to_bytes(2, "big") + bytes((packet.reason_code,))
                    + encode_properties(packet.properties))
        else:
            body = packet.packet_id.to_bytes(2, "big")
        return _packet(0x40, body)
    if isinstance(packet, Connect):
        v5 = packet.version == V5
        flags = 0x02 if packet.clean_start else 0
        payload = _utf8(packet.client_id)
        if packet.username is not None:
            flags |= 0x80
            payload += _utf8(packet.username)
        if packet.password is not None:
            flags |= 0x40
            payload += _binary(packet.password)
        body = (_utf8("MQTT") + bytes((packet.version, flags))
                + packet.keepalive.to_bytes(2, "big")
                + (encode_properties(packet.properties) if v5 else b"") + payload)
        return _packet(0x10, body)
    if isinstance(packet, Connack):
        body = bytes((1 if packet.session_present else 0, packet.reason_code))
        return _packet(0x20, body + (encode_properties(packet.properties) if v5 else b""))
    if isinstance(packet, Subscribe):
        body = _id_and_properties(packet.packet_id, packet.properties, v5) + b"".join(
            _utf8(topic) + bytes((options,)) for topic, options in packet.subscriptions)
        return _packet(0x82, body)
    if isinstance(packet, Suback):
        body = _id_and_properties(packet.packet_id, packet.properties, v5)
        return _packet(0x90, body + bytes(packet.reason_codes))
    if isinstance(packet, Unsubscribe):
        body = _id_and_properties(packet.packet_id, packet.properties, v5) + b"".join(
            _utf8(topic) for topic in packet.topic_filters)
        return _packet(0xA2, body)
    if isinstance(packet, Unsuback):
        body = _id_and_properties(packet.packet_id, packet.properties, v5)
        return _packet(0xB0, body + (bytes(packet.reason_codes) if v5 else b""))
    if isinstance(packet, Pingreq):
        return b"\xc0\x00"
    if isinstance(packet, Pingresp):
        return b"\xd0\x00"
    if isinstance(packet, Disconnect):
        if v5 and (packet.reason_code or packet.properties):
            return _packet(0xE0, bytes((packet.reason_code,))
                           + encode_properties(packet.properties))
        return b"\xe0\x00"
    raise TypeError(f"not a packet: {packet!r}")


# ---------------------------------------------------------------------- decoding

#: the packet types each role accepts, and the fixed header flags each must have
_CLIENT_ACCEPTS: Final = frozenset({CONNACK, PUBLISH, PUBACK, SUBACK, UNSUBACK, PINGRESP,
                                    DISCONNECT})
_SERVER_ACCEPTS: Final = frozenset({CONNECT, PUBLISH, PUBACK, SUBSCRIBE, UNSUBSCRIBE, PINGREQ,
                                    DISCONNECT})
_FLAGS: Final = {CONNECT: 0, CONNACK: 0, PUBACK: 0, SUBSCRIBE: 2, SUBACK: 0, UNSUBSCRIBE: 2,
                 UNSUBACK: 0, PINGREQ: 0, PINGRESP: 0, DISCONNECT: 0}


def _remaining_length(view: bytes | bytearray, pos: int, size: int) -> tuple[int, int]:
    """(fixed header length, remaining length) of the packet at ``pos``; remaining length
    -1 while the header is incomplete."""
    length = view[pos + 1]
    if not length & 0x80:
        return 2, length
    length &= 0x7F
    header, shift = 2, 7
    while True:
        if pos + header >= size:
            return header, -1
        byte = view[pos + header]
        header += 1
        length |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if byte == 0:
                raise _violation("bad-remaining-length", "the remaining length is not in "
                                 "the shortest form")
            return header, length
        shift += 7
        if header == 5:
            raise _violation("bad-remaining-length", "the remaining length is longer than "
                             "four bytes")


def _check_codes(name: str, codes: list[int], allowed: frozenset[int]) -> None:
    for code in codes:
        if code not in allowed:
            raise _violation("bad-reason-code", f"{name}: reason code 0x{code:02x}")


def _violation(reason: str, detail: str, code: int = MALFORMED) -> ProtocolViolation:
    return ProtocolViolation(reason, detail, code)


class _Body:
    """A cursor over one packet's body; every read checks the bounds."""

    __slots__ = ("data", "end", "name", "pos")

    def __init__(self, data: bytes | bytearray, pos: int, end: int, name: str) -> None:
        self.data = data
        self.pos = pos
        self.end = end
        self.name = name

    def short(self, what: str) -> ProtocolViolation:
        return _violation("truncated", f"{self.name}: {what} runs past the end of the packet")

    def byte(self, what: str) -> int:
        if self.pos >= self.end:
            raise self.short(what)
        self.pos += 1
        return self.data[self.pos - 1]

    def u16(self, what: str) -> int:
        pos = self.pos
        if pos + 2 > self.end:
            raise self.short(what)
        self.pos = pos + 2
        return (self.data[pos] << 8) | self.data[pos + 1]

    def u32(self, what: str) -> int:
        pos = self.pos
        if pos + 4 > self.end:
            raise self.short(what)
        self.pos = pos + 4
        return int.from_bytes(self.data[pos:pos + 4], "big")

    def varint(self, what: str) -> int:
        value, shift, pos = 0, 0, self.pos
        for count in range(4):
            if pos >= self.end:
                raise self.short(what)
            byte = self.data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                if byte == 0 and count:
                    raise _violation("bad-varint", f"{self.name}: {what} is not in the "
                                     "shortest form")
                self.pos = pos
                return value
            shift += 7
        raise _violation("bad-varint", f"{self.name}: {what} is longer than four bytes")

    def binary(self, what: str) -> bytes:
        length = self.u16(what)
        pos = self.pos
        if pos + length > self.end:
            raise self.short(what)
        self.pos = pos + length
        return bytes(self.data[pos:pos + length])

    def text(self, what: str) -> str:
        raw = self.binary(what)
        try:
            text = raw.decode()
        except UnicodeDecodeError:
            raise _violation("bad-utf8", f"{self.name}: {what} is not UTF-8") from None
        if "\x00" in text:
            raise _violation("bad-utf8", f"{self.name}: {what} contains U+0000")
        return text

    def rest(self) -> bytes:
        data = bytes(self.data[self.pos:self.end])
        self.pos = self.end
        return data

    def done(self) -> None:
        if self.pos != self.end:
            raise _violation("trailing-bytes", f"{self.name}: {self.end - self.pos} byte(s) "
                             "after its last field")

    def properties(self, ptype: int) -> Properties:
        length = self.varint("the property length")
        end = self.pos + length
        if end > self.end:
            raise self.short("the properties")
        result: Properties = {}
        outer, self.end = self.end, end
        try:
            while self.pos < end:
                pid = self.varint("a property id")
                spec = PROPERTIES.get(pid)
                if spec is None:
                    raise _violation("bad-property", f"{self.name}: unknown property id "
                                     f"0x{pid:02x}")
                name, kind, allowed = spec
                if ptype not in allowed:
                    raise _violation("bad-property", f"{self.name}: property {name} is not "
                                     "allowed here", PROTOCOL_ERROR)
                value: Any
                if kind == _BYTE:
                    value = self.byte(name)
                elif kind == _U16:
                    value = self.u16(name)
                elif kind == _U32:
                    value = self.u32(name)
                elif kind == _VARINT:
                    value = self.varint(name)
                elif kind == _UTF8:
                    value = self.text(name)
                elif kind == _BINARY:
                    value = self.binary(name)
                else:
                    value = (self.text(name), self.text(name))
                if pid in _BOOLEAN and value > 1:
                    raise _violation("bad-property", f"{self.name}: {name} is {value}, not 0 "
                                     "or 1", PROTOCOL_ERROR)
                if pid in _NONZERO and value == 0:
                    raise _violation("bad-property", f"{self.name}: {name} is 0",
                                     PROTOCOL_ERROR)
                if pid in _REPEATABLE:
                    result.setdefault(pid, []).append(value)
                elif pid in result:
                    raise _violation("bad-property", f"{self.name}: property {name} twice",
                                     PROTOCOL_ERROR)
                else:
                    result[pid] = value
        finally:
            self.end = outer
        return result


class Decoder:
    """Bytes in, complete packets out (:meth:`feed`); ProtocolViolation on anything else.

    ``max_packet_size``: the largest whole packet (fixed header included) accepted; one
    announced larger is refused before its body is read, so at most that many bytes (plus
    one read) are ever buffered. ``version``: 5 or 4 (3.1.1); a server-role decoder takes it
    from the CONNECT. After a violation the decoder is spent: the connection must end."""

    _parsers: ClassVar[dict[int, Callable[[Decoder, _Body], Packet]]]

    def __init__(self, role: str = "client", version: int = V5,
                 max_packet_size: int = MAX_VARINT + 5) -> None:
        if role not in ("client", "server"):
            raise ValueError(f"role must be 'client' or 'server', not {role!r}")
        self.role = role
        self.version = version
        self.max_packet_size = max_packet_size
        self._accepts = _CLIENT_ACCEPTS if role == "client" else _SERVER_ACCEPTS
        self._buffer = bytearray()
        self._broken: ProtocolViolation | None = None
        #: bytes of an oversized PUBLISH still to drop
        self._skip = 0
        #: the QoS the client subscribed with at most: a PUBLISH above it is a violation
        self.max_qos = 2 if role == "server" else 1

    @property
    def violation(self) -> ProtocolViolation | None:
        """The violation that spent this decoder (after a feed that returned the packets
        before it), else None."""
        return self._broken

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    def feed(self, data: bytes) -> list[Packet]:
        if self._broken is not None:
            raise self._broken
        if self._skip:  # the rest of an oversized PUBLISH: dropped unread
            if len(data) <= self._skip:
                self._skip -= len(data)
                return []
            data, self._skip = data[self._skip:], 0
        buffer = self._buffer
        if buffer:
            buffer += data
            view: bytes | bytearray = buffer
        else:
            view = data
        packets: list[Packet] = []
        pos, size = 0, len(view)
        try:
            while size - pos >= 2:
                first = view[pos]
                header, length = _remaining_length(view, pos, size)
                if length < 0:
                    break  # the header is not complete yet
                total = header + length
                if total > self.max_packet_size:
                    if self.version == V5 or self.role != "client" or first >> 4 != PUBLISH:
                        raise _violation("packet-too-large", f"a packet of {total} bytes "
                                         f"announced: at most {self.max_packet_size}",
                                         PACKET_TOO_LARGE)
                    # MQTT 3.1.1 cannot tell the server the limit: such a PUBLISH is no
                    # violation, it is skipped (its body never buffered) and acknowledged
                    oversized = self._oversized(view, pos, header, size, total)
                    if oversized is None:
                        break  # its topic and packet id have not all arrived yet
                    packets.append(oversized)
                    if size - pos < total:
                        self._skip = total - (size - pos)
                        pos = size
                    else:
                        pos += total
                    continue
                if size - pos < total:
                    break
                packets.append(self._packet(first, view, pos + header, pos + total))
                pos += total
        except ProtocolViolation as exc:
            self._broken = exc
            self._buffer = bytearray()
            if not packets:
                raise
            # the packets before it are good: they are returned, the violation is raised by
            # the next call (see :attr:`violation`)
            return packets
        if buffer:
            del buffer[:pos]
        elif pos < size:
            buffer += view[pos:]
        return packets

    def _oversized(self, data: bytes | bytearray, pos: int, header: int, size: int,
                   total: int) -> Oversized | None:
        qos = (data[pos] >> 1) & 0x03
        if qos > self.max_qos:
            raise _violation("bad-qos", f"PUBLISH: QoS {qos}, above the QoS subscribed with",
                             QOS_NOT_SUPPORTED)
        start = pos + header
        if size - start < 2:
            return None
        tlen = (data[start] << 8) | data[start + 1]
        need = 2 + tlen + (2 if qos else 0)
        if need > total - header:
            raise _violation("truncated", "PUBLISH: the topic runs past the end of the packet")
        if size - start < need:
            return None
        topic = bytes(data[start + 2:start + 2 + tlen]).decode(errors="replace")
        pid = (data[start + need - 2] << 8) | data[start + need - 1] if qos else 0
        if qos and pid == 0:
            raise _violation("bad-packet-id", "PUBLISH: packet id 0", PROTOCOL_ERROR)
        return Oversized(topic, qos, pid, total)

    def _packet(self, first: int, data: bytes | bytearray, start: int, end: int) -> Packet:
        ptype = first >> 4
        flags = first & 0x0F
        if ptype not in self._accepts:
            if ptype in (PUBREC, PUBREL, PUBCOMP):
                raise _violation("qos2-unsupported", f"{PACKET_NAMES[ptype]}: QoS 2 is not "
                                 "spoken here", PROTOCOL_ERROR)
            if ptype == AUTH and self.version == V5:
                raise _violation("auth-unsupported", "AUTH: enhanced authentication is not "
                                 "spoken here", PROTOCOL_ERROR)
            name = PACKET_NAMES.get(ptype, f"type {ptype}")
            raise _violation("bad-packet-type", f"{name} is not a packet a {self.other} "
                             "sends", PROTOCOL_ERROR)
        if ptype == PUBLISH:
            return self._publish(flags, data, start, end)
        if flags != _FLAGS[ptype]:
            raise _violation("bad-flags", f"{PACKET_NAMES[ptype]}: fixed header flags "
                             f"0x{flags:x}, must be 0x{_FLAGS[ptype]:x}")
        body = _Body(data, start, end, PACKET_NAMES[ptype])
        packet = self._parsers[ptype](self, body)
        body.done()
        return packet

    def _puback(self, body: _Body) -> Packet:
        pid = self._packet_id(body)
        code, properties = 0, {}
        if self.version == V5 and body.pos < body.end:
            code = body.byte("the reason code")
            if body.pos < body.end:
                properties = body.properties(PUBACK)
            if code not in PUBACK_CODES:
                raise _violation("bad-reason-code", f"PUBACK: reason code 0x{code:02x}")
        return Puback(pid, code, properties)

    def _connack(self, body: _Body) -> Packet:
        v5 = self.version == V5
        ack_flags = body.byte("the acknowledge flags")
        if ack_flags & 0xFE:
            raise _violation("bad-flags", f"CONNACK: acknowledge flags 0x{ack_flags:02x}")
        code = body.byte("the reason code")
        properties = body.properties(CONNACK) if v5 else {}
        if code not in (CONNACK_CODES if v5 else CONNACK_CODES_311):
            raise _violation("bad-reason-code", f"CONNACK: reason code 0x{code:02x}")
        if code and ack_flags:
            raise _violation("bad-flags", "CONNACK: session present with a failure",
                             PROTOCOL_ERROR)
        return Connack(bool(ack_flags), code, properties)

    def _suback(self, body: _Body) -> Packet:
        v5 = self.version == V5
        pid = self._packet_id(body)
        properties = body.properties(SUBACK) if v5 else {}
        codes = list(body.rest())
        if not codes:
            raise _violation("truncated", "SUBACK: no reason codes")
        _check_codes(body.name, codes, SUBACK_CODES if v5 else frozenset({0, 1, 2, 0x80}))
        return Suback(pid, codes, properties)

    def _unsuback(self, body: _Body) -> Packet:
        v5 = self.version == V5
        pid = self._packet_id(body)
        properties = body.properties(UNSUBACK) if v5 else {}
        codes = list(body.rest())
        if v5 and not codes:
            raise _violation("truncated", "UNSUBACK: no reason codes")
        if not v5 and codes:
            raise _violation("trailing-bytes", "UNSUBACK: bytes after the packet id")
        _check_codes(body.name, codes, UNSUBACK_CODES)
        return Unsuback(pid, codes, properties)

    def _ping(self, body: _Body) -> Packet:
        return Pingreq() if body.name == "PINGREQ" else Pingresp()

    def _disconnect(self, body: _Body) -> Packet:
        code, properties = 0, {}
        if self.version == V5 and body.pos < body.end:
            code = body.byte("the reason code")
            if body.pos < body.end:
                properties = body.properties(DISCONNECT)
            if code not in DISCONNECT_CODES:
                raise _violation("bad-reason-code", f"DISCONNECT: reason code 0x{code:02x}")
        return Disconnect(code, properties)

    def _subscribe(self, body: _Body) -> Packet:
        v5 = self.version == V5
        pid = self._packet_id(body)
        properties = body.properties(SUBSCRIBE) if v5 else {}

        def entry() -> tuple[str, int]:
            topic = body.text("a topic filter")
            options = body.byte("the subscription options")
            if options & 0xC0 or (options & 0x03) == 3 or (not v5 and options & 0xFC):
                raise _violation("bad-flags", f"SUBSCRIBE: options 0x{options:02x}")
            return topic, options

        return Subscribe(pid, self._topic_list(body, "SUBSCRIBE", entry), properties)

    def _unsubscribe(self, body: _Body) -> Packet:
        pid = self._packet_id(body)
        properties = body.properties(UNSUBSCRIBE) if self.version == V5 else {}
        filters = self._topic_list(body, "UNSUBSCRIBE", lambda: body.text("a topic filter"))
        return Unsubscribe(pid, filters, properties)

    @staticmethod
    def _topic_list(body: _Body, name: str, entry: Callable[[], T]) -> list[T]:
        """The entries of a SUBSCRIBE or UNSUBSCRIBE, to the end of its body: at least one."""
        entries = []
        while body.pos < body.end:
            entries.append(entry())
        if not entries:
            raise _violation("truncated", f"{name}: no topic filter", PROTOCOL_ERROR)
        return entries

    @property
    def other(self) -> str:
        return "server" if self.role == "client" else "client"

    @staticmethod
    def _packet_id(body: _Body) -> int:
        pid = body.u16("the packet id")
        if pid == 0:
            raise _violation("bad-packet-id", f"{body.name}: packet id 0", PROTOCOL_ERROR)
        return pid

    def _publish(self, flags: int, data: bytes | bytearray, start: int, end: int) -> Publish:
        qos = (flags >> 1) & 0x03
        if qos == 3:
            raise _violation("bad-qos", "PUBLISH: QoS 3")
        if qos > self.max_qos:
            raise _violation("bad-qos", f"PUBLISH: QoS {qos}, above the QoS subscribed with",
                             QOS_NOT_SUPPORTED)
        if qos == 0 and flags & 0x08:
            raise _violation("bad-flags", "PUBLISH: DUP set on a QoS 0 message")
        # the topic: two bytes of length, then UTF-8 (the common case decoded inline)
        if end - start < 2:
            raise _violation("truncated", "PUBLISH: the topic runs past the end of the packet")
        tlen = (data[start] << 8) | data[start + 1]
        pos = start + 2 + tlen
        if pos > end:
            raise _violation("truncated", "PUBLISH: the topic runs past the end of the packet")
        try:
            topic = data[start + 2:pos].decode()
        except UnicodeDecodeError:
            raise _violation("bad-utf8", "PUBLISH: the topic is not UTF-8") from None
        if "+" in topic or "#" in topic or "\x00" in topic:
            raise _violation("bad-topic", "PUBLISH: wildcard or U+0000 in the topic name",
                             0x90)
        pid = 0
        if qos:
            if pos + 2 > end:
                raise _violation("truncated", "PUBLISH: the packet id runs past the end of "
                                 "the packet")
            pid = (data[pos] << 8) | data[pos + 1]
            if pid == 0:
                raise _violation("bad-packet-id", "PUBLISH: packet id 0", PROTOCOL_ERROR)
            pos += 2
        properties: Properties = {}
        if self.version == V5:
            if pos < end and data[pos] == 0:  # no properties: the common case
                pos += 1
            else:
                body = _Body(data, pos, end, "PUBLISH")
                properties = body.properties(PUBLISH)
                pos = body.pos
                if TOPIC_ALIAS in properties and self.role == "client":
                    raise _violation("topic-alias", "PUBLISH: a topic alias, but none were "
                                     "allowed (topic alias maximum 0)", TOPIC_ALIAS_INVALID)
        if not topic and TOPIC_ALIAS not in properties:
            raise _violation("bad-topic", "PUBLISH: empty topic name", PROTOCOL_ERROR)
        return Publish(topic, bytes(data[pos:end]), qos, pid, bool(flags & 0x08),
                       bool(flags & 0x01), properties)

    def _connect(self, body: _Body) -> Packet:
        name = body.text("the protocol name")
        level = body.byte("the protocol level")
        if name != "MQTT" or level not in (V311, V5):
            raise _violation("bad-protocol", f"CONNECT: protocol {name!r} level {level}",
                             0x84)
        self.version = level
        flags = body.byte("the connect flags")
        if flags & 0x01:
            raise _violation("bad-flags", "CONNECT: reserved flag set")
        if flags & 0x04:
            raise _violation("will-unsupported", "CONNECT: wills are not spoken here",
                             PROTOCOL_ERROR)
        if flags & 0x38:
            raise _violation("bad-flags", "CONNECT: will QoS or retain without a will")
        keepalive = body.u16("the keep alive")
        properties = body.properties(CONNECT) if level == V5 else {}
        client_id = body.text("the client id")
        username = body.text("the user name") if flags & 0x80 else None
        password = body.binary("the password") if flags & 0x40 else None
        return Connect(client_id, bool(flags & 0x02), keepalive, username, password,
                       properties, level)


Decoder._parsers = {
    PUBACK: Decoder._puback, CONNACK: Decoder._connack, SUBACK: Decoder._suback,
    UNSUBACK: Decoder._unsuback, PINGREQ: Decoder._ping, PINGRESP: Decoder._ping,
    DISCONNECT: Decoder._disconnect, CONNECT: Decoder._connect, SUBSCRIBE: Decoder._subscribe,
    UNSUBSCRIBE: Decoder._unsubscribe,
}
