"""The payloads (message bodies) of the ten message types, msgpack-encoded. Pure module.

A body is a msgpack map keyed by the field names below. :func:`decode_payload` validates the
types of every field and raises :class:`PayloadError` for anything else: the body comes from
the network and is as hostile as the frame around it. A selective broadcast subscription's
``filter_parameters`` is a map of strings to strings, at most :data:`MAX_FILTER_PARAMETERS`
entries of at most :data:`MAX_FILTER_PARAMETER_CHARS` chars each
(:func:`check_filter_parameters`, reason ``bad-filter-parameters``).
"""

from __future__ import annotations

import dataclasses
import operator
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import msgpack

from pyjoynr.runtime.errors import ProtocolError
from pyjoynr.runtime.messages import Message, MessageType

__all__ = [
    "MAX_FILTER_PARAMETERS",
    "MAX_FILTER_PARAMETER_CHARS",
    "BroadcastSubscriptionRequest",
    "MulticastPublication",
    "MulticastSubscriptionRequest",
    "OneWayRequest",
    "PayloadError",
    "Publication",
    "Reply",
    "Request",
    "SubscriptionReply",
    "SubscriptionRequest",
    "SubscriptionStop",
    "answer_to",
    "check_filter_parameters",
    "decode_payload",
]

P = TypeVar("P", bound="Payload")
_MISSING = object()


class PayloadError(ProtocolError):
    """A message body could not be decoded; the message says why."""

    reason = "bad-payload"


_pack = msgpack.Packer(use_bin_type=True).pack
_unpackb = msgpack.unpackb

#: the most filter parameters a selective broadcast subscription may carry
MAX_FILTER_PARAMETERS = 64
#: the longest name or value of a filter parameter (chars)
MAX_FILTER_PARAMETER_CHARS = 4096


def check_filter_parameters(value: object) -> dict[str, str]:
    """``value`` as a selective broadcast's filter parameters (a map of strings to strings,
    bounded in size, see the module docstring); :class:`PayloadError` (reason
    ``bad-filter-parameters``) saying what is wrong otherwise."""
    if not isinstance(value, dict):
        raise PayloadError(f"filter parameters must be a map, not {type(value).__name__}",
                           reason="bad-filter-parameters")
    if len(value) > MAX_FILTER_PARAMETERS:
        raise PayloadError(f"{len(value)} filter parameters, at most {MAX_FILTER_PARAMETERS}",
                           reason="bad-filter-parameters")
    for key, item in value.items():
        if type(key) is not str or type(item) is not str:
            raise PayloadError(f"filter parameter {str(key)[:60]!r}: names and values must be "
                               f"strings, not {type(key).__name__} and {type(item).__name__}",
                               reason="bad-filter-parameters")
        if len(key) > MAX_FILTER_PARAMETER_CHARS or len(item) > MAX_FILTER_PARAMETER_CHARS:
            raise PayloadError(f"filter parameter {key[:60]!r} is longer than "
                               f"{MAX_FILTER_PARAMETER_CHARS} chars",
                               reason="bad-filter-parameters")
    return dict(value)


class Payload:
    message_type: ClassVar[MessageType]
    _field_names: ClassVar[tuple[str, ...]] = ()
    _field_values: ClassVar[Callable[[Any], tuple[Any, ...]]]

    def to_body(self) -> bytes:
        cls = type(self)
        return self._pack(dict(zip(cls._field_names, cls._field_values(self), strict=True)))

    def _pack(self, data: dict[str, Any]) -> bytes:
        try:
            return _pack(data)
        except TypeError as exc:
            raise TypeError(f"{type(self).__name__} holds a value msgpack cannot encode: {exc}"
                            ) from None


# the annotations below, as strings (postponed evaluation) -> the msgpack types accepted
_CHECKS: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "list[str]": (list,),
    "list[Any]": (list,),
    "list[Any] | None": (list, type(None)),
    "dict[str, Any]": (dict,),
    "dict[str, str]": (dict,),
    "dict[str, Any] | None": (dict, type(None)),
}


