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
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pyjoynr.cluster_controller.controller import ClusterController
from pyjoynr.gcd.interface import GlobalCapabilitiesDirectory as Gcd
from pyjoynr.programming.discovery_types import DiscoveryQos, DiscoveryScope
from pyjoynr.programming.system_interfaces import DEFAULT_DISCOVERY_PARTICIPANT_ID, Discovery
from pyjoynr.runtime.bodies import BodyFormat
from pyjoynr.runtime.interface import InterfaceDef, interface_def, to_wire
from pyjoynr.runtime.payloads import Reply
from pyjoynr.transports.websocket.settings import JOYNR, NATIVE
from tests.support.raw_calls import (
    GBID,
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

WAIT_S = 30.0
TTL_MS = 20_000
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
    return request_body(definition, case.method, case.params, fmt)


def assert_oversized_refused(reply: Reply, case: Case) -> None:
    assert_refused(reply, case.says, max_chars=300, what=case.name)  # (the string itself cut)


def assert_refusals_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    assert_refusal_logged_once(
        caplog, lambda line: "over the limit of" in line and len(line) < 1000)


@pytest.fixture
async def stack() -> AsyncIterator[AsyncExitStack]:
    async with AsyncExitStack() as s:
        yield s


# ====================================================================== the GCD over MQTT


GCD_CASES = [
    Case("a domain of 2,000,000 characters", "add", [gcd_entry("pid-1", LONG_DOMAIN)],
         f"add(global_discovery_entry).domain: {('d' * 40)!r}... has 2000000 characters, "
         "over the limit of Identifier (1024 characters)"),
    Case("a participant id past the bound", "add", [gcd_entry(LONG_PID)],
         "add(global_discovery_entry).participant_id: 'pppp"),
    Case("100,000 GBIDs", "add_in_backends", [gcd_entry("pid-2"), MANY_GBIDS],
         "add(gbids): 100000 items, over the limit of gbids (100 items)"),
    Case("a lookup in 100,000 domains", "lookup", [MANY_DOMAINS, "test/Radio"],
         "lookup(domains): 100000 items, over the limit of domains (1000 items)"),
]


@pytest.mark.network
@pytest.mark.usefixtures("mqtt_client")
@pytest.mark.parametrize("dialect", [NATIVE, JOYNR])
async def test_a_gcd_call_with_an_oversized_string_or_array_is_answered_and_nothing_is_stored(
        stack: AsyncExitStack, tmp_path: Path, caplog: pytest.LogCaptureFixture,
        dialect: str) -> None:
    caplog.set_level(logging.INFO)
    gcd = await RawGcd.open(stack, tmp_path, dialect, timeout_s=WAIT_S, ttl_ms=TTL_MS)
    definition = interface_def(Gcd)
    for case in GCD_CASES:
        assert_oversized_refused(await gcd.ask(*body_of(definition, case, gcd.fmt)), case)
    await gcd.assert_nothing_stored(refused=len(GCD_CASES))
    assert_refusals_logged_once(caplog)
    # at the bounds it is taken (the service was not disturbed)
    at_bound = Case("at the bounds", "add_in_backends",
                    [gcd_entry("q" * 1024, "d" * 1024), [GBID]], "")
    reply = await gcd.ask(*body_of(definition, at_bound, gcd.fmt))
    assert reply.error is None, reply.error
    assert await gcd.service.store.count() == 1
    assert_no_error_logged(caplog)


# ====================================================================== the CC's Discovery


QOS = to_wire(DiscoveryQos(60_000, 5_000, DiscoveryScope.LOCAL_ONLY, False))
DISCOVERY_CASES = [
    Case("a domain of 2,000,000 characters", "add", [local_entry("provider-1", LONG_DOMAIN)],
         f"add(discovery_entry).domain: {('d' * 40)!r}... has 2000000 characters, over the "
         "limit of Identifier (1024 characters)"),
    Case("a participant id past the bound", "add", [local_entry(LONG_PID)],
         "add(discovery_entry).participant_id: 'pppp"),
    Case("100,000 GBIDs", "add_in_backends", [local_entry("provider-1"), False, MANY_GBIDS],
         "add(gbids): 100000 items, over the limit of gbids (100 items)"),
    Case("a lookup in 100,000 domains", "lookup", [MANY_DOMAINS, "test/Thing", QOS],
         "lookup(domains): 100000 items, over the limit of domains (1000 items)"),
]


@pytest.mark.parametrize("fmt", [BodyFormat.MSGPACK, BodyFormat.JSON])
@pytest.mark.parametrize("dialect", [NATIVE, JOYNR])
async def test_a_discovery_call_with_an_oversized_string_or_array_is_answered_and_not_registered(
        stack: AsyncExitStack, cc: ClusterController, caplog: pytest.LogCaptureFixture,
        dialect: str, fmt: BodyFormat) -> None:
    caplog.set_level(logging.INFO)
    caller = await RawCaller.open(stack, cc, dialect, ttl_ms=TTL_MS, routed=("provider-1",))
    definition = interface_def(Discovery)
    for case in DISCOVERY_CASES:
        body, rid = body_of(definition, case, fmt)
        assert_oversized_refused(await caller.call(DEFAULT_DISCOVERY_PARTICIPANT_ID, body, rid),
                                 case)
    assert_nothing_registered(cc, refused=len(DISCOVERY_CASES))
    assert_refusals_logged_once(caplog)
    # at the bound it is registered
    body, rid = body_of(definition, Case("at the bound", "add",
                                         [local_entry("provider-1", "d" * 1024)], ""), fmt)
    reply = await caller.call(DEFAULT_DISCOVERY_PARTICIPANT_ID, body, rid)
    assert reply.error is None, reply.error
    assert len(cc.discovery._entries) == 1
    assert_no_error_logged(caplog)
