"""Message bodies (runtime.payloads): round trips, hostile bodies, error answers."""

from __future__ import annotations

import dataclasses
from typing import Any

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyjoynr.runtime.bodies import make_error_answer
from pyjoynr.runtime.errors import (
    ApplicationError,
    JoynrError,
    MessageNotSentError,
    ProviderRuntimeError,
)
from pyjoynr.runtime.messages import Effort, Message, MessageType, decode_frame, encode_frame
from pyjoynr.runtime.payloads import (
    MAX_FILTER_PARAMETER_CHARS,
    MAX_FILTER_PARAMETERS,
    PAYLOAD_TYPES,
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
    answer_to,
    check_filter_parameters,
    decode_payload,
)

FULL_PAYLOADS: list[Payload] = [
    Request("rid-1", "add_favorite", [{"name": "FM4", "country": "AUSTRIA"}, 3, None],
            ["Station", "Long", "Object"]),
    Reply("rid-1", response=[True, {"nested": [1, 2.5, b"bin"]}]),
    Reply("rid-2", error={"type": "ProviderRuntimeException", "message": "broke"}),
    OneWayRequest("note", ["hello"], ["String"]),
    SubscriptionRequest("sid-1", "current_station",
                        {"min_interval_ms": 10, "publication_ttl_ms": 1000, "expiry_date_ms": 0}),
    BroadcastSubscriptionRequest("sid-2", "new_station", {"x": 1}, {"country": "AUSTRIA"}),
    MulticastSubscriptionRequest("sid-3", "new_station", "prov/new_station/eu/+", {},
                                 ["eu", "+"]),
    SubscriptionReply("sid-1"),
    SubscriptionReply("sid-1", error={"type": "MethodInvocationException", "message": "no"}),
    SubscriptionStop("sid-1"),
    Publication("sid-1", response=["Oe1"]),
    Publication("sid-1", error={"type": "JoynrRuntimeException", "message": "x"}),
    MulticastPublication("prov/new_station/eu/de", [{"name": "X"}]),
]

MINIMAL_PAYLOADS: list[Payload] = [
    Request("rid", "favorites"),
    Reply("rid"),
    OneWayRequest("note"),
    SubscriptionRequest("sid", "current_station"),
    BroadcastSubscriptionRequest("sid", "new_station"),
    MulticastSubscriptionRequest("sid", "new_station", "prov/new_station"),
    SubscriptionReply("sid"),
    SubscriptionStop("sid"),
    Publication("sid"),
    MulticastPublication("prov/new_station"),
]


def as_map(payload: Payload) -> dict[str, Any]:
    return msgpack.unpackb(payload.to_body(), raw=False)


def body(data: Any) -> bytes:
    return msgpack.packb(data, use_bin_type=True)


def required_fields(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]


def request_message(message_type: MessageType, payload_body: bytes, **extra: Any) -> Message:
    return Message(type=message_type, sender="proxy-pid", recipient="provider-pid",
                   expiry_date_ms=1_000, body=payload_body, **extra)


# ---------------------------------------------------------------------- round trips


def test_every_message_type_has_a_payload_class() -> None:
    assert set(PAYLOAD_TYPES) == set(MessageType)
    for message_type, cls in PAYLOAD_TYPES.items():
        assert cls.message_type is message_type


@pytest.mark.parametrize("payload", FULL_PAYLOADS + MINIMAL_PAYLOADS,
                         ids=lambda p: f"{type(p).__name__}")
def test_round_trip(payload: Payload) -> None:
    raw = payload.to_body()
    decoded = decode_payload(type(payload), raw)
    assert decoded == payload
    assert type(decoded) is type(payload)
    # the body is a map keyed by the field names
    assert set(as_map(payload)) == {f.name for f in dataclasses.fields(payload)}  # type: ignore[arg-type]


@pytest.mark.parametrize("cls", list(PAYLOAD_TYPES.values()), ids=lambda c: c.__name__)
def test_optional_fields_may_be_left_off(cls: type[Payload]) -> None:
    data = {name: "x" for name in required_fields(cls)}
    decoded = decode_payload(cls, body(data))
    for f in dataclasses.fields(decoded):  # type: ignore[arg-type]
        if f.name not in data:
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
            assert getattr(decoded, f.name) == default


def test_unknown_keys_are_ignored() -> None:
    decoded = decode_payload(SubscriptionStop, body({"subscription_id": "s", "future": [1]}))
    assert decoded == SubscriptionStop("s")


