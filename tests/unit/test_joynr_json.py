"""joynr's JSON payloads (runtime.joynr_json): golden bodies, every message type, every
exception both ways, typed values, overloads, round trips and hostile bodies."""

from __future__ import annotations

import contextlib
import enum
import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyjoynr.programming.system_interfaces import Routing
from pyjoynr.runtime import joynr_json as joynr_json_module
from pyjoynr.runtime.errors import (
    ApplicationError,
    JoynrError,
    MessageNotSentError,
    MethodInvocationError,
    PublicationMissedError,
    SubscriptionError,
    error_from_wire,
)
from pyjoynr.runtime.interface import (
    Float,
    Int16,
    Int32,
    ValueTypeError,
    attribute,
    broadcast,
    datatype_name,
    errors,
    from_wire,
    interface,
    interface_def,
    joynr_datatypes,
    joynr_name,
    one_way,
    to_wire,
    wire_name,
)
from pyjoynr.runtime.joynr_json import (
    MAX_DEPTH,
    TYPE_NAMES,
    JoynrJsonError,
    JoynrSchema,
    decode,
    decode_any,
    encode,
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
)

# ---------------------------------------------------------------------- a declared interface


@joynr_name("vehicle.Country")
class Country(enum.Enum):
    AUSTRIA = "AUSTRIA"
    GERMANY = "GERMANY"


@joynr_name("vehicle.RadioStation", members={"track_info": "trackInfo_"})
@dataclass
class RadioStation:
    name: str
    country: Country
    frequency: float = 0.0
    track_info: str | None = None
    tags: list[str] = field(default_factory=list)


@joynr_name("vehicle.Radio.AddFavoriteStationErrorEnum")
class FavoriteError(enum.Enum):
    DUPLICATE = "DUPLICATE"
    FULL = "FULL"


@interface("vehicle/Radio", version=(2, 1))
class Radio:
    current_station = attribute(RadioStation)
    volume = attribute(int, readonly=True)
    new_station = broadcast(station=RadioStation)

    @errors(FavoriteError)
    async def add_favorite_station(self, station: RadioStation) -> bool: ...

    @wire_name("seek")
    async def seek_by_name(self, name: str) -> RadioStation: ...

    @wire_name("seek")
    @joynr_datatypes("Integer")
    async def seek_by_number(self, number: int) -> RadioStation: ...

    @wire_name("seek")
    async def seek_many(self, numbers: list[int]) -> list[RadioStation]: ...

    async def all_kinds(  # noqa: PLR0917 - one parameter of each kind
            self, s: str, b: bool, i: int, f: float, data: bytes,
                        numbers: list[int], country: Country, station: RadioStation,
                        counts: dict[str, int], maybe: str | None, anything: Any) -> None: ...

    @one_way
    async def ping(self, n: int) -> None: ...


RADIO = JoynrSchema(interface_def(Radio))
ROUTING = JoynrSchema(interface_def(Routing))
FM4 = RadioStation("FM4", Country.AUSTRIA, 103.8, None, ["alt"])
FM4_WIRE = to_wire(FM4)
FM4_JSON = {"_typeName": "vehicle.RadioStation", "country": "AUSTRIA", "frequency": 103.8,
            "name": "FM4", "tags": ["alt"], "trackInfo_": None}


def j(body: bytes) -> Any:
    return json.loads(body)


def text(obj: Any) -> bytes:
    """The JSON of ``obj`` as joynr's Java runtime writes it: compact, members sorted."""
    return json.dumps(obj, separators=(",", ":"), sort_keys=True).encode()


# ---------------------------------------------------------------------- golden bodies

ADD_NEXT_HOP = (
    b'{"_typeName":"joynr.Request","methodName":"addNextHop",'
    b'"paramDatatypes":["String","joynr.system.RoutingTypes.WebSocketClientAddress","Boolean"],'
    b'"params":["<participantId>",{"_typeName":"joynr.system.RoutingTypes.WebSocketClientAddress",'
    b'"id":"<clientId>"},false],"requestReplyId":"<id>"}'
)


def test_golden_add_next_hop_request_both_ways() -> None:
    request = decode(Request, ADD_NEXT_HOP, schema=ROUTING)
    # the overload of the struct: its fields as this project's wire form of a struct
    assert request == Request(
        "<id>", "add_next_hop", ["<participantId>", {"id": "<clientId>"}, False],
        ["String", "joynr.system.RoutingTypes.WebSocketClientAddress", "Boolean"])
    assert encode(request, schema=ROUTING) == ADD_NEXT_HOP


def test_golden_get_reply_to_address_and_its_reply() -> None:
    body = (b'{"_typeName":"joynr.Request","methodName":"getReplyToAddress",'
            b'"paramDatatypes":[],"params":[],"requestReplyId":"r1"}')
    request = decode(Request, body, schema=ROUTING)
    assert request == Request("r1", "get_reply_to_address", [], [])
    assert encode(request, schema=ROUTING) == body
    address = ('{"_typeName":"joynr.system.RoutingTypes.MqttAddress",'
               '"brokerUri":"joynrdefaultgbid","topic":"cc/1"}')
    reply = Reply("r1", [address])
    method = interface_def(Routing).accessors["get_reply_to_address"]
    expected = text({"_typeName": "joynr.Reply", "requestReplyId": "r1", "response": [address]})
    assert encode(reply, types=[method.returns]) == expected
    assert decode(Reply, expected, types=[method.returns]) == reply


def test_void_reply_carries_an_empty_response() -> None:
    assert encode(Reply("r", [])) == (
        b'{"_typeName":"joynr.Reply","requestReplyId":"r","response":[]}')


def test_a_parsed_body_reads_untyped_then_typed_as_decode_reads_it() -> None:
    """parse + decode_parsed (a proxy reads a reply untyped to find its call, then typed,
    from one parse) give what decode gives, and reading leaves the parsed body as it was."""
    body = encode(Reply("r", [FM4_WIRE]), types=[RadioStation])
    data = joynr_json_module.parse(Reply, body)
    before = json.loads(json.dumps(data))
    assert joynr_json_module.decode_parsed(Reply, data) == decode(Reply, body)
    assert joynr_json_module.decode_parsed(Reply, data, types=[RadioStation]) == decode(
        Reply, body, types=[RadioStation])
    assert data == before
    with pytest.raises(JoynrJsonError) as refused:
        joynr_json_module.parse(Publication, body)
    assert refused.value.reason == "bad-type-name"


