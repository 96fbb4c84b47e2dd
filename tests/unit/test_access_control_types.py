"""joynr's access control types (``fidl/infrastructure/AccessControlTypes.fidl``, through
programming.access_control) on both wires: a value of each struct, written as joynr's
runtimes and provisioning files write it (``_typeName`` first, the members in the order of
their declaration with the base's first, enumerators as strings), is read by the joynr JSON
codec into the same value, written back with ``_typeName`` first and the same members, and
carried unchanged in this project's msgpack bodies; the editor's requests read the same
entries from joynr's JSON, and what does not fit them (an unknown enumerator, a list or a
string over its bound, a number for a string) is refused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pyjoynr.programming import access_control
from pyjoynr.programming.access_control import (
    AccessControlListEditor,
    ControlEntry,
    DomainRoleEntry,
    MasterAccessControlEntry,
    MasterControlEntry,
    MasterRegistrationControlEntry,
    OwnerAccessControlEntry,
    OwnerControlEntry,
    OwnerRegistrationControlEntry,
    Permission,
    Role,
    TrustLevel,
)
from pyjoynr.runtime.bodies import BodyFormat, decode_body, encode_body
from pyjoynr.runtime.interface import ValueTypeError, from_wire, interface_def, to_wire
from pyjoynr.runtime.joynr_json import JoynrJsonError, JoynrSchema, decode, encode
from pyjoynr.runtime.payloads import Reply, Request

DAC = "joynr.infrastructure.DacTypes."
H, M, L, N = TrustLevel.HIGH, TrustLevel.MID, TrustLevel.LOW, TrustLevel.NONE
YES, ASK, NO = Permission.YES, Permission.ASK, Permission.NO

#: (joynr's JSON of a value, as its runtimes and provisioning files write it; the value)
CASES: dict[str, tuple[str, Any]] = {
    "ControlEntry": (
        '{"_typeName":"joynr.infrastructure.DacTypes.ControlEntry","uid":"*",'
        '"domain":"vehicle.*","interfaceName":"vehicle/Radio"}',
        ControlEntry("*", "vehicle.*", "vehicle/Radio")),
    "MasterControlEntry": (
        '{"_typeName":"joynr.infrastructure.DacTypes.MasterControlEntry","uid":"fleet-admin",'
        '"domain":"vehicle","interfaceName":"vehicle/*","defaultRequiredTrustLevel":"MID",'
        '"possibleRequiredTrustLevels":["MID","HIGH"],'
        '"defaultRequiredControlEntryChangeTrustLevel":"HIGH",'
        '"possibleRequiredControlEntryChangeTrustLevels":["HIGH"]}',
        MasterControlEntry("fleet-admin", "vehicle", "vehicle/*", M, [M, H], H, [H])),
    "OwnerControlEntry": (
        '{"_typeName":"joynr.infrastructure.DacTypes.OwnerControlEntry","uid":"",'
        '"domain":"vehicle","interfaceName":"vehicle/Radio","requiredTrustLevel":"NONE",'
        '"requiredAceChangeTrustLevel":"LOW"}',
        OwnerControlEntry("", "vehicle", "vehicle/Radio", N, L)),
    "MasterAccessControlEntry": (
        '{"_typeName":"joynr.infrastructure.DacTypes.MasterAccessControlEntry",'
        '"uid":"application_1","domain":"*","interfaceName":"*",'
        '"defaultRequiredTrustLevel":"HIGH","possibleRequiredTrustLevels":["HIGH","LOW"],'
        '"defaultRequiredControlEntryChangeTrustLevel":"HIGH",'
        '"possibleRequiredControlEntryChangeTrustLevels":["HIGH"],"operation":"*",'
        '"defaultConsumerPermission":"YES","possibleConsumerPermissions":["YES","NO","ASK"]}',
        MasterAccessControlEntry("application_1", "*", "*", H, [H, L], H, [H], "*", YES,
                                 [YES, NO, ASK])),
    "MasterRegistrationControlEntry": (
        '{"_typeName":"joynr.infrastructure.DacTypes.MasterRegistrationControlEntry",'
        '"uid":"radio-provider","domain":"vehicle","interfaceName":"vehicle/Radio",'
        '"defaultRequiredTrustLevel":"LOW","possibleRequiredTrustLevels":[],'
        '"defaultRequiredControlEntryChangeTrustLevel":"HIGH",'
        '"possibleRequiredControlEntryChangeTrustLevels":[],'
        '"defaultProviderPermission":"NO","possibleProviderPermissions":["NO","YES"]}',
        MasterRegistrationControlEntry("radio-provider", "vehicle", "vehicle/Radio", L, [], H,
                                       [], NO, [NO, YES])),
    "OwnerAccessControlEntry": (
        '{"_typeName":"joynr.infrastructure.DacTypes.OwnerAccessControlEntry","uid":"",'
        '"domain":"vehicle","interfaceName":"vehicle/Radio","requiredTrustLevel":"LOW",'
        '"requiredAceChangeTrustLevel":"LOW","operation":"addFavorite",'
        '"consumerPermission":"ASK"}',
        OwnerAccessControlEntry("", "vehicle", "vehicle/Radio", L, L, "addFavorite", ASK)),
    "OwnerRegistrationControlEntry": (
        '{"_typeName":"joynr.infrastructure.DacTypes.OwnerRegistrationControlEntry",'
        '"uid":"testUser","domain":"testDomain","interfaceName":"this/is/a/test/interface",'
        '"requiredTrustLevel":"MID","requiredAceChangeTrustLevel":"LOW",'
        '"providerPermission":"NO"}',
        OwnerRegistrationControlEntry("testUser", "testDomain", "this/is/a/test/interface", M,
                                      L, NO)),
    "DomainRoleEntry": (
        '{"_typeName":"joynr.infrastructure.DacTypes.DomainRoleEntry","uid":"admin",'
        '"domains":["vehicle","fleet.*"],"role":"OWNER"}',
        DomainRoleEntry("admin", ["vehicle", "fleet.*"], Role.OWNER)),
}


def reply_of(value_json: str) -> bytes:
    """A joynr Reply carrying the value's JSON as joynr's runtimes write it."""
    return ('{"_typeName":"joynr.Reply","requestReplyId":"r1","response":[' + value_json
            + "]}").encode()


def keys_in_order(text: str) -> list[list[str]]:
    """The keys of every object of ``text``, in the order written."""
    found: list[list[str]] = []
    json.loads(text, object_pairs_hook=lambda pairs: found.append([k for k, _ in pairs]))
    return found


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_value_of_each_struct_makes_the_round_trip_through_joynrs_json_and_msgpack(
        name: str) -> None:
    text, value = CASES[name]
    tp = type(value)
    assert tp.__name__ == name
    # joynr's JSON, as joynr's runtimes write it, read into the value
    read = decode(Reply, reply_of(text), types=[tp])
    assert isinstance(read, Reply) and read.response is not None
    assert from_wire(read.response[0], tp, name) == value
    # written back: _typeName first, the same members and strings
    written = encode(Reply("r1", [to_wire(value)]), types=[tp])
    member = json.loads(written)["response"][0]
    assert member == json.loads(text)
    assert keys_in_order(written)[0][0] == "_typeName"
    assert all(keys[0] == "_typeName" for keys in keys_in_order(written))
    # and read again
    again = decode(Reply, written, types=[tp])
    assert isinstance(again, Reply) and again.response is not None
    assert from_wire(again.response[0], tp, name) == value
    # this project's msgpack body carries the same value
    body = encode_body(Reply("r1", [to_wire(value)]), BodyFormat.MSGPACK)
    carried = decode_body(Reply, body)
    assert carried.response is not None
    assert from_wire(carried.response[0], tp, name) == value


def test_every_struct_and_enumeration_has_a_case() -> None:
    structs = {n for n in access_control.__all__ if n.endswith("Entry")}
    assert structs == set(CASES)
    for name in ("Permission", "TrustLevel"):
        literals = set(getattr(access_control, name).__members__)
        used = {m for text, _ in CASES.values() for m in literals if f'"{m}"' in text}
        assert used == literals, name
    assert [from_wire(r, Role, "role") for r in ("MASTER", "OWNER")] == [Role.MASTER, Role.OWNER]


def editor_request(method: str, datatypes: list[str], params_json: str) -> Request:
    body = ('{"_typeName":"joynr.Request","requestReplyId":"r1","methodName":"' + method
            + '","paramDatatypes":' + json.dumps(datatypes) + ',"params":[' + params_json
            + "]}").encode()
    read = decode(Request, body, schema=JoynrSchema(interface_def(AccessControlListEditor)))
    assert isinstance(read, Request)
    return read


def test_the_editors_requests_read_joynrs_entries() -> None:
    text, value = CASES["MasterAccessControlEntry"]
    request = editor_request("updateMediatorAccessControlEntry",
                             [DAC + "MasterAccessControlEntry"], text)
    assert request.method_name == "update_mediator_access_control_entry"
    assert from_wire(request.params[0], MasterAccessControlEntry, "entry") == value
    request = editor_request("removeOwnerRegistrationControlEntry",
                             ["String", "String", "String"], '"u","d","i/I"')
    assert (request.method_name, request.params) == (
        "remove_owner_registration_control_entry", ["u", "d", "i/I"])


@pytest.mark.parametrize("params_json", [
    # an enumerator joynr does not have
    CASES["OwnerAccessControlEntry"][0].replace('"ASK"', '"MAYBE"'),
    # more permissions than a list holds
    CASES["MasterAccessControlEntry"][0].replace('["YES","NO","ASK"]',
                                                 json.dumps(["YES"] * 17)),
    # a uid longer than an Identifier
    CASES["OwnerAccessControlEntry"][0].replace('"uid":""', '"uid":"' + "u" * 1025 + '"'),
    # a number for a string
    CASES["OwnerAccessControlEntry"][0].replace('"operation":"addFavorite"', '"operation":7'),
])
def test_an_entry_that_does_not_fit_its_type_is_refused(params_json: str) -> None:
    """As a provider's skeleton reads a request's parameters: the codec, then the type."""
    name = json.loads(params_json)["_typeName"]
    tp = OwnerAccessControlEntry if "Owner" in name else MasterAccessControlEntry
    with pytest.raises((JoynrJsonError, ValueTypeError)):
        request = editor_request(f"update{tp.__name__}", [name], params_json)
        from_wire(request.params[0], tp, "entry")
