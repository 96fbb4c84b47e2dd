"""Out-of-range values sent by hand to real parts are refused where they are typed, with an
error answer that names the field, the value and the range, in the caller's dialect: a GCD
``add`` over MQTT to a real GCD on SQLite (this project's msgpack frames and bodies, joynr's
SMRF frames and JSON bodies), and the cluster controller's Discovery ``add`` over a real
websocket connection (both frame dialects, both body formats), and a call of an application's
provider with a Byte, Float, Double or enum argument out of its range. Nothing reaches the
store, the local directory or the provider's code, and nothing is logged at ERROR."""

from __future__ import annotations

import asyncio
import enum
import json
import logging
import math
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.gcd.interface import GCD_PARTICIPANT_ID, GCD_TOPIC
from pyjoynr.gcd.interface import GlobalCapabilitiesDirectory as Gcd
from pyjoynr.gcd.service import GcdService, GcdSettings
from pyjoynr.libjoynr import LibjoynrRuntime, Provider
from pyjoynr.runtime import smrf
from pyjoynr.runtime.addresses import MqttAddress, WebSocketClientAddress
from pyjoynr.runtime.bodies import BodyFormat, decode_body, encode_body, schema_of
from pyjoynr.runtime.clock import now_ms
from pyjoynr.runtime.discovery_types import (
    DiscoveryEntry,
    GlobalDiscoveryEntry,
    ProviderQos,
    ProviderScope,
    Version,
)
from pyjoynr.runtime.errors import MethodInvocationError, error_from_wire
from pyjoynr.runtime.interface import (
    Float,
    Int8,
    InterfaceDef,
    interface,
    interface_def,
    joynr_datatypes,
    to_wire,
)
from pyjoynr.runtime.messages import Message, MessageType, decode_frame, encode_frame
from pyjoynr.runtime.payloads import Reply, Request, decode_payload
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
WAIT_S = 10.0
INT64 = "-9223372036854775808..9223372036854775807"


@dataclass(frozen=True)
class Case:
    """One field of an entry spoilt: its path in joynr's JSON (the msgpack form's is the
    snake_case of it), the value, what the answer says."""

    name: str
    path: tuple[str, ...]
    value: Any
    says: str
    #: msgpack carries integers in -2**63..2**64-1 only (JSON any)
    in_msgpack: bool = True


CASES = [
    Case("Long 2**63", ("qos", "priority"), 2 ** 63,
         f"qos.priority: 9223372036854775808 is out of the range of Int64 (Long: {INT64})"),
    Case("Long -2**63-1", ("expiryDateMs",), -(2 ** 63) - 1,
         f"expiry_date_ms: -9223372036854775809 is out of the range of Int64 (Long: {INT64})",
         in_msgpack=False),
    Case("Integer 2**31", ("providerVersion", "majorVersion"), 2 ** 31,
         "provider_version.major_version: 2147483648 is out of the range of Int32 "
         "(Integer: -2147483648..2147483647)"),
    Case("huge integer", ("lastSeenDateMs",), 10 ** 400,
         "last_seen_date_ms: an integer of 1329 bits is out of the range of Int64",
         in_msgpack=False),
    Case("unknown enum literal", ("qos", "scope"), "EVERYWHERE",
         "qos.scope: 'EVERYWHERE' is not a ProviderScope"),
]


def cases_of(fmt: BodyFormat) -> list[Case]:
    return [c for c in CASES if fmt is BodyFormat.JSON or c.in_msgpack]


def snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


def spoilt(wire: dict[str, Any], case: Case, *, json_names: bool) -> dict[str, Any]:
    out = json.loads(json.dumps(wire))
    target = out
    path = case.path if json_names else tuple(snake(p) for p in case.path)
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = case.value
    return out


def request_body(definition: InterfaceDef, method: str, params: list[Any], case: Case,
                 fmt: BodyFormat) -> tuple[bytes, str]:
    """A request of ``method`` whose first parameter is spoilt as ``case`` says, in ``fmt``
    (JSON written by hand: the project's writer refuses such values)."""
    rid = uuid.uuid4().hex
    found = definition.methods[method]
    if fmt is BodyFormat.MSGPACK:
        first = spoilt(params[0], case, json_names=False)
        return Request(rid, found.name, [first, *params[1:]], found.param_datatypes
                       ).to_body(), rid
    good = json.loads(encode_body(Request(rid, found.name, params, found.param_datatypes),
                                  BodyFormat.JSON, schema=schema_of(definition)))
    good["params"][0] = spoilt(good["params"][0], case, json_names=True)
    return json.dumps(good).encode(), rid


def assert_refused(reply: Reply, case: Case, method: str) -> None:
    assert reply.error is not None, reply
    error = error_from_wire(reply.error)
    assert isinstance(error, MethodInvocationError), error
    assert error.message.startswith(f"wrong parameter: {method}("), error.message
    assert case.says in error.message, error.message