GOLDEN: list[tuple[Payload, dict[str, Any]]] = [
    (Request("r1", "add_favorite_station", [FM4_WIRE], ["vehicle.RadioStation"]),
     {"_typeName": "joynr.Request", "methodName": "addFavoriteStation",
      "paramDatatypes": ["vehicle.RadioStation"], "params": [FM4_JSON], "requestReplyId": "r1"}),
    (OneWayRequest("ping", [7], ["Long"]),
     {"_typeName": "joynr.OneWayRequest", "methodName": "ping", "paramDatatypes": ["Long"],
      "params": [7]}),
    (Request("r2", "get_current_station", [], []),
     {"_typeName": "joynr.Request", "methodName": "getCurrentStation", "paramDatatypes": [],
      "params": [], "requestReplyId": "r2"}),
    (Request("r3", "set_current_station", [FM4_WIRE], ["vehicle.RadioStation"]),
     {"_typeName": "joynr.Request", "methodName": "setCurrentStation",
      "paramDatatypes": ["vehicle.RadioStation"], "params": [FM4_JSON], "requestReplyId": "r3"}),
    (SubscriptionRequest("s1", "current_station", {"min_interval_ms": 100,
                                                    "publication_ttl_ms": 10_000,
                                                    "expiry_date_ms": 0}),
     {"_typeName": "joynr.SubscriptionRequest", "subscriptionId": "s1",
      "subscribedToName": "currentStation",
      "qos": {"_typeName": "joynr.OnChangeSubscriptionQos", "expiryDateMs": 0,
              "minIntervalMs": 100, "publicationTtlMs": 10_000}}),
    (SubscriptionRequest("s2", "volume", {"period_ms": 500, "alert_after_interval_ms": 0,
                                          "publication_ttl_ms": 1000, "expiry_date_ms": 9}),
     {"_typeName": "joynr.SubscriptionRequest", "subscriptionId": "s2",
      "subscribedToName": "volume",
      "qos": {"_typeName": "joynr.PeriodicSubscriptionQos", "alertAfterIntervalMs": 0,
              "expiryDateMs": 9, "periodMs": 500, "publicationTtlMs": 1000}}),
    (SubscriptionRequest("s3", "volume", {"min_interval_ms": 1, "max_interval_ms": 2,
                                          "alert_after_interval_ms": 3,
                                          "publication_ttl_ms": 4, "expiry_date_ms": 5}),
     {"_typeName": "joynr.SubscriptionRequest", "subscriptionId": "s3",
      "subscribedToName": "volume",
      "qos": {"_typeName": "joynr.OnChangeWithKeepAliveSubscriptionQos",
              "alertAfterIntervalMs": 3, "expiryDateMs": 5, "maxIntervalMs": 2,
              "minIntervalMs": 1, "publicationTtlMs": 4}}),
    (BroadcastSubscriptionRequest("s4", "new_station", {"min_interval_ms": 0},
                                  {"country": "AUSTRIA"}),
     {"_typeName": "joynr.BroadcastSubscriptionRequest", "subscriptionId": "s4",
      "subscribedToName": "newStation",
      "qos": {"_typeName": "joynr.OnChangeSubscriptionQos", "minIntervalMs": 0},
      "filterParameters": {"_typeName": "joynr.BroadcastFilterParameters",
                           "filterParameters": {"country": "AUSTRIA"}}}),
    (MulticastSubscriptionRequest("s5", "new_station", "prov/newStation/eu/+",
                                  {"expiry_date_ms": 0}, ["eu", "+"]),
     {"_typeName": "joynr.MulticastSubscriptionRequest", "subscriptionId": "s5",
      "subscribedToName": "newStation", "multicastId": "prov/newStation/eu/+",
      "qos": {"_typeName": "joynr.MulticastSubscriptionQos", "expiryDateMs": 0}}),
    (SubscriptionReply("s1"),
     {"_typeName": "joynr.SubscriptionReply", "subscriptionId": "s1"}),
    (SubscriptionReply("s1", {"type": "SubscriptionException", "message": "no",
                              "subscription_id": "s1"}),
     {"_typeName": "joynr.SubscriptionReply", "subscriptionId": "s1",
      "error": {"_typeName": "joynr.exceptions.SubscriptionException", "detailMessage": "no",
                "subscriptionId": "s1"}}),
    (SubscriptionStop("s1"), {"_typeName": "joynr.SubscriptionStop", "subscriptionId": "s1"}),
    (Publication("s1", [FM4_WIRE]),
     {"_typeName": "joynr.SubscriptionPublication", "subscriptionId": "s1",
      "response": [FM4_JSON]}),
    (Publication("s1", None, {"type": "PublicationMissedException", "message": "late",
                              "subscription_id": "s1"}),
     {"_typeName": "joynr.SubscriptionPublication", "subscriptionId": "s1",
      "error": {"_typeName": "joynr.exceptions.PublicationMissedException",
                "detailMessage": "late", "subscriptionId": "s1"}}),
    (MulticastPublication("prov/newStation", [FM4_WIRE]),
     {"_typeName": "joynr.MulticastPublication", "multicastId": "prov/newStation",
      "response": [FM4_JSON]}),
    (Reply("r1", [True]), {"_typeName": "joynr.Reply", "requestReplyId": "r1",
                           "response": [True]}),
    (Reply("r1", None, {"type": "ApplicationException", "message": "twice",
                        "error": "DUPLICATE"}),
     {"_typeName": "joynr.Reply", "requestReplyId": "r1",
      "error": {"_typeName": "joynr.exceptions.ApplicationException", "detailMessage": "twice",
                "error": {"_typeName": "vehicle.Radio.AddFavoriteStationErrorEnum",
                          "name": "DUPLICATE"}}}),
]


def _context(payload: Payload) -> dict[str, Any]:
    """The declared types the caller knows for ``payload`` (Radio's)."""
    if isinstance(payload, (Publication, MulticastPublication)):
        return {"schema": RADIO, "types": [RadioStation]}
    if isinstance(payload, Reply):
        method = interface_def(Radio).methods["add_favorite_station"]
        return {"types": [bool], "error_enum": method.error_enum}
    return {"schema": RADIO}


@pytest.mark.parametrize(("payload", "expected"), GOLDEN,
                         ids=[f"{i}-{type(p).__name__}" for i, (p, _) in enumerate(GOLDEN)])
def test_golden_every_message_type(payload: Payload, expected: dict[str, Any]) -> None:
    body = encode(payload, **_context(payload))
    assert body == text(expected)  # byte-exact: _typeName first, members sorted, compact
    assert decode(type(payload), body, **_context(payload)) == payload
    assert decode_any(body, **_context(payload)) == payload


def test_every_payload_type_has_its_joynr_name() -> None:
    assert {cls.__name__: name for cls, name in TYPE_NAMES.items()} == {
        "Request": "joynr.Request", "Reply": "joynr.Reply",
        "OneWayRequest": "joynr.OneWayRequest", "SubscriptionRequest": "joynr.SubscriptionRequest",
        "BroadcastSubscriptionRequest": "joynr.BroadcastSubscriptionRequest",
        "MulticastSubscriptionRequest": "joynr.MulticastSubscriptionRequest",
        "SubscriptionReply": "joynr.SubscriptionReply",
        "SubscriptionStop": "joynr.SubscriptionStop",
        "Publication": "joynr.SubscriptionPublication",
        "MulticastPublication": "joynr.MulticastPublication"}


def test_decoding_ignores_member_order_unknown_members_and_nulls() -> None:
    body = (b'{"requestReplyId":"x","statelessAsyncCallbackMethodId":"a#b","params":null,'
            b'"methodName":"getVolume","_typeName":"joynr.Request"}')
    assert decode(Request, body, schema=RADIO) == Request("x", "get_volume", [], [])
    body = b'{"response":null,"error":null,"requestReplyId":"x","_typeName":"joynr.Reply"}'
    assert decode(Reply, body) == Reply("x")
    body = b'{"_typeName":"joynr.SubscriptionRequest","subscriptionId":"s","subscribedToName":"a"}'
    assert decode(SubscriptionRequest, body) == SubscriptionRequest("s", "a", {})


def test_qos_types_not_implied_by_their_members_are_kept() -> None:
    body = text({"_typeName": "joynr.SubscriptionRequest", "subscriptionId": "s",
                 "subscribedToName": "a",
                 "qos": {"_typeName": "joynr.PeriodicSubscriptionQos", "expiryDateMs": 4}})
    request = decode(SubscriptionRequest, body)
    assert request.qos == {"expiry_date_ms": 4, "type": "PeriodicSubscriptionQos"}
    assert encode(request) == body


# ---------------------------------------------------------------------- exceptions

# (project error map, joynr name, Java name, the joynr members besides _typeName)
EXCEPTIONS: list[tuple[dict[str, Any], str, str, dict[str, Any]]] = [
    ({"type": "ApplicationException", "message": "m", "error": "FULL"},
     "ApplicationException", "joynr.exceptions.ApplicationException",
     {"detailMessage": "m", "error": {"_typeName": "vehicle.Radio.AddFavoriteStationErrorEnum",
                                      "name": "FULL"}}),
    ({"type": "ProviderRuntimeException", "message": "m"}, "ProviderRuntimeException",
     "joynr.exceptions.ProviderRuntimeException", {"detailMessage": "m"}),
    ({"type": "MethodInvocationException", "message": "m",
      "provider_version": {"major_version": 2, "minor_version": 1}},
     "MethodInvocationException", "joynr.exceptions.MethodInvocationException",
     {"detailMessage": "m", "providerVersion": {"_typeName": "joynr.types.Version",
                                                "majorVersion": 2, "minorVersion": 1}}),
    ({"type": "MethodInvocationException", "message": "m"}, "MethodInvocationException",
     "joynr.exceptions.MethodInvocationException", {"detailMessage": "m"}),
    ({"type": "PublicationMissedException", "message": "m", "subscription_id": "s"},
     "PublicationMissedException", "joynr.exceptions.PublicationMissedException",
     {"detailMessage": "m", "subscriptionId": "s"}),
    ({"type": "SubscriptionException", "message": "m", "subscription_id": "s"},
     "SubscriptionException", "io.joynr.exceptions.SubscriptionException",
     {"detailMessage": "m", "subscriptionId": "s"}),
    ({"type": "DiscoveryException", "message": "m"}, "DiscoveryException",
     "io.joynr.exceptions.DiscoveryException", {"detailMessage": "m"}),
    # (written as the type every joynr runtime decodes, its meaning in the message)
    ({"type": "JoynrMessageNotSentException", "message": "m"}, "ProviderRuntimeException",
     "joynr.exceptions.ProviderRuntimeException",
     {"detailMessage": "JoynrMessageNotSentException: m"}),
    ({"type": "JoynrTimeoutException", "message": "m"}, "JoynrTimeOutException",
     "io.joynr.exceptions.JoynrTimeoutException", {"detailMessage": "m"}),
    ({"type": "JoynrDelayMessageException", "message": "m", "delay_ms": 50},
     "JoynrDelayMessageException", "io.joynr.exceptions.JoynrDelayMessageException",
     {"detailMessage": "m", "delayMs": 50}),
    ({"type": "JoynrMessageExpiredException", "message": "m"}, "JoynrMessageExpiredException",
     "io.joynr.exceptions.JoynrMessageExpiredException", {"detailMessage": "m"}),
    ({"type": "JoynrRuntimeException", "message": "m"}, "JoynrRuntimeException",
     "io.joynr.exceptions.JoynrRuntimeException", {"detailMessage": "m"}),
]


