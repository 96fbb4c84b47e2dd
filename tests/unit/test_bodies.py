"""The two body formats (runtime.bodies): telling them apart, both round trips for every
payload type, typed JSON through a schema, hostile bodies of either format, the custom
parameter of the provider entries and the error answers in the request's format."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyjoynr.programming.body_format import proxy_body_format, with_body_parameter
from pyjoynr.programming.discovery_types import (
    CustomParameter,
    DiscoveryEntry,
    ProviderQos,
    ProviderScope,
    Version,
)
from pyjoynr.runtime.bodies import (
    BODY_PARAMETER,
    BODY_PARAMETER_VALUE,
    BodyFormat,
    decode_body,
    encode_body,
    format_of,
    make_error_answer,
    make_error_reply,
    schema_of,
)
from pyjoynr.runtime.errors import ApplicationError, MessageNotSentError, ProviderRuntimeError
from pyjoynr.runtime.interface import (
    attribute,
    broadcast,
    errors,
    interface,
    interface_def,
    joynr_name,
    to_wire,
)
from pyjoynr.runtime.joynr_json import reply_types
from pyjoynr.runtime.messages import Message, MessageType
from pyjoynr.runtime.payloads import (
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
)

MSGPACK, JSON = BodyFormat.MSGPACK, BodyFormat.JSON


@joynr_name("test.Country")
class Country(enum.Enum):
    AUSTRIA = "AUSTRIA"
    GERMANY = "GERMANY"


@joynr_name("test.FavoriteError")
class FavoriteError(enum.Enum):
    NOT_FOUND = "NOT_FOUND"


@joynr_name("test.Station")
@dataclass
class Station:
    name: str
    country: Country
    frequency_mhz: float = 0.0


@interface("test/Tuner", version=(1, 0))
class Tuner:
    current_station = attribute(Station)
    new_station = broadcast(station=Station, raw=bytes)

    async def add_favorite(self, station: Station) -> bool: ...

    @errors(FavoriteError)
    async def remove_favorite(self, name: str) -> None: ...

    async def checksum(self, data: bytes, rounds: int) -> bytes: ...


TUNER = interface_def(Tuner)

#: one payload of each of the ten types, with values both formats hold as they are
PAYLOADS: list[Payload] = [
    Request("rid-1", "add_favorite", [{"name": "FM4", "country": "AUSTRIA"}, 3, None, True],
            ["Station", "Long", "Object", "Boolean"]),
    Reply("rid-1", response=[True, {"nested": [1, 2.5, "x"]}]),
    Reply("rid-2", error={"type": "ProviderRuntimeException", "message": "broke"}),
    OneWayRequest("note", ["hello"], ["String"]),
    SubscriptionRequest("sid-1", "current_station",
                        {"min_interval_ms": 10, "publication_ttl_ms": 1000, "expiry_date_ms": 0}),
    BroadcastSubscriptionRequest("sid-2", "new_station", {}, {"country": "AUSTRIA"}),
    MulticastSubscriptionRequest("sid-3", "new_station", "prov/new_station/eu/+", {},
                                 ["eu", "+"]),
    SubscriptionReply("sid-1"),
    SubscriptionReply("sid-1", error={"type": "SubscriptionException", "message": "no",
                                      "subscription_id": "sid-1"}),
    SubscriptionStop("sid-1"),
    Publication("sid-1", response=["Oe1"]),
    Publication("sid-1", error={"type": "JoynrRuntimeException", "message": "x"}),
    MulticastPublication("prov/new_station/eu/de", [{"name": "X"}]),
]


def ids(payload: Payload) -> str:
    return type(payload).__name__


# ---------------------------------------------------------------------- format detection


@pytest.mark.parametrize("payload", PAYLOADS, ids=ids)
def test_each_format_is_told_by_its_first_byte(payload: Payload) -> None:
    assert format_of(payload.to_body()) is MSGPACK
    assert format_of(encode_body(payload, JSON)) is JSON


@pytest.mark.parametrize("prefix", [b" ", b"\t", b"\n", b"\r", b" \r\n\t  \n"])
def test_json_whitespace_before_the_brace_is_still_json(prefix: bytes) -> None:
    body = prefix + encode_body(SubscriptionStop("s"), JSON)
    assert format_of(body) is JSON
    assert decode_body(SubscriptionStop, body) == SubscriptionStop("s")


@pytest.mark.parametrize("body", [
    b"", b" ", b"\n\t", b"[]", b" [1]", b"\x0b{}", b"\x0c{}", b"\xa0{}", b"\x00{", b"x{",
])
def test_anything_else_is_msgpack(body: bytes) -> None:
    assert format_of(body) is MSGPACK
    with pytest.raises(PayloadError) as info:  # which then says what is wrong with it
        decode_body(SubscriptionStop, body)
    assert info.value.reason == "bad-payload"


@settings(max_examples=200)
@given(st.dictionaries(st.text(max_size=5),
                       st.integers(-(2 ** 63), 2 ** 64 - 1) | st.text(max_size=5), max_size=4),
       st.sampled_from([0, 16, 70_000]))
def test_a_msgpack_map_is_never_taken_for_json(data: dict[str, Any], more: int) -> None:
    data.update({f"k{i}": i for i in range(more)})  # fixmap, map16 and map32 headers
    assert format_of(msgpack.packb(data, use_bin_type=True)) is MSGPACK


# ---------------------------------------------------------------------- round trips


@pytest.mark.parametrize("fmt", [MSGPACK, JSON], ids=lambda f: f.value)
@pytest.mark.parametrize("payload", PAYLOADS, ids=ids)
def test_round_trip_of_every_payload_type_in_both_formats(payload: Payload,
                                                          fmt: BodyFormat) -> None:
    body = encode_body(payload, fmt)
    assert format_of(body) is fmt
    decoded = decode_body(type(payload), body)
    assert decoded == payload
    assert type(decoded) is type(payload)


def test_every_payload_type_is_covered() -> None:
    assert {type(p) for p in PAYLOADS} == set(PAYLOAD_TYPES.values())


def test_json_requests_are_named_and_typed_by_the_schema() -> None:
    schema = schema_of(TUNER)
    station = {"name": "FM4", "country": "AUSTRIA", "frequency_mhz": 103.8}
    method = TUNER.methods["add_favorite"]
    request = Request("r", "add_favorite", [station], method.param_datatypes)
    body = encode_body(request, JSON, schema=schema)
    sent = json.loads(body)
    assert sent["methodName"] == "addFavorite"
    assert sent["paramDatatypes"] == ["test.Station"]
    assert sent["params"] == [{"_typeName": "test.Station", "name": "FM4",
                               "country": "AUSTRIA", "frequencyMhz": 103.8}]
    assert decode_body(Request, body, schema=schema) == request
    # bytes travel as joynr's byte arrays, and come back as bytes
    checksum = TUNER.methods["checksum"]
    call = Request("r2", "checksum", [b"\x00\xff", 2], checksum.param_datatypes)
    body = encode_body(call, JSON, schema=schema)
    assert json.loads(body)["params"] == [[0, -1], 2]
    assert decode_body(Request, body, schema=schema) == call
    reply = Reply("r2", [b"\x01\x80"])
    types = reply_types(checksum)
    assert decode_body(Reply, encode_body(reply, JSON, types=types), types=types) == reply


def test_json_attribute_accessors_and_names() -> None:
    schema = schema_of(TUNER)
    get = Request("r", "get_current_station", [], [])
    body = encode_body(get, JSON, schema=schema)
    assert json.loads(body)["methodName"] == "getCurrentStation"
    assert decode_body(Request, body, schema=schema) == get
    subscribe = SubscriptionRequest("s", "current_station", {})
    body = encode_body(subscribe, JSON, schema=schema)
    assert json.loads(body)["subscribedToName"] == "currentStation"
    assert decode_body(SubscriptionRequest, body, schema=schema) == subscribe
    multicast = MulticastSubscriptionRequest("s", "new_station", "p/newStation", {}, [])
    body = encode_body(multicast, JSON, schema=schema)
    assert json.loads(body)["subscribedToName"] == "newStation"
    assert decode_body(MulticastSubscriptionRequest, body, schema=schema) == multicast


def test_json_application_errors_carry_the_method_error_enum() -> None:
    method = TUNER.methods["remove_favorite"]
    reply = Reply("r", error=ApplicationError("NOT_FOUND", "gone").to_wire())
    body = encode_body(reply, JSON, error_enum=method.error_enum)
    assert json.loads(body)["error"]["error"] == {"_typeName": "test.FavoriteError",
                                                  "name": "NOT_FOUND"}
    assert decode_body(Reply, body, error_enum=method.error_enum) == reply


def test_typed_values_of_a_publication_and_a_multicast() -> None:
    station = to_wire(Station("X", Country.GERMANY))
    types = [tp for _, tp in TUNER.broadcasts["new_station"].outputs]
    multicast = MulticastPublication("p/new_station", [station, b"\x02"])
    body = encode_body(multicast, JSON, types=types)
    assert json.loads(body)["response"][1] == [2]
    assert decode_body(MulticastPublication, body, types=types) == multicast
    publication = Publication("s", [station])
    types = [TUNER.attributes["current_station"].type]
    body = encode_body(publication, JSON, types=types)
    assert decode_body(Publication, body, types=types) == publication


def test_the_schema_is_made_once_per_interface() -> None:
    assert schema_of(TUNER) is schema_of(interface_def(Tuner))

    @interface("test/Other")
    class Other:
        async def ping(self) -> None: ...

    assert schema_of(interface_def(Other)) is not schema_of(TUNER)
    assert schema_of(interface_def(Other)).definition is interface_def(Other)


# ---------------------------------------------------------------------- refusals


@pytest.mark.parametrize(("body", "reason"), [
    (b"{", "not-json"),
    (b"{\"_typeName\": \"joynr.Request\", \"methodName\": NaN}", "not-json"),
    (b"{\"_typeName\": \"joynr.Reply\", \"requestReplyId\": \"r\"}", "bad-type-name"),
    (b"{\"methodName\": \"m\"}", "bad-type-name"),
    (b"{\"_typeName\": \"joynr.Request\", \"methodName\": 1, \"requestReplyId\": \"r\"}",
     "bad-member"),
    (b"{\"_typeName\": \"joynr.Request\", \"methodName\": \"m\"}", "missing-member"),
    (b" {\"_typeName\": \"joynr.Request\", \"x\": " + b"[" * 100 + b"]" * 100 + b"}",
     "too-deep"),
    (b"{\"_typeName\": \"joynr.Request\", \"methodName\": \"\\ud800\"}", "not-json"),
    (b"{\xff}", "not-json"),
])
def test_hostile_json_bodies_are_refused_with_their_reason(body: bytes, reason: str) -> None:
    assert format_of(body) is JSON
    with pytest.raises(PayloadError) as info:
        decode_body(Request, body)
    assert info.value.reason == reason
    assert str(info.value)


def test_json_values_that_do_not_fit_the_schema_are_refused() -> None:
    body = json.dumps({"_typeName": "joynr.Request", "requestReplyId": "r",
                       "methodName": "addFavorite", "paramDatatypes": ["test.Station"],
                       "params": [{"_typeName": "test.Station", "name": 5}]}).encode()
    with pytest.raises(PayloadError) as info:
        decode_body(Request, body, schema=schema_of(TUNER))
    assert info.value.reason == "bad-value"
    # without the schema the same body reads (untyped): its id can be answered
    assert decode_body(Request, body).request_reply_id == "r"


@pytest.mark.parametrize("body", [
    b"\xc1", msgpack.packb([1, 2]), msgpack.packb({"request_reply_id": 1}),
    msgpack.packb({"method_name": "m"}), msgpack.packb({1: 2}), b"\x81",
])
def test_hostile_msgpack_bodies_are_refused_with_a_reason(body: bytes) -> None:
    assert format_of(body) is MSGPACK
    with pytest.raises(PayloadError) as info:
        decode_body(Request, body)
    assert info.value.reason == "bad-payload"
    assert str(info.value)


@settings(max_examples=300)
@given(st.binary(max_size=64), st.sampled_from(list(PAYLOAD_TYPES.values())),
       st.sampled_from([b"", b"{", b" {\"_typeName\":"]))
def test_random_bodies_decode_or_are_refused(data: bytes, cls: type[Payload],
                                             prefix: bytes) -> None:
    for schema in (None, schema_of(TUNER)):
        try:
            decode_body(cls, prefix + data, schema=schema)
        except PayloadError as exc:
            assert exc.reason


def test_unencodable_payloads_are_refused_in_both_formats() -> None:
    for fmt in (MSGPACK, JSON):
        with pytest.raises(PayloadError) as info:
            encode_body(Request("r", "m", [object()], ["Object"]), fmt)
        assert info.value.reason == "unencodable"
    with pytest.raises(PayloadError) as info:
        encode_body(Reply("r", [2 ** 64]), JSON)
    assert info.value.reason == "unencodable"


# ---------------------------------------------------------------------- the custom parameter


def entry(*parameters: CustomParameter) -> DiscoveryEntry:
    return DiscoveryEntry(Version(1, 0), "d", "test/Tuner", "pid",
                          ProviderQos(custom_parameters=list(parameters)), 0, 0)


def test_a_proxy_writes_msgpack_only_to_a_provider_that_says_so() -> None:
    assert proxy_body_format(entry(CustomParameter(BODY_PARAMETER, BODY_PARAMETER_VALUE))
                             ) is MSGPACK
    assert proxy_body_format(entry(CustomParameter("keyword", "x"),
                                   CustomParameter("pyjoynr-body", "msgpack"))) is MSGPACK
    assert proxy_body_format(entry()) is JSON  # joynr's providers
    assert proxy_body_format(entry(CustomParameter(BODY_PARAMETER, "json"))) is JSON
    assert proxy_body_format(entry(CustomParameter("keyword", "msgpack"))) is JSON


def test_the_parameter_is_added_once_to_a_copy() -> None:
    qos = ProviderQos(custom_parameters=[CustomParameter("keyword", "k")], priority=3,
                      scope=ProviderScope.GLOBAL)
    marked = with_body_parameter(qos)
    assert marked.custom_parameters == [CustomParameter("keyword", "k"),
                                        CustomParameter("pyjoynr-body", "msgpack")]
    assert (marked.priority, marked.scope) == (3, ProviderScope.GLOBAL)
    assert qos.custom_parameters == [CustomParameter("keyword", "k")]  # not changed
    assert with_body_parameter(marked) is marked
    own = ProviderQos(custom_parameters=[CustomParameter(BODY_PARAMETER, "json")])
    assert with_body_parameter(own).custom_parameters == [CustomParameter(BODY_PARAMETER,
                                                                          "json")]


# ---------------------------------------------------------------------- error answers


def message(kind: MessageType, body: bytes) -> Message:
    return Message(type=kind, sender="proxy-pid", recipient="provider-pid",
                   expiry_date_ms=1_000, body=body, custom_headers={"h": "v"})


@pytest.mark.parametrize("fmt", [MSGPACK, JSON], ids=lambda f: f.value)
def test_an_error_answer_to_a_request_is_in_its_format(fmt: BodyFormat) -> None:
    request = message(MessageType.REQUEST, encode_body(Request("rid", "m"), fmt))
    answer = make_error_answer(request, MessageNotSentError("not sent"), expiry_date_ms=5_000)
    assert format_of(answer.body) is fmt
    assert (answer.type, answer.sender, answer.recipient) == (
        MessageType.REPLY, "provider-pid", "proxy-pid")
    assert answer.expiry_date_ms == 5_000
    assert answer.custom_headers == {"h": "v"}
    assert decode_body(Reply, answer.body) == Reply("rid", error={
        "type": "JoynrMessageNotSentException", "message": "not sent"})


@pytest.mark.parametrize("fmt", [MSGPACK, JSON], ids=lambda f: f.value)
@pytest.mark.parametrize("payload", [
    SubscriptionRequest("sid", "current_station"),
    BroadcastSubscriptionRequest("sid", "new_station"),
    MulticastSubscriptionRequest("sid", "new_station", "p/new_station"),
], ids=ids)
def test_an_error_answer_to_a_subscription_request_is_in_its_format(
        payload: Payload, fmt: BodyFormat) -> None:
    request = message(payload.message_type, encode_body(payload, fmt))
    answer = make_error_answer(request, ProviderRuntimeError("no"), expiry_date_ms=5)
    assert format_of(answer.body) is fmt
    reply = decode_body(SubscriptionReply, answer.body)
    assert answer.type is MessageType.SUBSCRIPTION_REPLY
    assert reply.subscription_id == "sid"
    assert reply.error is not None
    assert "no" in reply.error["message"]


@pytest.mark.parametrize("body", [b"{\"_typeName\": \"joynr.Request\"}", b"{", b"\xc1"])
def test_no_error_answer_to_a_bad_request_body(body: bytes) -> None:
    with pytest.raises(PayloadError):
        make_error_answer(message(MessageType.REQUEST, body), ProviderRuntimeError("x"),
                          expiry_date_ms=1)


def test_no_error_answer_to_types_that_are_not_answered() -> None:
    for kind in (MessageType.ONE_WAY, MessageType.PUBLICATION, MessageType.MULTICAST):
        with pytest.raises(PayloadError, match="not answered"):
            make_error_answer(message(kind, encode_body(SubscriptionStop("s"), JSON)),
                              ProviderRuntimeError("x"), expiry_date_ms=1)


@pytest.mark.parametrize("fmt", [MSGPACK, JSON], ids=lambda f: f.value)
@pytest.mark.parametrize("kind", [MessageType.REPLY, MessageType.SUBSCRIPTION_REPLY],
                         ids=lambda k: k.name)
def test_an_answer_that_cannot_be_sent_is_replaced_by_an_error_in_its_format(
        fmt: BodyFormat, kind: MessageType) -> None:
    payload = (Reply("rid", response=["x" * 1000]) if kind is MessageType.REPLY
               else SubscriptionReply("sid"))
    answer = Message(type=kind, sender="provider-pid", recipient="proxy-pid",
                     expiry_date_ms=1_000, body=encode_body(payload, fmt),
                     custom_headers={"c-z4": "rid"})
    error = make_error_reply(answer, MessageNotSentError("too big"), expiry_date_ms=5_000)
    assert format_of(error.body) is fmt
    assert (error.type, error.sender, error.recipient, error.custom_headers) == (
        kind, "provider-pid", "proxy-pid", {"c-z4": "rid"})
    assert error.id != answer.id and error.expiry_date_ms == 5_000
    if kind is MessageType.REPLY:
        assert decode_body(Reply, error.body) == Reply("rid", error={
            "type": "JoynrMessageNotSentException", "message": "too big"})
    else:
        got = decode_body(SubscriptionReply, error.body)
        assert got.subscription_id == "sid" and got.error is not None
        assert "too big" in got.error["message"]


def test_only_answers_are_replaced_by_an_error() -> None:
    request = message(MessageType.REQUEST, encode_body(Request("rid", "m"), MSGPACK))
    with pytest.raises(PayloadError):
        make_error_reply(request, MessageNotSentError("x"), expiry_date_ms=5_000)