def _field_specs(cls: type) -> list[tuple[str, tuple[type, ...], bool, bool]]:
    specs = []
    for f in dataclasses.fields(cls):
        kinds = _CHECKS[str(f.type)]
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        specs.append((f.name, kinds, required, f.type == "list[str]"))
    return specs


def decode_payload(cls: type[P], body: bytes) -> P:
    """Decode ``body`` as a ``cls`` payload; raises :class:`PayloadError` with the reason."""
    try:
        data = _unpackb(body)  # (msgpack's defaults: see runtime.messages.decode_frame)
    except (ValueError, msgpack.UnpackException, RecursionError) as exc:
        raise PayloadError(f"{cls.__name__} body is not valid msgpack: {exc}") from None
    if not isinstance(data, dict):
        raise PayloadError(f"{cls.__name__} body must be a map, got {type(data).__name__}")
    fast = _FAST.get(cls)
    if fast is not None:
        decoded = fast(data)
        if decoded is not None:
            return decoded  # type: ignore[return-value]
    values = {}
    spec: tuple[str, type | tuple[type, ...], bool, bool]
    for spec in _SPECS[cls]:
        name, kinds, required, str_items = spec
        value = data.get(name, _MISSING)
        if value is _MISSING:
            if required:
                raise PayloadError(f"{cls.__name__} body has no {name}")
            continue
        if not isinstance(value, kinds):
            raise PayloadError(
                f"{cls.__name__}.{name} has the wrong type {type(value).__name__}"
            )
        if str_items:
            for item in typing.cast(list[Any], value):
                if type(item) is not str:
                    raise PayloadError(f"{cls.__name__}.{name} must be a list of strings")
        values[name] = value
    if cls is BroadcastSubscriptionRequest and "filter_parameters" in values:
        values["filter_parameters"] = check_filter_parameters(values["filter_parameters"])
    return cls(**values)


@dataclass(slots=True)
class Request(Payload):
    message_type: ClassVar[MessageType] = MessageType.REQUEST
    request_reply_id: str
    method_name: str
    params: list[Any] = field(default_factory=list)
    param_datatypes: list[str] = field(default_factory=list)

    def to_body(self) -> bytes:  # every call: spelled out, it is twice as fast
        return self._pack({"request_reply_id": self.request_reply_id,
                           "method_name": self.method_name, "params": self.params,
                           "param_datatypes": self.param_datatypes})


@dataclass(slots=True)
class Reply(Payload):
    message_type: ClassVar[MessageType] = MessageType.REPLY
    request_reply_id: str
    response: list[Any] | None = None
    error: dict[str, Any] | None = None

    def to_body(self) -> bytes:
        return self._pack({"request_reply_id": self.request_reply_id,
                           "response": self.response, "error": self.error})


@dataclass(slots=True)
class OneWayRequest(Payload):
    message_type: ClassVar[MessageType] = MessageType.ONE_WAY
    method_name: str
    params: list[Any] = field(default_factory=list)
    param_datatypes: list[str] = field(default_factory=list)

    def to_body(self) -> bytes:
        return self._pack({"method_name": self.method_name, "params": self.params,
                           "param_datatypes": self.param_datatypes})


@dataclass(slots=True)
class SubscriptionRequest(Payload):
    """Attribute subscription (``arq``)."""

    message_type: ClassVar[MessageType] = MessageType.SUBSCRIPTION_REQUEST
    subscription_id: str
    subscribe_to_name: str
    qos: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class BroadcastSubscriptionRequest(Payload):
    """Selective broadcast subscription (``brq``): an on-change qos and the filter parameters
    (names to values, strings) the provider's filters of the broadcast see."""

    message_type: ClassVar[MessageType] = MessageType.BROADCAST_SUBSCRIPTION_REQUEST
    subscription_id: str
    subscribe_to_name: str
    qos: dict[str, Any] = field(default_factory=dict)
    filter_parameters: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class MulticastSubscriptionRequest(Payload):
    """Subscription to a (non-selective) broadcast delivered as multicast (``mrq``)."""

    message_type: ClassVar[MessageType] = MessageType.MULTICAST_SUBSCRIPTION_REQUEST
    subscription_id: str
    subscribe_to_name: str
    multicast_id: str
    qos: dict[str, Any] = field(default_factory=dict)
    partitions: list[str] = field(default_factory=list)