#: the exceptions not every joynr runtime decodes under joynr's names (by those names)
DECODED_AS_PROVIDER_RUNTIME = frozenset({"DiscoveryException", "JoynrTimeOutException",
                                         "JoynrMessageExpiredException", "JoynrRuntimeException"})


@pytest.mark.parametrize(("error", "joynr", "java", "members"), EXCEPTIONS,
                         ids=[f"{e[1]}-{len(e[3])}" for e in EXCEPTIONS])
def test_every_exception_both_ways_and_both_prefixes(
        error: dict[str, Any], joynr: str, java: str, members: dict[str, Any]) -> None:
    enum_ = FavoriteError if joynr == "ApplicationException" else None
    reply = Reply("r", None, error)
    for name, java_names in ((f"joynr.exceptions.{joynr}", False), (java, True)):
        body = encode(reply, error_enum=enum_, java_exception_names=java_names)
        written_name, written = name, members
        if joynr in DECODED_AS_PROVIDER_RUNTIME and not java_names:
            # (with joynr's names, as the type every joynr runtime decodes, its own type
            # at the start of the message)
            written_name = "joynr.exceptions.ProviderRuntimeException"
            written = {**members,
                       "detailMessage": f"{error['type']}: {members['detailMessage']}"}
        assert body == text({"_typeName": "joynr.Reply", "requestReplyId": "r",
                             "error": {"_typeName": written_name, **written}})
        # and read back as it was
        assert decode(Reply, body, error_enum=enum_) == reply
    for prefix in ("joynr.exceptions.", "io.joynr.exceptions."):
        body = text({"_typeName": "joynr.Reply", "requestReplyId": "r",
                     "error": {"_typeName": prefix + joynr, **members}})
        assert decode(Reply, body, error_enum=enum_) == reply
    # and to the project's exception class (joynr's two internal Java exceptions have none:
    # they become the base class, saying what they were)
    exc = error_from_wire(decode(Reply, body, error_enum=enum_).error)  # type: ignore[attr-defined]
    if joynr in ("JoynrDelayMessageException", "JoynrMessageExpiredException"):
        assert type(exc) is JoynrError and joynr in exc.message
    else:
        assert exc.to_wire()["type"] == error["type"]


def test_exceptions_never_carry_members_they_do_not_have() -> None:
    error = {"type": "ProviderRuntimeException", "message": "m", "error": "FULL",
             "subscription_id": "s", "provider_version": {"major_version": 1}, "delay_ms": 3}
    assert j(encode(Reply("r", None, error)))["error"] == {
        "_typeName": "joynr.exceptions.ProviderRuntimeException", "detailMessage": "m"}


def test_exceptions_map_to_the_project_classes() -> None:
    decoded = decode(Reply, text({"_typeName": "joynr.Reply", "requestReplyId": "r", "error": {
        "_typeName": "io.joynr.exceptions.SubscriptionException", "detailMessage": "m",
        "subscriptionId": "s"}}))
    assert isinstance(decoded, Reply)
    exc = error_from_wire(decoded.error)
    assert isinstance(exc, SubscriptionError) and exc.subscription_id == "s"
    missed = error_from_wire({"type": "PublicationMissedException", "message": "m",
                              "subscription_id": "s"})
    assert isinstance(missed, PublicationMissedError) and missed.to_wire()["subscription_id"] == "s"
    app = error_from_wire(decode(Reply, encode(
        Reply("r", None, ApplicationError("FULL", "x").to_wire()), error_enum=FavoriteError),
        error_enum=FavoriteError).error)  # type: ignore[attr-defined]
    assert isinstance(app, ApplicationError) and app.error == "FULL"
    assert isinstance(error_from_wire({"type": "MethodInvocationException", "message": ""}),
                      MethodInvocationError)


def test_application_exception_without_a_declared_enum_keeps_the_enum_name() -> None:
    body = text({"_typeName": "joynr.Reply", "requestReplyId": "r", "error": {
        "_typeName": "joynr.exceptions.ApplicationException", "detailMessage": "m",
        "error": {"_typeName": "vehicle.Radio$AddFavoriteStationErrorEnum", "name": "FULL"}}})
    reply = decode(Reply, body)
    assert isinstance(reply, Reply)
    assert reply.error == {"type": "ApplicationException", "message": "m", "error": "FULL",
                           "error_enum": "vehicle.Radio.AddFavoriteStationErrorEnum"}
    with pytest.raises(JoynrJsonError) as refused:
        decode(Reply, body.replace(b'"FULL"', b'"EMPTY"'), error_enum=FavoriteError)
    assert refused.value.reason == "bad-value"


def test_subscription_reply_errors_are_subscription_exceptions() -> None:
    body = encode(SubscriptionReply("s", {"type": "MethodInvocationException", "message": "x"}))
    assert j(body)["error"] == {"_typeName": "joynr.exceptions.SubscriptionException",
                                "detailMessage": "MethodInvocationException: x",
                                "subscriptionId": "s"}


# ---------------------------------------------------------------------- typed values


def test_every_typed_value_kind() -> None:
    params = ["s", True, -5, 1.5, b"\x00\x7f\x80\xff", [1, 2], "GERMANY", FM4_WIRE,
              {"a": 1}, None, {"free": [1, "x"]}]
    method = interface_def(Radio).methods["all_kinds"]
    request = Request("r", "all_kinds", params, method.param_datatypes)
    body = encode(request, schema=RADIO)
    assert j(body) == {
        "_typeName": "joynr.Request", "methodName": "allKinds", "requestReplyId": "r",
        "paramDatatypes": ["String", "Boolean", "Long", "Double", "Byte[]", "Long[]",
                           "vehicle.Country", "vehicle.RadioStation", "Map", "String",
                           "Object"],
        "params": ["s", True, -5, 1.5, [0, 127, -128, -1], [1, 2], "GERMANY", FM4_JSON,
                   {"a": 1}, None, {"free": [1, "x"]}]}
    assert decode(Request, body, schema=RADIO) == request


def test_declared_joynr_names_are_the_project_datatype_names() -> None:
    assert datatype_name(RadioStation) == "vehicle.RadioStation"
    assert datatype_name(list[Country]) == "vehicle.Country[]"

    @dataclass
    class Plain:
        x: int

    assert datatype_name(Plain) == "Plain"  # the default: the class name


def test_struct_subtypes_and_wrong_type_names() -> None:
    @joynr_name("vehicle.DabStation")
    @dataclass
    class DabStation(RadioStation):
        ensemble: str = ""

    body = text({"_typeName": "joynr.SubscriptionPublication", "subscriptionId": "s",
                 "response": [{**FM4_JSON, "_typeName": "vehicle.DabStation", "ensemble": "E"}]})
    publication = decode(Publication, body, types=[RadioStation])
    assert isinstance(publication, Publication)
    assert publication.response == [{**FM4_WIRE, "ensemble": "E"}]
    with pytest.raises(JoynrJsonError) as refused:
        decode(Publication, body.replace(b"vehicle.DabStation", b"vehicle.Other"),
               types=[RadioStation])
    assert refused.value.reason == "bad-type-name"


# ---------------------------------------------------------------------- named maps


@joynr_name("vehicle.StationsByName")
class StationsByName(dict[str, RadioStation]):
    """Keyed by strings."""


@joynr_name("vehicle.PresetsBySlot")
class PresetsBySlot(dict[int, str]):
    """Keyed by integers."""


@joynr_name("vehicle.StationsByCountry")
class StationsByCountry(dict[Country, list[RadioStation]]):
    """Keyed by an enumeration."""


@joynr_name("vehicle.Switches")
class Switches(dict[bool, str]):
    """Keyed by booleans."""


