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
from pyjoynr.gcd.interface import GlobalCapabilitiesDirectory as Gcd
from pyjoynr.libjoynr import LibjoynrRuntime, Provider
from pyjoynr.programming.system_interfaces import DEFAULT_DISCOVERY_PARTICIPANT_ID, Discovery
from pyjoynr.runtime.bodies import BodyFormat
from pyjoynr.runtime.interface import (
    Float,
    Int8,
    InterfaceDef,
    interface,
    interface_def,
    joynr_datatypes,
)
from pyjoynr.runtime.payloads import Reply
from pyjoynr.transports.websocket.settings import JOYNR, NATIVE
from tests.support.raw_calls import (
    RawCaller,
    RawGcd,
    assert_no_error_logged,
    assert_nothing_registered,
    assert_refusal_logged_once,
    assert_refused,
    gcd_entry,
    local_entry,
    request_body,
)

WAIT_S = 10.0
TTL_MS = 10_000
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


def spoilt_body(definition: InterfaceDef, method: str, params: list[Any], case: Case,
                fmt: BodyFormat) -> tuple[bytes, str]:
    """A request of ``method`` whose first parameter is spoilt as ``case`` says, in ``fmt``
    (JSON written by hand: the project's writer refuses such values)."""
    if fmt is BodyFormat.MSGPACK:
        first = spoilt(params[0], case, json_names=False)
        return request_body(definition, method, [first, *params[1:]], fmt)
    body, rid = request_body(definition, method, params, fmt)
    good = json.loads(body)
    good["params"][0] = spoilt(good["params"][0], case, json_names=True)
    return json.dumps(good).encode(), rid


def assert_out_of_range_refused(reply: Reply, case: Case, method: str) -> None:
    assert_refused(reply, case.says, starts=f"wrong parameter: {method}(")


def assert_refusals_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    assert_refusal_logged_once(
        caplog, lambda line: "out of the range of" in line or "is not a" in line)


@pytest.fixture
async def stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as s:
        yield s


# ====================================================================== the GCD over MQTT


@pytest.mark.network
@pytest.mark.usefixtures("mqtt_client")
@pytest.mark.parametrize("dialect", [NATIVE, JOYNR])
async def test_a_gcd_add_with_a_value_out_of_range_is_answered_and_nothing_is_stored(
        stack: AsyncExitStack, tmp_path: Path, caplog: pytest.LogCaptureFixture,
        dialect: str) -> None:
    caplog.set_level(logging.INFO)
    gcd = await RawGcd.open(stack, tmp_path, dialect, timeout_s=WAIT_S, ttl_ms=TTL_MS)
    definition = interface_def(Gcd)
    for case in cases_of(gcd.fmt):
        pid = f"bad-{uuid.uuid4().hex[:8]}"
        body, rid = spoilt_body(definition, "add", [gcd_entry(pid)], case, gcd.fmt)
        assert_out_of_range_refused(await gcd.ask(body, rid), case, "add")
    await gcd.assert_nothing_stored(refused=len(cases_of(gcd.fmt)))
    assert_refusals_logged_once(caplog)
    # a good one is taken after them (the service was not disturbed), in a native frame
    reply = await gcd.ask(*request_body(definition, "add", [gcd_entry("good")],
                                        BodyFormat.MSGPACK), dialect=NATIVE)
    assert reply.error is None, reply.error
    assert await gcd.service.store.count() == 1
    assert_no_error_logged(caplog)


# ====================================================================== the CC's Discovery


@pytest.mark.parametrize("fmt", [BodyFormat.MSGPACK, BodyFormat.JSON])
@pytest.mark.parametrize("dialect", [NATIVE, JOYNR])
async def test_a_discovery_add_with_a_value_out_of_range_is_answered_and_not_registered(
        stack: AsyncExitStack, cc: ClusterController, caplog: pytest.LogCaptureFixture,
        dialect: str, fmt: BodyFormat) -> None:
    caplog.set_level(logging.INFO)
    caller = await RawCaller.open(stack, cc, dialect, ttl_ms=TTL_MS, routed=("provider-1",))
    definition = interface_def(Discovery)
    for case in cases_of(fmt):
        body, rid = spoilt_body(definition, "add", [local_entry("provider-1")], case, fmt)
        assert_out_of_range_refused(
            await caller.call(DEFAULT_DISCOVERY_PARTICIPANT_ID, body, rid), case, "add")
    assert_nothing_registered(cc, refused=len(cases_of(fmt)))
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
    definition = interface_def(Gauge)
    if fmt is BodyFormat.MSGPACK:
        return request_body(definition, "show", params, fmt)
    body, rid = request_body(definition, "show", GOOD_SHOW, fmt)
    good = json.loads(body)
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
    caller = await RawCaller.open(stack, cc, dialect, ttl_ms=TTL_MS)
    for index, value, says, in_json in BAD_SHOW:
        if fmt is BodyFormat.JSON and not in_json:
            continue
        params = list(GOOD_SHOW)
        params[index] = math.inf if fmt is BodyFormat.MSGPACK and value == "1e400" else value
        body, rid = show_body(params, fmt)
        assert_refused(await caller.call(provider_pid, body, rid), says, starts="", what=value)
    assert provider.shown == []
    refused = sum(1 for *_, in_json in BAD_SHOW if in_json or fmt is BodyFormat.MSGPACK)
    assert runtime.core.telemetry.counters["refused-request"] == refused
    assert_refusals_logged_once(caplog)
    body, rid = show_body(GOOD_SHOW, fmt)
    reply = await caller.call(provider_pid, body, rid)
    assert (reply.error, reply.response) == (None, [True])
    assert provider.shown == [(127, -3.4e38, 0.5, Unit.CELSIUS, "x" * 1000)]
    assert_no_error_logged(caplog)
