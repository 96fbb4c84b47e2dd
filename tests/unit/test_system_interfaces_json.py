"""The system interfaces (Routing 0.1, Discovery 0.3) and the GCD's (0.3) in joynr's JSON: the
requests joynr's runtimes send pick the right overload with the right values, the answers are
what joynr expects, ``GlobalDiscoveryEntry.address`` travels as a string (of JSON) as it is;
and the cluster controller's Routing and Discovery providers take joynr's calls (in-process,
no network)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pyjoynr.cluster_controller.gcd_link import GlobalLink
from pyjoynr.cluster_controller.local_discovery import LocalDiscovery
from pyjoynr.cluster_controller.routing_provider import RoutingProvider
from pyjoynr.gcd.interface import GlobalCapabilitiesDirectory
from pyjoynr.gcd.provider import GcdProvider
from pyjoynr.gcd.sqlite_store import SqliteStore
from pyjoynr.programming.discovery_types import (
    CustomParameter,
    DiscoveryEntry,
    DiscoveryEntryWithMetaInfo,
    DiscoveryErrorCode,
    DiscoveryQos,
    DiscoveryScope,
    GlobalDiscoveryEntry,
    ProviderQos,
    ProviderScope,
    Version,
)
from pyjoynr.programming.generated import system
from pyjoynr.programming.generated.types import DiscoveryQos as JoynrDiscoveryQos
from pyjoynr.programming.system_interfaces import (
    ADDRESS_TYPE_NAMES,
    DEFAULT_DISCOVERY_PARTICIPANT_ID,
    DEFAULT_ROUTING_PARTICIPANT_ID,
    Discovery,
    Routing,
    address_from_json,
    address_of,
    address_struct,
    address_to_json,
)
from pyjoynr.runtime.addresses import (
    InProcessAddress,
    MqttAddress,
    UdsClientAddress,
    WebSocketClientAddress,
)
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.errors import ApplicationError, ProviderRuntimeError
from pyjoynr.runtime.interface import MethodDef, from_wire, interface_def, to_wire
from pyjoynr.runtime.joynr_json import JoynrJsonError, JoynrSchema, decode, encode, reply_types
from pyjoynr.runtime.payloads import Reply, Request, decode_payload
from pyjoynr.runtime.router import MessageRouter
from pyjoynr.runtime.routing import RoutingTable, RuntimeKind
from pyjoynr.runtime.tasks import TaskSupervisor

ROUTING = JoynrSchema(interface_def(Routing))
DISCOVERY = JoynrSchema(interface_def(Discovery))
GCD = JoynrSchema(interface_def(GlobalCapabilitiesDirectory))
RT = "joynr.system.RoutingTypes."
CLIENT = {"_typeName": RT + "WebSocketClientAddress", "id": "Zq3_client"}


def body(obj: dict[str, Any]) -> bytes:
    """JSON as joynr's JavaScript runtime writes it: compact, members in insertion order."""
    return json.dumps(obj, separators=(",", ":")).encode()


def js_request(method: str, datatypes: list[str], params: list[Any], rid: str = "n_1"
               ) -> bytes:
    """A request as joynr's JavaScript runtime writes it (``_typeName`` last)."""
    return body({"methodName": method, "paramDatatypes": datatypes, "params": params,
                 "requestReplyId": rid, "_typeName": "joynr.Request"})


def request_of(raw: bytes, schema: JoynrSchema) -> Request:
    """A request body decoded with ``schema``."""
    request = decode(Request, raw, schema=schema)
    assert isinstance(request, Request)
    return request


def method_of(schema: JoynrSchema, request: Request) -> str:
    """The Python name of the declared method a decoded request calls."""
    found = schema.method_for(request.method_name, request.param_datatypes)
    assert found is not None, request
    methods = {**schema.definition.methods, **schema.definition.accessors}
    (name,) = [n for n, m in methods.items() if m is found]
    return name


def typed_args(schema: JoynrSchema, request: Request) -> list[Any]:
    """The request's parameters typed as a provider receives them."""
    method = schema.method_for(request.method_name, request.param_datatypes)
    assert method is not None
    return [from_wire(v, tp) for v, (_, tp) in zip(request.params, method.params, strict=True)]


def answer(schema: JoynrSchema, request: Request, result: Any, rid: str = "n_1") -> Any:
    """The JSON reply to ``request`` with the provider's ``result``."""
    method = schema.method_for(request.method_name, request.param_datatypes)
    assert method is not None
    response = [] if method.returns is type(None) else [to_wire(result)]
    return json.loads(encode(Reply(rid, response), types=reply_types(method),
                             error_enum=method.error_enum))


# ====================================================================== Routing 0.1


def test_joynrs_participant_ids_and_versions() -> None:
    assert DEFAULT_ROUTING_PARTICIPANT_ID == "CC.RoutingProvider.ParticipantId"
    assert DEFAULT_DISCOVERY_PARTICIPANT_ID == "CC.DiscoveryProvider.ParticipantId"
    assert (interface_def(Routing).name, interface_def(Routing).version) == (
        "system/Routing", (0, 1))
    assert (interface_def(Discovery).name, interface_def(Discovery).version) == (
        "system/Discovery", (0, 3))