class Elsewhere(enum.Enum):
    """An enumeration with a member named as one of Country's."""

    AUSTRIA = "AUSTRIA"


@interface("vehicle/Presets")
class Presets:
    slots = attribute(PresetsBySlot)

    async def store(self, by_name: StationsByName, slots: PresetsBySlot,
                    by_country: StationsByCountry, switches: Switches) -> PresetsBySlot: ...

    @wire_name("store")
    async def store_slots(self, slots: PresetsBySlot) -> None: ...

    @wire_name("store")
    async def store_switches(self, switches: Switches) -> None: ...


PRESETS = JoynrSchema(interface_def(Presets))
FM4_TEXT = (b'{"_typeName":"vehicle.RadioStation","country":"AUSTRIA","frequency":103.8,'
            b'"name":"FM4","tags":["alt"],"trackInfo_":null}')
MAPS = [StationsByName({"FM4": FM4}), PresetsBySlot({10: "ten", 2: "two", -1: "minus one"}),
        StationsByCountry({Country.GERMANY: [], Country.AUSTRIA: [FM4]}),
        Switches({True: "on", False: "off"})]
#: a request with a map of each kind of key, as joynr writes it: each map's _typeName first
#: (before keys that sort before "_": "-1", "AUSTRIA"), then its entries keyed by strings
STORE = (
    b'{"_typeName":"joynr.Request","methodName":"store","paramDatatypes":['
    b'"vehicle.StationsByName","vehicle.PresetsBySlot","vehicle.StationsByCountry",'
    b'"vehicle.Switches"],"params":['
    b'{"_typeName":"vehicle.StationsByName","FM4":' + FM4_TEXT + b'},'
    b'{"_typeName":"vehicle.PresetsBySlot","-1":"minus one","10":"ten","2":"two"},'
    b'{"_typeName":"vehicle.StationsByCountry","AUSTRIA":[' + FM4_TEXT + b'],"GERMANY":[]},'
    b'{"_typeName":"vehicle.Switches","false":"off","true":"on"}],"requestReplyId":"r"}')


def test_named_maps_are_written_as_joynr_writes_them_and_read_back() -> None:
    method = interface_def(Presets).methods["store"]
    assert method.param_datatypes == ["vehicle.StationsByName", "vehicle.PresetsBySlot",
                                      "vehicle.StationsByCountry", "vehicle.Switches"]
    wired = Request("r", "store", [to_wire(m) for m in MAPS], method.param_datatypes)
    assert encode(wired, schema=PRESETS) == STORE
    # typed values (keys typed, not yet in their wire form) are written alike
    typed = Request("r", "store", list(MAPS), method.param_datatypes)
    assert encode(typed, schema=PRESETS) == STORE
    read = decode(Request, STORE, schema=PRESETS)
    assert read == wired
    assert isinstance(read, Request)
    back = [from_wire(v, tp) for v, (_, tp) in zip(read.params, method.params, strict=True)]
    assert back == MAPS and [type(v) for v in back] == [type(m) for m in MAPS]
    assert list(back[1]) == [-1, 10, 2] and list(back[2]) == [Country.AUSTRIA, Country.GERMANY]
    # a reply, a publication
    reply = encode(Reply("r", [to_wire(MAPS[1])]), types=[PresetsBySlot])
    assert reply == (b'{"_typeName":"joynr.Reply","requestReplyId":"r","response":[{'
                     b'"_typeName":"vehicle.PresetsBySlot","-1":"minus one","10":"ten",'
                     b'"2":"two"}]}')
    assert decode(Reply, reply, types=[PresetsBySlot]) == Reply("r", [to_wire(MAPS[1])])
    publication = encode(Publication("s", [{}]), types=[Switches])
    assert j(publication)["response"] == [{"_typeName": "vehicle.Switches"}]
    # overloads told apart by their maps' names
    methods = interface_def(Presets).methods
    assert PRESETS.select("store", ["vehicle.Switches"]) is methods["store_switches"]
    assert PRESETS.select("store", ["vehicle.PresetsBySlot"]) is methods["store_slots"]
    assert _store(["vehicle.Switches"], [{"true": "x"}]) == Request(
        "r", "store", [{"true": "x"}], ["vehicle.Switches"])
    with pytest.raises(JoynrJsonError, match="'1' is not a boolean key"):
        _store(["vehicle.Switches"], [{"1": "x"}])
    # a plain dict[str, V] stays a plain object, named Map
    plain = j(encode(Request("r", "all_kinds", ["s", True, -5, 1.5, b"", [], "GERMANY",
                                                FM4_WIRE, {"2": 1, "1": 2}, None, None],
                             interface_def(Radio).methods["all_kinds"].param_datatypes),
                     schema=RADIO))
    assert plain["paramDatatypes"][8] == "Map" and plain["params"][8] == {"1": 2, "2": 1}


def _store(datatypes: list[str], params: list[Any]) -> Payload:
    return decode(Request, text({"_typeName": "joynr.Request", "methodName": "store",
                                 "paramDatatypes": datatypes, "params": params,
                                 "requestReplyId": "r"}), schema=PRESETS)


def _reply(value: Any) -> bytes:
    return text({"_typeName": "joynr.Reply", "requestReplyId": "r", "response": [value]})


def test_a_named_map_without_its_type_name_is_read_as_one() -> None:
    read = decode(Reply, _reply({"-1": "a", "7": "b"}), types=[PresetsBySlot])
    assert read == Reply("r", [{"-1": "a", "7": "b"}])
    read = decode(Reply, _reply({"_typeName": None, "AUSTRIA": []}), types=[StationsByCountry])
    assert read == Reply("r", [{"AUSTRIA": []}])


@pytest.mark.parametrize(("value", "tp", "reason", "message"), [
    ({"_typeName": "vehicle.Switches", "1": "a"}, PresetsBySlot, "bad-type-name",
     "response[0]: _typeName 'vehicle.Switches' is not a vehicle.PresetsBySlot"),
    ({"_typeName": 5}, PresetsBySlot, "bad-type-name", "_typeName '5' is not a"),
    ({"01": "a"}, PresetsBySlot, "bad-value", "response[0] key: '01' is not an integer key"),
    ({"1.5": "a"}, PresetsBySlot, "bad-value", "'1.5' is not an integer key"),
    ({"x": "a"}, PresetsBySlot, "bad-value", "'x' is not an integer key"),
    ({"9223372036854775808": "a"}, PresetsBySlot, "bad-value", "is not an integer key"),
    ({"1": 5}, PresetsBySlot, "bad-value", "response[0]: a int where"),
    ({"TRUE": "a"}, Switches, "bad-value", "'TRUE' is not a boolean key (true or false)"),
    ({"SPAIN": []}, StationsByCountry, "bad-value", "'SPAIN' is not a Country"),
    ({"AUSTRIA": [{"name": "x"}]}, StationsByCountry, "missing-member", "without country"),
    (["1", "a"], PresetsBySlot, "bad-value", "a list where"),
    ("{}", StationsByName, "bad-value", "a str where"),
])
def test_named_maps_that_do_not_fit_are_refused_with_a_reason(value: Any, tp: Any,
                                                              reason: str, message: str) -> None:
    with pytest.raises(JoynrJsonError) as refused:
        decode(Reply, _reply(value), types=[tp])
    assert refused.value.reason == reason
    assert message in str(refused.value)


def test_oversized_named_maps_are_refused_by_the_body_bound() -> None:
    entries = {str(i): "x" * 40 for i in range(100_000)}  # (more than 4 MiB)
    with pytest.raises(JoynrJsonError) as refused:
        decode(Reply, _reply({"_typeName": "vehicle.PresetsBySlot", **entries}),
               types=[PresetsBySlot])
    assert refused.value.reason == "oversized"


@pytest.mark.parametrize(("value", "tp", "message"), [
    ({"x": "a"}, PresetsBySlot, "vehicle.PresetsBySlot key: 'x' is not an integer key"),
    ({True: "a"}, PresetsBySlot, "'true' is not an integer key"),
    ({1.5: "a"}, PresetsBySlot, "a map key of type float has no form on the wire"),
    ({1: "a"}, Switches, "'1' is not a boolean key"),
    ({Elsewhere.AUSTRIA: []}, StationsByCountry, "a Elsewhere is not a Country"),
    ({1: "a", "1": "b"}, PresetsBySlot, "vehicle.PresetsBySlot: the key '1' twice"),
    ({"_typeName": FM4}, StationsByName, "vehicle.StationsByName: the key '_typeName' twice"),
    ({"1": 2}, PresetsBySlot, "a int value where"),
])
def test_named_maps_without_a_joynr_form_are_not_written(value: Any, tp: Any,
                                                         message: str) -> None:
    with pytest.raises(JoynrJsonError) as refused:
        encode(Reply("r", [value]), types=[tp])
    assert refused.value.reason == "unencodable"
    assert message in str(refused.value)


