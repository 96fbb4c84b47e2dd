"""Address types: how this runtime reaches a participant.

Pure module: no I/O. Addresses are immutable and hashable; two addresses are equal when their
type and all fields are equal, except :class:`InProcessAddress`, which is equal only to an
address of the very same skeleton object.

The wire form of an address is a plain dict keyed like joynr's ``RoutingTypes``
(``_typeName``, ``brokerUri``/``topic``, ``protocol``/``host``/``port``/``path``, ``id``), so it can
be embedded in a msgpack frame as is (``to_dict``/``address_from_dict``) or packed on its own
(``to_msgpack``/``address_from_msgpack``). Input from the network is hostile: the decoders
raise :class:`AddressError` with the reason for anything that is not exactly a valid address.
:class:`InProcessAddress` has no wire form: it names an object in this process and is never sent.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

import msgpack

from pyjoynr.runtime.errors import ProtocolError

__all__ = [
    "CLIENT_ADDRESS_TYPES",
    "Address",
    "AddressError",
    "InProcessAddress",
    "MqttAddress",
    "UdsAddress",
    "UdsClientAddress",
    "WebSocketAddress",
    "WebSocketClientAddress",
    "address_from_dict",
    "address_from_msgpack",
]

#: Upper bound for any string field of an address received from the network.
MAX_FIELD_LENGTH: Final = 1024

_TYPE_PREFIX: Final = "joynr.system.RoutingTypes."


class AddressError(ProtocolError):
    """An address could not be decoded or is not valid; the message says why."""

    reason = "bad-address"


class Address:
    """Base class of all address types (never instantiated itself)."""

    __slots__ = ("_hash",)
    _hash: int
    type_name: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def to_msgpack(self) -> bytes:
        return msgpack.packb(self.to_dict())

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> Any:  # copy/pickle go through the constructor
        raise TypeError(f"{type(self).__name__} cannot be pickled; use to_dict()")


def _init(obj: Address, fields: dict[str, object], hash_value: int) -> None:
    for name, value in fields.items():
        object.__setattr__(obj, name, value)
    object.__setattr__(obj, "_hash", hash_value)


def _check_str(value: object, field: str, type_name: str, *, allow_empty: bool = False) -> str:
    if type(value) is not str:
        raise AddressError(f"{type_name}.{field} must be a string, got {type(value).__name__}")
    if not value and not allow_empty:
        raise AddressError(f"{type_name}.{field} must not be empty")
    if len(value) > MAX_FIELD_LENGTH:
        raise AddressError(f"{type_name}.{field} is longer than {MAX_FIELD_LENGTH} characters")
    return value


class InProcessAddress(Address):
    """The participant lives in this process; ``skeleton`` is what dispatches to it."""

    __slots__ = ("skeleton",)
    type_name = "InProcessAddress"
    skeleton: object

    def __init__(self, skeleton: object) -> None:
        if skeleton is None:
            raise TypeError("InProcessAddress needs a skeleton object")
        _init(self, {"skeleton": skeleton}, hash(("inprocess", id(skeleton))))

    __hash__ = Address.__hash__  # defining __eq__ would otherwise drop it

    def __eq__(self, other: object) -> bool:
        return type(other) is InProcessAddress and other.skeleton is self.skeleton

    def __repr__(self) -> str:
        return f"InProcessAddress(<{type(self.skeleton).__name__} at {id(self.skeleton):#x}>)"

    def to_dict(self) -> dict[str, Any]:
        raise TypeError("InProcessAddress refers to an object in this process and is never sent")


class WebSocketAddress(Address):
    """The cluster controller's websocket server, as seen from a libjoynr runtime."""

    __slots__ = ("host", "path", "port", "protocol")
    type_name = "WebSocketAddress"
    protocol: str
    host: str
    port: int
    path: str

    def __init__(self, protocol: str, host: str, port: int, path: str = "/") -> None:
        protocol = _check_str(protocol, "protocol", self.type_name).lower()
        if protocol not in ("ws", "wss"):
            raise AddressError(f"WebSocketAddress.protocol must be 'ws' or 'wss', got {protocol!r}")
        _check_str(host, "host", self.type_name)
        if type(port) is not int or not 0 < port < 65536:
            raise AddressError(f"WebSocketAddress.port must be an int in 1..65535, got {port!r}")
        _check_str(path, "path", self.type_name, allow_empty=True)
        fields = {"protocol": protocol, "host": host, "port": port, "path": path}
        _init(self, fields, hash(("ws", protocol, host, port, path)))

    __hash__ = Address.__hash__  # defining __eq__ would otherwise drop it

    def __eq__(self, other: object) -> bool:
        return type(other) is WebSocketAddress and (
            other.protocol == self.protocol
            and other.host == self.host
            and other.port == self.port
            and other.path == self.path
        )

    def __repr__(self) -> str:
        return f"WebSocketAddress({self.protocol!r}, {self.host!r}, {self.port}, {self.path!r})"

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.protocol}://{host}:{self.port}{self.path}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "_typeName": _TYPE_PREFIX + self.type_name,
            "protocol": self.protocol.upper(),
            "host": self.host,
            "port": self.port,
            "path": self.path,
        }


