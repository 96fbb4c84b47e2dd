"""The access controller's gate, message by message (cluster_controller/access/control.py):
which messages it checks, how it reads the operation, what it answers for what, audit mode,
and the bounds of what a hostile message can make it hold."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from pyjoynr.cluster_controller.access.control import (
    DENIED,
    MAX_CACHED_DECISIONS,
    NO_OPERATION,
    UNKNOWN_PROVIDER,
    AccessController,
)
from pyjoynr.cluster_controller.access.entries import parse_tables
from pyjoynr.runtime.addresses import (
    InProcessAddress,
    MqttAddress,
    UdsClientAddress,
    WebSocketClientAddress,
)
from pyjoynr.runtime.bodies import BodyFormat, encode_body
from pyjoynr.runtime.errors import ProviderRuntimeError
from pyjoynr.runtime.messages import Message, MessageType
from pyjoynr.runtime.payloads import (
    OneWayRequest,
    Request,
    SubscriptionRequest,
    SubscriptionStop,
)
from tests.support.acl import master_ace, master_rce, owner_ace

HOP = WebSocketClientAddress("provider-runtime")
RADIO = "test/Radio"


@dataclass(frozen=True)
class Entry:
    domain: str
    interface_name: str


PROVIDERS = {"radio-fm": Entry("radio.fm", RADIO), "radio-am": Entry("radio.am", RADIO)}


def controller(*, audit: bool = False) -> AccessController:
    tables = parse_tables(json.dumps({
        "masterAccessTable": [
            master_ace("*", "radio.*", RADIO, permission="NO"),
            master_ace("bob", "radio.*", RADIO),
            master_ace("*", "radio.am", RADIO, "getVolume"),
        ],
        "ownerAccessTable": [owner_ace("bob", "radio.fm", RADIO, "addFavorite", "NO")],
        "masterRegistrationTable": [master_rce("alice", "radio.*", RADIO)],
    }), "test")
    return AccessController([tables], PROVIDERS.get, whitelist=["routing"], audit=audit)


def request(uid: str | None, recipient: str = "radio-fm", method: str = "favorites",
            fmt: BodyFormat = BodyFormat.JSON, kind: MessageType = MessageType.REQUEST
            ) -> Message:
    payload = {MessageType.REQUEST: lambda: Request("r1", method, [], []),
               MessageType.ONE_WAY: lambda: OneWayRequest(method, [], []),
               MessageType.SUBSCRIPTION_REQUEST: lambda: SubscriptionRequest("s1", method),
               MessageType.SUBSCRIPTION_STOP: lambda: SubscriptionStop("s1")}[kind]()
    message = Message(kind, "proxy", recipient, 2_000_000_000_000, encode_body(payload, fmt))
    message.creator = uid
    return message


@pytest.mark.parametrize(("uid", "recipient", "method", "fmt", "allowed"), [
    ("bob", "radio-fm", "favorites", BodyFormat.JSON, True),
    ("bob", "radio-fm", "addFavorite", BodyFormat.JSON, False),  # the owner entry
    ("bob", "radio-fm", "add_favorite", BodyFormat.MSGPACK, False),  # (its joynr name)
    ("bob", "radio-am", "addFavorite", BodyFormat.JSON, True),
    ("eve", "radio-am", "getVolume", BodyFormat.JSON, True),  # operation-level, any uid
    ("eve", "radio-am", "get_volume", BodyFormat.MSGPACK, True),
    ("eve", "radio-am", "favorites", BodyFormat.JSON, False),
    (None, "radio-fm", "favorites", BodyFormat.JSON, False),  # made here: uid ""
])
def test_requests_are_decided_by_their_uid_recipient_and_operation(
        uid: str | None, recipient: str, method: str, fmt: BodyFormat, allowed: bool) -> None:
    refusal = controller().admit(request(uid, recipient, method, fmt), HOP)
    assert (refusal is None) is allowed
    if refusal is not None:
        assert refusal.reason == DENIED and refusal.answer
        assert repr(uid or "") in refusal.detail


def test_only_calls_to_this_hosts_participants_are_checked() -> None:
    gate = controller()
    eve = request("eve")
    for hop in (HOP, UdsClientAddress("c"), InProcessAddress(object())):
        assert gate.admit(eve, hop) is not None
    assert gate.admit(eve, MqttAddress("gbid", "cc/other")) is None  # the other host checks
    for kind in (MessageType.REPLY, MessageType.PUBLICATION, MessageType.MULTICAST,
                 MessageType.SUBSCRIPTION_REPLY):
        assert gate.admit(Message(kind, "p", "radio-fm", 2_000_000_000_000), HOP) is None
    assert gate.admit(request("eve", "routing"), HOP) is None  # whitelisted
    refusal = gate.admit(request("bob", "nobody"), HOP)
    assert refusal is not None and refusal.reason == UNKNOWN_PROVIDER


def test_one_way_and_subscription_requests_are_checked_by_their_operation() -> None:
    gate = controller()
    assert gate.admit(request("eve", "radio-am", "getVolume",
                              kind=MessageType.ONE_WAY), HOP) is None
    assert gate.admit(request("eve", "radio-am", "favorites",
                              kind=MessageType.ONE_WAY), HOP) is not None
    assert gate.admit(request("eve", "radio-am", "volume",
                              kind=MessageType.SUBSCRIPTION_REQUEST), HOP) is not None
    # a stop names no operation: it passes where entries name operations ...
    assert gate.admit(request("eve", "radio-am", kind=MessageType.SUBSCRIPTION_STOP),
                      HOP) is None
    # ... and is decided by the interface where they do not
    assert gate.admit(request("eve", "radio-fm", kind=MessageType.SUBSCRIPTION_STOP),
                      HOP) is not None


@pytest.mark.parametrize("body", [b"", b"{", b"\x81\xa1x\x01", b'{"_typeName":"x"}',
                                  b"\xc1" * 10])
def test_a_body_whose_operation_cannot_be_read_is_refused(body: bytes) -> None:
    message = Message(MessageType.REQUEST, "proxy", "radio-am", 2_000_000_000_000, body)
    message.creator = "eve"
    refusal = controller().admit(message, HOP)
    assert refusal is not None and refusal.reason == NO_OPERATION


def test_audit_mode_refuses_nothing_and_counts_what_it_would() -> None:
    gate = controller(audit=True)
    assert gate.admit(request("eve"), HOP) is None
    gate.check_registration("eve", "radio.fm", RADIO, "p1")
    assert gate.counters["audit-would-refuse-acl-denied"] == 1
    assert gate.counters["audit-would-refuse-rcl-denied"] == 1
    assert not any(key.startswith("refused") for key in gate.counters)


def test_registrations() -> None:
    gate = controller()
    gate.check_registration("alice", "radio.fm", RADIO, "p1")
    gate.check_registration(None, "anything", "any/Thing", "p2")  # this process's own
    with pytest.raises(ProviderRuntimeError) as info:
        gate.check_registration("eve", "radio.fm", RADIO, "p3")
    assert str(info.value) == ("Provider does not have permissions to register interface "
                               "test/Radio on domain radio.fm.")


def test_what_hostile_messages_make_it_hold_is_bounded() -> None:
    gate = controller()
    # a uid longer than any entry's (a trusted signature may be 64 KiB): "*" entries only,
    # and the detail does not carry it
    long_uid = "bob" + "x" * 70_000
    refusal = gate.admit(request(long_uid, "radio-am", "favorites"), HOP)
    assert refusal is not None and len(refusal.detail) < 500
    assert gate.admit(request(long_uid, "radio-am", "getVolume"), HOP) is None
    # operations named anew in every message: the cache stays bounded
    for i in range(MAX_CACHED_DECISIONS + 100):
        gate.admit(request("eve", "radio-am", f"op{i}"), HOP)
    assert len(gate._cache) <= MAX_CACHED_DECISIONS
    assert all(len(key[0]) <= 1_001 for key in gate._cache)
    # an operation name longer than any entry's cannot be read as one
    refusal = gate.admit(request("eve", "radio-am", "x" * 5_000), HOP)
    assert refusal is not None and refusal.reason == NO_OPERATION