# ---------------------------------------------------------------------- overloads


def _seek(datatypes: list[str], params: list[Any]) -> Payload:
    return decode(Request, text({"_typeName": "joynr.Request", "methodName": "seek",
                                 "paramDatatypes": datatypes, "params": params,
                                 "requestReplyId": "r"}), schema=RADIO)


def test_overloads_are_told_apart_by_param_datatypes() -> None:
    assert _seek(["String"], ["FM4"]) == Request("r", "seek", ["FM4"], ["String"])
    by_number = Request("r", "seek", [4], ["Long"])
    assert _seek(["Integer"], [4]) == by_number
    assert _seek(["Long"], [4]) == by_number  # another width of the same kind fits
    assert _seek(["Integer[]"], [[4]]) == Request("r", "seek", [[4]], ["Long[]"])
    assert RADIO.select("seek", ["String"]) is interface_def(Radio).methods["seek_by_name"]
    assert j(encode(by_number, schema=RADIO))["paramDatatypes"] == ["Integer"]
    assert j(encode(Request("r", "seek", [[4]], ["Long[]"]), schema=RADIO))[
        "paramDatatypes"] == ["Long[]"]
    # no such overload: names and values as they came (the provider answers it has none)
    assert _seek(["Boolean"], [True]) == Request("r", "seek", [True], ["Boolean"])


def test_a_number_of_a_declared_width_is_named_by_it() -> None:
    """An Int32 attribute's setter (no ``joynr_datatypes`` can name its parameter) is written
    as joynr's generators declare it: joynr's Java runtime finds ``setVolume(Integer)`` by
    these names and answers NoSuchMethodException to ``setVolume(Long)``."""
    @interface("test/Widths", version=(1, 0))
    class Widths:
        volume = attribute(Int32)
        gain = attribute(Float | None)
        bands = attribute(list[Int16])
        total = attribute(int)

    schema = JoynrSchema(interface_def(Widths))
    written = {name: j(encode(Request("r", f"set_{name}", [value], [datatype]),
                              schema=schema))["paramDatatypes"]
               for name, value, datatype in (("volume", 7, "Long"), ("gain", 0.5, "Double"),
                                             ("bands", [1], "Long[]"), ("total", 7, "Long"))}
    assert written == {"volume": ["Integer"], "gain": ["Float"], "bands": ["Short[]"],
                       "total": ["Long"]}
    # read back whichever width a peer names
    for datatype in ("Integer", "Long"):
        assert decode(Request, text({"_typeName": "joynr.Request", "methodName": "setVolume",
                                     "paramDatatypes": [datatype], "params": [7],
                                     "requestReplyId": "r"}), schema=schema) == Request(
            "r", "set_volume", [7], ["Long"])


# ---------------------------------------------------------------------- refusals


@pytest.mark.parametrize(("body", "reason"), [
    (b"\xff", "not-json"),
    (b"{", "not-json"),
    (b'{"_typeName":"joynr.Reply","requestReplyId":"r","response":[NaN]}', "not-json"),
    (b'{"_typeName":"joynr.Reply","requestReplyId":"r","response":["\\ud800"]}', "not-json"),
    (b"[]", "not-an-object"),
    (b'{"_typeName":"joynr.Reply","requestReplyId":"r","response":'
     + b"[" * MAX_DEPTH + b"]" * MAX_DEPTH + b"}", "too-deep"),
    (b"[" * 100_000 + b"]" * 100_000, "not-json"),
    (b'{"_typeName":"joynr.Request","requestReplyId":"r"}', "bad-type-name"),
    (b'{"requestReplyId":"r"}', "bad-type-name"),
    (b'{"_typeName":"joynr.Reply"}', "missing-member"),
    (b'{"_typeName":"joynr.Reply","requestReplyId":5}', "bad-member"),
    (b'{"_typeName":"joynr.Reply","requestReplyId":"r","response":[1],"error":{}}', "bad-member"),
    (b'{"_typeName":"joynr.Reply","requestReplyId":"r","error":{"_typeName":"x.Y"}}',
     "bad-type-name"),
    (b'{"_typeName":"joynr.Reply","requestReplyId":"r","error":'
     b'{"_typeName":"joynr.exceptions.ApplicationException"}}', "missing-member"),
    (b'{"_typeName":"joynr.Reply","requestReplyId":"r","response":[true,1]}', "bad-value"),
    (b'{"_typeName":"joynr.Reply","requestReplyId":"r","response":["x"]}', "bad-value"),
])
def test_refusals(body: bytes, reason: str) -> None:
    with pytest.raises(JoynrJsonError) as refused:
        decode(Reply, body, types=[bool])
    assert refused.value.reason == reason
    assert isinstance(refused.value, (PayloadError, ValueError))


def test_oversized_and_out_of_range_refused() -> None:
    with pytest.raises(JoynrJsonError) as refused:
        decode(Reply, b" " * (4 * 1024 * 1024 + 1))
    assert refused.value.reason == "oversized"
    # a number out of its type's range is read as it is: the one check of ranges is
    # from_wire's, where every typed value from the wire passes (for both body formats),
    # and it names the value and the range
    reply = decode(Reply, b'{"_typeName":"joynr.Reply","requestReplyId":"r",'
                   b'"response":[9223372036854775808]}', types=[int])
    with pytest.raises(ValueTypeError, match=r"9223372036854775808 is out of the range of "
                                             r"Int64"):
        from_wire(reply.response[0], int, "result")
    reply = decode(Reply, b'{"_typeName":"joynr.Reply","requestReplyId":"r","response":[1'
                   + b"0" * 400 + b"]}", types=[float])
    with pytest.raises(ValueTypeError, match=r"an integer of 1329 bits is out of the range "
                                             r"of Double"):
        from_wire(reply.response[0], float, "result")
    with pytest.raises(JoynrJsonError) as refused:
        decode(MulticastPublication, text({
            "_typeName": "joynr.MulticastPublication", "multicastId": "m",
            "error": {"_typeName": "joynr.exceptions.ProviderRuntimeException"}}))
    assert refused.value.reason == "unsupported"


def _brq(filter_parameters: Any) -> bytes:
    return text({"_typeName": "joynr.BroadcastSubscriptionRequest", "subscriptionId": "s",
                 "subscribedToName": "signal",
                 "qos": {"_typeName": "joynr.OnChangeSubscriptionQos", "minIntervalMs": 0},
                 "filterParameters": filter_parameters})


@pytest.mark.parametrize(("filter_parameters", "reason"), [
    ({"_typeName": "joynr.BroadcastFilterParameters", "filterParameters": {"genre": 1}},
     "bad-filter-parameters"),
    ({"_typeName": "joynr.BroadcastFilterParameters", "filterParameters": {"genre": None}},
     "bad-filter-parameters"),
    ({"_typeName": "joynr.BroadcastFilterParameters",
      "filterParameters": {"genre": {"_typeName": "x"}}}, "bad-filter-parameters"),
    ({"_typeName": "joynr.BroadcastFilterParameters", "filterParameters": ["genre"]},
     "bad-filter-parameters"),
    ({"_typeName": "joynr.BroadcastFilterParameters",
      "filterParameters": {f"p{i}": "v" for i in range(65)}}, "bad-filter-parameters"),
    ({"_typeName": "joynr.BroadcastFilterParameters",
      "filterParameters": {"genre": "x" * 4097}}, "bad-filter-parameters"),
    ({"_typeName": "joynr.Other", "filterParameters": {}}, "bad-type-name"),
    ("genre=pop", "bad-member"),
])
def test_hostile_filter_parameters_are_refused(filter_parameters: Any, reason: str) -> None:
    with pytest.raises(JoynrJsonError) as refused:
        decode(BroadcastSubscriptionRequest, _brq(filter_parameters))
    assert refused.value.reason == reason