def test_to_body_refuses_values_msgpack_cannot_encode() -> None:
    with pytest.raises(TypeError, match="Request holds a value msgpack cannot encode"):
        Request("rid", "m", [object()]).to_body()


# ---------------------------------------------------------------------- hostile bodies


@pytest.mark.parametrize("cls", list(PAYLOAD_TYPES.values()), ids=lambda c: c.__name__)
@pytest.mark.parametrize(
    "raw",
    [b"", b"\xc1", b"garbage\xff", body({"a": 1})[:-1], body({"a": 1}) + b"\x00",
     b"\x81\x01\x02"],
    ids=["empty", "reserved-byte", "garbage", "truncated", "trailing", "int-key"],
)
def test_garbage_is_refused(cls: type[Payload], raw: bytes) -> None:
    with pytest.raises(PayloadError, match=f"{cls.__name__} body is not valid msgpack"):
        decode_payload(cls, raw)


@pytest.mark.parametrize("cls", list(PAYLOAD_TYPES.values()), ids=lambda c: c.__name__)
@pytest.mark.parametrize(("value", "type_name"),
                         [([1], "list"), ("s", "str"), (1, "int"), (None, "NoneType"),
                          (b"x", "bytes")])
def test_non_map_is_refused(cls: type[Payload], value: Any, type_name: str) -> None:
    with pytest.raises(PayloadError, match=f"{cls.__name__} body must be a map, got {type_name}"):
        decode_payload(cls, body(value))


@pytest.mark.parametrize(("cls", "missing"),
                         [(cls, name) for cls in PAYLOAD_TYPES.values()
                          for name in required_fields(cls)],
                         ids=lambda v: v if isinstance(v, str) else v.__name__)
def test_missing_required_field_is_refused(cls: type[Payload], missing: str) -> None:
    data = {name: "x" for name in required_fields(cls) if name != missing}
    with pytest.raises(PayloadError, match=f"{cls.__name__} body has no {missing}"):
        decode_payload(cls, body(data))


# field type -> values of the wrong type
_WRONG = {
    "str": [1, None, b"x", ["x"], {"a": "b"}, True, 1.5],
    "list[str]": ["x", 1, None, {"a": "b"}, b"x"],
    "list[Any]": ["x", 1, None, {"a": "b"}, b"x"],
    "list[Any] | None": ["x", 1, {"a": "b"}, b"x", True],
    "dict[str, Any]": ["x", 1, None, ["a"], b"x"],
    "dict[str, Any] | None": ["x", 1, ["a"], b"x", False],
    "dict[str, str]": ["x", 1, None, ["a"], b"x"],
}


def _wrong_type_cases() -> list[tuple[type[Payload], str, Any]]:
    cases = []
    for cls in PAYLOAD_TYPES.values():
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            for value in _WRONG[str(f.type)]:
                cases.append((cls, f.name, value))
    return cases


@pytest.mark.parametrize(("cls", "name", "value"), _wrong_type_cases(),
                         ids=lambda v: v if isinstance(v, str) else getattr(v, "__name__",
                                                                              repr(v)))
def test_wrong_typed_field_is_refused(cls: type[Payload], name: str, value: Any) -> None:
    data: dict[str, Any] = {n: "x" for n in required_fields(cls)}
    data[name] = value
    with pytest.raises(PayloadError, match=rf"{cls.__name__}\.{name} has the wrong type"):
        decode_payload(cls, body(data))


@pytest.mark.parametrize("items", [[1], ["a", None], ["a", b"b"], [["a"]]], ids=repr)
@pytest.mark.parametrize(("cls", "name"), [(Request, "param_datatypes"),
                                           (OneWayRequest, "param_datatypes"),
                                           (MulticastSubscriptionRequest, "partitions")])
def test_list_of_strings_with_other_items_is_refused(cls: type[Payload], name: str,
                                                      items: list[Any]) -> None:
    data: dict[str, Any] = {n: "x" for n in required_fields(cls)}
    data[name] = items
    with pytest.raises(PayloadError, match=rf"{cls.__name__}\.{name} must be a list of strings"):
        decode_payload(cls, body(data))