@dataclass(slots=True)
class SubscriptionReply(Payload):
    message_type: ClassVar[MessageType] = MessageType.SUBSCRIPTION_REPLY
    subscription_id: str
    error: dict[str, Any] | None = None


@dataclass(slots=True)
class SubscriptionStop(Payload):
    message_type: ClassVar[MessageType] = MessageType.SUBSCRIPTION_STOP
    subscription_id: str


@dataclass(slots=True)
class Publication(Payload):
    message_type: ClassVar[MessageType] = MessageType.PUBLICATION
    subscription_id: str
    response: list[Any] | None = None
    error: dict[str, Any] | None = None


@dataclass(slots=True)
class MulticastPublication(Payload):
    message_type: ClassVar[MessageType] = MessageType.MULTICAST
    multicast_id: str
    response: list[Any] = field(default_factory=list)


PAYLOAD_TYPES: dict[MessageType, type[Payload]] = {
    cls.message_type: cls
    for cls in (
        Request, Reply, OneWayRequest, SubscriptionRequest, BroadcastSubscriptionRequest,
        MulticastSubscriptionRequest, SubscriptionReply, SubscriptionStop, Publication,
        MulticastPublication,
    )
}
def _values_getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The field values of a payload as a tuple, in the order of ``names``."""
    getter = operator.attrgetter(*names)
    if len(names) > 1:
        return getter  # attrgetter of several names returns a tuple
    return lambda obj: (getter(obj),)  # of one, the bare value


_SPECS = {cls: _field_specs(cls) for cls in PAYLOAD_TYPES.values()}
for _cls in PAYLOAD_TYPES.values():
    _cls._field_names = tuple(f.name for f in dataclasses.fields(_cls))  # type: ignore[arg-type]
    _cls._field_values = staticmethod(_values_getter(_cls._field_names))


def answer_to(request: Message, payload: Payload, *, expiry_date_ms: int | None = None,
              body: bytes | None = None) -> Message:
    """The message that answers ``request`` (reply or subscription reply): back to its sender,
    the request's expiry unless told otherwise, the request's custom headers echoed. ``body``:
    the payload already encoded (in the request's body format, runtime.bodies); None: as
    msgpack."""
    return Message(
        type=payload.message_type,
        sender=request.recipient,
        recipient=request.sender,
        expiry_date_ms=request.expiry_date_ms if expiry_date_ms is None else expiry_date_ms,
        body=payload.to_body() if body is None else body,
        effort=request.effort,
        custom_headers=dict(request.custom_headers),
    )


def _all_str(items: list[Any]) -> bool:
    for item in items:  # noqa: SIM110 - a plain loop is faster than all() over a generator
        if type(item) is not str:
            return False
    return True


def _fast_request(d: dict[str, Any]) -> Request | None:
    rid, name = d.get("request_reply_id"), d.get("method_name")
    params, types = d.get("params"), d.get("param_datatypes")
    if (len(d) == 4 and type(rid) is str and type(name) is str and type(params) is list
            and type(types) is list and _all_str(types)):
        return Request(rid, name, params, types)
    return None


def _fast_one_way(d: dict[str, Any]) -> OneWayRequest | None:
    name, params, types = d.get("method_name"), d.get("params"), d.get("param_datatypes")
    if (len(d) == 3 and type(name) is str and type(params) is list and type(types) is list
            and _all_str(types)):
        return OneWayRequest(name, params, types)
    return None


def _fast_reply(d: dict[str, Any]) -> Reply | None:
    rid, response, error = d.get("request_reply_id"), d.get("response"), d.get("error")
    if (len(d) == 3 and type(rid) is str and (response is None or type(response) is list)
            and (error is None or type(error) is dict)):
        return Reply(rid, response, error)
    return None


# the payloads of every call: the common, well-formed case in one test; anything else goes
# through the generic decoder, which says exactly what is wrong
_FAST: dict[type[Payload], Callable[[dict[str, Any]], Payload | None]] = {
    Request: _fast_request,
    OneWayRequest: _fast_one_way,
    Reply: _fast_reply,
}