def assert_no_error_logged(caplog: pytest.LogCaptureFixture) -> None:
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def assert_refusals_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    """The refusals of one peer: the first one logged in full at WARNING, the others counted
    (the router's rate limit of repeated warnings)."""
    lines = [r.getMessage() for r in caplog.records if r.name == "pyjoynr.runtime.providers"
             and " refused: " in r.getMessage()]
    assert len(lines) == 1, lines
    assert "out of the range of" in lines[0] or "is not a" in lines[0], lines


@pytest.fixture
async def stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as s:
        yield s


# ====================================================================== the GCD over MQTT


def gcd_entry(pid: str) -> GlobalDiscoveryEntry:
    return GlobalDiscoveryEntry(
        Version(1, 0), "vehicle", "test/Radio", pid, ProviderQos(scope=ProviderScope.GLOBAL),
        now_ms(), now_ms() + 60_000, "", address_to_json(MqttAddress(GBID, "joynr/cc/raw")))


@pytest.mark.network
@pytest.mark.usefixtures("mqtt_client")
@pytest.mark.parametrize("dialect", [NATIVE, JOYNR])
async def test_a_gcd_add_with_a_value_out_of_range_is_answered_and_nothing_is_stored(
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
    for case in cases_of(fmt):
        pid = f"bad-{uuid.uuid4().hex[:8]}"
        body, rid = request_body(definition, "add", [to_wire(gcd_entry(pid))], case, fmt)
        await peer.publish(f"{GCD_TOPIC}/low", encode(Message(
            MessageType.REQUEST, f"asker-{pid}", GCD_PARTICIPANT_ID, now_ms() + 10_000, body,
            reply_to=MqttAddress(GBID, peer.topic))))
        answer = decode((await peer.receive(WAIT_S)).payload)
        assert answer.type is MessageType.REPLY
        reply = decode_body(Reply, answer.body)
        assert reply.request_reply_id == rid
        assert_refused(reply, case, "add")
    assert await service.store.count() == 0
    assert service.router.counters["refused-request"] == len(cases_of(fmt))
    assert_refusals_logged_once(caplog)
    # a good one is taken after them (the service was not disturbed)
    good, rid = Request(uuid.uuid4().hex, "add", [to_wire(gcd_entry("good"))],
                        definition.methods["add"].param_datatypes).to_body(), ""
    await peer.publish(f"{GCD_TOPIC}/low", encode_frame(Message(
        MessageType.REQUEST, "asker-good", GCD_PARTICIPANT_ID, now_ms() + 10_000, good,
        reply_to=MqttAddress(GBID, peer.topic))))
    reply = decode_payload(Reply, decode_frame((await peer.receive(WAIT_S)).payload,
                                               1 << 20).body)
    assert reply.error is None, reply.error
    assert await service.store.count() == 1
    assert_no_error_logged(caplog)


# ====================================================================== the CC's Discovery


async def call(raw: RawClient, recipient: str, body: bytes, rid: str) -> Reply:
    await raw.send(Message(MessageType.REQUEST, raw.pid, recipient, now_ms() + 10_000, body))
    for _ in range(50):
        answer = await raw.receive()
        if answer.type is MessageType.REPLY:
            reply = decode_body(Reply, answer.body)
            if reply.request_reply_id == rid:
                return reply
    raise AssertionError("no reply")


@pytest.mark.parametrize("fmt", [BodyFormat.MSGPACK, BodyFormat.JSON])
@pytest.mark.parametrize("dialect", [NATIVE, JOYNR])
async def test_a_discovery_add_with_a_value_out_of_range_is_answered_and_not_registered(
        stack: AsyncExitStack, cc: ClusterController, caplog: pytest.LogCaptureFixture,
        dialect: str, fmt: BodyFormat) -> None:
    caplog.set_level(logging.INFO)
    raw = await RawClient.open(stack, cc.websocket_address.url, dialect=dialect)
    routing = interface_def(Routing)
    hop = routing.methods["add_next_hop"]
    rid = uuid.uuid4().hex
    own = to_wire(address_struct(WebSocketClientAddress(raw.client_id)))
    for pid in (raw.pid, "provider-1"):
        reply = await call(raw, DEFAULT_ROUTING_PARTICIPANT_ID, Request(
            rid, hop.name, [pid, own, False], hop.param_datatypes).to_body(), rid)
        assert reply.error is None, reply.error
    definition = interface_def(Discovery)
    entry = DiscoveryEntry(Version(1, 0), "domain", "test/Thing", "provider-1",
                           ProviderQos(scope=ProviderScope.LOCAL), now_ms(), now_ms() + 60_000)
    for case in cases_of(fmt):
        body, rid = request_body(definition, "add", [to_wire(entry)], case, fmt)
        assert_refused(await call(raw, DEFAULT_DISCOVERY_PARTICIPANT_ID, body, rid), case,
                       "add")
    assert cc.discovery._entries == {}
    assert cc.router.counters["refused-request"] == len(cases_of(fmt))
    assert_refusals_logged_once(caplog)
    assert_no_error_logged(caplog)


# ====================================================================== an application's provider


class Unit(enum.Enum):
    CELSIUS = "CELSIUS"
    FAHRENHEIT = "FAHRENHEIT"


@interface("ranges/Gauge")
class Gauge:
    @joynr_datatypes("Byte", "Float", "Double", "Unit", "String")
    async def show(self, level: Int8, reading: Float, ratio: float, unit: Unit, label: str
                   ) -> bool: ...


class GaugeProvider(Provider, interface=Gauge):
    def __init__(self) -> None:
        super().__init__()
        self.shown: list[tuple[Any, ...]] = []

    async def show(self, level: int, reading: float, ratio: float, unit: Unit, label: str
                   ) -> bool:
        self.shown.append((level, reading, ratio, unit, label))
        return True


GOOD_SHOW = [127, -3.4e38, 0.5, "CELSIUS", "x" * 1000]
#: (parameter index, value, what the answer says, whether JSON carries it)
BAD_SHOW = [
    (0, 128, "show(level): 128 is out of the range of Int8 (Byte: -128..127)", True),
    (0, -129, "show(level): -129 is out of the range of Int8 (Byte: -128..127)", True),
    (1, 3.5e38, "show(reading): 3.5e+38 is out of the range of Float (finite, at most "
                "3.4028234663852886e+38", True),
    (2, math.nan, "show(ratio): nan is out of the range of Double (finite", False),
    (2, math.inf, "show(ratio): inf is out of the range of Double (finite", False),
    (2, "1e400", "show(ratio): inf is out of the range of Double (finite", True),
    (3, "KELVIN", "show(unit): 'KELVIN' is not a Unit", True),
]


def show_body(params: list[Any], fmt: BodyFormat) -> tuple[bytes, str]:
    rid = uuid.uuid4().hex
    method = interface_def(Gauge).methods["show"]
    if fmt is BodyFormat.MSGPACK:
        return Request(rid, method.name, params, method.param_datatypes).to_body(), rid
    good = json.loads(encode_body(Request(rid, method.name, GOOD_SHOW, method.param_datatypes),
                                  BodyFormat.JSON, schema=schema_of(interface_def(Gauge))))
    good["params"] = [f"@{i}@" for i in range(len(params))]
    text = json.dumps(good)
    for i, value in enumerate(params):  # (written by hand: 1e400 is a JSON number)
        text = text.replace(f'"@{i}@"', value if value == "1e400" else json.dumps(value))
    return text.encode(), rid


@pytest.mark.parametrize("wire", [(d, f) for d in (NATIVE, JOYNR)
                                  for f in (BodyFormat.MSGPACK, BodyFormat.JSON)],
                         ids=lambda w: f"{w[0]}-{w[1].value}")
async def test_a_call_with_a_byte_float_double_or_enum_out_of_range_never_reaches_the_provider(
        stack: AsyncExitStack, cc: ClusterController,
        runtimes: Callable[..., Awaitable[LibjoynrRuntime]],
        caplog: pytest.LogCaptureFixture, wire: tuple[str, BodyFormat]) -> None:
    dialect, fmt = wire
    caplog.set_level(logging.INFO)
    provider = GaugeProvider()
    runtime = await runtimes()
    provider_pid = await asyncio.wait_for(runtime.register_provider("ranges.test", provider),
                                          WAIT_S)
    raw = await RawClient.open(stack, cc.websocket_address.url, dialect=dialect)
    hop = interface_def(Routing).methods["add_next_hop"]
    rid = uuid.uuid4().hex
    own = to_wire(address_struct(WebSocketClientAddress(raw.client_id)))
    reply = await call(raw, DEFAULT_ROUTING_PARTICIPANT_ID, Request(
        rid, hop.name, [raw.pid, own, False], hop.param_datatypes).to_body(), rid)
    assert reply.error is None, reply.error
    for index, value, says, in_json in BAD_SHOW:
        if fmt is BodyFormat.JSON and not in_json:
            continue
        params = list(GOOD_SHOW)
        params[index] = math.inf if fmt is BodyFormat.MSGPACK and value == "1e400" else value
        body, rid = show_body(params, fmt)
        reply = await call(raw, provider_pid, body, rid)
        assert reply.error is not None, (value, reply)
        error = error_from_wire(reply.error)
        assert isinstance(error, MethodInvocationError), error
        assert says in error.message, error.message
    assert provider.shown == []
    refused = sum(1 for *_, in_json in BAD_SHOW if in_json or fmt is BodyFormat.MSGPACK)
    assert runtime.router.counters["refused-request"] == refused
    assert_refusals_logged_once(caplog)
    body, rid = show_body(GOOD_SHOW, fmt)
    reply = await call(raw, provider_pid, body, rid)
    assert (reply.error, reply.response) == (None, [True])
    assert provider.shown == [(127, -3.4e38, 0.5, Unit.CELSIUS, "x" * 1000)]
    assert_no_error_logged(caplog)
