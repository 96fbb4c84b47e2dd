"""The project's system interfaces (Routing, Discovery, the GCD, the AccessControlListEditor)
are generated from fidl/ and are joynr's on the wire.

- pyjoynr/programming/generated is what ``python -m pyjoynr.franca`` makes of fidl/, byte for byte
  (the .fidl files and the code in use never drift apart);
- the declarations there (used through programming.system_interfaces,
  programming.discovery_types, programming.access_control and gcd.interface) are joynr's:
  every overload by joynr name and ``paramDatatypes``, its out types and errors, the
  attributes, every struct and enumeration with its joynr name and members, values written as
  joynr's JSON byte for byte; with ``add_version_to="comment"`` the AccessControlListEditor
  keeps its unversioned names;
- the names on this project's msgpack wire are listed one by one (a change of them is a
  visible diff), and a provider answers a call by the earlier msgpack names too;
- joynr's address structs convert to this project's addresses and back.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import typing
from pathlib import Path
from typing import Any

import pytest

import pyjoynr.programming.discovery_types as types_
from pyjoynr.franca.generate import GENERATED_MARK, generate
from pyjoynr.franca.parser import parse_files
from pyjoynr.gcd.interface import GlobalCapabilitiesDirectory
from pyjoynr.programming import access_control
from pyjoynr.programming.access_control import AccessControlListEditor
from pyjoynr.programming.generated import infrastructure, system
from pyjoynr.programming.generated import types as generated_types
from pyjoynr.programming.system_interfaces import (
    ADDRESS_STRUCTS,
    ADDRESS_TYPE_NAMES,
    Discovery,
    Routing,
    address_of,
    address_struct,
    address_to_json,
)
from pyjoynr.runtime.addresses import (
    AddressError,
    MqttAddress,
    WebSocketAddress,
    WebSocketClientAddress,
)
from pyjoynr.runtime.interface import (
    MethodDef,
    from_wire,
    interface_def,
    joynr_member_names,
    joynr_serialized_members,
    joynr_type_name,
    lower_camel,
    max_length,
    to_wire,
)
from pyjoynr.runtime.joynr_json import JoynrSchema, decode, encode, reply_types
from pyjoynr.runtime.payloads import Reply, Request
from tests.support.generated import assert_generated_from

ROOT = Path(__file__).resolve().parents[2]
FIDL = ROOT / "fidl"
CHECKED_IN = ROOT / "pyjoynr" / "programming" / "generated"
ROUTING_TYPES = "joynr.system.RoutingTypes."
DAC_TYPES = "joynr.infrastructure.DacTypes."
INTERFACES = (Routing, Discovery, GlobalCapabilitiesDirectory, AccessControlListEditor)
#: types fidl/ declares that no interface uses (joynr's provisioning files hold them)
ALSO_DECLARED = (infrastructure.DomainRoleEntry,)


def test_programming_generated_is_what_fidl_generates(tmp_path: Path) -> None:
    assert_generated_from(FIDL, CHECKED_IN, GENERATED_MARK, tmp_path)


def test_the_declarations_in_use_are_the_generated_ones() -> None:
    assert (Routing, Discovery) == (system.Routing, system.Discovery)
    assert GlobalCapabilitiesDirectory is infrastructure.GlobalCapabilitiesDirectory
    for name in ("CustomParameter", "DiscoveryEntry", "DiscoveryEntryWithMetaInfo",
                 "DiscoveryScope", "GlobalDiscoveryEntry", "ProviderQos", "ProviderScope",
                 "Version"):
        assert getattr(types_, name) is getattr(generated_types, name), name
    assert types_.DiscoveryErrorCode is generated_types.DiscoveryError
    # the applications' DiscoveryQos is joynr's, with defaults of this project's
    assert issubclass(types_.DiscoveryQos, generated_types.DiscoveryQos)
    for name in access_control.__all__:
        if hasattr(infrastructure, name):
            assert getattr(access_control, name) is getattr(infrastructure, name), name
    assert (access_control.ACL_EDITOR_PARTICIPANT_ID, access_control.ACL_EDITOR_DOMAIN) == (
        "CC.AccessControlListEditor.ParticipantId", "io.joynr.system")


# ---------------------------------------------------------------------- joynr's wire

#: joynr's overloads: (joynr name, paramDatatypes) -> (out types, errors)
NO_ERRORS = None
DISCOVERY_ERROR = "joynr.types.DiscoveryError"
JOYNR_OVERLOADS: dict[str, dict[tuple[str, tuple[str, ...]], tuple[tuple[str, ...], Any]]] = {
    "system/Routing": {
        **{("addNextHop", ("String", name, "Boolean")): ((), NO_ERRORS)
           for name in ADDRESS_TYPE_NAMES},
        ("removeNextHop", ("String",)): ((), NO_ERRORS),
        ("resolveNextHop", ("String",)): (("Boolean",), NO_ERRORS),
        ("addMulticastReceiver", ("String", "String", "String")): ((), NO_ERRORS),
        ("removeMulticastReceiver", ("String", "String", "String")): ((), NO_ERRORS),
    },
    "system/Discovery": {
        ("add", ("joynr.types.DiscoveryEntry",)): ((), NO_ERRORS),
        ("add", ("joynr.types.DiscoveryEntry", "Boolean")): ((), NO_ERRORS),
        ("add", ("joynr.types.DiscoveryEntry", "Boolean", "String[]")): ((), DISCOVERY_ERROR),
        ("addToAll", ("joynr.types.DiscoveryEntry", "Boolean")): ((), DISCOVERY_ERROR),
        ("lookup", ("String[]", "String", "joynr.types.DiscoveryQos")): (
            ("joynr.types.DiscoveryEntryWithMetaInfo[]",), NO_ERRORS),
        ("lookup", ("String[]", "String", "joynr.types.DiscoveryQos", "String[]")): (
            ("joynr.types.DiscoveryEntryWithMetaInfo[]",), DISCOVERY_ERROR),
        ("lookup", ("String",)): (("joynr.types.DiscoveryEntryWithMetaInfo",), NO_ERRORS),
        ("lookup", ("String", "joynr.types.DiscoveryQos", "String[]")): (
            ("joynr.types.DiscoveryEntryWithMetaInfo",), DISCOVERY_ERROR),
        ("remove", ("String",)): ((), NO_ERRORS),
    },
    "infrastructure/GlobalCapabilitiesDirectory": {
        ("add", ("joynr.types.GlobalDiscoveryEntry",)): ((), NO_ERRORS),
        ("add", ("joynr.types.GlobalDiscoveryEntry[]",)): ((), NO_ERRORS),
        ("add", ("joynr.types.GlobalDiscoveryEntry", "String[]")): ((), DISCOVERY_ERROR),
        ("lookup", ("String[]", "String")): (("joynr.types.GlobalDiscoveryEntry[]",),
                                             NO_ERRORS),
        ("lookup", ("String[]", "String", "String[]")): (
            ("joynr.types.GlobalDiscoveryEntry[]",), DISCOVERY_ERROR),
        ("lookup", ("String",)): (("joynr.types.GlobalDiscoveryEntry",), NO_ERRORS),
        ("lookup", ("String", "String[]")): (("joynr.types.GlobalDiscoveryEntry",),
                                             DISCOVERY_ERROR),
        ("remove", ("String",)): ((), NO_ERRORS),
        ("remove", ("String[]",)): ((), NO_ERRORS),
        ("remove", ("String", "String[]")): ((), DISCOVERY_ERROR),
        ("touch", ("String",)): ((), NO_ERRORS),
        ("touch", ("String", "String[]")): ((), NO_ERRORS),
        ("removeStale", ("String", "Long")): ((), NO_ERRORS),
    },
    "infrastructure/AccessControlListEditor": {
        **{(f"update{kind}", (DAC_TYPES + entry,)): (("Boolean",), NO_ERRORS)
           for kind, entry in (
               ("MasterAccessControlEntry", "MasterAccessControlEntry"),
               ("MediatorAccessControlEntry", "MasterAccessControlEntry"),
               ("OwnerAccessControlEntry", "OwnerAccessControlEntry"),
               ("MasterRegistrationControlEntry", "MasterRegistrationControlEntry"),
               ("MediatorRegistrationControlEntry", "MasterRegistrationControlEntry"),
               ("OwnerRegistrationControlEntry", "OwnerRegistrationControlEntry"))},
        **{(f"remove{who}AccessControlEntry", ("String",) * 4): (("Boolean",), NO_ERRORS)
           for who in ("Master", "Mediator", "Owner")},
        **{(f"remove{who}RegistrationControlEntry", ("String",) * 3): (("Boolean",), NO_ERRORS)
           for who in ("Master", "Mediator", "Owner")},
    },
}

_PLAIN = {int: "Long", float: "Double", bool: "Boolean", str: "String", bytes: "ByteBuffer"}


def type_view(tp: Any) -> str:
    """A declared type by joynr's name for it (the integer width is compared where it shows:
    in paramDatatypes)."""
    if tp in _PLAIN:
        return _PLAIN[tp]
    if typing.get_origin(tp) is list:
        return type_view(typing.get_args(tp)[0]) + "[]"
    assert isinstance(tp, type), tp
    return joynr_type_name(tp)


def joynr_signatures(cls: type) -> dict[tuple[str, tuple[str, ...]], tuple[Any, ...]]:
    found: dict[tuple[str, tuple[str, ...]], tuple[Any, ...]] = {}
    for method in interface_def(cls).methods.values():
        assert method.joynr_datatypes is not None, method.name
        key = (lower_camel(method.name), tuple(str(d) for d in method.joynr_datatypes))
        assert key not in found, key
        errors = None if method.error_enum is None else joynr_type_name(method.error_enum)
        found[key] = (tuple(type_view(tp) for tp in reply_types(method)), errors)
        assert not method.one_way
    return found


def test_the_interfaces_have_joynr_names_versions_and_overloads() -> None:
    assert [(interface_def(c).name, interface_def(c).version) for c in INTERFACES] == [
        ("system/Routing", (0, 1)), ("system/Discovery", (0, 3)),
        ("infrastructure/GlobalCapabilitiesDirectory", (0, 3)),
        ("infrastructure/AccessControlListEditor", (0, 1))]
    for cls in INTERFACES:
        name = interface_def(cls).name
        assert joynr_signatures(cls) == JOYNR_OVERLOADS[name], name


def test_the_routing_attributes_are_readonly_strings_without_subscriptions() -> None:
    attributes = interface_def(Routing).attributes
    assert {lower_camel(n): (a.type, a.readonly, a.notifiable) for n, a in attributes.items()
            } == {"globalAddress": (str, True, False), "replyToAddress": (str, True, False)}
    for cls in INTERFACES:
        assert not interface_def(cls).broadcasts
    assert not interface_def(Discovery).attributes
    assert not interface_def(GlobalCapabilitiesDirectory).attributes
    assert not interface_def(AccessControlListEditor).attributes


#: the structs and enumerations of the interfaces: joynr name -> (base, members as joynr
#: names them with their types) or the enumeration's literals
JOYNR_TYPES: dict[str, Any] = {
    "joynr.types.Version": (None, [("majorVersion", "Long"), ("minorVersion", "Long")]),
    "joynr.types.CustomParameter": (None, [("name", "String"), ("value", "String")]),
    "joynr.types.ProviderScope": {"GLOBAL", "LOCAL"},
    "joynr.types.ProviderQos": (None, [
        ("customParameters", "joynr.types.CustomParameter[]"), ("priority", "Long"),
        ("scope", "joynr.types.ProviderScope"), ("supportsOnChangeSubscriptions", "Boolean")]),
    "joynr.types.DiscoveryScope": {"LOCAL_ONLY", "LOCAL_THEN_GLOBAL", "LOCAL_AND_GLOBAL",
                                   "GLOBAL_ONLY"},
    "joynr.types.DiscoveryQos": (None, [
        ("cacheMaxAge", "Long"), ("discoveryTimeout", "Long"),
        ("discoveryScope", "joynr.types.DiscoveryScope"),
        ("providerMustSupportOnChange", "Boolean")]),
    "joynr.types.DiscoveryEntry": (None, [
        ("providerVersion", "joynr.types.Version"), ("domain", "String"),
        ("interfaceName", "String"), ("participantId", "String"),
        ("qos", "joynr.types.ProviderQos"), ("lastSeenDateMs", "Long"),
        ("expiryDateMs", "Long"), ("publicKeyId", "String")]),
    "joynr.types.GlobalDiscoveryEntry": ("joynr.types.DiscoveryEntry", [("address", "String")]),
    "joynr.types.DiscoveryEntryWithMetaInfo": ("joynr.types.DiscoveryEntry",
                                               [("isLocal", "Boolean")]),
    "joynr.types.DiscoveryError": {"NO_ENTRY_FOR_PARTICIPANT", "INVALID_GBID", "UNKNOWN_GBID",
                                   "NO_ENTRY_FOR_SELECTED_BACKENDS", "INTERNAL_ERROR"},
    ROUTING_TYPES + "Address": (None, []),
    ROUTING_TYPES + "LocalAddress": (ROUTING_TYPES + "Address", []),
    ROUTING_TYPES + "ChannelAddress": (ROUTING_TYPES + "Address", [
        ("messagingEndpointUrl", "String"), ("channelId", "String")]),
    ROUTING_TYPES + "MqttAddress": (ROUTING_TYPES + "Address", [
        ("brokerUri", "String"), ("topic", "String")]),
    ROUTING_TYPES + "BrowserAddress": (ROUTING_TYPES + "Address", [("windowId", "String")]),
    ROUTING_TYPES + "WebSocketProtocol": {"WS", "WSS"},
    ROUTING_TYPES + "WebSocketAddress": (ROUTING_TYPES + "LocalAddress", [
        ("protocol", ROUTING_TYPES + "WebSocketProtocol"), ("host", "String"),
        ("port", "Long"), ("path", "String")]),
    ROUTING_TYPES + "UdsAddress": (ROUTING_TYPES + "LocalAddress", [("path", "String")]),
    ROUTING_TYPES + "UdsClientAddress": (ROUTING_TYPES + "LocalAddress", [("id", "String")]),
    ROUTING_TYPES + "WebSocketClientAddress": (ROUTING_TYPES + "LocalAddress",
                                               [("id", "String")]),
    ROUTING_TYPES + "BinderAddress": (ROUTING_TYPES + "LocalAddress", [
        ("packageName", "String"), ("userId", "Long")]),
    # joynr's access control types, with its inheritance and its order of members
    DAC_TYPES + "Permission": {"YES", "ASK", "NO"},
    DAC_TYPES + "TrustLevel": {"HIGH", "MID", "LOW", "NONE"},
    DAC_TYPES + "Role": {"MASTER", "OWNER"},
    DAC_TYPES + "DomainRoleEntry": (None, [
        ("uid", "String"), ("domains", "String[]"), ("role", DAC_TYPES + "Role")]),
    DAC_TYPES + "ControlEntry": (None, [
        ("uid", "String"), ("domain", "String"), ("interfaceName", "String")]),
    DAC_TYPES + "MasterControlEntry": (DAC_TYPES + "ControlEntry", [
        ("defaultRequiredTrustLevel", DAC_TYPES + "TrustLevel"),
        ("possibleRequiredTrustLevels", DAC_TYPES + "TrustLevel[]"),
        ("defaultRequiredControlEntryChangeTrustLevel", DAC_TYPES + "TrustLevel"),
        ("possibleRequiredControlEntryChangeTrustLevels", DAC_TYPES + "TrustLevel[]")]),
    DAC_TYPES + "OwnerControlEntry": (DAC_TYPES + "ControlEntry", [
        ("requiredTrustLevel", DAC_TYPES + "TrustLevel"),
        ("requiredAceChangeTrustLevel", DAC_TYPES + "TrustLevel")]),
    DAC_TYPES + "MasterAccessControlEntry": (DAC_TYPES + "MasterControlEntry", [
        ("operation", "String"), ("defaultConsumerPermission", DAC_TYPES + "Permission"),
        ("possibleConsumerPermissions", DAC_TYPES + "Permission[]")]),
    DAC_TYPES + "MasterRegistrationControlEntry": (DAC_TYPES + "MasterControlEntry", [
        ("defaultProviderPermission", DAC_TYPES + "Permission"),
        ("possibleProviderPermissions", DAC_TYPES + "Permission[]")]),
    DAC_TYPES + "OwnerAccessControlEntry": (DAC_TYPES + "OwnerControlEntry", [
        ("operation", "String"), ("consumerPermission", DAC_TYPES + "Permission")]),
    DAC_TYPES + "OwnerRegistrationControlEntry": (DAC_TYPES + "OwnerControlEntry", [
        ("providerPermission", DAC_TYPES + "Permission")]),
}


def used_types() -> dict[str, type]:
    """The structs and enumerations the interfaces reach (with the structs' bases), and
    those fidl/ declares beside them."""
    found: dict[str, type] = {}
    pending: list[Any] = list(ALSO_DECLARED)
    for cls in INTERFACES:
        definition = interface_def(cls)
        pending += [a.type for a in definition.attributes.values()]
        for method in definition.methods.values():
            pending += [tp for _, tp in method.params] + reply_types(method)
            pending += [] if method.error_enum is None else [method.error_enum]
    while pending:
        tp = pending.pop()
        pending.extend(typing.get_args(tp))
        if not isinstance(tp, type) or tp in _PLAIN or joynr_type_name(tp) in found:
            continue
        found[joynr_type_name(tp)] = tp
        if dataclasses.is_dataclass(tp):
            pending += list(typing.get_type_hints(tp).values())
            pending += [b for b in tp.__bases__ if dataclasses.is_dataclass(b)]
    return found


def joynr_view(tp: type) -> Any:
    if issubclass(tp, enum.Enum):
        return set(tp.__members__)
    bases = [b for b in tp.__bases__ if dataclasses.is_dataclass(b)]
    hints = typing.get_type_hints(tp)
    members = joynr_member_names(tp)
    own = [f for f in dataclasses.fields(tp)
           if not any(f.name in {g.name for g in dataclasses.fields(b)} for b in bases)]
    assert not joynr_serialized_members(tp)
    return (joynr_type_name(bases[0]) if bases else None,
            [(members[f.name], type_view(hints[f.name])) for f in own])


def test_the_types_are_joynrs() -> None:
    found = used_types()
    assert sorted(found) == sorted(JOYNR_TYPES)
    for name, tp in found.items():
        assert joynr_view(tp) == JOYNR_TYPES[name], name


def test_every_member_has_joynrs_default() -> None:
    """As joynr's generated constructors: a value made, or read from the wire, without a
    member has the member's default."""
    entry = types_.DiscoveryEntryWithMetaInfo()
    assert (entry.provider_version, entry.domain, entry.qos, entry.public_key_id,
            entry.is_local) == (types_.Version(0, 0), "", types_.ProviderQos(), "", False)
    assert types_.ProviderQos() == types_.ProviderQos([], 0, types_.ProviderScope.GLOBAL, False)
    assert entry.qos is not types_.DiscoveryEntry().qos  # (each its own)
    # a joynr runtime's entry without publicKeyId (joynr's JavaScript runtime leaves an
    # undefined member out)
    body = json.dumps({"_typeName": "joynr.Request", "requestReplyId": "r1",
                       "methodName": "add", "paramDatatypes": ["joynr.types.DiscoveryEntry"],
                       "params": [{"_typeName": "joynr.types.DiscoveryEntry",
                                   "domain": "d", "interfaceName": "i/I",
                                   "participantId": "p", "lastSeenDateMs": 1,
                                   "expiryDateMs": 2,
                                   "providerVersion": {"_typeName": "joynr.types.Version",
                                                       "majorVersion": 1,
                                                       "minorVersion": 0},
                                   "qos": {"_typeName": "joynr.types.ProviderQos",
                                           "customParameters": [], "priority": 0,
                                           "scope": "LOCAL",
                                           "supportsOnChangeSubscriptions": True}}]}).encode()
    request = decode(Request, body, schema=JoynrSchema(interface_def(Discovery)))
    read = from_wire(request.params[0], types_.DiscoveryEntry, "entry")
    assert (read.public_key_id, read.participant_id) == ("", "p")


def test_the_applications_discovery_qos_has_this_projects_defaults() -> None:
    qos = types_.DiscoveryQos()
    assert (qos.cache_max_age_ms, qos.discovery_timeout_ms, qos.discovery_scope,
            qos.provider_must_support_on_change) == (
        0, 10_000, types_.DiscoveryScope.LOCAL_THEN_GLOBAL, False)
    qos = types_.DiscoveryQos(cache_max_age_ms=5, discovery_timeout_ms=7)
    assert (qos.cache_max_age, qos.discovery_timeout) == (5, 7)
    assert joynr_type_name(type(qos)) == "joynr.types.DiscoveryQos"
    assert to_wire(qos) == to_wire(system_qos(5, 7))
    # made again from its fields, by joynr's names (as dataclasses.replace and a reader do)
    assert dataclasses.replace(qos, discovery_timeout=9).discovery_timeout_ms == 9
    assert from_wire(to_wire(qos), types_.DiscoveryQos, "qos").cache_max_age_ms == 5


def system_qos(cache_max_age: int, discovery_timeout: int) -> Any:
    return generated_types.DiscoveryQos(cache_max_age, discovery_timeout,
                                        generated_types.DiscoveryScope.LOCAL_THEN_GLOBAL, False)


def method_at(cls: type, name: str, datatypes: list[str]) -> MethodDef:
    method = JoynrSchema(interface_def(cls)).select(name, datatypes)
    assert method is not None, f"{interface_def(cls).name} has no {name}({datatypes})"
    return method


def request_json(cls: type, name: str, datatypes: list[str], params: list[Any]) -> Any:
    """The joynr JSON of a request (read back as the same request)."""
    method = method_at(cls, name, datatypes)
    schema = JoynrSchema(interface_def(cls))
    request = Request("rid-1", method.name, [to_wire(p) for p in params],
                      method.param_datatypes)
    body = encode(request, schema=schema)
    assert decode(Request, body, schema=schema) == request
    return json.loads(body)


def entry_fields() -> dict[str, Any]:
    qos = types_.ProviderQos([types_.CustomParameter("colour", "blue")], 7,
                             types_.ProviderScope.GLOBAL, False)
    return {"provider_version": types_.Version(1, 2), "domain": "vehicle",
            "interface_name": "vehicle/Radio", "participant_id": "radio-1", "qos": qos,
            "last_seen_date_ms": 1_700_000_000_000, "expiry_date_ms": 9_223_372_036_854_775_807,
            "public_key_id": ""}


def test_a_lookup_is_joynrs_json() -> None:
    written = request_json(Discovery, "lookup",
                           ["String[]", "String", "joynr.types.DiscoveryQos", "String[]"],
                           [["vehicle"], "vehicle/Radio",
                            types_.DiscoveryQos(30_000, 5_000,
                                                types_.DiscoveryScope.GLOBAL_ONLY, True),
                            ["gbid-a", "gbid-b"]])
    assert written["methodName"] == "lookup"
    assert written["params"][2] == {
        "_typeName": "joynr.types.DiscoveryQos", "cacheMaxAge": 30_000,
        "discoveryScope": "GLOBAL_ONLY", "discoveryTimeout": 5_000,
        "providerMustSupportOnChange": True}
    written = request_json(Discovery, "add",
                           ["joynr.types.DiscoveryEntry", "Boolean", "String[]"],
                           [types_.DiscoveryEntry(**entry_fields()), True, ["gbid-a"]])
    assert written["params"][0]["_typeName"] == "joynr.types.DiscoveryEntry"
    assert written["params"][0]["qos"]["customParameters"] == [
        {"_typeName": "joynr.types.CustomParameter", "name": "colour", "value": "blue"}]
    written = request_json(Discovery, "addToAll", ["joynr.types.DiscoveryEntry", "Boolean"],
                           [types_.DiscoveryEntry(**entry_fields()), False])
    assert written["methodName"] == "addToAll"


def test_a_global_discovery_entrys_address_is_a_string_of_json() -> None:
    address = address_to_json(MqttAddress("gbid-a", "cc-1/low"))
    entry = types_.GlobalDiscoveryEntry(**entry_fields(), address=address)
    written = request_json(GlobalCapabilitiesDirectory, "add",
                           ["joynr.types.GlobalDiscoveryEntry", "String[]"],
                           [entry, ["gbid-a"]])
    assert written["params"][0]["address"] == (
        '{"_typeName":"joynr.system.RoutingTypes.MqttAddress","brokerUri":"gbid-a",'
        '"topic":"cc-1/low"}')
    written = request_json(GlobalCapabilitiesDirectory, "removeStale", ["String", "Long"],
                           ["cc-1", 5])
    assert (written["methodName"], written["params"]) == ("removeStale", ["cc-1", 5])


def test_an_address_in_add_next_hop_is_joynrs_struct() -> None:
    written = request_json(Routing, "addNextHop",
                           ["String", ROUTING_TYPES + "WebSocketClientAddress", "Boolean"],
                           ["p-1", system.WebSocketClientAddress("client-7"), False])
    assert written["params"][1] == {"_typeName": ROUTING_TYPES + "WebSocketClientAddress",
                                    "id": "client-7"}
    written = request_json(Routing, "addNextHop",
                           ["String", ROUTING_TYPES + "WebSocketAddress", "Boolean"],
                           ["p-1", system.WebSocketAddress(system.WebSocketProtocol.WSS, "h",
                                                           4242, "/ws"), True])
    assert written["params"][1] == {"_typeName": ROUTING_TYPES + "WebSocketAddress",
                                    "host": "h", "path": "/ws", "port": 4242,
                                    "protocol": "WSS"}


def test_a_modelled_error_is_joynrs_json() -> None:
    method = method_at(GlobalCapabilitiesDirectory, "lookup", ["String", "String[]"])
    error = {"type": "ApplicationException", "message": "no such backend",
             "error": "UNKNOWN_GBID"}
    body = encode(Reply("rid-1", error=error), error_enum=method.error_enum)
    assert json.loads(body)["error"]["error"] == {"_typeName": "joynr.types.DiscoveryError",
                                                  "name": "UNKNOWN_GBID"}


# ---------------------------------------------------------------------- this project's wire

#: the methods as this project's msgpack requests name them, with their paramDatatypes
PROJECT_WIRE = {
    "system/Routing": {
        *(f"add_next_hop(String, {name}, Boolean)" for name in ADDRESS_TYPE_NAMES),
        "remove_next_hop(String)", "resolve_next_hop(String)",
        "add_multicast_receiver(String, String, String)",
        "remove_multicast_receiver(String, String, String)",
    },
    "system/Discovery": {
        "add(joynr.types.DiscoveryEntry)", "add(joynr.types.DiscoveryEntry, Boolean)",
        "add(joynr.types.DiscoveryEntry, Boolean, String[])",
        "add_to_all(joynr.types.DiscoveryEntry, Boolean)",
        "lookup(String[], String, joynr.types.DiscoveryQos)",
        "lookup(String[], String, joynr.types.DiscoveryQos, String[])",
        "lookup(String)", "lookup(String, joynr.types.DiscoveryQos, String[])",
        "remove(String)",
    },
    "infrastructure/GlobalCapabilitiesDirectory": {
        "add(joynr.types.GlobalDiscoveryEntry)", "add(joynr.types.GlobalDiscoveryEntry[])",
        "add(joynr.types.GlobalDiscoveryEntry, String[])", "lookup(String[], String)",
        "lookup(String[], String, String[])", "lookup(String)", "lookup(String, String[])",
        "remove(String)", "remove(String[])", "remove(String, String[])", "touch(String)",
        "touch(String, String[])", "remove_stale(String, Long)",
    },
    "infrastructure/AccessControlListEditor": {
        f"update_{who}_{kind}_control_entry({DAC_TYPES}{entry})"
        for who, kind, entry in (
            ("master", "access", "MasterAccessControlEntry"),
            ("mediator", "access", "MasterAccessControlEntry"),
            ("owner", "access", "OwnerAccessControlEntry"),
            ("master", "registration", "MasterRegistrationControlEntry"),
            ("mediator", "registration", "MasterRegistrationControlEntry"),
            ("owner", "registration", "OwnerRegistrationControlEntry"))
    } | {f"remove_{who}_access_control_entry(String, String, String, String)"
         for who in ("master", "mediator", "owner")
         } | {f"remove_{who}_registration_control_entry(String, String, String)"
              for who in ("master", "mediator", "owner")},
}

#: the Python names of the methods (what a provider implements, what a proxy offers)
PYTHON_NAMES = {
    "system/Routing": [
        "add_next_hop_channel", "add_next_hop_mqtt", "add_next_hop_browser",
        "add_next_hop_web_socket", "add_next_hop_uds", "add_next_hop_binder",
        "add_next_hop", "add_next_hop_uds_client", "remove_next_hop",
        "resolve_next_hop", "add_multicast_receiver", "remove_multicast_receiver"],
    "system/Discovery": [
        "add", "add_awaiting", "add_in_backends", "add_to_all", "lookup", "lookup_in_backends",
        "lookup_participant", "lookup_participant_in", "remove"],
    "infrastructure/GlobalCapabilitiesDirectory": [
        "add_entries", "add", "add_in_backends", "lookup", "lookup_in_backends",
        "lookup_participant", "lookup_participant_in", "remove_participants", "remove",
        "remove_in_backends", "remove_stale", "touch", "touch_participants"],
    "infrastructure/AccessControlListEditor": [
        f"{verb}_{who}_{kind}_control_entry" for kind in ("access", "registration")
        for who in ("master", "mediator", "owner") for verb in ("update", "remove")],
}


def test_the_names_on_this_projects_wire_and_in_python() -> None:
    for cls in INTERFACES:
        definition = interface_def(cls)
        assert {f"{m.name}({', '.join(m.param_datatypes)})"
                for m in definition.methods.values()} == PROJECT_WIRE[definition.name]
        assert list(definition.methods) == PYTHON_NAMES[definition.name]


# ---------------------------------------------------------------------- addresses


@pytest.mark.parametrize("address", [
    MqttAddress("joynrdefaultgbid", "cc/topic"), WebSocketAddress("wss", "127.0.0.1", 4242, "/ws"),
    WebSocketAddress("ws", "localhost", 80), WebSocketClientAddress("client-1")])
def test_an_address_and_its_struct_convert_both_ways(address: Any) -> None:
    struct = address_struct(address)
    assert joynr_type_name(type(struct)) == address.to_dict()["_typeName"]
    assert address_of(struct) == address
    # the struct's joynr JSON is the address's wire form
    body = encode(Reply("r", [to_wire(struct)]), types=[type(struct)])
    assert json.loads(body)["response"][0] == address.to_dict()


def test_a_struct_without_a_routable_address_is_refused() -> None:
    for struct in (system.ChannelAddress("http://x", "c"), system.UdsAddress(""),
                   system.WebSocketClientAddress(""), system.MqttAddress("gbid", ""),
                   system.WebSocketAddress(system.WebSocketProtocol.WS, "", 1, "/")):
        with pytest.raises(AddressError):
            address_of(struct)
    assert [joynr_type_name(s) for s in ADDRESS_STRUCTS] == list(ADDRESS_TYPE_NAMES)
    for struct_type in ADDRESS_STRUCTS:
        assert issubclass(struct_type, system.Address)


def test_the_named_bounds_are_those_fidl_declares_on_every_list_argument() -> None:
    """fidl/ bounds each list argument of Discovery and the GCD with a ``maxLength`` in its
    comment; the code splits what it sends by the named constants: they must be the same."""
    named = {"gbids": types_.MAX_GBIDS, "domains": types_.MAX_DOMAINS,
             "participant_ids": types_.MAX_PARTICIPANT_IDS}
    seen: dict[str, set[int | None]] = {name: set() for name in named}
    for iface in (system.Discovery, infrastructure.GlobalCapabilitiesDirectory):
        for method in vars(iface).values():
            if not callable(method):
                continue
            for arg, hint in typing.get_type_hints(method, include_extras=True).items():
                if arg in named:
                    seen[arg].add(max_length(hint))
    assert seen == {name: {bound} for name, bound in named.items()}


def test_the_editor_stays_unversioned_in_the_comment_mode() -> None:
    """joynr marks AccessControlListEditor ``#noVersionGeneration``, and so does fidl/: with
    ``add_version_to="comment"`` it keeps its module and names, as the DacTypes (a type
    collection without a version) do, while the interfaces without the mark move to the
    module of their major version."""
    files = generate(parse_files(sorted(FIDL.rglob("*.fidl"))), "g", add_version_to="comment")
    modules = {path.removeprefix("g/") for path in files if not path.endswith("__init__.py")}
    assert {m for m in modules if m.endswith(".py")} == {
        "infrastructure.py", "infrastructure_v0.py", "system.py", "system_v0.py", "types.py"}
    unversioned = files["g/infrastructure.py"]
    assert '@interface("infrastructure/AccessControlListEditor", version=(0, 1))' in unversioned
    assert '@joynr_name("joynr.infrastructure.DacTypes.MasterAccessControlEntry")' in unversioned
    assert "GlobalCapabilitiesDirectory" in files["g/infrastructure_v0.py"]
    assert "@interface(\"infrastructure/AccessControlListEditor\"" not in files[
        "g/infrastructure_v0.py"]