def test_the_javascript_add_next_hop_picks_add_next_hop_with_the_address_struct() -> None:
    raw = js_request("addNextHop", ["String", RT + "WebSocketClientAddress", "Boolean"],
                     ["routing-proxy-1", CLIENT, False])
    request = request_of(raw, ROUTING)
    assert isinstance(request, Request)
    assert method_of(ROUTING, request) == "add_next_hop"
    assert typed_args(ROUTING, request) == [
        "routing-proxy-1", system.WebSocketClientAddress("Zq3_client"), False]
    assert answer(ROUTING, request, None) == {
        "_typeName": "joynr.Reply", "requestReplyId": "n_1", "response": []}
    # and this project's proxy writes the same request (joynr's datatype from the value)
    again = json.loads(encode(request, schema=ROUTING))
    assert again["paramDatatypes"] == ["String", RT + "WebSocketClientAddress", "Boolean"]
    assert again["params"] == ["routing-proxy-1", CLIENT, False]


ADDRESSES: dict[str, dict[str, Any]] = {
    "ChannelAddress": {"messagingEndpointUrl": "http://h/", "channelId": "c"},
    "MqttAddress": {"brokerUri": "joynrdefaultgbid", "topic": "cc/1"},
    "BrowserAddress": {"windowId": "w"},
    "WebSocketAddress": {"protocol": "WS", "host": "h", "port": 4242, "path": "/"},
    "UdsAddress": {"path": "/run/joynr.sock"},
    "BinderAddress": {"packageName": "io.joynr", "userId": 0},
    "WebSocketClientAddress": {"id": "c"},
    "UdsClientAddress": {"id": "u"},
}
#: the same addresses as the generated structs, and the overload of addNextHop taking each
STRUCTS: dict[str, tuple[system.Address, str]] = {
    "ChannelAddress": (system.ChannelAddress("http://h/", "c"), "add_next_hop_channel"),
    "MqttAddress": (system.MqttAddress("joynrdefaultgbid", "cc/1"), "add_next_hop_mqtt"),
    "BrowserAddress": (system.BrowserAddress("w"), "add_next_hop_browser"),
    "WebSocketAddress": (system.WebSocketAddress(system.WebSocketProtocol.WS, "h", 4242, "/"),
                         "add_next_hop_web_socket"),
    "UdsAddress": (system.UdsAddress("/run/joynr.sock"), "add_next_hop_uds"),
    "BinderAddress": (system.BinderAddress("io.joynr", 0), "add_next_hop_binder"),
    "WebSocketClientAddress": (system.WebSocketClientAddress("c"), "add_next_hop"),
    "UdsClientAddress": (system.UdsClientAddress("u"), "add_next_hop_uds_client"),
}


@pytest.mark.parametrize("kind", list(ADDRESSES))
def test_each_of_joynrs_eight_address_overloads_picks_its_add_next_hop(kind: str) -> None:
    address = {"_typeName": RT + kind, **ADDRESSES[kind]}
    struct, overload = STRUCTS[kind]
    assert RT + kind in ADDRESS_TYPE_NAMES
    request = request_of(js_request("addNextHop", ["String", RT + kind, "Boolean"],
                                    ["p", address, True]), ROUTING)
    assert isinstance(request, Request)
    assert method_of(ROUTING, request) == overload
    assert typed_args(ROUTING, request) == ["p", struct, True]
    assert type(typed_args(ROUTING, request)[1]) is type(struct)
    # answered as joynr expects, and this project's proxy writes the same call
    assert answer(ROUTING, request, None) == {
        "_typeName": "joynr.Reply", "requestReplyId": "n_1", "response": []}
    definition = interface_def(Routing).methods[overload]
    again = json.loads(encode(Request("n_1", definition.name, ["p", to_wire(struct), True],
                                      definition.param_datatypes), schema=ROUTING))
    assert (again["methodName"], again["paramDatatypes"]) == (
        "addNextHop", ["String", RT + kind, "Boolean"])
    assert again["params"] == ["p", address, True]
    # a value without _typeName is the struct its datatype names (joynr always writes it)
    bare = request_of(js_request("addNextHop", ["String", RT + kind, "Boolean"],
                                 ["p", ADDRESSES[kind], True]), ROUTING)
    assert bare == request
    assert typed_args(ROUTING, bare) == ["p", struct, True]


@pytest.mark.parametrize("datatypes", [
    ["String", RT + "LocalAddress", "Boolean"],       # not one of the eight
    ["String", "String", "Boolean"],
    ["String", RT + "WebSocketClientAddress"],
])
def test_add_next_hop_takes_only_joynrs_overloads(datatypes: list[str]) -> None:
    params = ["p", CLIENT, False][:len(datatypes)]
    request = request_of(js_request("addNextHop", datatypes, params), ROUTING)
    # no declared method: the names stay joynr's (the provider answers "no such method")
    assert ROUTING.method_for(request.method_name, request.param_datatypes) is None


def test_an_address_that_is_not_the_struct_its_datatype_names_is_refused() -> None:
    with pytest.raises(JoynrJsonError,
                       match=f"WebSocketClientAddress' is not a {RT}MqttAddress"):
        decode(Request, js_request("addNextHop", ["String", RT + "MqttAddress", "Boolean"],
                                   ["p", CLIENT, False]), schema=ROUTING)
    with pytest.raises(JoynrJsonError, match=r"params\[1\]: a str where .*MqttAddress"):
        decode(Request, js_request("addNextHop", ["String", RT + "MqttAddress", "Boolean"],
                                   ["p", "cc/1", False]), schema=ROUTING)