@pytest.mark.parametrize("parameters, match", [
    ({"genre": 1}, "must be strings"),
    ({"genre": None}, "must be strings"),
    ({"genre": ["pop"]}, "must be strings"),
    ({"genre": b"pop"}, "must be strings"),
    ({f"p{i}": "v" for i in range(MAX_FILTER_PARAMETERS + 1)}, "filter parameters, at most"),
    ({"genre": "x" * (MAX_FILTER_PARAMETER_CHARS + 1)}, "longer than"),
    ({"g" * (MAX_FILTER_PARAMETER_CHARS + 1): "pop"}, "longer than"),
], ids=["int", "nil", "list", "bytes", "too-many", "long-value", "long-name"])
def test_hostile_filter_parameters_are_refused(parameters: dict[str, Any], match: str
                                               ) -> None:
    data = {"subscription_id": "s", "subscribe_to_name": "signal",
            "filter_parameters": parameters}
    with pytest.raises(PayloadError, match=match) as info:
        decode_payload(BroadcastSubscriptionRequest, body(data))
    assert info.value.reason == "bad-filter-parameters"


def test_filter_parameters_at_their_bounds_are_accepted() -> None:
    parameters = {f"p{i}": "v" * MAX_FILTER_PARAMETER_CHARS
                  for i in range(MAX_FILTER_PARAMETERS)}
    request = BroadcastSubscriptionRequest("s", "signal", {}, parameters)
    assert decode_payload(BroadcastSubscriptionRequest, request.to_body()) == request
    assert check_filter_parameters({}) == {}


def test_optional_none_fields_accept_nil() -> None:
    assert decode_payload(Reply, body({"request_reply_id": "r", "response": None,
                                       "error": None})) == Reply("r")
    assert decode_payload(Publication, body({"subscription_id": "s", "error": None})
                          ) == Publication("s")


def test_a_body_of_another_type_is_refused() -> None:
    reply_body = Reply("rid", response=[1]).to_body()
    with pytest.raises(PayloadError, match="Request body has no method_name"):
        decode_payload(Request, reply_body)


_any_msgpack = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.text(max_size=8) | st.binary(max_size=8),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(max_size=20), children, max_size=4),
    max_leaves=10,
)


@given(cls=st.sampled_from(list(PAYLOAD_TYPES.values())), raw=st.binary(max_size=200))
def test_arbitrary_bytes_raise_only_payload_error(cls: type[Payload], raw: bytes) -> None:
    try:
        decoded = decode_payload(cls, raw)
    except PayloadError:
        return
    assert type(decoded) is cls


@given(cls=st.sampled_from(list(PAYLOAD_TYPES.values())),
       data=st.dictionaries(st.sampled_from(["request_reply_id", "method_name", "params",
                                             "param_datatypes", "response", "error",
                                             "subscription_id", "subscribe_to_name", "qos",
                                             "filter_parameters", "multicast_id",
                                             "partitions"]),
                            _any_msgpack, max_size=8))
def test_arbitrary_maps_raise_only_payload_error(cls: type[Payload], data: dict[str, Any]
                                                 ) -> None:
    try:
        decoded = decode_payload(cls, body(data))
    except PayloadError:
        return
    # what is accepted has the declared types, and encodes again
    assert decode_payload(cls, decoded.to_body()) == decoded


# ---------------------------------------------------------------------- answers


def test_make_error_answer_to_a_request_is_a_reply_with_the_error() -> None:
    request = request_message(MessageType.REQUEST, Request("rid-7", "m").to_body(),
                              custom_headers={"trace": "t1"}, effort=Effort.BEST_EFFORT)
    error = MessageNotSentError("not sent: no route")
    answer = make_error_answer(request, error, expiry_date_ms=99_000)
    assert answer.type is MessageType.REPLY
    assert answer.sender == "provider-pid"
    assert answer.recipient == "proxy-pid"
    assert answer.expiry_date_ms == 99_000
    assert answer.custom_headers == {"trace": "t1"}
    assert answer.effort is Effort.BEST_EFFORT
    assert answer.id != request.id
    reply = decode_payload(Reply, answer.body)
    assert reply == Reply("rid-7", response=None, error={
        "type": "JoynrMessageNotSentException", "message": "not sent: no route"})
    # the answer is a valid message on the wire
    assert decode_frame(encode_frame(answer)) == answer