def test_filter_parameters_both_ways() -> None:
    body = _brq({"_typeName": "joynr.BroadcastFilterParameters",
                 "filterParameters": {"genre": "pop", "country": "AT"}})
    decoded = decode(BroadcastSubscriptionRequest, body)
    assert isinstance(decoded, BroadcastSubscriptionRequest)
    assert decoded.filter_parameters == {"genre": "pop", "country": "AT"}
    assert json.loads(encode(decoded))["filterParameters"] == {
        "_typeName": "joynr.BroadcastFilterParameters",
        "filterParameters": {"country": "AT", "genre": "pop"}}
    # absent or null: no parameters
    for absent in (None, {"_typeName": "joynr.BroadcastFilterParameters",
                          "filterParameters": None}):
        decoded = decode(BroadcastSubscriptionRequest, _brq(absent))
        assert isinstance(decoded, BroadcastSubscriptionRequest)
        assert decoded.filter_parameters == {}
    with pytest.raises(JoynrJsonError) as refused:
        encode(BroadcastSubscriptionRequest("s", "signal", {}, {"genre": 5}))  # type: ignore[dict-item]
    assert refused.value.reason == "unencodable"


def test_unencodable_payloads_are_refused() -> None:
    for payload, kwargs in [
        (Reply("r", [1], {"type": "ProviderRuntimeException", "message": ""}), {}),
        (Reply("r", [2 ** 64]), {}),
        (Reply("r", [float("nan")]), {}),
        (Reply("r", ["x"]), {"types": [int]}),
        (Reply("r", None, {"type": "ApplicationException", "message": "", "error": "X"}), {}),
        (MulticastSubscriptionRequest("s", "b", "p/b/x", {}, ["y"]), {}),
        (SubscriptionRequest("s", "a", {"bogus_ms": 1}), {}),
    ]:
        with pytest.raises(JoynrJsonError) as refused:
            encode(payload, **kwargs)
        assert refused.value.reason == "unencodable"


# ---------------------------------------------------------------------- round trips

names = st.text(min_size=0, max_size=30)
int64 = st.integers(min_value=-(2 ** 63), max_value=2 ** 63 - 1)
json_values = st.recursive(
    st.none() | st.booleans() | int64 | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=20)


@st.composite
def errors_(draw: st.DrawFn, only_subscription: bool = False) -> dict[str, Any]:
    candidates = [e[0] for e in EXCEPTIONS]
    if only_subscription:
        candidates = [e for e in candidates if e["type"] == "SubscriptionException"]
    error = dict(draw(st.sampled_from(candidates)))
    error["message"] = draw(names)
    if "subscription_id" in error:
        if draw(st.booleans()):
            error["subscription_id"] = draw(names)
        else:
            del error["subscription_id"]
    if error["type"] == "ApplicationException":
        # untyped: the enum's name travels in the map (never with "$": a reader takes it for
        # the "." of a Java nested class name, as joynr's Java runtime writes them)
        error["error_enum"] = draw(names.filter(lambda n: "$" not in n))
    return error


@st.composite
def qos_maps(draw: st.DrawFn, multicast: bool) -> dict[str, Any]:
    kinds = {"OnChangeSubscriptionQos": ["expiry_date_ms", "publication_ttl_ms",
                                         "min_interval_ms"],
             "OnChangeWithKeepAliveSubscriptionQos": ["expiry_date_ms", "publication_ttl_ms",
                                                      "min_interval_ms", "max_interval_ms",
                                                      "alert_after_interval_ms"],
             "PeriodicSubscriptionQos": ["expiry_date_ms", "publication_ttl_ms", "period_ms",
                                         "alert_after_interval_ms"],
             "MulticastSubscriptionQos": ["expiry_date_ms"]}
    kind = draw(st.sampled_from(sorted(kinds)))
    keys = draw(st.lists(st.sampled_from(kinds[kind]), unique=True))
    qos: dict[str, Any] = {k: draw(int64) for k in keys}
    # the canonical map names its type only when its keys do not imply it
    encoded = j(encode(MulticastSubscriptionRequest("s", "b", "p/b", qos, []) if multicast
                       else SubscriptionRequest("s", "a", qos)))["qos"]["_typeName"]
    if encoded != f"joynr.{kind}":
        qos["type"] = kind
    return qos


@st.composite
def untyped_payloads(draw: st.DrawFn) -> Payload:
    kind = draw(st.integers(0, 9))
    values = st.lists(json_values, max_size=4)
    if kind in (0, 1):
        params = draw(values)
        datatypes = draw(st.lists(names, min_size=len(params), max_size=len(params)))
        if kind == 0:
            return Request(draw(names), draw(names), params, datatypes)
        return OneWayRequest(draw(names), params, datatypes)
    if kind in (2, 3):
        response, error = draw(st.sampled_from([(True, False), (False, True), (False, False)]))
        args = (draw(names), draw(values) if response else None,
                draw(errors_()) if error else None)
        return Reply(*args) if kind == 2 else Publication(*args)
    if kind == 4:
        return SubscriptionRequest(draw(names), draw(names), draw(qos_maps(False)))
    if kind == 5:
        return BroadcastSubscriptionRequest(draw(names), draw(names), draw(qos_maps(False)),
                                            draw(st.dictionaries(names, names, max_size=3)))
    if kind == 6:
        partitions = draw(st.lists(st.text("abc+*", min_size=1, max_size=3), max_size=3))
        mid = "/".join([draw(st.text("xyz", min_size=1, max_size=3)), "b", *partitions])
        return MulticastSubscriptionRequest(draw(names), draw(names), mid, draw(qos_maps(True)),
                                            partitions)
    if kind == 7:
        return SubscriptionReply(draw(names), draw(st.none() | errors_(only_subscription=True)))
    if kind == 8:
        return SubscriptionStop(draw(names))
    return MulticastPublication(draw(names), draw(values))


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(untyped_payloads())
def test_round_trip_untyped(payload: Payload) -> None:
    body = encode(payload)
    assert decode(type(payload), body) == payload
    assert decode_any(body) == payload


stations = st.builds(RadioStation, names, st.sampled_from(Country),
                     st.floats(allow_nan=False, allow_infinity=False),
                     st.none() | names, st.lists(names, max_size=3))


@settings(max_examples=200)
@given(st.data())
def test_round_trip_typed(data: st.DataObject) -> None:
    radio = interface_def(Radio)
    method = data.draw(st.sampled_from([*radio.methods.values(), *radio.accessors.values()]))
    kinds: dict[Any, st.SearchStrategy[Any]] = {
        str: names, bool: st.booleans(), int: int64, bytes: st.binary(max_size=8),
        float: st.floats(allow_nan=False, allow_infinity=False), list[int]: st.lists(int64),
        Country: st.sampled_from(Country), RadioStation: stations,
        dict[str, int]: st.dictionaries(names, int64, max_size=3),
        str | None: st.none() | names, Any: json_values,
        list[RadioStation]: st.lists(stations, max_size=3),
    }
    params = [to_wire(data.draw(kinds[tp])) for _, tp in method.params]
    request = Request(data.draw(names), method.name, params, list(method.param_datatypes))
    assert decode(Request, encode(request, schema=RADIO), schema=RADIO) == request
    if method.returns is not type(None):
        value = to_wire(data.draw(kinds[method.returns]))
        reply = Reply(request.request_reply_id, [value])
        types = [method.returns]
        assert decode(Reply, encode(reply, types=types), types=types) == reply


@settings(max_examples=200)
@given(st.data())
def test_named_maps_round_trip_and_hostile_ones_are_refused_with_a_reason(
        data: st.DataObject) -> None:
    method = interface_def(Presets).methods["store"]
    maps = [
        StationsByName(data.draw(st.dictionaries(names, stations, max_size=3))),
        PresetsBySlot(data.draw(st.dictionaries(int64, names, max_size=4))),
        StationsByCountry(data.draw(st.dictionaries(st.sampled_from(Country),
                                                    st.lists(stations, max_size=2)))),
        Switches(data.draw(st.dictionaries(st.booleans(), names))),
    ]
    request = Request("r", "store", [to_wire(m) for m in maps], method.param_datatypes)
    body = encode(request, schema=PRESETS)
    read = decode(Request, body, schema=PRESETS)
    assert read == request and isinstance(read, Request)
    assert [from_wire(v, tp) for v, (_, tp) in zip(read.params, method.params,
                                                     strict=True)] == maps
    assert all(list(m)[:1] == ["_typeName"] for m in json.loads(body)["params"])
    # any JSON in a map's place: read or refused with a reason, nothing else
    params = json.loads(body)["params"]
    params[data.draw(st.integers(0, 3))] = data.draw(json_values)
    try:
        decode(Request, text({**json.loads(body), "params": params}), schema=PRESETS)
    except JoynrJsonError as exc:
        assert exc.reason in ("bad-value", "bad-type-name", "missing-member", "bad-member")


# ---------------------------------------------------------------------- hostile bodies

PAYLOAD_CLASSES = list(TYPE_NAMES)