@pytest.mark.parametrize("address", [
    {"_typeName": "InProcessAddress"},                            # the earlier map form
    {"_typeName": RT + "WebSocketClientAddress", "id": "c"},      # joynr's map, not the form
    to_wire(system.MqttAddress("g", "cc/1")),                     # another overload's struct
])
def test_this_projects_proxy_sends_add_next_hop_only_with_its_struct(
        address: dict[str, Any]) -> None:
    """Each overload takes its own struct: whatever else the proxy is given for
    ``add_next_hop`` (the WebSocketClientAddress overload) is refused, not sent."""
    definition = interface_def(Routing).methods["add_next_hop"]
    request = Request("r", definition.name, ["p", address, False], definition.param_datatypes)
    with pytest.raises(JoynrJsonError, match=f"{RT}WebSocketClientAddress has no fields"):
        encode(request, schema=ROUTING)


def test_only_an_address_joynr_has_a_struct_for_is_sent_as_one() -> None:
    for address in (WebSocketClientAddress("c"), MqttAddress("g", "cc/1")):
        assert address_of(address_struct(address)) == address
    # an in-process address has no wire form, hence no overload to send it with
    with pytest.raises(ValueError):
        address_struct(InProcessAddress(object()))


@pytest.mark.parametrize(("call", "name", "result", "response"), [
    (("removeNextHop", ["String"], ["p"]), "remove_next_hop", None, []),
    (("resolveNextHop", ["String"], ["p"]), "resolve_next_hop", True, [True]),
    (("resolveNextHop", ["String"], ["q"]), "resolve_next_hop", False, [False]),
    (("addMulticastReceiver", ["String", "String", "String"], ["prov/news", "sub", "prov"]),
     "add_multicast_receiver", None, []),
    (("removeMulticastReceiver", ["String", "String", "String"], ["prov/news", "sub", "prov"]),
     "remove_multicast_receiver", None, []),
])
def test_the_javascript_routing_calls_and_their_answers(
        call: tuple[str, list[str], list[Any]], name: str, result: Any,
        response: list[Any]) -> None:
    method, datatypes, params = call
    request = request_of(js_request(method, datatypes, params), ROUTING)
    assert method_of(ROUTING, request) == name
    assert typed_args(ROUTING, request) == params
    assert answer(ROUTING, request, result) == {
        "_typeName": "joynr.Reply", "requestReplyId": "n_1", "response": response}


def routing_provider(address: MqttAddress | None) -> RoutingProvider:
    return RoutingProvider(MessageRouter(RoutingTable(RuntimeKind.CLUSTER_CONTROLLER)), address)


@pytest.mark.parametrize("accessor", ["getReplyToAddress", "getGlobalAddress"])
async def test_the_address_attributes_answer_the_serialized_address(accessor: str) -> None:
    request = request_of(js_request(accessor, [], []), ROUTING)
    name = method_of(ROUTING, request)
    provider = routing_provider(MqttAddress("joynrdefaultgbid", "joynr/cc/cc-1"))
    value = await getattr(provider, name)()
    serialized = ('{"_typeName":"joynr.system.RoutingTypes.MqttAddress",'
                  '"brokerUri":"joynrdefaultgbid","topic":"joynr/cc/cc-1"}')
    assert answer(ROUTING, request, value) == {
        "_typeName": "joynr.Reply", "requestReplyId": "n_1", "response": [serialized]}
    assert address_from_json(value) == MqttAddress("joynrdefaultgbid", "joynr/cc/cc-1")
    # a cluster controller without MQTT has no address: the empty string
    assert await getattr(routing_provider(None), name)() == ""


def test_serialized_addresses_as_joynr_writes_them() -> None:
    assert address_to_json(WebSocketClientAddress("abc")) == (
        '{"_typeName":"joynr.system.RoutingTypes.WebSocketClientAddress","id":"abc"}')
    for bad in ("", "{", '"x"', '{"_typeName":"nope"}', "[" * 100_000):
        with pytest.raises(ValueError):
            address_from_json(bad)


def test_a_serialized_address_read_again_is_the_same_address_refused_ones_every_time() -> None:
    """The GCD answers the same provider addresses again and again: one read is kept (the
    address is immutable); a refused text is refused again, never kept."""
    text = address_to_json(MqttAddress("joynrdefaultgbid", "joynr/cc/kept-1"))
    first = address_from_json(text)
    assert address_from_json(text) is first
    bad = '{"_typeName":"joynr.system.RoutingTypes.MqttAddress","topic":"t/#"}'
    for _ in range(2):
        with pytest.raises(ValueError, match="missing field"):
            address_from_json(bad)


async def call_add_next_hop(provider: RoutingProvider, form: str, participant_id: str,
                            struct: system.Address, visible: bool) -> None:
    """``addNextHop`` with ``struct`` in ``form``: ``"struct"``, the generated overload of its
    type (as a JSON request from joynr reaches it), or ``"map"``, ``add_next_hop_map`` with
    its joynr map (as a msgpack request of this project's earlier runtimes reaches it)."""
    if form == "struct":
        kind = type(struct).__name__
        await getattr(provider, STRUCTS[kind][1])(participant_id, struct, visible)
    else:
        joynr_map = json.loads(encode(Reply("r", [to_wire(struct)]),
                                      types=[type(struct)]))["response"][0]
        assert joynr_map["_typeName"] == RT + type(struct).__name__
        await provider.add_next_hop_map(participant_id, joynr_map, visible)