class WebSocketClientAddress(Address):
    """A libjoynr runtime connected to this cluster controller's websocket server."""

    __slots__ = ("id",)
    type_name = "WebSocketClientAddress"
    id: str

    def __init__(self, id: str) -> None:  # "id" is joynr's field name
        _check_str(id, "id", self.type_name)
        _init(self, {"id": id}, hash(("wsc", id)))

    __hash__ = Address.__hash__  # defining __eq__ would otherwise drop it

    def __eq__(self, other: object) -> bool:
        return type(other) is WebSocketClientAddress and other.id == self.id

    def __repr__(self) -> str:
        return f"WebSocketClientAddress({self.id!r})"

    def to_dict(self) -> dict[str, Any]:
        return {"_typeName": _TYPE_PREFIX + self.type_name, "id": self.id}


class UdsAddress(Address):
    """A cluster controller's Unix domain socket server, seen from a libjoynr runtime: the
    path of its socket file."""

    __slots__ = ("path",)
    type_name = "UdsAddress"
    path: str

    def __init__(self, path: str) -> None:
        _check_str(path, "path", self.type_name)
        _init(self, {"path": path}, hash(("uds", path)))

    __hash__ = Address.__hash__

    def __eq__(self, other: object) -> bool:
        return type(other) is UdsAddress and other.path == self.path

    def __repr__(self) -> str:
        return f"UdsAddress({self.path!r})"

    @property
    def url(self) -> str:
        return f"unix://{self.path}"

    def to_dict(self) -> dict[str, Any]:
        return {"_typeName": _TYPE_PREFIX + self.type_name, "path": self.path}


class UdsClientAddress(Address):
    """A libjoynr runtime connected to this cluster controller's Unix domain socket server."""

    __slots__ = ("id",)
    type_name = "UdsClientAddress"
    id: str

    def __init__(self, id: str) -> None:  # "id" is joynr's field name
        _check_str(id, "id", self.type_name)
        _init(self, {"id": id}, hash(("udsc", id)))

    __hash__ = Address.__hash__

    def __eq__(self, other: object) -> bool:
        return type(other) is UdsClientAddress and other.id == self.id

    def __repr__(self) -> str:
        return f"UdsClientAddress({self.id!r})"

    def to_dict(self) -> dict[str, Any]:
        return {"_typeName": _TYPE_PREFIX + self.type_name, "id": self.id}


#: the addresses of a runtime connected to this cluster controller: a connection of one of its
#: servers (websocket or Unix domain socket), which speaks only for its own participants
CLIENT_ADDRESS_TYPES: Final[tuple[type[Address], ...]] = (WebSocketClientAddress,
                                                          UdsClientAddress)


class MqttAddress(Address):
    """A participant behind a backend broker. ``broker_uri`` holds the GBID, not a URL."""

    __slots__ = ("broker_uri", "topic")
    type_name = "MqttAddress"
    broker_uri: str
    topic: str

    def __init__(self, broker_uri: str, topic: str) -> None:
        _check_str(broker_uri, "broker_uri", self.type_name, allow_empty=True)
        _check_str(topic, "topic", self.type_name)
        # a topic to publish to: no wildcards, no NUL (a broker disconnects a client that
        # publishes there), not a $ system topic
        if "+" in topic or "#" in topic or "\0" in topic or topic.startswith("$"):
            raise AddressError(f"MqttAddress.topic {topic[:80]!r} is not a topic name one can "
                               "publish to (wildcards, NUL or a leading $)")
        _init(self, {"broker_uri": broker_uri, "topic": topic}, hash(("mqtt", broker_uri, topic)))

    __hash__ = Address.__hash__

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is MqttAddress
            and other.topic == self.topic
            and other.broker_uri == self.broker_uri
        )

    def __repr__(self) -> str:
        return f"MqttAddress({self.broker_uri!r}, {self.topic!r})"

    def with_broker_uri(self, broker_uri: str) -> MqttAddress:
        """The same topic in another backend (GBID)."""
        return self if broker_uri == self.broker_uri else MqttAddress(broker_uri, self.topic)

    def to_dict(self) -> dict[str, Any]:
        return {
            "_typeName": _TYPE_PREFIX + self.type_name,
            "brokerUri": self.broker_uri,
            "topic": self.topic,
        }