@pytest.mark.parametrize(
    ("message_type", "payload"),
    [
        (MessageType.SUBSCRIPTION_REQUEST, SubscriptionRequest("sid-a", "current_station")),
        (MessageType.BROADCAST_SUBSCRIPTION_REQUEST,
         BroadcastSubscriptionRequest("sid-b", "new_station")),
        (MessageType.MULTICAST_SUBSCRIPTION_REQUEST,
         MulticastSubscriptionRequest("sid-m", "new_station", "p/new_station")),
    ],
    ids=lambda v: v.value if isinstance(v, MessageType) else "",
)
def test_make_error_answer_to_a_subscription_request_is_a_subscription_reply(
        message_type: MessageType, payload: Payload) -> None:
    request = request_message(message_type, payload.to_body(), custom_headers={"h": "v"})
    error = ApplicationError("NOT_FOUND", "gone")
    answer = make_error_answer(request, error, expiry_date_ms=5)
    assert answer.type is MessageType.SUBSCRIPTION_REPLY
    assert (answer.sender, answer.recipient) == ("provider-pid", "proxy-pid")
    assert answer.expiry_date_ms == 5
    assert answer.custom_headers == {"h": "v"}
    reply = decode_payload(SubscriptionReply, answer.body)
    assert reply.subscription_id == payload.subscription_id  # type: ignore[attr-defined]
    assert reply.error == {"type": "ApplicationException", "message": "gone",
                           "error": "NOT_FOUND"}


@pytest.mark.parametrize(
    "message_type",
    [MessageType.REPLY, MessageType.ONE_WAY, MessageType.SUBSCRIPTION_REPLY,
     MessageType.SUBSCRIPTION_STOP, MessageType.PUBLICATION, MessageType.MULTICAST],
    ids=lambda t: t.value,
)
def test_make_error_answer_refuses_types_that_are_not_answered(message_type: MessageType
                                                                ) -> None:
    payload = MINIMAL_PAYLOADS[[type(p).message_type for p in MINIMAL_PAYLOADS]
                               .index(message_type)]
    request = request_message(message_type, payload.to_body())
    with pytest.raises(PayloadError, match=f"a {message_type.name} message is not answered"):
        make_error_answer(request, JoynrError("x"), expiry_date_ms=1)


@pytest.mark.parametrize(
    ("message_type", "bad_body"),
    [
        (MessageType.REQUEST, b"\xc1"),
        (MessageType.REQUEST, body({"method_name": "m"})),
        (MessageType.SUBSCRIPTION_REQUEST, body([1])),
        (MessageType.BROADCAST_SUBSCRIPTION_REQUEST, body({"subscription_id": 5,
                                                           "subscribe_to_name": "x"})),
        (MessageType.MULTICAST_SUBSCRIPTION_REQUEST, body({"subscription_id": "s",
                                                           "subscribe_to_name": "x"})),
    ],
    ids=["rq-garbage", "rq-no-rid", "arq-list", "brq-int-sid", "mrq-no-multicast-id"],
)
def test_make_error_answer_refuses_a_bad_request_body(message_type: MessageType,
                                                      bad_body: bytes) -> None:
    request = request_message(message_type, bad_body)
    with pytest.raises(PayloadError):
        make_error_answer(request, ProviderRuntimeError("x"), expiry_date_ms=1)


def test_answer_to_swaps_ends_and_echoes_custom_headers() -> None:
    headers = {"trace": "abc", "tenant": "t-1"}
    request = request_message(MessageType.REQUEST, Request("rid", "m").to_body(),
                              custom_headers=headers)
    answer = answer_to(request, Reply("rid", response=[1]))
    assert answer.type is MessageType.REPLY
    assert answer.sender == request.recipient
    assert answer.recipient == request.sender
    assert answer.expiry_date_ms == request.expiry_date_ms
    assert answer.custom_headers == headers
    assert answer.custom_headers is not request.custom_headers  # a copy
    answer.custom_headers["x"] = "y"
    assert "x" not in request.custom_headers
    assert answer.effort is Effort.NORMAL
    assert answer.reply_to is None
    assert answer.id != request.id
    assert decode_payload(Reply, answer.body) == Reply("rid", response=[1])


def test_answer_to_with_explicit_expiry_and_effort() -> None:
    request = request_message(MessageType.SUBSCRIPTION_REQUEST,
                              SubscriptionRequest("s", "a").to_body(), effort=Effort.BEST_EFFORT)
    answer = answer_to(request, SubscriptionReply("s"), expiry_date_ms=123_456)
    assert answer.type is MessageType.SUBSCRIPTION_REPLY
    assert answer.expiry_date_ms == 123_456
    assert answer.effort is Effort.BEST_EFFORT
    assert answer.custom_headers == {}
