"""joynr's JSON payloads: the bodies of the ten message types as joynr's own runtimes write
them, converted to and from this project's payload objects (``runtime/payloads.py``). Pure
module: no I/O. docs/wire.md, "joynr's JSON payloads", has the tables.

- :func:`encode` writes a payload as joynr JSON (``_typeName`` first, then the members in
  alphabetical order, null payload members left out, as joynr's Java runtime does);
- :func:`decode` reads a body of an expected payload class, :func:`decode_any` one of any of
  the ten (told by its ``_typeName``). Every failure is a :class:`JoynrJsonError` (a
  ``ValueError``) with a short ``reason``: the body is as hostile as the network it came from.

Values are typed by the interface: a :class:`JoynrSchema` made from an ``InterfaceDef`` names
methods, attributes and broadcasts the joynr way (``addFavorite``, ``getCurrentStation``),
derives ``paramDatatypes`` and picks the overload of an incoming request by them; ``types``
gives the declared types of a reply's or publication's values and ``error_enum`` the modelled
error enum of the method. Without them values and names travel as they are ("untyped").
A named map (``runtime.interface``) is written as joynr writes one: an object with its
``_typeName`` first, then its entries keyed by strings; reading one, its ``_typeName`` is no
entry and may be absent (a plain object), and every key must be a text of the key type.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import math
import types
import typing
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Final

from pyjoynr.runtime.interface import (
    AttributeDef,
    BroadcastDef,
    FloatRange,
    InterfaceDef,
    IntRange,
    MethodDef,
    ValueTypeError,
    joynr_map_types,
    joynr_member_names,
    joynr_serialized_members,
    joynr_type_name,
    map_key_from_text,
    map_key_text,
    member_joynr_name,
)
from pyjoynr.runtime.payloads import (
    BroadcastSubscriptionRequest,
    MulticastPublication,
    MulticastSubscriptionRequest,
    OneWayRequest,
    Payload,
    PayloadError,
    Publication,
    Reply,
    Request,
    SubscriptionReply,
    SubscriptionRequest,
    SubscriptionStop,
    check_filter_parameters,
)

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_DEPTH",
    "TYPE_NAMES",
    "WILDCARD",
    "JoynrJsonError",
    "JoynrSchema",
    "compact_json",
    "decode",
    "decode_any",
    "decode_parsed",
    "encode",
    "joynr_datatype",
    "parse",
    "reply_types",
]

#: the largest body decoded (the default frame limit)
MAX_BODY_BYTES = 4 * 1024 * 1024
#: the deepest nesting of JSON arrays and objects decoded or encoded
MAX_DEPTH = 64
#: the longest identifier (ids, names, type names) accepted
MAX_NAME_CHARS = 4096

_INT64_MIN, _INT64_MAX = -(2 ** 63), 2 ** 63 - 1


class JoynrJsonError(PayloadError):
    """A joynr JSON body was refused (or a payload cannot be written as one); ``reason`` says
    which kind of problem, the message what exactly."""

    reason = "bad-json"


def _refuse(reason: str, detail: str) -> JoynrJsonError:
    return JoynrJsonError(detail, reason=reason)


#: the joynr ``_typeName`` of each payload class
TYPE_NAMES: dict[type[Payload], str] = {
    Request: "joynr.Request",
    Reply: "joynr.Reply",
    OneWayRequest: "joynr.OneWayRequest",
    SubscriptionRequest: "joynr.SubscriptionRequest",
    BroadcastSubscriptionRequest: "joynr.BroadcastSubscriptionRequest",
    MulticastSubscriptionRequest: "joynr.MulticastSubscriptionRequest",
    SubscriptionReply: "joynr.SubscriptionReply",
    SubscriptionStop: "joynr.SubscriptionStop",
    Publication: "joynr.SubscriptionPublication",
    MulticastPublication: "joynr.MulticastPublication",
}
_BY_TYPE_NAME = {name: cls for cls, name in TYPE_NAMES.items()}

# ---------------------------------------------------------------------- subscription QoS

_QOS_MEMBERS: dict[str, tuple[str, ...]] = {
    "joynr.SubscriptionQos": ("expiryDateMs",),
    "joynr.UnicastSubscriptionQos": ("expiryDateMs", "publicationTtlMs"),
    "joynr.OnChangeSubscriptionQos": ("expiryDateMs", "publicationTtlMs", "minIntervalMs"),
    "joynr.OnChangeWithKeepAliveSubscriptionQos": (
        "expiryDateMs", "publicationTtlMs", "minIntervalMs", "maxIntervalMs",
        "alertAfterIntervalMs"),
    "joynr.PeriodicSubscriptionQos": (
        "expiryDateMs", "publicationTtlMs", "periodMs", "alertAfterIntervalMs"),
    "joynr.MulticastSubscriptionQos": ("expiryDateMs",),
}
_QOS_KEYS = {"expiryDateMs": "expiry_date_ms", "publicationTtlMs": "publication_ttl_ms",
             "minIntervalMs": "min_interval_ms", "maxIntervalMs": "max_interval_ms",
             "alertAfterIntervalMs": "alert_after_interval_ms", "periodMs": "period_ms"}
_QOS_MEMBER_OF_KEY = {key: member for member, key in _QOS_KEYS.items()}
_QOS_PROJECT_KEYS = {name: frozenset(_QOS_KEYS[m] for m in members)
                     for name, members in _QOS_MEMBERS.items()}


def _infer_qos(keys: frozenset[str], default: str) -> str | None:
    """The QoS type a project qos map without ``type`` stands for: the message type's default
    when its keys fit it, else the first of the on-change, keep-alive, periodic ones they fit."""
    for name in (default, "joynr.OnChangeSubscriptionQos",
                 "joynr.OnChangeWithKeepAliveSubscriptionQos", "joynr.PeriodicSubscriptionQos"):
        if keys <= _QOS_PROJECT_KEYS[name]:
            return name
    return None


def _qos_default(cls: type[Payload]) -> str:
    if cls is MulticastSubscriptionRequest:
        return "joynr.MulticastSubscriptionQos"
    return "joynr.OnChangeSubscriptionQos"


def _qos_to_json(qos: dict[str, Any], default: str) -> dict[str, Any]:
    keys = frozenset(k for k in qos if k != "type")
    kind = qos.get("type")
    if kind is None:
        name = _infer_qos(keys, default)
        if name is None:
            raise _refuse("unencodable", f"qos keys {sorted(keys)} fit no joynr QoS type")
    else:
        name = f"joynr.{kind}" if isinstance(kind, str) else ""
        if name not in _QOS_MEMBERS:
            raise _refuse("unencodable", f"unknown qos type {kind!r}")
        if not keys <= _QOS_PROJECT_KEYS[name]:
            raise _refuse("unencodable", f"qos keys {sorted(keys)} are not all of {name}")
    out: dict[str, Any] = {"_typeName": name}
    for key in keys:
        value = qos[key]
        if type(value) is not int or not _INT64_MIN <= value <= _INT64_MAX:
            raise _refuse("unencodable", f"qos {key} is not a 64-bit int")
        out[_QOS_MEMBER_OF_KEY[key]] = value
    return out


def _qos_from_json(data: Any, default: str) -> dict[str, Any]:
    if data is None:
        return {}
    name = _type_name_of(data, "qos")
    members = _QOS_MEMBERS.get(name)
    if members is None:
        raise _refuse("bad-type-name", f"qos has the unknown _typeName {name[:100]!r}")
    qos: dict[str, Any] = {}
    for member in members:
        value = data.get(member)
        if value is None:
            continue
        qos[_QOS_KEYS[member]] = _int64(value, f"qos.{member}")
    if _infer_qos(frozenset(qos), default) != name:
        qos["type"] = name.removeprefix("joynr.")
    return qos


# ---------------------------------------------------------------------- exceptions

#: project wire type -> (joynr name, Java class name, extra members: joynr -> project key)
_EXCEPTIONS: dict[str, tuple[str, str, dict[str, str]]] = {
    "ApplicationException": ("ApplicationException", "joynr.exceptions.ApplicationException",
                             {}),
    "ProviderRuntimeException": ("ProviderRuntimeException",
                                 "joynr.exceptions.ProviderRuntimeException", {}),
    "MethodInvocationException": ("MethodInvocationException",
                                  "joynr.exceptions.MethodInvocationException", {}),
    "PublicationMissedException": ("PublicationMissedException",
                                   "joynr.exceptions.PublicationMissedException",
                                   {"subscriptionId": "subscription_id"}),
    "SubscriptionException": ("SubscriptionException",
                              "io.joynr.exceptions.SubscriptionException",
                              {"subscriptionId": "subscription_id"}),
    "DiscoveryException": ("DiscoveryException", "io.joynr.exceptions.DiscoveryException", {}),
    "JoynrMessageNotSentException": ("JoynrMessageNotSentException",
                                     "io.joynr.exceptions.JoynrMessageNotSentException", {}),
    "JoynrTimeoutException": ("JoynrTimeOutException",
                              "io.joynr.exceptions.JoynrTimeoutException", {}),
    "JoynrDelayMessageException": ("JoynrDelayMessageException",
                                   "io.joynr.exceptions.JoynrDelayMessageException",
                                   {"delayMs": "delay_ms"}),
    "JoynrMessageExpiredException": ("JoynrMessageExpiredException",
                                     "io.joynr.exceptions.JoynrMessageExpiredException", {}),
    "JoynrRuntimeException": ("JoynrRuntimeException",
                              "io.joynr.exceptions.JoynrRuntimeException", {}),
}
#: every accepted exception _typeName -> the project wire type (both prefixes, and the
#: timeout's two spellings)
_EXCEPTION_OF_NAME: dict[str, str] = {}
for _wire, (_joynr, _java, _extra) in _EXCEPTIONS.items():
    for _short in (_joynr, _wire):
        for _prefix in ("joynr.exceptions.", "io.joynr.exceptions."):
            _EXCEPTION_OF_NAME[_prefix + _short] = _wire
_VERSION_TYPE = "joynr.types.Version"

#: the one exception every joynr runtime decodes in a reply under the same name (docs/wire.md,
#: "Error answers joynr's runtimes decode"): joynr's JavaScript runtime registers ten types,
#: without JoynrMessageNotSentException, JoynrTimeOutException or JoynrMessageExpiredException,
#: and Java knows DiscoveryException, JoynrTimeoutException, JoynrMessageExpiredException,
#: JoynrMessageNotSentException and JoynrRuntimeException only in ``io.joynr.exceptions``
_DECODED_BY_ALL: Final = "ProviderRuntimeException"
#: the project's message-not-sent error (a router's answer to a request it cannot deliver, or
#: in place of an answer it cannot send)
NOT_SENT_TYPE: Final = "JoynrMessageNotSentException"
#: the errors written as :data:`_DECODED_BY_ALL` with their type at the start of the
#: detailMessage (``"<type>: <message>"``, read back as that type): the not-sent error always,
#: the others with joynr's names (``java_exception_names`` writes Java's, which Java decodes)
_AS_DECODED_BY_ALL: Final = frozenset({
    NOT_SENT_TYPE, "DiscoveryException", "JoynrTimeoutException", "JoynrMessageExpiredException",
    "JoynrRuntimeException"})


def _error_to_json(error: dict[str, Any], error_enum: type[enum.Enum] | None,
                   java_names: bool) -> dict[str, Any]:
    kind, message = error.get("type"), error.get("message", "")
    if not isinstance(message, str):
        raise _refuse("unencodable", "error message is not a string")
    if not isinstance(kind, str) or kind not in _EXCEPTIONS:
        kind, message = "JoynrRuntimeException", f"{kind}: {message}"
    if kind == NOT_SENT_TYPE or (kind in _AS_DECODED_BY_ALL and not java_names):
        kind, message = _DECODED_BY_ALL, f"{kind}: {message}"
    joynr, java, extra = _EXCEPTIONS[kind]
    out: dict[str, Any] = {"_typeName": java if java_names else "joynr.exceptions." + joynr,
                           "detailMessage": message}
    for member, key in extra.items():
        value = error.get(key)
        if value is None:
            continue
        if member == "delayMs":
            value = _int64_out(value, "error delay_ms")
        elif not isinstance(value, str):
            raise _refuse("unencodable", f"error {key} is not a string")
        out[member] = value
    if kind == "MethodInvocationException" and error.get("provider_version") is not None:
        version = error["provider_version"]
        if not isinstance(version, dict):
            raise _refuse("unencodable", "error provider_version is not a map")
        out["providerVersion"] = {
            "_typeName": _VERSION_TYPE,
            "majorVersion": _int64_out(version.get("major_version"), "major_version"),
            "minorVersion": _int64_out(version.get("minor_version"), "minor_version")}
    if kind == "ApplicationException":
        literal = error.get("error")
        if not isinstance(literal, str):
            raise _refuse("unencodable", "application error without its enum value")
        if error_enum is not None:
            if literal not in error_enum.__members__:
                raise _refuse("unencodable",
                              f"{literal[:100]!r} is not a {error_enum.__name__}")
            enum_name = joynr_type_name(error_enum)
        else:
            named = error.get("error_enum")
            if not isinstance(named, str):
                raise _refuse("unencodable", "application error of an unknown error enum")
            enum_name = named
        out["error"] = {"_typeName": enum_name, "name": literal}
    return out


def _error_from_json(data: Any, error_enum: type[enum.Enum] | None) -> dict[str, Any]:
    name = _type_name_of(data, "error")
    kind = _EXCEPTION_OF_NAME.get(name)
    if kind is None:
        raise _refuse("bad-type-name", f"error has the unknown _typeName {name[:100]!r}")
    message = data.get("detailMessage")
    if message is None:
        message = ""
    elif not isinstance(message, str):
        raise _refuse("bad-member", f"{name}.detailMessage is not a string")
    if kind == _DECODED_BY_ALL:
        written_as, colon, rest = message.partition(": ")
        if colon and written_as in _AS_DECODED_BY_ALL:
            kind, message = written_as, rest
    error: dict[str, Any] = {"type": kind, "message": message}
    for member, key in _EXCEPTIONS[kind][2].items():
        value = data.get(member)
        if value is None:
            continue
        if member == "delayMs":
            error[key] = _int64(value, f"{name}.delayMs")
        else:
            error[key] = _name(value, f"{name}.{member}")
    if kind == "MethodInvocationException" and data.get("providerVersion") is not None:
        version = data["providerVersion"]
        if not isinstance(version, dict):
            raise _refuse("bad-member", "providerVersion is not an object")
        found = version.get("_typeName", _VERSION_TYPE)
        if found != _VERSION_TYPE:
            raise _refuse("bad-type-name", "providerVersion is not a joynr.types.Version")
        error["provider_version"] = {
            "major_version": _int64(version.get("majorVersion"), "majorVersion"),
            "minor_version": _int64(version.get("minorVersion"), "minorVersion")}
    if kind == "ApplicationException":
        value = data.get("error")
        if not isinstance(value, dict):
            raise _refuse("missing-member", "ApplicationException without its error")
        enum_name = _type_name_of(value, "error enum").replace("$", ".")
        literal = _name(value.get("name"), "error enum name")
        if error_enum is not None:
            if enum_name != joynr_type_name(error_enum):
                raise _refuse("bad-type-name",
                              f"error enum {enum_name[:100]!r} is not the method's")
            if literal not in error_enum.__members__:
                raise _refuse("bad-value", f"{literal[:100]!r} is not a {enum_name}")
            error["error"] = literal
        else:
            error["error"] = literal
            error["error_enum"] = enum_name
    return error


# ---------------------------------------------------------------------- typed values

_PRIMITIVE_NAMES: dict[Any, str] = {int: "Long", float: "Double", bool: "Boolean",
                                    str: "String", bytes: "Byte[]"}
_INTEGER_NAMES = frozenset({"Byte", "Short", "Integer", "Long"})
_FLOAT_NAMES = frozenset({"Float", "Double"})
#: a parameter of a declared ``Any`` / ``dict[str, Any]`` / union type: its joynr datatype is
#: the ``_typeName`` of its value (joynr's polymorphic structs, e.g. the Routing addresses)
WILDCARD = "*"


#: declared type -> (``_optional_inner`` of it, its origin, its args), as found (bounded)
_TYPE_PARTS: dict[Any, tuple[Any, Any, tuple[Any, ...]]] = {}
_MAX_TYPE_PARTS: Final = 4096


def _type_parts(tp: Any) -> tuple[Any, Any, tuple[Any, ...]]:
    """``_optional_inner(tp)``, ``typing.get_origin(tp)`` and ``typing.get_args(tp)``, looked
    up once per declared type (the values' walk asks them of every value)."""
    try:
        return _TYPE_PARTS[tp]
    except KeyError:
        base = _without_marks(tp)
        parts = (_optional_inner_of(base), typing.get_origin(base), typing.get_args(base))
        if len(_TYPE_PARTS) < _MAX_TYPE_PARTS:
            _TYPE_PARTS[tp] = parts
        return parts
    except TypeError:  # (an unhashable declared type)
        base = _without_marks(tp)
        return _optional_inner_of(base), typing.get_origin(base), typing.get_args(base)


def _without_marks(tp: Any) -> Any:
    """A declared type without its ``Annotated`` marks (an integer's or float's range: JSON
    carries an ``Int32`` as any integer; ``interface.from_wire`` checks the range after)."""
    while typing.get_origin(tp) is Annotated:
        tp = tp.__origin__
    return tp


def _optional_inner(tp: Any) -> Any:
    """``T`` of ``T | None``; ``Any`` for other unions; ``tp`` itself otherwise."""
    return _type_parts(tp)[0]


def _optional_inner_of(tp: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _without_marks(args[0]) if len(args) == 1 else Any
    return tp


def joynr_datatype(tp: Any) -> str:
    """The joynr name of a declared parameter type (:data:`WILDCARD` for one told by its value);
    a number with a range mark is named by its width (an ``Int32`` ``Integer``, a ``Float``
    ``Float``), as joynr's generators name it: joynr's Java runtime finds a method by these
    names, and an attribute's setter has no ``joynr_datatypes`` to say it."""
    ranged = _range_name(tp)
    if ranged is not None:
        return ranged
    tp = _optional_inner(tp)
    if tp is Any:
        return WILDCARD
    found = _PRIMITIVE_NAMES.get(tp)
    if found is not None:
        return found
    origin = typing.get_origin(tp)
    if origin is list:
        return joynr_datatype(typing.get_args(tp)[0]) + "[]"
    if origin is dict:
        return WILDCARD if typing.get_args(tp)[1] is Any else "Map"
    if isinstance(tp, type) and (dataclasses.is_dataclass(tp) or issubclass(tp, enum.Enum)
                                 or joynr_map_types(tp) is not None):
        return joynr_type_name(tp)
    return WILDCARD


def _range_name(tp: Any) -> str | None:
    """The joynr name of the range mark of a number type (``T`` or ``T | None``), if any."""
    if typing.get_origin(tp) in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) != 1:
            return None
        tp = args[0]
    while typing.get_origin(tp) is Annotated:
        for mark in tp.__metadata__:
            if isinstance(mark, IntRange):
                return mark.joynr
            if isinstance(mark, FloatRange):
                return mark.name
        tp = tp.__origin__
    return None


def _datatype_fits(declared: str, incoming: str) -> bool:
    """An incoming joynr datatype name fits a declared one: equal, a wildcard, or another
    width of the same number kind (``Integer`` for a declared ``Long``, ``Byte[]`` for a
    declared ``Long[]``)."""
    if declared in (incoming, WILDCARD):
        return True
    while declared.endswith("[]") and incoming.endswith("[]"):
        declared, incoming = declared[:-2], incoming[:-2]
    return ((declared in _INTEGER_NAMES and incoming in _INTEGER_NAMES)
            or (declared in _FLOAT_NAMES and incoming in _FLOAT_NAMES))


@dataclasses.dataclass(frozen=True, slots=True)
class _Struct:
    name: str
    #: (field, joynr member, declared type, required, carried as serialized JSON)
    fields: tuple[tuple[str, str, Any, bool, bool], ...]
    field_names: frozenset[str]


@functools.cache
def _struct(tp: type) -> _Struct:
    hints = typing.get_type_hints(tp)
    members = joynr_member_names(tp)
    serialized = joynr_serialized_members(tp)
    fields = tuple((f.name, members[f.name], hints[f.name],
                    f.default is dataclasses.MISSING
                    and f.default_factory is dataclasses.MISSING,
                    f.name in serialized)
                   for f in dataclasses.fields(tp))
    return _Struct(joynr_type_name(tp), fields, frozenset(f[0] for f in fields))


def _ordered(value: Any) -> Any:
    """``value`` with every object's ``_typeName`` first, then its other members sorted."""
    if isinstance(value, dict):
        out = {}
        if "_typeName" in value:
            out["_typeName"] = value["_typeName"]
        for key in sorted(k for k in value if k != "_typeName"):
            out[key] = _ordered(value[key])
        return out
    if isinstance(value, list):
        return [_ordered(v) for v in value]
    return value


def compact_json(value: Any) -> str:
    """``value`` (JSON types only) as joynr writes a serialized struct inside a string member
    (``GlobalDiscoveryEntry.address``, the Routing addresses): compact, ``_typeName`` first,
    then the members in alphabetical order. Raises :class:`JoynrJsonError` (``unencodable``)
    for a value that is not JSON."""
    try:
        return json.dumps(_ordered(value), ensure_ascii=False, allow_nan=False,
                          separators=(",", ":"))
    except (ValueError, TypeError, RecursionError) as exc:
        raise _refuse("unencodable", f"a value that is not JSON: {exc}") from None


def _serialized_from_json(value: Any, where: str) -> Any:
    """The JSON held by a serialized member's string (an object in its place is taken as it
    is)."""
    if isinstance(value, dict):
        return value
    if type(value) is not str:
        raise _refuse("bad-value", f"{where}: not a string holding JSON")
    try:
        parsed = json.loads(value, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        raise _refuse("bad-value", f"{where}: a string that is not JSON") from None
    _check_tree(parsed, "\\u" in value)
    return parsed


def _subtype_named(tp: type, name: str) -> type | None:
    """The dataclass ``tp`` or a dataclass subclass of it whose joynr name is ``name``."""
    pending, seen = [tp], 0
    while pending and seen < 1000:
        cls = pending.pop()
        seen += 1
        if dataclasses.is_dataclass(cls) and joynr_type_name(cls) == name:
            return cls
        pending.extend(cls.__subclasses__())
    return None


def _bytes_to_json(value: bytes) -> list[int]:
    return [b - 256 if b > 127 else b for b in value]


def _generic_to_json(value: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise _refuse("unencodable", "a value nested too deep")
    kind = type(value)
    if value is None or kind in (str, bool, float):
        return value
    if kind is int:
        return _int64_out(value, "a value")
    if kind is bytes:
        return _bytes_to_json(value)
    if isinstance(value, (list, tuple)):
        return [_generic_to_json(v, depth + 1) for v in value]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                raise _refuse("unencodable", "a map with a key that is not a string")
            out[k] = _generic_to_json(v, depth + 1)
        return out
    if isinstance(value, enum.Enum):
        return value.name
    raise _refuse("unencodable", f"a value of type {kind.__name__}")


def _value_to_json(value: Any, tp: Any, depth: int) -> Any:
    """The joynr JSON of a value in the project's wire form, declared of type ``tp``."""
    if depth > MAX_DEPTH:
        raise _refuse("unencodable", "a value nested too deep")
    if tp in (str, bool) and type(value) is tp:
        return value
    inner = _optional_inner(tp)
    if value is None and inner is not tp:
        return None
    tp = inner
    if tp is Any:
        return _generic_to_json(value, depth)
    if tp in (str, bool) and type(value) is tp:
        return value
    if tp is int and type(value) is int:
        return _int64_out(value, "an int value")
    if tp is float and type(value) in (int, float):
        return value
    if tp is bytes and type(value) is bytes:
        return _bytes_to_json(value)
    _, origin, args = _type_parts(tp)
    if origin is list and isinstance(value, (list, tuple)):
        item = args[0]
        return [_value_to_json(v, item, depth + 1) for v in value]
    if origin is dict and isinstance(value, dict):
        item = args[1]
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                raise _refuse("unencodable", "a map with a key that is not a string")
            out[k] = _value_to_json(v, item, depth + 1)
        return out
    map_types = joynr_map_types(tp)
    if map_types is not None:
        if isinstance(value, dict):
            return _map_to_json(value, tp, map_types, depth)
    elif isinstance(tp, type) and issubclass(tp, enum.Enum):
        name = value.name if isinstance(value, tp) else value
        if type(name) is str and name in tp.__members__:
            return name
    elif isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            if isinstance(value, tp):
                tp = type(value)  # a derived struct is written as what it is
            value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        if isinstance(value, dict):
            return _struct_to_json(value, tp, depth)
    raise _refuse("unencodable", f"a {type(value).__name__} value where {tp!r} is declared")


def _struct_to_json(value: dict[str, Any], tp: type, depth: int) -> dict[str, Any]:
    info = _struct(tp)
    extra = set(value) - info.field_names
    if extra:
        raise _refuse("unencodable", f"{info.name} has no fields {sorted(map(str, extra))}")
    out: dict[str, Any] = {"_typeName": info.name}
    for name, member, ftp, required, serialized in info.fields:
        if name in value:
            out[member] = _value_to_json(value[name], ftp, depth + 1)
            if serialized and out[member] is not None:
                out[member] = compact_json(out[member])
        elif required:
            raise _refuse("unencodable", f"{info.name} without {name}")
    return out


class _LeadingKey(str):
    """A member name that sorts before every other one: the ``_typeName`` of a named map
    (the body writer sorts members by name, and a map's keys may sort before ``_``: ``"1"``,
    ``"ON"``). Equal to and hashed as the plain string."""

    __slots__ = ()

    def __lt__(self, other: object) -> bool:
        return not (isinstance(other, str) and str.__eq__(self, other))

    def __gt__(self, other: object) -> bool:
        return False

    def __le__(self, other: object) -> bool:
        return True

    def __ge__(self, other: object) -> bool:
        return isinstance(other, str) and str.__eq__(self, other)

    __hash__ = str.__hash__


_MAP_TYPE_NAME: Final = _LeadingKey("_typeName")


def _map_to_json(value: dict[Any, Any], tp: type, map_types: tuple[Any, Any],
                 depth: int) -> dict[str, Any]:
    """A named map as joynr writes it: its ``_typeName`` first, then its entries, each key as
    its text (a value in the wire form has them already; a typed one has typed keys)."""
    key_type, value_type = map_types
    name = joynr_type_name(tp)
    out: dict[str, Any] = {_MAP_TYPE_NAME: name}
    for key, item in value.items():
        try:
            text = key if type(key) is str else map_key_text(key)
            typed = map_key_from_text(text, key_type, f"{name} key")
        except ValueTypeError as exc:
            raise _refuse("unencodable", str(exc)) from None
        if type(key) is not str and typed != key:  # (a typed key of another type)
            raise _refuse("unencodable", f"{name} key: a {type(key).__name__} is not a "
                          f"{getattr(key_type, '__name__', key_type)}")
        if text in out:  # (the _typeName, or one key twice: 1 and "1")
            raise _refuse("unencodable", f"{name}: the key {text[:100]!r} twice")
        out[text] = _value_to_json(item, value_type, depth + 1)
    return out


def _map_from_json(value: dict[str, Any], tp: type, map_types: tuple[Any, Any],
                   where: str) -> dict[str, Any]:
    """A named map's entries in the wire form (keys as their texts, checked against the key
    type): its ``_typeName`` member, when there, is no entry and must name it."""
    name = value.get("_typeName")
    if name is not None and name != joynr_type_name(tp):
        raise _refuse("bad-type-name",
                      f"{where}: _typeName {str(name)[:100]!r} is not a {joynr_type_name(tp)}")
    key_type, value_type = map_types
    out = {}
    for key, item in value.items():
        if key == "_typeName":
            continue
        try:
            map_key_from_text(key, key_type, f"{where} key")
        except ValueTypeError as exc:
            raise _refuse("bad-value", str(exc)) from None
        out[key] = _value_from_json(item, value_type, where)
    return out


def _value_from_json(value: Any, tp: Any, where: str) -> Any:
    """The project's wire form of a JSON value declared of type ``tp`` (the JSON tree's depth
    is checked already)."""
    if tp in (str, bool) and type(value) is tp:
        return value
    inner = _optional_inner(tp)
    if value is None and inner is not tp:
        return None
    tp = inner
    if tp is Any:
        return value
    if tp in (str, bool) and type(value) is tp:
        return value
    # (a number's range is interface.from_wire's, which names the field, the value and the
    # range: every typed value from the wire passes there)
    if tp is int:
        if type(value) is int:
            return value
    elif tp is float:
        if type(value) is float:
            return value
        if type(value) is int:
            try:
                return float(value)
            except OverflowError:
                return value
    elif tp is bytes:
        if isinstance(value, list):
            out = bytearray()
            for b in value:
                if type(b) is not int or not -128 <= b <= 255:
                    raise _refuse("bad-value", f"{where}: not a byte array")
                out.append(b & 0xFF)
            return bytes(out)
    elif tp is type(None) or tp is None:
        if value is None:
            return None
    else:
        _, origin, args = _type_parts(tp)
        if origin is list:
            if isinstance(value, list):
                item = args[0]
                return [_value_from_json(v, item, where) for v in value]
        elif origin is dict:
            if isinstance(value, dict):
                item = args[1]
                return {k: _value_from_json(v, item, where) for k, v in value.items()}
        elif (map_types := joynr_map_types(tp)) is not None:
            if isinstance(value, dict):
                return _map_from_json(value, tp, map_types, where)
        elif isinstance(tp, type) and issubclass(tp, enum.Enum):
            if type(value) is str:  # (an unknown literal: from_wire refuses it, naming it)
                return value
        elif (isinstance(tp, type) and dataclasses.is_dataclass(tp)
              and isinstance(value, dict)):
            return _struct_from_json(value, tp, where)
    raise _refuse("bad-value", f"{where}: a {type(value).__name__} where {tp!r} is declared")


def _struct_from_json(value: dict[str, Any], tp: type, where: str) -> dict[str, Any]:
    name = value.get("_typeName")
    if name is not None and name != joynr_type_name(tp):
        sub = _subtype_named(tp, name) if type(name) is str else None
        if sub is None:
            raise _refuse("bad-type-name",
                          f"{where}: _typeName {str(name)[:100]!r} is not a {joynr_type_name(tp)}")
        tp = sub
    out = {}
    for field_name, member, ftp, required, serialized in _struct(tp).fields:
        if member in value:
            found = value[member]
            if serialized and found is not None:
                found = _serialized_from_json(found, f"{where}.{member}")
            out[field_name] = _value_from_json(found, ftp, where)
        elif required:
            raise _refuse("missing-member", f"{where}: {joynr_type_name(tp)} without {member}")
    return out


# ---------------------------------------------------------------------- plain-value plans

#: the body writer's own string writer (``ensure_ascii=False``)
_json_str: Final[Callable[[str], str]] = json.encoder.encode_basestring
#: a plain value's JSON text, or None where the general path must decide (and, on a value it
#: refuses, say why)
_Writer = Callable[[Any], "str | None"]
#: a plain JSON value in the project's wire form, or :data:`_MISS` where the general path
#: must decide
_Reader = Callable[[Any], Any]
_MISS: Final = object()
_int_repr, _float_repr = int.__repr__, float.__repr__


def _write_str(value: Any) -> str | None:
    return _json_str(value) if type(value) is str else None


def _write_bool(value: Any) -> str | None:
    if type(value) is bool:
        return "true" if value else "false"
    return None


def _write_int(value: Any) -> str | None:
    if type(value) is int and _INT64_MIN <= value <= _INT64_MAX:
        return _int_repr(value)
    return None


def _write_float(value: Any) -> str | None:
    kind = type(value)
    if kind is float:
        return _float_repr(value) if math.isfinite(value) else None
    if kind is int:
        return _int_repr(value)
    return None


def _read_str(value: Any) -> Any:
    return value if type(value) is str else _MISS


def _read_bool(value: Any) -> Any:
    return value if type(value) is bool else _MISS


def _read_int(value: Any) -> Any:
    return value if type(value) is int else _MISS  # (its range: interface.from_wire's)


def _read_float(value: Any) -> Any:
    return value if type(value) is float else _MISS


_PLAIN_WRITERS: dict[Any, _Writer] = {str: _write_str, bool: _write_bool, int: _write_int,
                                      float: _write_float}
_PLAIN_READERS: dict[Any, _Reader] = {str: _read_str, bool: _read_bool, int: _read_int,
                                      float: _read_float}


def _enum_writer(tp: type[enum.Enum]) -> _Writer:
    members = tp.__members__

    def write(value: Any) -> str | None:
        name = value.name if isinstance(value, tp) else value
        if type(name) is str and name in members:
            return _json_str(name)
        return None
    return write


def _enum_reader(tp: type[enum.Enum]) -> _Reader:
    def read(value: Any) -> Any:
        return value if type(value) is str else _MISS  # (the literal: from_wire's to check)
    return read


def _list_writer(item: _Writer) -> _Writer:
    def write(value: Any) -> str | None:
        if type(value) is not list:
            return None
        parts = [item(v) for v in value]
        return None if None in parts else "[" + ",".join(parts) + "]"  # type: ignore[arg-type]
    return write


def _list_reader(item: _Reader) -> _Reader:
    def read(value: Any) -> Any:
        if type(value) is not list:
            return _MISS
        out = [item(v) for v in value]
        return _MISS if _MISS in out else out
    return read


def _plain(tp: Any, plain: dict[Any, Any], of_enum: Callable[[Any], Any],
           of_list: Callable[[Any], Any]) -> Any:
    """The fast converter of a value declared ``tp`` when ``tp`` is plain (str, bool, int,
    float, an enum, a list of those; no dicts, so no member order to keep), else None:
    ``plain`` holds the converters of the plain types, ``of_enum`` and ``of_list`` make those
    of an enum and of a list of plain items (a range mark left aside: from_wire checks it)."""
    tp = _without_marks(tp)
    found = plain.get(tp)
    if found is not None:
        return found
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return of_enum(tp)
    if typing.get_origin(tp) is list:
        args = typing.get_args(tp)
        item = plain.get(_without_marks(args[0])) if len(args) == 1 else None
        return of_list(item) if item is not None else None
    return None


@functools.lru_cache(maxsize=1024)
def _writer(tp: Any) -> _Writer | None:
    """The fast writer of a value declared ``tp`` (see :func:`_plain`), else None."""
    return typing.cast("_Writer | None", _plain(tp, _PLAIN_WRITERS, _enum_writer, _list_writer))


@functools.lru_cache(maxsize=1024)
def _reader(tp: Any) -> _Reader | None:
    """The fast reader of a value declared ``tp`` (see :func:`_plain`), else None."""
    return typing.cast("_Reader | None", _plain(tp, _PLAIN_READERS, _enum_reader, _list_reader))


def _writers_of(tps: Sequence[Any]) -> tuple[_Writer, ...] | None:
    """The fast writers of values declared ``tps`` when all of them are plain, else None."""
    try:
        return _writers_of_tuple(tuple(tps))
    except TypeError:  # (an unhashable declared type)
        return None


@functools.lru_cache(maxsize=1024)
def _writers_of_tuple(tps: tuple[Any, ...]) -> tuple[_Writer, ...] | None:
    writers = tuple(_writer(tp) for tp in tps)
    return None if None in writers else writers  # type: ignore[return-value]


def _readers_of(tps: Sequence[Any]) -> tuple[_Reader, ...] | None:
    """The fast readers of values declared ``tps`` when all of them are plain, else None."""
    try:
        return _readers_of_tuple(tuple(tps))
    except TypeError:
        return None


@functools.lru_cache(maxsize=1024)
def _readers_of_tuple(tps: tuple[Any, ...]) -> tuple[_Reader, ...] | None:
    readers = tuple(_reader(tp) for tp in tps)
    return None if None in readers else readers  # type: ignore[return-value]


def _write_values(values: Any, writers: tuple[_Writer, ...]) -> str | None:
    """``[v1,v2,...]`` of plain values, or None where the general path must decide."""
    if type(values) is not list or len(values) != len(writers):
        return None
    parts = [write(v) for write, v in zip(writers, values)]  # noqa: B905 (lengths checked)
    return None if None in parts else "[" + ",".join(parts) + "]"  # type: ignore[arg-type]


# ---------------------------------------------------------------------- schema


@dataclasses.dataclass(frozen=True, slots=True)
class _Method:
    definition: MethodDef
    joynr_name: str
    #: declared joynr datatypes (WILDCARD where the value tells)
    datatypes: tuple[str, ...]
    types: tuple[Any, ...]
    #: per parameter: the joynr structs it may be (declared as a tuple of names; its datatype
    #: is then WILDCARD and the value's _typeName must be one of them), else None
    choices: tuple[frozenset[str] | None, ...] = ()
    #: the fast writers of its parameters when all are plain and their datatypes fixed
    writers: tuple[_Writer, ...] | None = None
    #: its Request's and OneWayRequest's JSON up to the parameters (with ``writers`` only)
    heads: tuple[str, str] = ("", "")
    #: the fast readers of its parameters when all are plain and none has choices
    readers: tuple[_Reader, ...] | None = None

    def fits(self, param_datatypes: Sequence[str], exact: bool) -> bool:
        if len(self.datatypes) != len(param_datatypes):
            return False
        for i, (declared, incoming) in enumerate(zip(self.datatypes, param_datatypes,
                                                     strict=True)):
            allowed = self.choices[i] if self.choices else None
            if allowed is not None:
                if incoming not in allowed:
                    return False
            elif not (declared == incoming or (not exact and _datatype_fits(declared,
                                                                            incoming))):
                return False
        return True

    def wildcards(self) -> int:
        """How many parameters any datatype fits (fewer: tried first)."""
        return sum(1 for i, d in enumerate(self.datatypes)
                   if d == WILDCARD and not (self.choices and self.choices[i]))


def _declared_datatypes(method: MethodDef, types_: tuple[Any, ...]
                        ) -> tuple[tuple[str, ...], tuple[frozenset[str] | None, ...]]:
    declared = method.joynr_datatypes
    if declared is None:
        return tuple(joynr_datatype(t) for t in types_), ()
    names = tuple(WILDCARD if isinstance(d, tuple) else d for d in declared)
    choices = tuple(frozenset(d) if isinstance(d, tuple) else None for d in declared)
    return names, choices if any(c is not None for c in choices) else ()


#: the most (name, paramDatatypes) pairs a schema keeps the overload of (beyond: looked for
#: each time; wildcard parameters let a peer send any number of different pairs)
_MAX_SELECTED: Final = 256


class JoynrSchema:
    """The joynr view of one declared interface: its methods (attribute accessors included)
    by the project's and by joynr's name and parameter types, its attributes and broadcasts
    by both names."""

    def __init__(self, definition: InterfaceDef) -> None:
        self.definition = definition
        self._by_project: dict[tuple[str, tuple[str, ...]], _Method] = {}
        self._by_joynr: dict[str, list[_Method]] = {}
        accessor_names = {}
        for attr, attr_def in definition.attributes.items():
            upper = member_joynr_name(attr_def)
            upper = upper[:1].upper() + upper[1:]
            accessor_names[f"get_{attr}"] = "get" + upper
            accessor_names[f"set_{attr}"] = "set" + upper
        named = [(m, member_joynr_name(m)) for m in definition.methods.values()]
        named += [(m, accessor_names[m.name]) for m in definition.accessors.values()]
        for method, joynr in named:
            types_ = tuple(tp for _, tp in method.params)
            datatypes, choices = _declared_datatypes(method, types_)
            writers = None
            if not choices and WILDCARD not in datatypes:
                writers = _writers_of(types_)
            rest = (f',"methodName":{_json_str(joynr)},"paramDatatypes":['
                    f'{",".join(map(_json_str, datatypes))}],"params":[')
            heads = ('{"_typeName":"joynr.Request"' + rest,
                     '{"_typeName":"joynr.OneWayRequest"' + rest)
            readers = _readers_of(types_) if not choices else None
            entry = _Method(method, joynr, datatypes, types_, choices, writers, heads, readers)
            self._by_project[(method.name, tuple(method.param_datatypes))] = entry
            self._by_joynr.setdefault(entry.joynr_name, []).append(entry)
        for entries in self._by_joynr.values():  # exact declarations before wildcard ones
            entries.sort(key=_Method.wildcards)
        members: dict[str, AttributeDef | BroadcastDef] = {**definition.attributes,
                                                            **definition.broadcasts}
        self._joynr_names = {name: member_joynr_name(m) for name, m in members.items()}
        self._project_names = {joynr: name for name, joynr in self._joynr_names.items()}
        #: requests' (joynr name, paramDatatypes) -> their overload, as found (bounded)
        self._selected: dict[tuple[str, tuple[str, ...]], _Method] = {}

    def method_for(self, method_name: str, param_datatypes: Sequence[str]) -> MethodDef | None:
        """The declared method a project request calls."""
        entry = self._by_project.get((method_name, tuple(param_datatypes)))
        return entry.definition if entry is not None else None

    def select(self, method_name: str, param_datatypes: Sequence[str]) -> MethodDef | None:
        """The overload a joynr request calls, by its joynr name and ``paramDatatypes``."""
        entry = self._select(method_name, param_datatypes)
        return entry.definition if entry is not None else None

    def _select(self, method_name: str, param_datatypes: Sequence[str]) -> _Method | None:
        key = (method_name, tuple(param_datatypes))
        found = self._selected.get(key)
        if found is not None:
            return found
        candidates = self._by_joynr.get(method_name, ())
        for exact in (True, False):
            for entry in candidates:
                if entry.fits(param_datatypes, exact):
                    if len(self._selected) < _MAX_SELECTED:
                        self._selected[key] = entry
                    return entry
        return None

    def joynr_name(self, name: str) -> str:
        """joynr's name of an attribute or broadcast (unknown names unchanged)."""
        return self._joynr_names.get(name, name)

    def project_name(self, joynr_name: str) -> str:
        """The project's name of a joynr attribute or broadcast name (unknown unchanged)."""
        return self._project_names.get(joynr_name, joynr_name)


def reply_types(method: MethodDef) -> list[Any]:
    """The declared types of a reply's ``response`` to ``method``: one per out argument."""
    if method.outputs:
        return [tp for _, tp in method.outputs]
    return [] if method.returns in (type(None), None) else [method.returns]


# ---------------------------------------------------------------------- members


def _name(value: Any, where: str) -> str:
    if type(value) is not str:
        raise _refuse("bad-member", f"{where} is not a string")
    if len(value) > MAX_NAME_CHARS:
        raise _refuse("bad-member", f"{where} is longer than {MAX_NAME_CHARS} chars")
    return value


def _int64(value: Any, where: str, reason: str = "bad-member") -> int:
    if type(value) is not int or not _INT64_MIN <= value <= _INT64_MAX:
        raise _refuse(reason, f"{where} is not a 64-bit int")
    return value


def _int64_out(value: Any, where: str) -> int:
    if type(value) is not int or not _INT64_MIN <= value <= _INT64_MAX:
        raise _refuse("unencodable", f"{where} is not a 64-bit int")
    return value


def _type_name_of(data: Any, where: str) -> str:
    if not isinstance(data, dict):
        raise _refuse("bad-member", f"{where} is not an object")
    name = data.get("_typeName")
    if name is None:
        raise _refuse("bad-type-name", f"{where} has no _typeName")
    return _name(name, f"{where}._typeName")


def _required(data: dict[str, Any], member: str, cls: type) -> Any:
    value = data.get(member)
    if value is None:
        raise _refuse("missing-member", f"{cls.__name__} body has no {member}")
    return value


def _str_list(value: Any, where: str) -> list[str]:
    if not isinstance(value, list):
        raise _refuse("bad-member", f"{where} is not an array")
    return [_name(v, where) for v in value]


def _values(values: list[Any], tps: Sequence[Any] | None, where: str) -> list[Any]:
    if tps is None:
        return values
    if len(values) != len(tps):
        raise _refuse("bad-value", f"{where} has {len(values)} values, {len(tps)} declared")
    readers = _readers_of(tps)
    if readers is not None:
        out = [read(v) for read, v in zip(readers, values)]  # noqa: B905 (lengths checked)
        if _MISS not in out:
            return out
    return [_value_from_json(v, tp, f"{where}[{i}]")
            for i, (v, tp) in enumerate(zip(values, tps, strict=True))]


def _values_out(values: list[Any], tps: Sequence[Any] | None) -> list[Any]:
    if tps is None:
        return [_generic_to_json(v, 1) for v in values]
    if len(values) != len(tps):
        raise _refuse("unencodable", f"{len(values)} values, {len(tps)} declared")
    return [_value_to_json(v, tp, 1) for v, tp in zip(values, tps, strict=True)]


def _multicast_partitions(multicast_id: str) -> list[str]:
    return multicast_id.split("/")[2:]


# ---------------------------------------------------------------------- encode


def encode(payload: Payload, *, schema: JoynrSchema | None = None,
           types: Sequence[Any] | None = None, error_enum: type[enum.Enum] | None = None,
           java_exception_names: bool = False) -> bytes:
    """``payload`` as a joynr JSON body (UTF-8).

    ``schema`` names requests and subscription requests the joynr way and types request
    parameters; ``types`` are the declared types of a reply's or publication's values;
    ``error_enum`` is the modelled error enum of an ApplicationException; with
    ``java_exception_names`` exceptions carry the Java class names (``io.joynr.exceptions.*``)
    instead of joynr's (``joynr.exceptions.*``). Raises :class:`JoynrJsonError` (reason
    ``unencodable``) for a payload that has no joynr form."""
    cls = type(payload)
    fast = _encode_plain(payload, cls, schema, types)
    if fast is not None:
        return fast
    out: dict[str, Any] = {"_typeName": TYPE_NAMES[cls]}
    if isinstance(payload, (Request, OneWayRequest)):
        _request_to_json(payload, schema, out)
    elif isinstance(payload, (Reply, Publication)):
        if payload.response is not None and payload.error is not None:
            raise _refuse("unencodable", f"{cls.__name__} with both a response and an error")
        if isinstance(payload, Reply):
            out["requestReplyId"] = payload.request_reply_id
        else:
            out["subscriptionId"] = payload.subscription_id
        if payload.response is not None:
            out["response"] = _values_out(payload.response, types)
        if payload.error is not None:
            out["error"] = _error_to_json(payload.error, error_enum, java_exception_names)
    elif isinstance(payload, MulticastPublication):
        out["multicastId"] = payload.multicast_id
        out["response"] = _values_out(payload.response, types)
    elif isinstance(payload, (SubscriptionRequest, BroadcastSubscriptionRequest,
                              MulticastSubscriptionRequest)):
        out["subscriptionId"] = payload.subscription_id
        name = payload.subscribe_to_name
        out["subscribedToName"] = schema.joynr_name(name) if schema is not None else name
        out["qos"] = _qos_to_json(payload.qos, _qos_default(cls))
        if isinstance(payload, BroadcastSubscriptionRequest):
            try:
                filters = check_filter_parameters(payload.filter_parameters)
            except PayloadError as exc:
                raise _refuse("unencodable", str(exc)) from None
            out["filterParameters"] = {"_typeName": "joynr.BroadcastFilterParameters",
                                       "filterParameters": filters}
        elif isinstance(payload, MulticastSubscriptionRequest):
            if payload.partitions != _multicast_partitions(payload.multicast_id):
                raise _refuse("unencodable", "partitions are not those of the multicast id")
            out["multicastId"] = payload.multicast_id
    elif isinstance(payload, SubscriptionReply):
        out["subscriptionId"] = payload.subscription_id
        if payload.error is not None:
            error = payload.error
            if error.get("type") != "SubscriptionException":  # joynr's srp error type
                error = {"type": "SubscriptionException",
                         "message": f"{error.get('type')}: {error.get('message', '')}",
                         "subscription_id": payload.subscription_id}
            out["error"] = _error_to_json(error, None, java_exception_names)
    elif isinstance(payload, SubscriptionStop):
        out["subscriptionId"] = payload.subscription_id
    try:
        return _BODY_ENCODER.encode(out).encode("utf-8")
    except (ValueError, TypeError, RecursionError) as exc:  # (UnicodeEncodeError included)
        raise _refuse("unencodable", f"{cls.__name__}: {exc}") from None


def _encode_plain(payload: Payload, cls: type[Payload], schema: JoynrSchema | None,
                  types: Sequence[Any] | None) -> bytes | None:
    """The body of a request, reply or publication whose values are all plain (declared so,
    and of their declared types), written without the general walk: the same bytes as the
    general path (``_typeName`` first, then the members in order), or None where the general
    path must write it or say why it cannot."""
    text: str | None
    if cls is Request or cls is OneWayRequest:
        if schema is None:
            return None
        request = typing.cast("Request | OneWayRequest", payload)
        datatypes = request.param_datatypes
        method = schema._by_project.get((request.method_name, tuple(datatypes)))
        if method is None or method.writers is None:
            return None
        params = _write_values(request.params, method.writers)
        if params is None:
            return None
        if cls is Request:
            rid = typing.cast(Request, payload).request_reply_id
            if type(rid) is not str:
                return None
            text = f'{method.heads[0]}{params[1:]},"requestReplyId":{_json_str(rid)}}}'
        else:
            text = f"{method.heads[1]}{params[1:]}}}"
    elif cls is Reply or cls is Publication or cls is MulticastPublication:
        answer = typing.cast("Reply | Publication | MulticastPublication", payload)
        if types is None or getattr(answer, "error", None) is not None:
            return None
        writers = _writers_of(types)
        if writers is None:
            return None
        response = _write_values(answer.response, writers)
        if response is None:
            return None
        if cls is Reply:
            rid = typing.cast(Reply, payload).request_reply_id
            if type(rid) is not str:
                return None
            text = (f'{{"_typeName":"joynr.Reply","requestReplyId":{_json_str(rid)},'
                    f'"response":{response}}}')
        elif cls is Publication:
            sid = typing.cast(Publication, payload).subscription_id
            if type(sid) is not str:
                return None
            text = (f'{{"_typeName":"joynr.SubscriptionPublication","response":{response},'
                    f'"subscriptionId":{_json_str(sid)}}}')
        else:
            mid = typing.cast(MulticastPublication, payload).multicast_id
            if type(mid) is not str:
                return None
            text = (f'{{"_typeName":"joynr.MulticastPublication","multicastId":'
                    f'{_json_str(mid)},"response":{response}}}')
    else:
        return None
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # (the general path says why)
        return None


def _request_to_json(payload: Request | OneWayRequest, schema: JoynrSchema | None,
                     out: dict[str, Any]) -> None:
    method = schema._by_project.get((payload.method_name, tuple(payload.param_datatypes))
                                    ) if schema is not None else None
    if method is None:
        out["methodName"] = payload.method_name
        out["paramDatatypes"] = list(payload.param_datatypes)
        out["params"] = _values_out(payload.params, None)
    else:
        params = _values_out(payload.params, method.types)
        out["methodName"] = method.joynr_name
        datatypes = [d if d != WILDCARD else _value_type_name(v)
                     for d, v in zip(method.datatypes, payload.params, strict=True)]
        for i, allowed in enumerate(method.choices):
            if allowed is not None and datatypes[i] not in allowed:
                raise _refuse("unencodable", f"{method.joynr_name} parameter {i + 1} is a "
                              f"{datatypes[i][:100]!r}, not one of {sorted(allowed)}")
        out["paramDatatypes"] = datatypes
        out["params"] = params
    if isinstance(payload, Request):
        out["requestReplyId"] = payload.request_reply_id


def _value_type_name(value: Any) -> str:
    if isinstance(value, dict):
        name = value.get("_typeName")
        if type(name) is str:
            return name
    return "Object"


# ---------------------------------------------------------------------- decode


def _parse(body: bytes) -> dict[str, Any]:
    if len(body) > MAX_BODY_BYTES:
        raise _refuse("oversized", f"body of {len(body)} bytes, limit {MAX_BODY_BYTES}")
    try:
        text = body.decode("utf-8")
        data = _load(text)
    except (ValueError, RecursionError) as exc:  # (UnicodeDecodeError, JSONDecodeError)
        raise _refuse("not-json", f"body is not JSON: {str(exc)[:200]}") from None
    escapes = "\\u" in text
    if escapes or body.count(b"[") + body.count(b"{") > MAX_DEPTH:
        _check_tree(data, escapes)  # (fewer brackets than MAX_DEPTH nest no deeper)
    if not isinstance(data, dict):
        raise _refuse("not-an-object", f"body is a JSON {type(data).__name__}, not an object")
    return data


def _load(text: str) -> Any:
    """The JSON value of ``text``: an object from its first to its last char read by the
    scanner alone, anything else (whitespace around it, errors) by the full decoder."""
    if text[:1] == "{":
        try:
            data, end = _BODY_SCAN(text, 0)
        except StopIteration:
            pass
        else:
            if end == len(text):
                return data
    return _BODY_DECODER.decode(text)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


#: a body's writer and reader, made once (json.dumps and json.loads make one a call when
#: given options)
_BODY_ENCODER: Final = json.JSONEncoder(ensure_ascii=False, allow_nan=False, sort_keys=True,
                                        separators=(",", ":"))
_BODY_DECODER: Final = json.JSONDecoder(parse_constant=_no_constant)
_BODY_SCAN: Final = _BODY_DECODER.scan_once  # type: ignore[attr-defined]


def _check_tree(data: Any, escapes: bool) -> None:
    """Refuse a tree nested deeper than MAX_DEPTH, or with strings that are not valid Unicode
    (lone surrogates from ``\\u`` escapes; only looked for when the body has escapes)."""
    if escapes and type(data) is str:
        _check_text(data)
    pending: list[tuple[Any, int]] = [(data, 1)] if isinstance(data, (dict, list)) else []
    while pending:  # (arrays and objects only)
        node, depth = pending.pop()
        if depth > MAX_DEPTH:
            raise _refuse("too-deep", f"JSON nested deeper than {MAX_DEPTH}")
        if isinstance(node, dict):
            children: Any = node.values()
            if escapes:
                for key in node:
                    _check_text(key)
        else:
            children = node
        for child in children:
            if isinstance(child, (dict, list)):
                pending.append((child, depth + 1))
            elif escapes and type(child) is str:
                _check_text(child)


def _check_text(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise _refuse("not-json", "a string that is not valid Unicode") from None


def decode_any(body: bytes, **kwargs: Any) -> Payload:
    """Decode a body of any of the ten payload types, told by its ``_typeName`` (keyword
    arguments as for :func:`decode`)."""
    data = _parse(body)
    name = _type_name_of(data, "body")
    cls = _BY_TYPE_NAME.get(name)
    if cls is None:
        raise _refuse("bad-type-name", f"body has the unknown _typeName {name[:100]!r}")
    return _decode(cls, data, **kwargs)


def decode(cls: type[Payload], body: bytes, *, schema: JoynrSchema | None = None,
           types: Sequence[Any] | None = None,
           error_enum: type[enum.Enum] | None = None) -> Payload:
    """Decode a joynr JSON body of payload class ``cls``; raises :class:`JoynrJsonError`.

    ``schema`` picks a request's overload (by ``methodName`` and ``paramDatatypes``) and gives
    its parameters' types and the project's names; a request for no declared method keeps its
    names and untyped values (the provider then answers that it has no such method).
    ``types`` and ``error_enum`` as for :func:`encode`."""
    return _decode(cls, parse(cls, body), schema=schema, types=types, error_enum=error_enum)


def parse(cls: type[Payload], body: bytes) -> dict[str, Any]:
    """A joynr JSON body of payload class ``cls``, parsed and checked as :func:`decode` checks
    it (its JSON, size, depth and ``_typeName``) but not read into a payload yet: for
    :func:`decode_parsed`, which may read it more than once (untyped, to find where it goes,
    then typed by what it answers) without parsing it again. Raises :class:`JoynrJsonError`."""
    data = _parse(body)
    name = _type_name_of(data, "body")
    if name != TYPE_NAMES[cls]:
        raise _refuse("bad-type-name", f"body is a {name[:100]!r}, not a {TYPE_NAMES[cls]}")
    return data


def decode_parsed(cls: type[Payload], data: dict[str, Any], *,
                  schema: JoynrSchema | None = None, types: Sequence[Any] | None = None,
                  error_enum: type[enum.Enum] | None = None) -> Payload:
    """A body :func:`parse` returned, read as :func:`decode` reads it (``data`` is not
    changed); raises :class:`JoynrJsonError`."""
    return _decode(cls, data, schema=schema, types=types, error_enum=error_enum)


def _decode(cls: type[Payload], data: dict[str, Any], *, schema: JoynrSchema | None = None,
            types: Sequence[Any] | None = None,
            error_enum: type[enum.Enum] | None = None) -> Payload:
    decoder = _DECODERS[cls]
    return decoder(data, cls, schema, types, error_enum)


def _decode_request(data: dict[str, Any], cls: type[Payload], schema: JoynrSchema | None,
                    types_: Sequence[Any] | None, error_enum: Any) -> Payload:
    method_name = data.get("methodName")
    if type(method_name) is not str or len(method_name) > MAX_NAME_CHARS:
        method_name = _name(_required(data, "methodName", cls), "methodName")
    raw_types: Any = data.get("paramDatatypes")
    params: Any = data.get("params")
    datatypes: list[str]
    entry: _Method | None = None
    if (schema is not None and type(raw_types) is list and type(params) is list
            and len(params) == len(raw_types)):
        try:  # noqa: SIM105 (a pair selected before: its datatypes were checked then)
            entry = schema._selected.get((method_name, tuple(raw_types)))
        except TypeError:  # (an unhashable datatype: refused below)
            pass
    if entry is not None:
        datatypes = raw_types
    else:
        datatypes = [] if raw_types is None else _str_list(raw_types, "paramDatatypes")
        if params is None:
            params = []
        elif not isinstance(params, list):
            raise _refuse("bad-member", "params is not an array")
        if len(params) != len(datatypes):
            raise _refuse("bad-member", f"{len(params)} params for {len(datatypes)} datatypes")
        entry = schema._select(method_name, datatypes) if schema is not None else None
    if entry is not None:
        readers = entry.readers
        if readers is not None:  # (all plain: no choices)
            out = [read(v) for read, v in zip(readers, params)]  # noqa: B905 (lengths checked)
            params = out if _MISS not in out else _values(params, entry.types, "params")
        else:
            if entry.choices:
                params = _chosen_structs(params, datatypes, entry.choices)
            params = _values(params, entry.types, "params")
        method_name, datatypes = entry.definition.name, list(entry.definition.param_datatypes)
    if cls is Request:
        rid = _name(_required(data, "requestReplyId", cls), "requestReplyId")
        return Request(rid, method_name, params, datatypes)
    return OneWayRequest(method_name, params, datatypes)


def _chosen_structs(params: list[Any], datatypes: list[str],
                    choices: tuple[frozenset[str] | None, ...]) -> list[Any]:
    """A request's parameters declared as one of several structs: each an object of the
    struct its datatype names (a missing ``_typeName`` is taken from the datatype)."""
    out = list(params)
    for i, allowed in enumerate(choices):
        if allowed is None:
            continue
        value = out[i]
        if not isinstance(value, dict):
            raise _refuse("bad-value", f"params[{i}]: a {type(value).__name__}, not a "
                          f"{datatypes[i][:100]}")
        name = value.get("_typeName")
        if name is None:
            out[i] = {"_typeName": datatypes[i], **value}
        elif name != datatypes[i]:
            raise _refuse("bad-value", f"params[{i}]: a {str(name)[:100]!r} declared as a "
                          f"{datatypes[i][:100]}")
    return out


def _answer_parts(data: dict[str, Any], cls: type[Payload], types_: Sequence[Any] | None,
                  error_enum: type[enum.Enum] | None
                  ) -> tuple[list[Any] | None, dict[str, Any] | None]:
    response, error = data.get("response"), data.get("error")
    if response is not None and error is not None:
        raise _refuse("bad-member", f"{cls.__name__} with both a response and an error")
    if response is not None:
        if not isinstance(response, list):
            raise _refuse("bad-member", "response is not an array")
        response = _values(response, types_, "response")
    if error is not None:
        error = _error_from_json(error, error_enum)
    return response, error


def _decode_reply(data: dict[str, Any], cls: type[Payload], schema: JoynrSchema | None,
                  types_: Sequence[Any] | None, error_enum: Any) -> Payload:
    rid = _name(_required(data, "requestReplyId", cls), "requestReplyId")
    response, error = _answer_parts(data, cls, types_, error_enum)
    return Reply(rid, response, error)


def _decode_publication(data: dict[str, Any], cls: type[Payload], schema: JoynrSchema | None,
                        types_: Sequence[Any] | None, error_enum: Any) -> Payload:
    sid = _name(_required(data, "subscriptionId", cls), "subscriptionId")
    response, error = _answer_parts(data, cls, types_, error_enum)
    return Publication(sid, response, error)


def _decode_multicast(data: dict[str, Any], cls: type[Payload], schema: JoynrSchema | None,
                      types_: Sequence[Any] | None, error_enum: Any) -> Payload:
    mid = _name(_required(data, "multicastId", cls), "multicastId")
    response, error = _answer_parts(data, cls, types_, error_enum)
    if error is not None:
        raise _refuse("unsupported", "a multicast publication carrying an error")
    return MulticastPublication(mid, response if response is not None else [])


def _decode_subscription_request(data: dict[str, Any], cls: type[Payload],
                                 schema: JoynrSchema | None, types_: Sequence[Any] | None,
                                 error_enum: Any) -> Payload:
    sid = _name(_required(data, "subscriptionId", cls), "subscriptionId")
    name = _name(_required(data, "subscribedToName", cls), "subscribedToName")
    if schema is not None:
        name = schema.project_name(name)
    qos = _qos_from_json(data.get("qos"), _qos_default(cls))
    if cls is SubscriptionRequest:
        return SubscriptionRequest(sid, name, qos)
    if cls is BroadcastSubscriptionRequest:
        filters: dict[str, Any] = {}
        raw = data.get("filterParameters")
        if raw is not None:
            if not isinstance(raw, dict):
                raise _refuse("bad-member", "filterParameters is not an object")
            kind = raw.get("_typeName", "joynr.BroadcastFilterParameters")
            if kind != "joynr.BroadcastFilterParameters":
                raise _refuse("bad-type-name", "filterParameters of an unknown _typeName")
            inner = raw.get("filterParameters")
            if inner is not None:
                try:
                    filters = check_filter_parameters(inner)
                except PayloadError as exc:
                    raise _refuse("bad-filter-parameters", str(exc)) from None
        return BroadcastSubscriptionRequest(sid, name, qos, filters)
    mid = _name(_required(data, "multicastId", cls), "multicastId")
    return MulticastSubscriptionRequest(sid, name, mid, qos, _multicast_partitions(mid))


def _decode_subscription_reply(data: dict[str, Any], cls: type[Payload],
                               schema: JoynrSchema | None, types_: Sequence[Any] | None,
                               error_enum: Any) -> Payload:
    sid = _name(_required(data, "subscriptionId", cls), "subscriptionId")
    error = data.get("error")
    return SubscriptionReply(sid, None if error is None else _error_from_json(error, None))


def _decode_subscription_stop(data: dict[str, Any], cls: type[Payload],
                              schema: JoynrSchema | None, types_: Sequence[Any] | None,
                              error_enum: Any) -> Payload:
    return SubscriptionStop(_name(_required(data, "subscriptionId", cls), "subscriptionId"))


_Decoder = Callable[[dict[str, Any], type[Payload], "JoynrSchema | None",
                     "Sequence[Any] | None", Any], Payload]
_DECODERS: dict[type[Payload], _Decoder] = {
    Request: _decode_request,
    OneWayRequest: _decode_request,
    Reply: _decode_reply,
    Publication: _decode_publication,
    MulticastPublication: _decode_multicast,
    SubscriptionRequest: _decode_subscription_request,
    BroadcastSubscriptionRequest: _decode_subscription_request,
    MulticastSubscriptionRequest: _decode_subscription_request,
    SubscriptionReply: _decode_subscription_reply,
    SubscriptionStop: _decode_subscription_stop,
}