def _decode_websocket(data: dict[Any, Any]) -> WebSocketAddress:
    protocol = _check_str(data["protocol"], "protocol", "WebSocketAddress")
    return WebSocketAddress(protocol, data["host"], data["port"], data.get("path", "/"))


# wire type name -> (required fields, the fields an address of that type may have, builder)
_DECODERS: Final[dict[str, tuple[frozenset[str], frozenset[str], Any]]] = {
    _TYPE_PREFIX + "MqttAddress": (
        frozenset({"brokerUri", "topic"}),
        frozenset({"_typeName", "brokerUri", "topic"}),
        lambda d: MqttAddress(d["brokerUri"], d["topic"]),
    ),
    _TYPE_PREFIX + "WebSocketClientAddress": (
        frozenset({"id"}),
        frozenset({"_typeName", "id"}),
        lambda d: WebSocketClientAddress(d["id"]),
    ),
    _TYPE_PREFIX + "UdsClientAddress": (
        frozenset({"id"}),
        frozenset({"_typeName", "id"}),
        lambda d: UdsClientAddress(d["id"]),
    ),
    _TYPE_PREFIX + "UdsAddress": (
        frozenset({"path"}),
        frozenset({"_typeName", "path"}),
        lambda d: UdsAddress(d["path"]),
    ),
    _TYPE_PREFIX + "WebSocketAddress": (
        frozenset({"protocol", "host", "port"}),
        frozenset({"_typeName", "protocol", "host", "port", "path"}),
        _decode_websocket,
    ),
}


#: addresses decoded before, by their wire form (the map's items in their order, every value a
#: string): message after message brings the same few replyTo addresses (three decodes per
#: MQTT request). An address is immutable, so the one object serves every message.
_DECODED: dict[tuple[tuple[Any, Any], ...], Address] = {}
#: at most this many are kept, then the map starts again empty: at most 256 addresses of at
#: most three strings of MAX_FIELD_LENGTH characters each and the type name, whatever
#: senders make up (one that sends new ones all the time only empties it)
MAX_DECODED: Final = 256


def address_from_dict(data: object) -> Address:
    """Decode the wire form of an address; raises :class:`AddressError` with the reason.
    A wire form decoded before is answered with the same address object (``_DECODED``)."""
    if not isinstance(data, dict):
        raise AddressError(f"an address must be a map, got {type(data).__name__}")
    key = tuple(data.items())
    try:
        known = _DECODED.get(key)
    except TypeError:  # a value that is no key (a list, a map): decoded and refused below
        return _decode(data)
    if known is not None:
        # (only maps whose values are all str are kept, and nothing else msgpack or JSON
        # makes is equal to a str: the same fields with the same strings, checked before)
        return known
    address = _decode(data)
    if all(type(value) is str for _, value in key):
        if len(_DECODED) >= MAX_DECODED:
            _DECODED.clear()
        _DECODED[key] = address
    return address


def _decode(data: dict[Any, Any]) -> Address:
    type_name = data.get("_typeName")
    if type(type_name) is not str:
        raise AddressError("address has no _typeName string")
    decoder = _DECODERS.get(type_name)
    if decoder is None:
        raise AddressError(f"unknown or non-transmittable address type {type_name[:80]!r}")
    required, allowed, build = decoder
    # every message with a replyTo brings one (three decodes per MQTT request): the usual
    # address, exactly its fields, in two set tests; the messages below for the rest
    if not (required <= data.keys() and data.keys() <= allowed):
        short_name = type_name.removeprefix(_TYPE_PREFIX)
        missing = required.difference(data)
        if missing:
            raise AddressError(f"{short_name}: missing field(s) {sorted(missing)}")
        unknown = [key for key in data if key not in allowed]
        raise AddressError(
            f"{short_name}: unexpected field(s) {sorted(map(repr, unknown))[:5]}")
    return build(data)


def address_from_msgpack(raw: bytes) -> Address:
    """Decode an address packed with :meth:`Address.to_msgpack`."""
    if len(raw) > 8 * MAX_FIELD_LENGTH:
        raise AddressError("packed address is too large")
    try:
        data = msgpack.unpackb(raw, raw=False, strict_map_key=True)
    except (ValueError, msgpack.UnpackException) as exc:
        raise AddressError(f"not a msgpack address: {exc}") from None
    return address_from_dict(data)