FORMS = pytest.mark.parametrize("form", ["struct", "map"])


@FORMS
@pytest.mark.parametrize("kind", ["ChannelAddress", "BrowserAddress", "BinderAddress"])
async def test_address_types_without_a_transport_here_are_refused_naming_them(
        kind: str, form: str) -> None:
    provider = routing_provider(MqttAddress("g", "cc/1"))
    with pytest.raises(ProviderRuntimeError, match=f"a {kind} names .*no transport"):
        await call_add_next_hop(provider, form, "p", STRUCTS[kind][0], False)
    assert not provider.router.has_route("p")
    assert provider.telemetry.counters["unroutable-address-type"] == 1


@FORMS
@pytest.mark.parametrize("address", [
    STRUCTS["WebSocketAddress"][0],
    STRUCTS["UdsAddress"][0],          # a CC's socket: never a hop of a CC
    system.MqttAddress("g", "cc/1"),   # the CC's own address
    system.MqttAddress("g", "elsewhere"),
])
async def test_websocket_and_mqtt_addresses_are_refused_by_the_rules(
        address: system.Address, form: str) -> None:
    provider = routing_provider(MqttAddress("g", "cc/1"))
    with pytest.raises(ProviderRuntimeError, match="refused"):
        await call_add_next_hop(provider, form, "p", address, False)
    assert not provider.router.has_route("p")
    assert provider.telemetry.counters["unroutable-address-type"] == 0


@FORMS
async def test_a_websocket_client_address_is_routed(form: str) -> None:
    provider = routing_provider(MqttAddress("g", "cc/1"))
    await call_add_next_hop(provider, form, "p", system.WebSocketClientAddress("Zq3_client"),
                            False)
    assert await provider.resolve_next_hop("p")
    entry = provider.router.route_of("p")
    assert entry is not None and entry.address == WebSocketClientAddress("Zq3_client")


@FORMS
async def test_a_uds_client_address_is_routed(form: str) -> None:
    provider = routing_provider(MqttAddress("g", "cc/1"))
    await call_add_next_hop(provider, form, "p", system.UdsClientAddress("Zq3_client"), False)
    entry = provider.router.route_of("p")
    assert entry is not None and entry.address == UdsClientAddress("Zq3_client")


# ====================================================================== Discovery 0.3

NOW = 1_765_000_000_000
JS_ENTRY = {
    "providerVersion": {"_typeName": "joynr.types.Version", "majorVersion": 1,
                        "minorVersion": 2},
    "domain": "vehicle", "interfaceName": "test/Radio", "participantId": "provider-1",
    "qos": {"_typeName": "joynr.types.ProviderQos",
            "customParameters": [{"_typeName": "joynr.types.CustomParameter",
                                  "name": "keyword", "value": "fm"}],
            "priority": NOW, "scope": "GLOBAL", "supportsOnChangeSubscriptions": True},
    "lastSeenDateMs": NOW, "expiryDateMs": NOW + 3_628_800_000, "publicKeyId": "",
    "_typeName": "joynr.types.DiscoveryEntry"}
ENTRY = DiscoveryEntry(Version(1, 2), "vehicle", "test/Radio", "provider-1",
                       ProviderQos([CustomParameter("keyword", "fm")], NOW,
                                   ProviderScope.GLOBAL, True),
                       NOW, NOW + 3_628_800_000, "")
JS_QOS = {"_typeName": "joynr.types.DiscoveryQos", "cacheMaxAge": 0,
          "discoveryTimeout": 30_000, "discoveryScope": "LOCAL_THEN_GLOBAL",
          "providerMustSupportOnChange": False}
#: JS_QOS as a provider receives it: joynr's DiscoveryQos (the generated struct)
QOS = JoynrDiscoveryQos(0, 30_000, DiscoveryScope.LOCAL_THEN_GLOBAL, False)


def test_the_javascript_registration_picks_add_with_gbids() -> None:
    raw = js_request("add", ["joynr.types.DiscoveryEntry", "Boolean", "String[]"],
                     [JS_ENTRY, False, []])
    request = request_of(raw, DISCOVERY)
    assert method_of(DISCOVERY, request) == "add_in_backends"
    assert typed_args(DISCOVERY, request) == [ENTRY, False, []]
    assert answer(DISCOVERY, request, None) == {
        "_typeName": "joynr.Reply", "requestReplyId": "n_1", "response": []}


