"""The cluster controller's system providers answer the msgpack requests of this project's
earlier runtimes, written by hand over a real websocket connection: ``add_next_hop`` with the
address as its joynr map (``paramDatatypes`` ``String, Map, Boolean``), and methods named as
joynr names them (``addToAll``), as the hand-written declarations of those versions named
them; and the current forms (``add_next_hop`` with the WebSocketClientAddress struct, and
``add_to_all``)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

import pytest

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.programming.discovery_types import (
    DiscoveryEntry,
    ProviderQos,
    ProviderScope,
    Version,
)
from pyjoynr.programming.system_interfaces import (
    DEFAULT_DISCOVERY_PARTICIPANT_ID,
    DEFAULT_ROUTING_PARTICIPANT_ID,
    Discovery,
    Routing,
    address_struct,
)
from pyjoynr.runtime.addresses import MqttAddress, WebSocketClientAddress
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.interface import interface_def, to_wire
from pyjoynr.runtime.messages import Message, MessageType
from pyjoynr.runtime.payloads import Reply, Request, decode_payload
from tests.support.raw_websocket import RawClient

EARLIER_ADD_NEXT_HOP = ["String", "Map", "Boolean"]


@pytest.fixture
async def stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as s:
        yield s


async def call(raw: RawClient, recipient: str, method: str, params: list[Any],
               datatypes: list[str]) -> Reply:
    rid = uuid.uuid4().hex
    await raw.send(Message(MessageType.REQUEST, raw.pid, recipient, now_ms() + 10_000,
                           Request(rid, method, params, datatypes).to_body()))
    for _ in range(50):
        answer = await raw.receive()
        if answer.type is MessageType.REPLY:
            reply = decode_payload(Reply, answer.body)
            if reply.request_reply_id == rid:
                return reply
    raise AssertionError(f"no reply to {method}")


def own_map(raw: RawClient) -> dict[str, Any]:
    return WebSocketClientAddress(raw.client_id).to_dict()


async def test_add_next_hop_with_the_address_as_a_map(stack: AsyncExitStack,
                                                      cc: ClusterController) -> None:
    raw = await RawClient.open(stack, cc.websocket_address.url)
    reply = await call(raw, DEFAULT_ROUTING_PARTICIPANT_ID, "add_next_hop",
                       [raw.pid, own_map(raw), False], EARLIER_ADD_NEXT_HOP)
    assert reply.error is None, reply.error
    assert cc.router.route_of(raw.pid).address == WebSocketClientAddress(raw.client_id)
    # the rules are those of the current form: only the caller's own address ...
    reply = await call(raw, DEFAULT_ROUTING_PARTICIPANT_ID, "add_next_hop",
                       ["p-mqtt", MqttAddress("gbid", "cc/low").to_dict(), False],
                       EARLIER_ADD_NEXT_HOP)
    assert reply.error is not None and "refused" in reply.error["message"]
    assert not cc.router.has_route("p-mqtt")
    # ... no struct of a transport the cluster controller does not have ...
    channel = {"_typeName": "joynr.system.RoutingTypes.ChannelAddress",
               "messagingEndpointUrl": "http://x", "channelId": "c"}
    reply = await call(raw, DEFAULT_ROUTING_PARTICIPANT_ID, "add_next_hop",
                       ["p-channel", channel, False], EARLIER_ADD_NEXT_HOP)
    assert reply.error is not None and "ChannelAddress" in reply.error["message"]
    assert cc.telemetry.counters["unroutable-address-type"] == 1
    # ... and no address that is none
    for bad in ({"_typeName": "joynr.system.RoutingTypes.Nothing"},
                {"_typeName": "joynr.system.RoutingTypes.WebSocketClientAddress"}, {}):
        reply = await call(raw, DEFAULT_ROUTING_PARTICIPANT_ID, "add_next_hop",
                           ["p-bad", bad, False], EARLIER_ADD_NEXT_HOP)
        assert reply.error is not None and "bad address" in reply.error["message"], bad
    assert not cc.router.has_route("p-bad")


async def test_add_next_hop_with_the_struct(stack: AsyncExitStack,
                                            cc: ClusterController) -> None:
    raw = await RawClient.open(stack, cc.websocket_address.url)
    method = interface_def(Routing).methods["add_next_hop"]
    assert method.param_datatypes == [
        "String", "joynr.system.RoutingTypes.WebSocketClientAddress", "Boolean"]
    struct = to_wire(address_struct(WebSocketClientAddress(raw.client_id)))
    reply = await call(raw, DEFAULT_ROUTING_PARTICIPANT_ID, method.name,
                       [raw.pid, struct, True], method.param_datatypes)
    assert reply.error is None, reply.error
    entry = cc.router.route_of(raw.pid)
    assert (entry.address, entry.is_globally_visible) == (
        WebSocketClientAddress(raw.client_id), True)


@pytest.mark.parametrize("name", ["addToAll", "add_to_all"])
async def test_a_method_by_its_joynr_name_or_its_python_name(
        stack: AsyncExitStack, cc: ClusterController, name: str) -> None:
    raw = await RawClient.open(stack, cc.websocket_address.url)
    reply = await call(raw, DEFAULT_ROUTING_PARTICIPANT_ID, "add_next_hop",
                       [raw.pid, own_map(raw), False], EARLIER_ADD_NEXT_HOP)
    assert reply.error is None, reply.error
    provider = f"provider-{uuid.uuid4().hex[:8]}"
    reply = await call(raw, DEFAULT_ROUTING_PARTICIPANT_ID, "add_next_hop",
                       [provider, own_map(raw), False], EARLIER_ADD_NEXT_HOP)
    assert reply.error is None, reply.error
    entry = DiscoveryEntry(Version(1, 0), "domain", "test/Thing", provider,
                           ProviderQos(scope=ProviderScope.LOCAL), now_ms(),
                           now_ms() + 60_000)
    method = interface_def(Discovery).methods["add_to_all"]
    reply = await call(raw, DEFAULT_DISCOVERY_PARTICIPANT_ID, name,
                       [to_wire(entry), False], method.param_datatypes)
    assert reply.error is None, reply.error
    assert provider in {e.participant_id for e in cc.discovery._entries.values()}
    # a name neither of them is not found
    reply = await call(raw, DEFAULT_DISCOVERY_PARTICIPANT_ID, "AddToAll",
                       [to_wire(entry), False], method.param_datatypes)
    assert reply.error is not None and "has no method" in reply.error["message"]
