"""Address types: equality, hashing, immutability and the (hostile-input-proof) wire form."""

from __future__ import annotations

import copy

import msgpack
import pytest

from pyjoynr.runtime import addresses
from pyjoynr.runtime.addresses import (
    AddressError,
    InProcessAddress,
    MqttAddress,
    UdsAddress,
    UdsClientAddress,
    WebSocketAddress,
    WebSocketClientAddress,
    address_from_dict,
    address_from_msgpack,
)

WIRE_ADDRESSES = [
    MqttAddress("joynrdefaultgbid", "cc/4711/low"),
    MqttAddress("", "topic-in-unnamed-backend"),
    WebSocketClientAddress("client-4f1e"),
    WebSocketAddress("ws", "localhost", 4242, "/"),
    WebSocketAddress("wss", "::1", 443, "/joynr"),
]


@pytest.mark.parametrize("address", WIRE_ADDRESSES, ids=repr)
def test_wire_address_round_trips_through_dict_and_msgpack(address):
    assert address_from_dict(address.to_dict()) == address
    decoded = address_from_msgpack(address.to_msgpack())
    assert decoded == address
    assert hash(decoded) == hash(address)
    assert type(decoded) is type(address)


def test_every_wire_address_type_decodes_its_own_dict_form_and_nothing_more():
    """address_from_dict checks an address's fields against the set each type may have: each
    type's own dict form (with and without its optional fields) decodes, one field more is
    refused with the same message for every type."""
    for address in [*WIRE_ADDRESSES, UdsClientAddress("uds-client-1"),
                    UdsAddress("/run/joynr/cc.sock")]:
        data = address.to_dict()
        assert address_from_dict(data) == address
        if isinstance(address, WebSocketAddress):  # path is optional
            assert address_from_dict({k: v for k, v in data.items() if k != "path"}) == \
                WebSocketAddress(address.protocol, address.host, address.port, "/")
        with pytest.raises(AddressError, match=r"unexpected field\(s\) \[\"'extra'\"\]"):
            address_from_dict({**data, "extra": 1})
        with pytest.raises(AddressError, match=r"unexpected field\(s\) \['7'\]"):
            address_from_dict({**data, 7: 1})


def test_dict_form_uses_joynr_field_names():
    assert MqttAddress("gbid1", "t").to_dict() == {
        "_typeName": "joynr.system.RoutingTypes.MqttAddress",
        "brokerUri": "gbid1",
        "topic": "t",
    }
    assert WebSocketAddress("wss", "h", 1, "/p").to_dict()["protocol"] == "WSS"
    assert WebSocketClientAddress("x").to_dict() == {
        "_typeName": "joynr.system.RoutingTypes.WebSocketClientAddress",
        "id": "x",
    }


def test_equality_is_by_type_and_all_fields():
    assert MqttAddress("g", "t") == MqttAddress("g", "t")
    assert MqttAddress("g", "t") != MqttAddress("g2", "t")
    assert MqttAddress("g", "t") != MqttAddress("g", "t2")
    assert WebSocketClientAddress("a") != WebSocketClientAddress("b")
    assert WebSocketAddress("ws", "h", 1, "/") != WebSocketAddress("wss", "h", 1, "/")
    assert WebSocketAddress("ws", "h", 1, "/") != WebSocketAddress("ws", "h", 2, "/")
    assert WebSocketAddress("ws", "h", 1, "/") != WebSocketAddress("ws", "h", 1, "/x")
    # same field value, different types
    assert WebSocketClientAddress("t") != MqttAddress("", "t")
    assert len({MqttAddress("g", "t"), MqttAddress("g", "t"), WebSocketClientAddress("t")}) == 2


def test_inprocess_addresses_are_equal_only_for_the_same_skeleton():
    skeleton, other = object(), object()
    assert InProcessAddress(skeleton) == InProcessAddress(skeleton)
    assert hash(InProcessAddress(skeleton)) == hash(InProcessAddress(skeleton))
    assert InProcessAddress(skeleton) != InProcessAddress(other)

    class AlwaysEqual:
        def __eq__(self, _: object) -> bool:
            return True

        __hash__ = object.__hash__

    # equality of the skeletons themselves does not matter, identity does
    assert InProcessAddress(AlwaysEqual()) != InProcessAddress(AlwaysEqual())


def test_inprocess_address_has_no_wire_form():
    with pytest.raises(TypeError, match="never sent"):
        InProcessAddress(object()).to_dict()
    with pytest.raises(AddressError, match="unknown or non-transmittable"):
        address_from_dict({"_typeName": "joynr.system.RoutingTypes.InProcessAddress"})