def test_the_javascript_lookup_and_its_answer() -> None:
    raw = js_request("lookup", ["String[]", "String", "joynr.types.DiscoveryQos", "String[]"],
                     [["vehicle"], "test/Radio", JS_QOS, []])
    request = request_of(raw, DISCOVERY)
    assert method_of(DISCOVERY, request) == "lookup_in_backends"
    assert typed_args(DISCOVERY, request) == [["vehicle"], "test/Radio", QOS, []]
    found = [DiscoveryEntryWithMetaInfo(**vars(ENTRY), is_local=True)]
    reply = answer(DISCOVERY, request, found)
    expected_entry = {**JS_ENTRY, "_typeName": "joynr.types.DiscoveryEntryWithMetaInfo",
                      "isLocal": True}
    assert reply == {"_typeName": "joynr.Reply", "requestReplyId": "n_1",
                     "response": [[expected_entry]]}
    # an application's DiscoveryQos (this project's defaults) is joynr's on the wire
    app_qos = DiscoveryQos(discovery_timeout_ms=30_000)
    assert (app_qos.cache_max_age_ms, app_qos.discovery_timeout_ms) == (0, 30_000)
    definition = interface_def(Discovery).methods["lookup_in_backends"]
    sent = json.loads(encode(Request("n_1", definition.name,
                                     [["vehicle"], "test/Radio", to_wire(app_qos), []],
                                     definition.param_datatypes), schema=DISCOVERY))
    assert sent["params"][2] == JS_QOS
    assert typed_args(DISCOVERY, request_of(json.dumps(sent).encode(), DISCOVERY))[2] == QOS


DISCOVERY_OVERLOADS = [
    ("add", ["joynr.types.DiscoveryEntry"], [JS_ENTRY], "add", [ENTRY]),
    ("add", ["joynr.types.DiscoveryEntry", "Boolean"], [JS_ENTRY, True], "add_awaiting",
     [ENTRY, True]),
    ("add", ["joynr.types.DiscoveryEntry", "Boolean", "String[]"], [JS_ENTRY, True, ["g1"]],
     "add_in_backends", [ENTRY, True, ["g1"]]),
    ("addToAll", ["joynr.types.DiscoveryEntry", "Boolean"], [JS_ENTRY, False], "add_to_all",
     [ENTRY, False]),
    ("lookup", ["String[]", "String", "joynr.types.DiscoveryQos"],
     [["vehicle"], "test/Radio", JS_QOS], "lookup", [["vehicle"], "test/Radio", QOS]),
    ("lookup", ["String[]", "String", "joynr.types.DiscoveryQos", "String[]"],
     [["vehicle"], "test/Radio", JS_QOS, ["g1"]], "lookup_in_backends",
     [["vehicle"], "test/Radio", QOS, ["g1"]]),
    ("lookup", ["String"], ["provider-1"], "lookup_participant", ["provider-1"]),
    ("lookup", ["String", "joynr.types.DiscoveryQos", "String[]"], ["provider-1", JS_QOS, []],
     "lookup_participant_in", ["provider-1", QOS, []]),
    ("remove", ["String"], ["provider-1"], "remove", ["provider-1"]),
]


@pytest.mark.parametrize(("method", "datatypes", "params", "name", "typed"),
                         DISCOVERY_OVERLOADS)
def test_every_discovery_overload_of_joynrs(method: str, datatypes: list[str],
                                            params: list[Any], name: str,
                                            typed: list[Any]) -> None:
    request = request_of(js_request(method, datatypes, params), DISCOVERY)
    assert method_of(DISCOVERY, request) == name
    assert typed_args(DISCOVERY, request) == typed
    # this project's proxy writes joynr's names and datatypes for the same call
    definition = interface_def(Discovery).methods[name]
    again = json.loads(encode(Request("n_1", definition.name, [to_wire(v) for v in typed],
                                      definition.param_datatypes), schema=DISCOVERY))
    assert (again["methodName"], again["paramDatatypes"]) == (method, datatypes)
    assert request_of(json.dumps(again).encode(), DISCOVERY) == request


def test_discovery_errors_travel_as_joynrs_discovery_error() -> None:
    method_name, datatypes, params = DISCOVERY_OVERLOADS[7][:3]
    assert isinstance(method_name, str) and isinstance(params, list)
    request = request_of(js_request(method_name, list(datatypes), params), DISCOVERY)
    method = DISCOVERY.method_for(request.method_name, request.param_datatypes)
    assert method is not None and method.error_enum is DiscoveryErrorCode
    reply = Reply("n_1", None, {"type": "ApplicationException", "message": "none",
                                "error": "NO_ENTRY_FOR_PARTICIPANT"})
    assert json.loads(encode(reply, error_enum=DiscoveryErrorCode))["error"] == {
        "_typeName": "joynr.exceptions.ApplicationException", "detailMessage": "none",
        "error": {"_typeName": "joynr.types.DiscoveryError",
                  "name": "NO_ENTRY_FOR_PARTICIPANT"}}


def entry_now(pid: str, scope: ProviderScope = ProviderScope.LOCAL) -> DiscoveryEntry:
    now = now_ms()
    return DiscoveryEntry(Version(1, 2), "vehicle", "test/Radio", pid,
                          ProviderQos(scope=scope), now, now + 60_000)


class DirectGcd(GcdProvider):
    """The GCD called in-process as the link calls its proxy (per-call ttl and headers do
    not apply to a direct call)."""

    def with_ttl(self, ttl_ms: int) -> DirectGcd:
        return self

    def with_headers(self, headers: dict[str, str]) -> DirectGcd:
        return self


@pytest.fixture
async def linked(tmp_path: Path) -> AsyncIterator[tuple[LocalDiscovery, SqliteStore]]:
    """A local directory linked to a GCD (SQLite in tmp_path, called in-process) of the GBIDs
    g1 and g2."""
    store = SqliteStore(tmp_path / "gcd.sqlite")
    await store.open()
    tasks = TaskSupervisor("test")
    try:
        link = GlobalLink(DirectGcd(store, "g1", ["g1", "g2"]), ["g1", "g2"],
                          MqttAddress("g1", "joynr/cc/cc-1"), "cc-1", tasks=tasks)
        discovery = LocalDiscovery(MessageRouter(RoutingTable(RuntimeKind.CLUSTER_CONTROLLER)))
        discovery.attach_gcd(link)
        yield discovery, store
    finally:
        await tasks.close()
        await store.close()