def _attempt(body: bytes) -> None:
    """Decoding a body either works or is refused; nothing else may come out."""
    for cls in PAYLOAD_CLASSES:
        for kwargs in ({}, _context(cls.__new__(cls))):
            try:
                decode(cls, body, **kwargs)
            except JoynrJsonError as exc:
                assert exc.reason
    with contextlib.suppress(JoynrJsonError):
        decode_any(body, schema=RADIO)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(json_values, st.sampled_from([*sorted(TYPE_NAMES.values()), "x"]))
def test_hostile_random_json_trees(tree: Any, type_name: str) -> None:
    _attempt(json.dumps(tree).encode())
    if isinstance(tree, dict):
        _attempt(json.dumps({**tree, "_typeName": type_name}).encode())


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([text(g[1]) for g in GOLDEN] + [ADD_NEXT_HOP]), st.data())
def test_hostile_spoilt_valid_payloads(body: bytes, data: st.DataObject) -> None:
    tree = json.loads(body)
    # spoil one place of the tree: replace or delete a member, or an item, at any depth
    node = tree
    for _ in range(data.draw(st.integers(0, 4))):
        children = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
        children = [(k, v) for k, v in children if isinstance(v, (dict, list)) and v]
        if not children:
            break
        node = data.draw(st.sampled_from(children))[1]
    if node:
        key = data.draw(st.sampled_from(list(node) if isinstance(node, dict)
                                        else list(range(len(node)))))
        if data.draw(st.booleans()):
            node[key] = data.draw(json_values)
        else:
            del node[key]
    _attempt(json.dumps(tree).encode())


@settings(max_examples=200)
@given(st.binary(max_size=64))
def test_hostile_random_bytes(body: bytes) -> None:
    _attempt(body)


# ---------------------------------------------------------------------- fast paths


@joynr_name("test.Mode")
class _Mode(enum.Enum):
    ECO = "ECO"
    SPORT = "SPORT"


@interface("test/Plain")
class _Plain:
    async def call(  # type: ignore[empty-body]  # noqa: PLR0917 (one of each plain type)
            self, a: str, b: int, c: float, d: bool, e: _Mode, f: list[str], g: list[int],
            h: list[float], i: list[bool]) -> list[int]: ...

    @one_way
    async def push(self, data: str) -> None: ...


_PLAIN_SCHEMA = JoynrSchema(interface_def(_Plain))
_PLAIN_METHOD = interface_def(_Plain).methods["call"]
_PLAIN_TYPES = [str, int, float, bool, _Mode, list[str], list[int], list[float], list[bool]]
_texts = st.one_of(st.text(max_size=8), st.sampled_from(["\ud800", "a\udfffb", '"\\/\n\x00',
                                                         "ECO", "SPORT", "é€😀"]))
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 64, 2 ** 64),
                     st.sampled_from([2 ** 63 - 1, -(2 ** 63), 2 ** 63, -(2 ** 63) - 1]),
                     st.floats(), _texts, st.sampled_from(list(_Mode)))
_values = st.one_of(_scalars, st.lists(_scalars, max_size=3),
                    st.lists(_scalars, max_size=3).map(tuple),
                    st.dictionaries(st.text(max_size=3), _scalars, max_size=2))
_clean_texts = st.one_of(st.text(max_size=8), st.sampled_from(['"\\/\n\x00', "é€😀"]))
_ints = st.one_of(st.integers(-(2 ** 63), 2 ** 63 - 1),
                  st.sampled_from([2 ** 63 - 1, -(2 ** 63), 0]))
_floats = st.one_of(st.floats(allow_nan=False, allow_infinity=False),
                    st.integers(-(2 ** 70), 2 ** 70))
_modes = st.one_of(st.sampled_from(list(_Mode)), st.sampled_from(["ECO", "SPORT"]))
#: values just beside a plain type: a bool for a number, ints beyond 64 bits, NaN, a lone
#: surrogate, an enum name of the wrong case, a tuple
_near_misses = st.sampled_from([True, 2 ** 63, -(2 ** 63) - 1, float("nan"), float("inf"),
                                "\ud800", "eco", 1.5, (1, 2), [1, True], ["a", None]])
#: per parameter of _Plain.call: mostly (8 in 10) values of its declared type, else a near
#: miss or anything


def _mostly(typed: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.integers(0, 9).flatmap(
        lambda k: typed if k < 8 else _near_misses if k == 8 else _values)


_params = st.tuples(*[_mostly(typed) for typed in (
    _clean_texts, _ints, _floats, st.booleans(), _modes, st.lists(_clean_texts, max_size=3),
    st.lists(_ints, max_size=3), st.lists(_floats, max_size=3),
    st.lists(st.booleans(), max_size=3))]).map(list)


def _outcome(call: Any) -> tuple[str, Any]:
    try:
        return "ok", call()
    except JoynrJsonError as exc:
        return exc.reason, str(exc)


def _general_only() -> pytest.MonkeyPatch:
    """A monkeypatch context in which joynr_json takes its general paths only."""
    module = joynr_json_module
    patch = pytest.MonkeyPatch()
    patch.setattr(module, "_encode_plain", lambda *args: None)
    patch.setattr(module, "_readers_of", lambda tps: None)
    patch.setattr(module, "_load", module._BODY_DECODER.decode)
    patch.setattr(module, "_MAX_SELECTED", 0)
    return patch


def _both(call: Any) -> tuple[tuple[str, Any], tuple[str, Any]]:
    fast = _outcome(call)
    patch = _general_only()
    try:
        general = _outcome(call)
    finally:
        patch.undo()
    return fast, general


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_params, st.one_of(st.text(max_size=4), st.none(), st.integers()),
       st.one_of(_texts, _ints, _floats, _modes, _near_misses, _values))
def test_plain_fast_paths_write_what_the_general_path_writes(params: list[Any],
                                                              rid: Any, single: Any) -> None:
    payloads: list[tuple[Payload, dict[str, Any]]] = [
        (Request(rid or "r", "call", params, list(_PLAIN_METHOD.param_datatypes)),
         {"schema": _PLAIN_SCHEMA}),
        (OneWayRequest("push", [single], ["String"]), {"schema": _PLAIN_SCHEMA}),
        (Reply(rid or "r", [single]), {"types": [list[int]]}),
        (Reply(rid or "r", [single]), {"types": [int]}),
        (Reply(rid or "r", [single]), {"types": [bool]}),
        (Reply(rid or "r", [single]), {"types": [list[float]]}),
        (Reply(rid or "r", params), {"types": _PLAIN_TYPES}),
        (Publication(rid or "s", params), {"types": _PLAIN_TYPES}),
        (Publication(rid or "s", [single]), {"types": [float]}),
        (MulticastPublication("p/b/x", [single]), {"types": [_Mode]}),
        (MulticastPublication("p/b/x", [single]), {"types": [float]}),
    ]
    for payload, typing_ in payloads:
        fast, general = _both(lambda p=payload, t=typing_: encode(p, **t))
        assert fast == general, payload


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_params, st.sampled_from(["", " ", "\n", " x"]))
def test_plain_fast_paths_read_what_the_general_path_reads(params: list[Any],
                                                            tail: str) -> None:
    plain = [p.name if isinstance(p, enum.Enum) else p for p in params]
    datatypes = ["String", "Long", "Double", "Boolean", "test.Mode", "String[]", "Long[]",
                 "Double[]", "Boolean[]"]
    bodies: list[tuple[type[Payload], dict[str, Any], dict[str, Any]]] = [
        (Request, {"_typeName": "joynr.Request", "methodName": "call",
                   "paramDatatypes": datatypes, "params": plain, "requestReplyId": "r"},
         {"schema": _PLAIN_SCHEMA}),
        (OneWayRequest, {"_typeName": "joynr.OneWayRequest", "methodName": "push",
                         "paramDatatypes": ["String"], "params": plain[:1]},
         {"schema": _PLAIN_SCHEMA}),
        (Reply, {"_typeName": "joynr.Reply", "requestReplyId": "r", "response": plain},
         {"types": _PLAIN_TYPES}),
        (Publication, {"_typeName": "joynr.SubscriptionPublication", "subscriptionId": "s",
                       "response": plain[6:7]}, {"types": [list[int]]}),
    ]
    for cls, data, typing_ in bodies:
        try:
            text = json.dumps(data, ensure_ascii=False, allow_nan=True)
        except (TypeError, ValueError):
            continue
        body = (text + tail).encode("utf-8", "surrogatepass")
        fast, general = _both(lambda c=cls, b=body, t=typing_: decode(c, b, **t))
        assert fast == general, body