@pytest.mark.parametrize("address", [*WIRE_ADDRESSES, InProcessAddress(object())], ids=repr)
def test_addresses_are_immutable(address):
    with pytest.raises(AttributeError):
        address.topic = "other"
    with pytest.raises(AttributeError):
        address.anything = 1
    with pytest.raises(AttributeError):
        del address._hash
    with pytest.raises(TypeError):
        copy.deepcopy(address)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ("not a map", "must be a map"),
        ([1, 2], "must be a map"),
        ({}, "no _typeName"),
        ({"_typeName": 7}, "no _typeName"),
        ({"_typeName": "joynr.system.RoutingTypes.ChannelAddress"}, "unknown"),
        ({"_typeName": "x" * 10_000}, "unknown"),
        (
            {"_typeName": "joynr.system.RoutingTypes.MqttAddress", "topic": "t"},
            r"missing field\(s\) \['brokerUri'\]",
        ),
        (
            {"_typeName": "joynr.system.RoutingTypes.MqttAddress", "brokerUri": 1, "topic": "t"},
            "broker_uri must be a string",
        ),
        (
            {"_typeName": "joynr.system.RoutingTypes.MqttAddress", "brokerUri": "g", "topic": ""},
            "topic must not be empty",
        ),
        (
            {
                "_typeName": "joynr.system.RoutingTypes.MqttAddress",
                "brokerUri": "g",
                "topic": "t" * 5000,
            },
            "longer than",
        ),
        (
            {
                "_typeName": "joynr.system.RoutingTypes.MqttAddress",
                "brokerUri": "g",
                "topic": "t",
                "extra": 1,
            },
            "unexpected field",
        ),
        ({"_typeName": "joynr.system.RoutingTypes.WebSocketClientAddress"}, "missing"),
        (
            {"_typeName": "joynr.system.RoutingTypes.WebSocketClientAddress", "id": b"raw"},
            "id must be a string",
        ),
        (
            {
                "_typeName": "joynr.system.RoutingTypes.WebSocketAddress",
                "protocol": "HTTP",
                "host": "h",
                "port": 1,
                "path": "/",
            },
            "'ws' or 'wss'",
        ),
        (
            {
                "_typeName": "joynr.system.RoutingTypes.WebSocketAddress",
                "protocol": "WS",
                "host": "h",
                "port": 70000,
                "path": "/",
            },
            "port",
        ),
        (
            {
                "_typeName": "joynr.system.RoutingTypes.WebSocketAddress",
                "protocol": "WS",
                "host": "h",
                "port": True,
                "path": "/",
            },
            "port",
        ),
        (
            {
                "_typeName": "joynr.system.RoutingTypes.WebSocketAddress",
                "protocol": "WS",
                "host": "",
                "port": 1,
            },
            "host must not be empty",
        ),
    ],
)
def test_hostile_dicts_are_refused_with_a_reason(data, reason):
    with pytest.raises(AddressError, match=reason):
        address_from_dict(data)


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\xc1",  # never-used msgpack byte
        b"\x81",  # truncated map
        msgpack.packb({"_typeName": "joynr.system.RoutingTypes.MqttAddress"}) + b"trailing",
        msgpack.packb({1: 2}),  # non-string map key
        msgpack.packb("x" * 20_000),
    ],
)
def test_hostile_msgpack_is_refused(raw):
    with pytest.raises(AddressError):
        address_from_msgpack(raw)


def test_constructor_validates_like_the_decoder():
    with pytest.raises(AddressError):
        MqttAddress("g", "")
    with pytest.raises(AddressError):
        WebSocketAddress("ftp", "h", 1)
    with pytest.raises(TypeError):
        InProcessAddress(None)


def test_with_broker_uri_keeps_the_topic():
    address = MqttAddress("g1", "cc/1")
    assert address.with_broker_uri("g2") == MqttAddress("g2", "cc/1")
    assert address.with_broker_uri("g1") is address


def test_websocket_url():
    assert WebSocketAddress("ws", "127.0.0.1", 4242, "/").url == "ws://127.0.0.1:4242/"
    assert WebSocketAddress("WSS", "::1", 443, "/j").url == "wss://[::1]:443/j"


def test_a_wire_form_decoded_before_is_answered_with_the_same_address_object():
    wire = {"_typeName": "joynr.system.RoutingTypes.MqttAddress", "brokerUri": "gbid-cache",
            "topic": "joynr/cc/cache-test"}
    first = address_from_dict(dict(wire))
    assert address_from_dict(dict(wire)) is first  # kept, not decoded again
    assert address_from_dict({**wire, "topic": "joynr/cc/other"}) is not first


@pytest.mark.parametrize("near", [
    {"topic": b"joynr/cc/near"},  # the same characters as bytes
    {"topic": "joynr/cc/near", "extra": "x"},  # one field more
    {"topic": ["joynr/cc/near"]},  # unhashable
    {"brokerUri": 0},  # equal-looking, of another type
    {"topic": "joynr/cc/+"},  # a wildcard
], ids=repr)
def test_a_kept_address_lets_no_near_wire_form_through(near):
    wire = {"_typeName": "joynr.system.RoutingTypes.MqttAddress", "brokerUri": "",
            "topic": "joynr/cc/near"}
    assert address_from_dict(dict(wire)) == MqttAddress("", "joynr/cc/near")
    with pytest.raises(AddressError):
        address_from_dict({**wire, **near})


def test_the_kept_addresses_are_bounded_whatever_senders_make_up():
    for i in range(3 * addresses.MAX_DECODED):
        address_from_dict({"_typeName": "joynr.system.RoutingTypes.WebSocketClientAddress",
                           "id": f"made-up-{i}"})
        assert len(addresses._DECODED) <= addresses.MAX_DECODED
    ports = {"_typeName": "joynr.system.RoutingTypes.WebSocketAddress", "protocol": "ws",
             "host": "h", "port": 1}
    before = len(addresses._DECODED)
    address_from_dict(ports)  # a value that is no str: decoded every time, never kept
    assert len(addresses._DECODED) == before
    with pytest.raises(AddressError):  # True == 1, but a port must be an int
        address_from_dict({**ports, "port": True})