async def test_an_empty_gbid_list_registers_in_every_gbid_of_the_cluster_controller(
        linked: tuple[LocalDiscovery, SqliteStore]) -> None:
    """joynr's JavaScript runtime registers with add(entry, false, []): as joynr's cluster
    controllers do, the empty list stands for all their GBIDs."""
    discovery, store = linked
    raw = js_request("add", ["joynr.types.DiscoveryEntry", "Boolean", "String[]"],
                     [{**JS_ENTRY, "participantId": "js-provider",
                       "expiryDateMs": now_ms() + 60_000}, False, []])
    request = request_of(raw, DISCOVERY)
    await getattr(discovery, method_of(DISCOVERY, request))(*typed_args(DISCOVERY, request))
    rows: list[Any] = []
    for _ in range(200):  # registered with the GCD in the background
        rows = await store.find_participant("js-provider", 0)
        if len(rows) == 2:
            break
        await asyncio.sleep(0.02)
    assert sorted(row.gbid for row in rows) == ["g1", "g2"]


async def test_the_forms_without_gbids_fail_with_a_provider_runtime_error_naming_it(
        linked: tuple[LocalDiscovery, SqliteStore]) -> None:
    discovery, store = linked
    await discovery.add(entry_now("here"))
    assert (await discovery.lookup_participant("here")).is_local
    with pytest.raises(ProviderRuntimeError,
                       match="Error discovering provider nobody in all backends: "
                             "NO_ENTRY_FOR_PARTICIPANT"):
        await discovery.lookup_participant("nobody")  # (the GCD's answer)
    await store.close()  # the GCD fails from now on: INTERNAL_ERROR
    with pytest.raises(ApplicationError) as modelled:
        await discovery.add_in_backends(entry_now("p1", ProviderScope.GLOBAL), True, [])
    assert modelled.value.error == "INTERNAL_ERROR"
    with pytest.raises(ProviderRuntimeError,
                       match="Error registering provider p2 in default backend: "
                             "INTERNAL_ERROR"):
        await discovery.add_awaiting(entry_now("p2", ProviderScope.GLOBAL), True)
    assert [e.participant_id for e in discovery.entries()] == ["here"]


def test_a_java_and_a_cpp_lookup_request_decode_alike() -> None:
    qos_java = {"_typeName": "joynr.types.DiscoveryQos", "cacheMaxAge": 0,
                "discoveryScope": "LOCAL_THEN_GLOBAL", "discoveryTimeout": 30_000,
                "providerMustSupportOnChange": False}
    java = json.dumps({"_typeName": "joynr.Request", "methodName": "lookup",
                       "paramDatatypes": ["String[]", "String", "joynr.types.DiscoveryQos",
                                          "String[]"],
                       "params": [["vehicle"], "test/Radio", qos_java, ["g1"]],
                       "requestReplyId": "7c1e"}, separators=(",", ":"))
    cpp = ('{"_typeName":"joynr.Request","requestReplyId":"7c1e","methodName":"lookup",'
           '"paramDatatypes":["String[]","String","joynr.types.DiscoveryQos","String[]"],'
           '"params":[["vehicle"],"test/Radio",{"_typeName":"joynr.types.DiscoveryQos",'
           '"cacheMaxAge":0,"discoveryTimeout":30000,"discoveryScope":"LOCAL_THEN_GLOBAL",'
           '"providerMustSupportOnChange":false},["g1"]]}')
    assert request_of(java.encode(), DISCOVERY) == decode(
        Request, cpp.encode(), schema=DISCOVERY)
    assert typed_args(DISCOVERY, request_of(cpp.encode(), DISCOVERY)) == [
        ["vehicle"], "test/Radio", QOS, ["g1"]]


# ====================================================================== GCD 0.3

#: the GCD's entry of joynr's provisioned_capabilities.json (Java's writing: members sorted)
PROVISIONED = (
    '{"_typeName":"joynr.types.GlobalDiscoveryEntry",'
    '"address":"{\\"_typeName\\":\\"joynr.system.RoutingTypes.MqttAddress\\",'
    '\\"brokerUri\\":\\"joynrdefaultgbid\\",\\"topic\\":\\"discoverydirectory_channelid\\"}",'
    '"domain":"io.joynr","expiryDateMs":9223372036854775807,'
    '"interfaceName":"infrastructure/GlobalCapabilitiesDirectory","lastSeenDateMs":0,'
    '"participantId":"capabilitiesdirectory_participantid",'
    '"providerVersion":{"_typeName":"joynr.types.Version","majorVersion":0,"minorVersion":3},'
    '"publicKeyId":"",'
    '"qos":{"_typeName":"joynr.types.ProviderQos","customParameters":[],"priority":0,'
    '"scope":"GLOBAL","supportsOnChangeSubscriptions":false}}')