_EDGE_VALUES = [True, False, 0, 2 ** 63 - 1, -(2 ** 63), 2 ** 63, -(2 ** 63) - 1, 1.5, -0.0,
                1e308, float("nan"), float("inf"), float("-inf"), "", "\ud800", "a\udfffb",
                '"\\/\n\x00\x7f', "é€😀", "ECO", "eco", _Mode.SPORT, None, (1, 2), [1, True],
                ["a", None], [2 ** 63], [1.5, float("nan")], {"a": 1}]


@pytest.mark.parametrize("tp", [str, int, float, bool, _Mode, list[str], list[int],
                                list[float], list[bool]])
def test_plain_fast_paths_agree_with_the_general_path_on_edge_values(tp: Any) -> None:
    for value in _EDGE_VALUES:
        for payload in (Reply("r", [value]), Publication("s", [value]),
                        MulticastPublication("p/b/x", [value])):
            fast, general = _both(lambda p=payload: encode(p, types=[tp]))
            assert fast == general, (tp, value)
        try:
            text = json.dumps({"_typeName": "joynr.Reply", "requestReplyId": "r",
                               "response": [value.name if isinstance(value, enum.Enum)
                                            else value]}, ensure_ascii=False)
        except TypeError:
            continue
        body = text.encode("utf-8", "surrogatepass")
        fast, general = _both(lambda b=body: decode(Reply, b, types=[tp]))
        assert fast == general, (tp, value)


def test_the_plain_fast_path_writes_the_golden_bodies() -> None:
    body = encode(OneWayRequest("push", ['a "quoted" \u00e9'], ["String"]),
                  schema=_PLAIN_SCHEMA)
    assert body == ('{"_typeName":"joynr.OneWayRequest","methodName":"push","paramDatatypes":'
                    '["String"],"params":["a \\"quoted\\" \u00e9"]}').encode()
    assert encode(Reply("r", [[1, -2]]), types=[list[int]]) == (
        b'{"_typeName":"joynr.Reply","requestReplyId":"r","response":[[1,-2]]}')
    assert encode(Publication("s", [1.5]), types=[float]) == (
        b'{"_typeName":"joynr.SubscriptionPublication","response":[1.5],"subscriptionId":"s"}')
    assert encode(MulticastPublication("p/b/x", [_Mode.ECO]), types=[_Mode]) == (
        b'{"_typeName":"joynr.MulticastPublication","multicastId":"p/b/x","response":["ECO"]}')


def test_a_schema_keeps_a_bounded_number_of_selected_overloads() -> None:
    @interface("test/Wild")
    class Wild:
        async def take(self, value: Any) -> None: ...

    schema = JoynrSchema(interface_def(Wild))
    for i in range(600):
        body = json.dumps({"_typeName": "joynr.OneWayRequest", "methodName": "take",
                           "paramDatatypes": [f"a.T{i}"], "params": [{"x": i}]}).encode()
        request = decode(OneWayRequest, body, schema=schema)
        assert isinstance(request, OneWayRequest) and request.params == [{"x": i}]
    assert 0 < len(schema._selected) <= 256


@pytest.mark.parametrize("depth", [MAX_DEPTH - 1, MAX_DEPTH])
def test_depth_is_checked_when_brackets_could_nest_that_deep(depth: int) -> None:
    nested = "[" * depth + "]" * depth
    body = ('{"_typeName":"joynr.Reply","requestReplyId":"r","response":' + nested
            + "}").encode()
    if depth < MAX_DEPTH:
        reply = decode(Reply, body)
        assert isinstance(reply, Reply) and reply.response is not None
    else:
        with pytest.raises(JoynrJsonError) as info:
            decode(Reply, body)
        assert info.value.reason == "too-deep"


# ---------------------------------------------------------------------- what joynr's runtimes read

#: the exception _typeNames joynr's runtimes decode in a reply's error (docs/wire.md, "Error
#: answers joynr's runtimes decode", lists them): JavaScript's type
#: registry (ten types), C++'s muesli registrations, Java's exception classes (Jackson's
#: default typing reads _typeName as a class name)
JS_TYPES = frozenset(f"joynr.exceptions.{n}" for n in (
    "ApplicationException", "DiscoveryException", "IllegalAccessException", "JoynrException",
    "JoynrRuntimeException", "MethodInvocationException", "NoCompatibleProviderFoundException",
    "ProviderRuntimeException", "PublicationMissedException", "SubscriptionException"))
CPP_TYPES = frozenset(f"joynr.exceptions.{n}" for n in (
    "JoynrException", "JoynrRuntimeException", "JoynrTimeOutException",
    "JoynrMessageNotSentException", "JoynrDelayMessageException",
    "JoynrMessageExpiredException", "DiscoveryException", "ProviderRuntimeException",
    "PublicationMissedException", "ApplicationException", "MethodInvocationException",
    "SubscriptionException"))
JAVA_TYPES = frozenset(
    [f"io.joynr.exceptions.{n}" for n in (
        "DiscoveryException", "JoynrCommunicationException", "JoynrDelayMessageException",
        "JoynrException", "JoynrIllegalStateException", "JoynrMessageExpiredException",
        "JoynrMessageNotSentException", "JoynrRequestInterruptedException",
        "JoynrRuntimeException", "JoynrShutdownException", "JoynrTimeoutException",
        "JoynrWaitExpiredException", "SubscriptionException")]
    + [f"joynr.exceptions.{n}" for n in (
        "ApplicationException", "IllegalAccessException", "MethodInvocationException",
        "ProviderRuntimeException", "PublicationMissedException")])


@pytest.mark.parametrize("java_names", [False, True], ids=["joynr-names", "java-names"])
def test_the_not_sent_answer_is_of_a_type_every_joynr_runtime_decodes(java_names: bool) -> None:
    error = {"type": "JoynrMessageNotSentException", "message": "message m1 to p not sent: x"}
    body = j(encode(Reply("r", None, error), java_exception_names=java_names))
    name = body["error"]["_typeName"]
    for runtime, types in (("JavaScript", JS_TYPES), ("C++", CPP_TYPES), ("Java", JAVA_TYPES)):
        assert name in types, f"{runtime} does not decode {name}"
    assert body["error"]["detailMessage"] == (
        "JoynrMessageNotSentException: message m1 to p not sent: x")
    # and this project's runtimes read it back as the not-sent error
    exc = error_from_wire(decode(Reply, text(body)).error)  # type: ignore[attr-defined]
    assert type(exc) is MessageNotSentError and exc.message == "message m1 to p not sent: x"


@pytest.mark.parametrize("kind", ["ApplicationException", "ProviderRuntimeException",
                                  "MethodInvocationException", "DiscoveryException",
                                  "JoynrTimeoutException", "JoynrMessageExpiredException",
                                  "JoynrRuntimeException", "SomethingOfThisProject"])
def test_a_reply_error_in_joynrs_names_is_of_a_type_every_joynr_runtime_decodes(
        kind: str) -> None:
    error: dict[str, Any] = {"type": kind, "message": "m"}
    enum_ = None
    if kind == "ApplicationException":
        error["error"], enum_ = FavoriteError.FULL.name, FavoriteError
    body = j(encode(Reply("r", None, error), error_enum=enum_))
    name = body["error"]["_typeName"]
    for runtime, types in (("JavaScript", JS_TYPES), ("C++", CPP_TYPES), ("Java", JAVA_TYPES)):
        assert name in types, f"{runtime} does not decode {name} (for {kind})"
    # and this project's runtimes read it back as what it was
    back = decode(Reply, text(body), error_enum=enum_).error  # type: ignore[attr-defined]
    if kind == "SomethingOfThisProject":
        assert back == {"type": "JoynrRuntimeException", "message": f"{kind}: m"}
    else:
        assert back == error


def test_joynrs_own_not_sent_exception_is_still_read() -> None:
    for name in ("joynr.exceptions.JoynrMessageNotSentException",
                 "io.joynr.exceptions.JoynrMessageNotSentException"):
        reply = decode(Reply, text({"_typeName": "joynr.Reply", "requestReplyId": "r",
                                    "error": {"_typeName": name, "detailMessage": "m"}}))
        assert reply.error == {"type": "JoynrMessageNotSentException", "message": "m"}
    # a provider's own ProviderRuntimeException stays one
    reply = decode(Reply, text({"_typeName": "joynr.Reply", "requestReplyId": "r", "error": {
        "_typeName": "joynr.exceptions.ProviderRuntimeException", "detailMessage": "m"}}))
    assert reply.error == {"type": "ProviderRuntimeException", "message": "m"}
