"""Oversized strings and arrays sent by hand to real parts are refused where they are typed,
with an error answer that names the field, the size and the limit, in the caller's dialect: a
GCD ``add`` and ``lookup`` over MQTT to a real GCD on SQLite (this project's msgpack frames and
bodies, joynr's SMRF frames and JSON bodies), and the cluster controller's Discovery ``add`` and
``lookup`` over a real websocket connection (both frame dialects, both body formats): a domain
of 2,000,000 characters, a participant id past the bound, 100,000 GBIDs, a lookup in 100,000
domains. Nothing reaches the store or the local directory, each refusal is counted, the first
logged at WARNING, and nothing is logged at ERROR."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.gcd.interface import GCD_PARTICIPANT_ID, GCD_TOPIC
from pyjoynr.gcd.interface import GlobalCapabilitiesDirectory as Gcd
from pyjoynr.gcd.service import GcdService, GcdSettings
from pyjoynr.runtime import smrf
from pyjoynr.runtime.addresses import MqttAddress, WebSocketClientAddress
from pyjoynr.runtime.bodies import BodyFormat, decode_body, encode_body, schema_of
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.discovery_types import (
    DiscoveryEntry,
    DiscoveryQos,
    DiscoveryScope,
    GlobalDiscoveryEntry,
    ProviderQos,
    ProviderScope,
    Version,
)
from pyjoynr.runtime.errors import MethodInvocationError, error_from_wire
from pyjoynr.runtime.interface import InterfaceDef, interface_def, to_wire
from pyjoynr.runtime.messages import Message, MessageType, decode_frame, encode_frame
from pyjoynr.runtime.payloads import Reply, Request
from pyjoynr.runtime.system_interfaces import (
    DEFAULT_DISCOVERY_PARTICIPANT_ID,
    DEFAULT_ROUTING_PARTICIPANT_ID,
    Discovery,
    Routing,
    address_struct,
    address_to_json,
)
from pyjoynr.testing.brokers import Mosquitto
from pyjoynr.transports.websocket_settings import JOYNR, NATIVE
from tests.support import mqtt_clients
from tests.support.mqtt_clients import RawPeer
from tests.support.raw_websocket import RawClient

GBID = "joynrdefaultgbid"
WAIT_S = 30.0
LONG_DOMAIN = "d" * 2_000_000
LONG_PID = "p" * 1025
MANY_GBIDS = [f"g{i}" for i in range(100_000)]
MANY_DOMAINS = [f"domain{i}" for i in range(100_000)]


@dataclass(frozen=True)
class Case:
    """One oversized call: the Python method, its parameters (wire form), what the answer
    says."""

    name: str
    method: str
    params: list[Any]
    says: str


def body_of(definition: InterfaceDef, case: Case, fmt: BodyFormat) -> tuple[bytes, str]:
    rid = uuid.uuid4().hex
    found = definition.methods[case.method]
    request = Request(rid, found.name, case.params, found.param_datatypes)
    if fmt is BodyFormat.MSGPACK:
        return request.to_body(), rid
    return encode_body(request, BodyFormat.JSON, schema=schema_of(definition)), rid


def assert_refused(reply: Reply, case: Case) -> None:
    assert reply.error is not None, (case.name, reply)
    error = error_from_wire(reply.error)
    assert isinstance(error, MethodInvocationError), error
    assert error.message.startswith("wrong parameter: "), error.message
    assert case.says in error.message, error.message
    assert len(error.message) < 300, error.message  # (the string itself cut)


def assert_no_error_logged(caplog: pytest.LogCaptureFixture) -> None:
    assert [r.getMessage()[:200] for r in caplog.records if r.levelno >= logging.ERROR] == []


def assert_refusals_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    lines = [r.getMessage() for r in caplog.records if r.name == "pyjoynr.runtime.providers"
             and " refused: " in r.getMessage()]
    assert len(lines) == 1, [line[:300] for line in lines]
    assert "over the limit of" in lines[0] and len(lines[0]) < 1000, lines[0][:300]


@pytest.fixture
async def stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as s:
        yield s


# ====================================================================== the GCD over MQTT


def gcd_entry(pid: str, domain: str = "vehicle") -> dict[str, Any]:
    return to_wire(GlobalDiscoveryEntry(
        Version(1, 0), domain, "test/Radio", pid, ProviderQos(scope=ProviderScope.GLOBAL),
        now_ms(), now_ms() + 60_000, "", address_to_json(MqttAddress(GBID, "joynr/cc/raw"))))


GCD_CASES = [
    Case("a domain of 2,000,000 characters", "add", [gcd_entry("pid-1", LONG_DOMAIN)],
         f"add(global_discovery_entry).domain: {('d' * 40)!r}... has 2000000 characters, "
         "over the limit of Identifier (1024 characters)"),
    Case("a participant id past the bound", "add", [gcd_entry(LONG_PID)],
         "add(global_discovery_entry).participant_id: 'pppp"),
    Case("100,000 GBIDs", "add_in", [gcd_entry("pid-2"), MANY_GBIDS],
         "add(gbids): 100000 items, over the limit of Gbids (100 items)"),
    Case("a lookup in 100,000 domains", "lookup", [MANY_DOMAINS, "test/Radio"],
         "lookup(domains): 100000 items, over the limit of Domains (1000 items)"),
]


@pytest.mark.network
@pytest.mark.usefixtures("mqtt_client")
@pytest.mark.parametrize("dialect", [NATIVE, JOYNR])
async def test_a_gcd_call_with_an_oversized_string_or_array_is_answered_and_nothing_is_stored(
        stack: AsyncExitStack, tmp_path: Path, caplog: pytest.LogCaptureFixture,
        dialect: str) -> None:
    caplog.set_level(logging.INFO)
    broker = await stack.enter_async_context(Mosquitto(tmp_path / "mosquitto"))
    service = await stack.enter_async_context(GcdService(GcdSettings(
        gbid=GBID, broker_url=broker.url, sqlite_path=tmp_path / "gcd.sqlite",
        mqtt_client=mqtt_clients.current())))
    await service.mqtt.wait_connected(WAIT_S)
    peer = await RawPeer.open(stack, broker.port)
    definition = interface_def(Gcd)
    fmt = BodyFormat.MSGPACK if dialect == NATIVE else BodyFormat.JSON
    encode: Callable[[Message], bytes] = encode_frame if dialect == NATIVE else smrf.encode
    decode: Callable[[bytes], Message] = (
        (lambda b: decode_frame(b, 1 << 20)) if dialect == NATIVE else smrf.decode)

    async def ask(case: Case) -> Reply:
        body, rid = body_of(definition, case, fmt)
        await peer.publish(f"{GCD_TOPIC}/low", encode(Message(
            MessageType.REQUEST, f"asker-{rid[:8]}", GCD_PARTICIPANT_ID, now_ms() + 20_000,
            body, reply_to=MqttAddress(GBID, peer.topic))))
        answer = decode((await peer.receive(WAIT_S)).payload)
        assert answer.type is MessageType.REPLY
        reply = decode_body(Reply, answer.body)
        assert reply.request_reply_id == rid
        return reply

    for case in GCD_CASES:
        assert_refused(await ask(case), case)
    assert await service.store.count() == 0
    assert service.router.counters["refused-request"] == len(GCD_CASES)
    assert_refusals_logged_once(caplog)
    # at the bounds it is taken (the service was not disturbed)
    at_bound = Case("at the bounds", "add_in", [gcd_entry("q" * 1024, "d" * 1024), [GBID]], "")
    reply = await ask(at_bound)
    assert reply.error is None, reply.error
    assert await service.store.count() == 1
    assert_no_error_logged(caplog)


# ====================================================================== the CC's Discovery


async def call(raw: RawClient, recipient: str, body: bytes, rid: str) -> Reply:
    await raw.send(Message(MessageType.REQUEST, raw.pid, recipient, now_ms() + 20_000, body))
    for _ in range(50):
        answer = await raw.receive()
        if answer.type is MessageType.REPLY:
            reply = decode_body(Reply, answer.body)
            if reply.request_reply_id == rid:
                return reply
    raise AssertionError("no reply")


def local_entry(pid: str, domain: str = "domain") -> dict[str, Any]:
    return to_wire(DiscoveryEntry(Version(1, 0), domain, "test/Thing", pid,
                                  ProviderQos(scope=ProviderScope.LOCAL), now_ms(),
                                  now_ms() + 60_000))


QOS = to_wire(DiscoveryQos(60_000, 5_000, DiscoveryScope.LOCAL_ONLY, False))
DISCOVERY_CASES = [
    Case("a domain of 2,000,000 characters", "add", [local_entry("provider-1", LONG_DOMAIN)],
         f"add(discovery_entry).domain: {('d' * 40)!r}... has 2000000 characters, over the "
         "limit of Identifier (1024 characters)"),
    Case("a participant id past the bound", "add", [local_entry(LONG_PID)],
         "add(discovery_entry).participant_id: 'pppp"),
    Case("100,000 GBIDs", "add_in", [local_entry("provider-1"), False, MANY_GBIDS],
         "add(gbids): 100000 items, over the limit of Gbids (100 items)"),
    Case("a lookup in 100,000 domains", "lookup", [MANY_DOMAINS, "test/Thing", QOS],
         "lookup(domains): 100000 items, over the limit of Domains (1000 items)"),
]


@pytest.mark.parametrize("fmt", [BodyFormat.MSGPACK, BodyFormat.JSON])
@pytest.mark.parametrize("dialect", [NATIVE, JOYNR])
async def test_a_discovery_call_with_an_oversized_string_or_array_is_answered_and_not_registered(
        stack: AsyncExitStack, cc: ClusterController, caplog: pytest.LogCaptureFixture,
        dialect: str, fmt: BodyFormat) -> None:
    caplog.set_level(logging.INFO)
    raw = await RawClient.open(stack, cc.websocket_address.url, dialect=dialect)
    hop = interface_def(Routing).methods["add_next_hop"]
    own = to_wire(address_struct(WebSocketClientAddress(raw.client_id)))
    for pid in (raw.pid, "provider-1"):
        rid = uuid.uuid4().hex
        reply = await call(raw, DEFAULT_ROUTING_PARTICIPANT_ID, Request(
            rid, hop.name, [pid, own, False], hop.param_datatypes).to_body(), rid)
        assert reply.error is None, reply.error
    definition = interface_def(Discovery)
    for case in DISCOVERY_CASES:
        body, rid = body_of(definition, case, fmt)
        assert_refused(await call(raw, DEFAULT_DISCOVERY_PARTICIPANT_ID, body, rid), case)
    assert cc.discovery._entries == {}
    assert cc.router.counters["refused-request"] == len(DISCOVERY_CASES)
    assert_refusals_logged_once(caplog)
    # at the bound it is registered
    body, rid = body_of(definition, Case("at the bound", "add",
                                         [local_entry("provider-1", "d" * 1024)], ""), fmt)
    reply = await call(raw, DEFAULT_DISCOVERY_PARTICIPANT_ID, body, rid)
    assert reply.error is None, reply.error
    assert len(cc.discovery._entries) == 1
    assert_no_error_logged(caplog)