GDE = GlobalDiscoveryEntry(
    Version(0, 3), "io.joynr", "infrastructure/GlobalCapabilitiesDirectory",
    "capabilitiesdirectory_participantid", ProviderQos([], 0, ProviderScope.GLOBAL, False), 0,
    2 ** 63 - 1, "", address=address_to_json(MqttAddress("joynrdefaultgbid",
                                                         "discoverydirectory_channelid")))
GDE_TYPE = "joynr.types.GlobalDiscoveryEntry"

GCD_OVERLOADS: list[tuple[str, str, list[str], list[Any]]] = [
    ("add_entries", "add", [GDE_TYPE + "[]"], [[GDE]]),
    ("add", "add", [GDE_TYPE], [GDE]),
    ("add_in_backends", "add", [GDE_TYPE, "String[]"], [GDE, ["g1", "g2"]]),
    ("lookup", "lookup", ["String[]", "String"], [["io.joynr"], "infrastructure/X"]),
    ("lookup_in_backends", "lookup", ["String[]", "String", "String[]"],
     [["io.joynr"], "infrastructure/X", ["g1"]]),
    ("lookup_participant", "lookup", ["String"], ["p1"]),
    ("lookup_participant_in", "lookup", ["String", "String[]"], ["p1", ["g1"]]),
    ("remove_participants", "remove", ["String[]"], [["p1", "p2"]]),
    ("remove", "remove", ["String"], ["p1"]),
    ("remove_in_backends", "remove", ["String", "String[]"], ["p1", ["g1"]]),
    ("remove_stale", "removeStale", ["String", "Long"], ["cc-1", 1_765_000_000_000]),
    ("touch", "touch", ["String"], ["cc-1"]),
    ("touch_participants", "touch", ["String", "String[]"], ["cc-1", ["p1"]]),
]


@pytest.mark.parametrize(("name", "joynr", "datatypes", "typed"), GCD_OVERLOADS)
def test_every_gcd_overload_round_trips(name: str, joynr: str, datatypes: list[str],
                                        typed: list[Any]) -> None:
    definition: MethodDef = interface_def(GlobalCapabilitiesDirectory).methods[name]
    request = Request("r1", definition.name, [to_wire(v) for v in typed],
                      definition.param_datatypes)
    raw = encode(request, schema=GCD)
    sent = json.loads(raw)
    assert (sent["methodName"], sent["paramDatatypes"]) == (joynr, datatypes)
    assert raw.count(PROVISIONED.encode()) == (1 if GDE in typed or [GDE] in typed else 0)
    back = request_of(raw, GCD)
    assert back == request
    assert method_of(GCD, back) == name
    assert typed_args(GCD, back) == typed


def test_the_provisioned_gcd_entry_decodes_and_encodes_byte_for_byte() -> None:
    raw = ('{"_typeName":"joynr.Reply","requestReplyId":"r1","response":[' + PROVISIONED
           + "]}").encode()
    method = interface_def(GlobalCapabilitiesDirectory).methods["lookup_participant"]
    reply = decode(Reply, raw, types=reply_types(method))
    assert isinstance(reply, Reply) and reply.response is not None
    assert from_wire(reply.response[0], GlobalDiscoveryEntry) == GDE
    assert encode(Reply("r1", [to_wire(GDE)]), types=reply_types(method)) == raw


def cpp_entry(address: str) -> str:
    """The same entry as joynr's C++ runtime writes it: _typeName first, declaration order."""
    return ('{"_typeName":"joynr.types.GlobalDiscoveryEntry",'
            '"providerVersion":{"_typeName":"joynr.types.Version","majorVersion":0,'
            '"minorVersion":3},"domain":"io.joynr",'
            '"interfaceName":"infrastructure/GlobalCapabilitiesDirectory",'
            '"participantId":"capabilitiesdirectory_participantid",'
            '"qos":{"_typeName":"joynr.types.ProviderQos","customParameters":[],'
            '"priority":0,"scope":"GLOBAL","supportsOnChangeSubscriptions":false},'
            '"lastSeenDateMs":0,"expiryDateMs":9223372036854775807,"publicKeyId":"",'
            '"address":' + json.dumps(address, separators=(",", ":")) + "}")


def test_a_java_and_a_cpp_gcd_answer_decode_alike() -> None:
    method = interface_def(GlobalCapabilitiesDirectory).methods["lookup_in_backends"]
    types = reply_types(method)
    java = ('{"_typeName":"joynr.Reply","requestReplyId":"r1","response":[['
            + PROVISIONED + "]]}")
    cpp = ('{"_typeName":"joynr.Reply","requestReplyId":"r1","response":[['
           + cpp_entry('{"_typeName":"joynr.system.RoutingTypes.MqttAddress",'
                       '"brokerUri":"joynrdefaultgbid","topic":"discoverydirectory_channelid"}')
           + "]],\"error\":null}")
    for raw in (java, cpp):
        reply = decode(Reply, raw.encode(), types=types, error_enum=method.error_enum)
        assert isinstance(reply, Reply) and reply.response is not None
        assert from_wire(reply.response[0], list[GlobalDiscoveryEntry]) == [GDE]


