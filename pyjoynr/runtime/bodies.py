"""The two body formats of a message, read and written in one place. Pure module: no I/O.

A message body (the payload, always the inflated one) is either

- ``msgpack``: this project's map of :mod:`runtime.payloads`, or
- ``json``: joynr's JSON body of :mod:`runtime.joynr_json`.

:func:`format_of` tells them apart by the first byte of the body: ``{`` after optional JSON
whitespace is JSON, anything else msgpack (a msgpack body is a map, which never starts with
one of these bytes). Both frame dialects carry both formats; the cluster controller never
looks into bodies. This project's runtimes read both everywhere a body is decoded and answer
in the format of what they answer (a reply, subscription reply or publication in the format
of its request).

What a proxy writes: msgpack to a provider whose discovery entry carries the custom
parameter :data:`BODY_PARAMETER` = :data:`BODY_PARAMETER_VALUE` (this project's runtimes add it
to every provider they register; joynr's runtimes never do), JSON otherwise (the choice is the
programming model's: :mod:`programming.body_format`).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from typing import Any, Final, TypeVar, cast

from pyjoynr.runtime import joynr_json
from pyjoynr.runtime.errors import JoynrError, SubscriptionError
from pyjoynr.runtime.interface import InterfaceDef
from pyjoynr.runtime.joynr_json import JoynrSchema
from pyjoynr.runtime.messages import REQUEST_TYPES, Message, MessageType, new_message_id
from pyjoynr.runtime.payloads import (
    PAYLOAD_TYPES,
    Payload,
    PayloadError,
    Reply,
    Request,
    SubscriptionReply,
    answer_to,
    decode_payload,
)

__all__ = [
    "BODY_PARAMETER",
    "BODY_PARAMETER_VALUE",
    "BodyFormat",
    "decode_body",
    "encode_body",
    "format_of",
    "make_error_answer",
    "make_error_reply",
    "schema_of",
]

P = TypeVar("P", bound=Payload)

#: the custom parameter of a provider's ProviderQos saying that it reads msgpack bodies
BODY_PARAMETER: Final = "pyjoynr-body"
#: its value
BODY_PARAMETER_VALUE: Final = "msgpack"


class BodyFormat(enum.Enum):
    """The format of a message body."""

    MSGPACK = "msgpack"
    JSON = "json"


_MSGPACK, _JSON = BodyFormat.MSGPACK, BodyFormat.JSON
_JSON_WHITESPACE: Final = b" \t\n\r"
_WHITESPACE_STARTS: Final = frozenset(bytes([b]) for b in _JSON_WHITESPACE)


def format_of(body: bytes) -> BodyFormat:
    """The format of ``body``: JSON when its first byte other than JSON whitespace is ``{``,
    else msgpack (an empty body is msgpack: its decoder says what is wrong with it)."""
    first = body[:1]
    if first == b"{":
        return _JSON
    if first in _WHITESPACE_STARTS and body.lstrip(_JSON_WHITESPACE)[:1] == b"{":
        return _JSON
    return _MSGPACK


def decode_body(cls: type[P], body: bytes, *, schema: JoynrSchema | None = None,
                types: Sequence[Any] | None = None,
                error_enum: type[enum.Enum] | None = None) -> P:
    """Decode ``body`` as a ``cls`` payload in its own format; raises
    :class:`~runtime.payloads.PayloadError` (a :class:`~runtime.joynr_json.JoynrJsonError` for
    JSON) with the reason. ``schema``, ``types`` and ``error_enum`` type a JSON body (see
    :func:`runtime.joynr_json.decode`); a msgpack body carries the project's wire form."""
    if format_of(body) is _JSON:
        return cast(P, joynr_json.decode(cls, body, schema=schema, types=types,
                                         error_enum=error_enum))
    return decode_payload(cls, body)


def encode_body(payload: Payload, fmt: BodyFormat, *, schema: JoynrSchema | None = None,
                types: Sequence[Any] | None = None,
                error_enum: type[enum.Enum] | None = None) -> bytes:
    """``payload`` as a body in format ``fmt``; raises :class:`~runtime.payloads.PayloadError`
    (reason ``unencodable``) for a payload that cannot be written in it."""
    if fmt is _JSON:
        return joynr_json.encode(payload, schema=schema, types=types, error_enum=error_enum)
    try:
        return payload.to_body()
    except TypeError as exc:
        raise PayloadError(str(exc), reason="unencodable") from None


#: the schemas made so far: id of the InterfaceDef -> (it, its schema); an InterfaceDef is not
#: hashable (it holds dicts), and the few interfaces of a process are made once each
_SCHEMAS: dict[int, tuple[InterfaceDef, JoynrSchema]] = {}
#: the most schemas kept (the oldest are forgotten beyond: made again when asked for)
MAX_SCHEMAS: Final = 1024


def schema_of(definition: InterfaceDef) -> JoynrSchema:
    """The joynr schema of an interface (made once, then kept)."""
    found = _SCHEMAS.get(id(definition))
    if found is not None and found[0] is definition:
        return found[1]
    schema = JoynrSchema(definition)
    if len(_SCHEMAS) >= MAX_SCHEMAS:
        del _SCHEMAS[next(iter(_SCHEMAS))]
    _SCHEMAS[id(definition)] = (definition, schema)
    return schema


def make_error_answer(request: Message, error: JoynrError, *, expiry_date_ms: int) -> Message:
    """An error answer to a request-type message, in the body format of the request (a reply,
    or a subscription reply); raises PayloadError if the request's body is bad or the message
    type is not answered."""
    fmt = format_of(request.body)
    payload: Payload
    if request.type is MessageType.REQUEST:
        rid = decode_body(Request, request.body).request_reply_id
        payload = Reply(request_reply_id=rid, error=error.to_wire())
    elif request.type in REQUEST_TYPES:
        cls = PAYLOAD_TYPES[request.type]
        sid = decode_body(cls, request.body).subscription_id  # type: ignore[attr-defined]
        if isinstance(error, SubscriptionError) and error.subscription_id is None:
            error = SubscriptionError(error.message, sid)  # (joynr's names the subscription)
        payload = SubscriptionReply(subscription_id=sid, error=error.to_wire())
    else:
        raise PayloadError(f"a {request.type.name} message is not answered")
    return answer_to(request, payload, expiry_date_ms=expiry_date_ms,
                     body=encode_body(payload, fmt))


def make_error_reply(answer: Message, error: JoynrError, *, expiry_date_ms: int) -> Message:
    """``answer`` (a reply or a subscription reply that cannot be sent) with ``error`` in its
    place: the same sender, recipient, request reply id (subscription id), custom headers and
    body format, a new message id; raises PayloadError if its body is bad or the message type
    is no answer."""
    fmt = format_of(answer.body)
    payload: Payload
    if answer.type is MessageType.REPLY:
        rid = decode_body(Reply, answer.body).request_reply_id
        payload = Reply(request_reply_id=rid, error=error.to_wire())
    elif answer.type is MessageType.SUBSCRIPTION_REPLY:
        sid = decode_body(SubscriptionReply, answer.body).subscription_id
        payload = SubscriptionReply(subscription_id=sid, error=error.to_wire())
    else:
        raise PayloadError(f"a {answer.type.name} message is no answer")
    return dataclasses.replace(answer, body=encode_body(payload, fmt), id=new_message_id(),
                               expiry_date_ms=expiry_date_ms, raw=None, raw_smrf=None)