def test_a_gde_address_is_carried_as_the_string_joynr_sent() -> None:
    """The address is a String: read and written again as it came (members in another order,
    whitespace), and read as an address only where it is used."""
    written = ('{ "_typeName": "joynr.system.RoutingTypes.MqttAddress", '
               '"topic": "discoverydirectory_channelid", "brokerUri": "joynrdefaultgbid" }')
    raw = ('{"_typeName":"joynr.Reply","requestReplyId":"r1","response":['
           + cpp_entry(written) + "]}").encode()
    method = interface_def(GlobalCapabilitiesDirectory).methods["lookup_participant"]
    reply = decode(Reply, raw, types=reply_types(method))
    assert isinstance(reply, Reply) and reply.response is not None
    gde = from_wire(reply.response[0], GlobalDiscoveryEntry)
    assert gde.address == written
    assert address_from_json(gde.address) == address_from_json(GDE.address)
    sent = json.loads(encode(Reply("r1", [to_wire(gde)]), types=reply_types(method)))
    assert sent["response"][0]["address"] == written


@pytest.mark.parametrize(("error", "expected"), [
    ({"_typeName": "joynr.exceptions.ApplicationException", "detailMessage": "no",
      "error": {"_typeName": "joynr.types.DiscoveryError",
                "name": "NO_ENTRY_FOR_SELECTED_BACKENDS"}},
     {"type": "ApplicationException", "message": "no",
      "error": "NO_ENTRY_FOR_SELECTED_BACKENDS"}),
    ({"_typeName": "io.joynr.exceptions.JoynrRuntimeException", "detailMessage": "x"},
     {"type": "JoynrRuntimeException", "message": "x"}),
    ({"_typeName": "io.joynr.exceptions.DiscoveryException", "detailMessage": "y"},
     {"type": "DiscoveryException", "message": "y"}),
    ({"_typeName": "joynr.exceptions.ProviderRuntimeException", "detailMessage": "z"},
     {"type": "ProviderRuntimeException", "message": "z"}),
])
def test_gcd_errors_in_java_and_cpp_names_decode(error: dict[str, Any],
                                                 expected: dict[str, Any]) -> None:
    method = interface_def(GlobalCapabilitiesDirectory).methods["lookup_in_backends"]
    raw = json.dumps({"_typeName": "joynr.Reply", "error": error, "requestReplyId": "r1"})
    reply = decode(Reply, raw.encode(), types=reply_types(method), error_enum=method.error_enum)
    assert isinstance(reply, Reply) and reply.response is None
    assert reply.error == expected


NOT_ADDRESSES = ["not json", "[1,", "{" * 50 + "}" * 50,
                 '{"_typeName":' + "[" * 100 + "]" * 100 + "}"]


def with_address(address: Any) -> bytes:
    """A reply with the provisioned entry, its address replaced (Java's writing)."""
    data = json.loads(PROVISIONED)
    data["address"] = address
    return ('{"_typeName":"joynr.Reply","requestReplyId":"r1","response":['
            + json.dumps(data, separators=(",", ":")) + "]}").encode()


@pytest.mark.parametrize("address", NOT_ADDRESSES)
def test_a_serialized_address_that_is_not_json_is_carried_as_it_is(address: str) -> None:
    """joynr declares the address a String: the JSON body is read and written again with it
    as it is (in JSON and in msgpack); what uses it refuses it (the next tests)."""
    raw = with_address(address)
    method = interface_def(GlobalCapabilitiesDirectory).methods["lookup_participant"]
    reply = decode(Reply, raw, types=reply_types(method))
    assert isinstance(reply, Reply) and reply.response is not None
    gde = from_wire(reply.response[0], GlobalDiscoveryEntry)
    assert gde.address == address
    assert encode(Reply("r1", [to_wire(gde)]), types=reply_types(method)) == raw
    packed = decode_payload(Reply, Reply("r1", [to_wire(gde)]).to_body())
    assert packed.response is not None
    assert from_wire(packed.response[0], GlobalDiscoveryEntry) == gde
    with pytest.raises(ValueError):
        address_from_json(gde.address)


@pytest.mark.parametrize("address", [17, None, ["x"], {"_typeName": RT + "MqttAddress"}])
def test_an_address_that_is_not_a_string_is_refused(address: Any) -> None:
    method = interface_def(GlobalCapabilitiesDirectory).methods["lookup_participant"]
    with pytest.raises(JoynrJsonError):
        decode(Reply, with_address(address), types=reply_types(method))


@pytest.mark.parametrize("address", NOT_ADDRESSES)
async def test_the_gcd_refuses_to_store_an_address_that_is_not_json(
        tmp_path: Path, address: str) -> None:
    store = SqliteStore(tmp_path / "gcd.sqlite")
    await store.open()
    try:
        gcd = GcdProvider(store, "g1", ["g1", "g2"])
        now = now_ms()
        entry = GlobalDiscoveryEntry(**{**vars(GDE), "participant_id": "bad-address",
                                        "last_seen_date_ms": now,
                                        "expiry_date_ms": now + 60_000, "address": address})
        with pytest.raises(ProviderRuntimeError, match="bad-address: bad address"):
            await gcd.add(entry)
        with pytest.raises(ProviderRuntimeError, match="bad-address: bad address"):
            await gcd.add_in_backends(entry, ["g1", "g2"])
        assert await store.find_participant("bad-address", 0) == []
        # the same entry with joynr's serialized address is stored
        await gcd.add(GlobalDiscoveryEntry(**{**vars(entry), "address": GDE.address}))
        assert len(await store.find_participant("bad-address", 0)) == 1
    finally:
        await store.close()
